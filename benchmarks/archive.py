"""Source archive overhead: ``python -m votersdaily crawl --all --offline`` (the main job, as a user runs
it) with the archive on and off, in one run. Each round runs both modes into fresh embedded stores,
in alternating order so they share the host's conditions; the ratio is taken within a round and the
median reported with every round's value, plus the archive's size on disk.

    python3 -m benchmarks.archive [--repeat 5]

The target of the source archive: at most 25% more wall time than the same run without it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.services import REPO


def main_job(workdir: Path, archive: bool) -> float:
    """Wall seconds of one ``crawl --all --offline`` into a fresh store under ``workdir``."""
    env = dict(os.environ)
    env.update(
        VOTERSDAILY_STORE="sqlite:///%s" % (workdir / "store.db"),
        VOTERSDAILY_ARCHIVE_DIR=str(workdir / "archive"),
        VOTERSDAILY_SPOOL_DIR=str(workdir / "spool"),
        PYTHONPATH=str(REPO),
    )
    args = [sys.executable, "-m", "votersdaily", "crawl", "--all", "--offline"]
    args += ["-s", "VOTERSDAILY_ARCHIVE_ENABLED=%s" % archive]
    started = time.perf_counter()
    proc = subprocess.run(args, cwd=workdir, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit("crawl --all --offline failed:\n%s\n%s" % (proc.stdout[-2000:], proc.stderr[-2000:]))
    return seconds


def archive_size(workdir: Path) -> tuple[int, int]:
    files = list((workdir / "archive").rglob("*.warc.gz"))
    return len(files), sum(f.stat().st_size for f in files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    ratios, on_times, off_times = [], [], []
    files = size = 0
    for round_no in range(args.repeat):
        times = {}
        order = (True, False) if round_no % 2 == 0 else (False, True)
        for archive in order:
            with tempfile.TemporaryDirectory(prefix="vd-bench-archive-") as tmp:
                times[archive] = main_job(Path(tmp), archive)
                if archive:
                    files, size = archive_size(Path(tmp))
        on_times.append(times[True])
        off_times.append(times[False])
        ratios.append(times[True] / times[False])
        print(
            "round %d: archive on %.2f s, off %.2f s, ratio %.3f"
            % (round_no + 1, times[True], times[False], ratios[-1])
        )
    median = statistics.median(ratios)
    print(
        "crawl --all --offline: archive on %.2f s, off %.2f s (medians); ratio %.3f (rounds: %s)"
        % (
            statistics.median(on_times),
            statistics.median(off_times),
            median,
            ", ".join("%.3f" % r for r in ratios),
        )
    )
    print("archive: %d WARC files, %.1f KiB per run of the main job" % (files, size / 1024))
    print("target: at most 1.25 (+25%% wall time): %s" % ("met" if median <= 1.25 else "NOT met"))


if __name__ == "__main__":
    main()
