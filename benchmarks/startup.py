"""Start-up of a crawl, against the floor every Scrapy crawl pays, in one run.

    python3 -m benchmarks.startup [--repeat 5] [--statements 10] [--checkout DIR]

Each round runs, in a fresh interpreter each, alternating: ``python3 -c "import scrapy.crawler"``
(the floor: no crawl starts with less), ``scrapy crawl laundromat -a url=file:///…`` on a tiny
N-Triples file into a fresh embedded store, timed from start to exit (and to the first download's
answer, from the crawl's own log), and loading the project's spiders: the laundromat alone, as
``scrapy crawl`` does, and every one, as ``scrapy list`` does. Prints best and median of each, the crawl's
ratio to the floor, and which heavy modules loading the spiders imported. The crawl must end with
the file cleaned (every statement counted), or the run fails. ``--checkout`` measures another copy
of the project (e.g. ``git archive <commit> | tar -x -C DIR``, for a before/after figure). Only
local files; no network.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from benchmarks.laundromat import generate
from tests.support.startup import LOADER_PROBE, NOT_FOR_THE_SPIDER_LOADER

REPO = Path(__file__).resolve().parents[1]
#: The log line of the first download's answer, and the log format that stamps it (epoch seconds).
CRAWLED = "Crawled (200) <GET file:"
LOG_FORMAT = "%(created)f %(name)s %(message)s"


def environment(checkout: Path, store_uri: str) -> dict[str, str]:
    return dict(
        os.environ,
        VOTERSDAILY_STORE=store_uri,
        SCRAPY_SETTINGS_MODULE="votersdaily.settings",
        PYTHONPATH=str(checkout) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """(epoch at start, wall seconds, stderr) of ``command``; a failure ends the benchmark."""
    epoch, started = time.time(), time.perf_counter()
    proc = subprocess.run(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False
    )
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (" ".join(command[:4]), proc.stderr[-3000:]))
    return epoch, seconds, proc.stderr


def floor(work: Path, checkout: Path) -> float:
    return timed([sys.executable, "-c", "import scrapy.crawler"], work, environment(checkout, ""))[1]


def crawl(data: Path, statements: int, work: Path, checkout: Path) -> tuple[float, float]:
    """(seconds to exit, seconds to the first download's answer) of one laundromat crawl of ``data``."""
    from votersdaily.store import open_store

    run = work / "crawl"
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir()
    store_uri = "sqlite:///%s" % (run / "store.db")
    command = [sys.executable, "-m", "scrapy", "crawl", "laundromat", "-a", "url=" + data.as_uri()]
    command += ["-s", "LAUNDROMAT_OUTPUT_DIR=%s" % (run / "out"), "-s", "LOG_LEVEL=DEBUG"]
    command += ["-s", "LOG_FORMAT=" + LOG_FORMAT]
    epoch, seconds, log = timed(command, run, environment(checkout, store_uri))
    (line,) = [ln for ln in log.splitlines() if CRAWLED in ln]
    first_download = float(line.split(" ", 1)[0]) - epoch
    store = open_store(store_uri)
    try:
        (parsed,) = [d for d in store.iter_docs("ll_seeds") if d.get("status") == "parsed"]
    finally:
        store.close()
    if parsed.get("number_of_statements") != statements:
        raise SystemExit(
            "the crawl cleaned %s statements of %d" % (parsed.get("number_of_statements"), statements)
        )
    return seconds, first_download


def load_spiders(work: Path, checkout: Path, *name: str) -> dict:
    """Loading spider ``name`` as ``scrapy crawl`` does, or (no name) every spider as ``scrapy list``."""
    return json.loads(
        subprocess.run(
            [sys.executable, "-c", LOADER_PROBE, *name],
            cwd=work,
            env=environment(checkout, ""),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )


def best_median(values: list[float]) -> str:
    return "best %5.0f ms, median %5.0f ms" % (min(values) * 1000, statistics.median(values) * 1000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="alternating rounds (best and median shown)")
    parser.add_argument("--statements", type=int, default=10, help="statements in the crawled file")
    parser.add_argument("--checkout", type=Path, default=REPO, help="the copy of the project to measure")
    args = parser.parse_args(argv)
    checkout = args.checkout.resolve()
    print(
        "start-up benchmark of %s (%s; %d CPU, load average %s)"
        % (
            checkout,
            datetime.now().strftime("%Y-%m-%d %H:%M"),
            os.cpu_count() or 0,
            " ".join("%.2f" % x for x in os.getloadavg()),
        )
    )
    floors, crawls, first_downloads, loads, one_loads = [], [], [], [], []
    with tempfile.TemporaryDirectory(prefix="startup-bench-") as tmp:
        work = Path(tmp)
        data = work / "tiny.nt"
        generate(data, args.statements)
        loaded: dict = {}
        for _ in range(args.repeat):
            floors.append(floor(work, checkout))
            seconds, first = crawl(data, args.statements, work, checkout)
            crawls.append(seconds)
            first_downloads.append(first)
            loaded = load_spiders(work, checkout)
            loads.append(loaded["seconds"])
            one_loads.append(load_spiders(work, checkout, "laundromat")["seconds"])
    print("  python3 -c 'import scrapy.crawler' (the floor):        %s" % best_median(floors))
    print(
        "  scrapy crawl laundromat, %d statements, start to exit:  %s"
        % (args.statements, best_median(crawls))
    )
    print("    start to the first download's answer:                %s" % best_median(first_downloads))
    print(
        "  ratio crawl / floor: best/best %.2fx, median/median %.2fx"
        % (min(crawls) / min(floors), statistics.median(crawls) / statistics.median(floors))
    )
    heavy = [m for m in NOT_FOR_THE_SPIDER_LOADER if m in loaded["modules"]]
    print("  loading the spiders, after scrapy.crawler:")
    print("    the laundromat, as scrapy crawl does:                %s" % best_median(one_loads))
    print(
        "    all %d, as scrapy list does:                         %s; %d modules imported; of the heavy ones: %s"
        % (len(loaded["spiders"]), best_median(loads), len(loaded["imported"]), ", ".join(heavy) or "none")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
