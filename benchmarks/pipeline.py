"""Pipeline throughput: 20,000 events through the full event pipeline into the embedded store and
into a real PouchDB Server, against the same spider with no pipelines and a naive one-PUT-per-item
writer, all in one run. Prints items/s and the ratios.

    python benchmarks/pipeline.py [--count 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.services import PouchDBServer  # noqa: E402

FULL = ("votersdaily.pipelines.NormaliseDatetimesPipeline", "votersdaily.pipelines.ValidateEventPipeline",
        "votersdaily.pipelines.EventIdPipeline")


def run_mode(name: str, store: str, pipelines: dict, count: int, tmp: Path) -> dict:
    result_file = tmp / ("%s.json" % name)
    env = dict(os.environ, VOTERSDAILY_STORE=store, BENCH_RESULT=str(result_file),
               PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    args = [sys.executable, "-m", "scrapy", "crawl", "bench_events", "-a", "count=%d" % count,
            "-s", "SPIDER_MODULES=benchmarks.bench_spiders", "-s", "ITEM_PIPELINES=" + json.dumps(pipelines),
            "-s", "LOG_LEVEL=WARNING"]
    proc = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True)
    if proc.returncode != 0 or not result_file.exists():
        raise SystemExit("mode %s failed:\n%s" % (name, proc.stderr[-3000:]))
    result = json.loads(result_file.read_text())
    result["rate"] = result["items"] / result["seconds"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--naive-count", type=int, default=None,
                        help="events for the naive writer (default: --count)")
    args = parser.parse_args()
    full = {p: 100 * (i + 1) for i, p in enumerate(FULL)}
    store_pipeline = dict(full, **{"votersdaily.pipelines.EventStorePipeline": 800})
    naive = dict(full, **{"benchmarks.bench_spiders.NaivePutPipeline": 800})
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        server = PouchDBServer(tmp / "pouch", in_memory=False).start()
        try:
            results = {}
            results["no pipelines"] = run_mode("none", "sqlite:///%s" % (tmp / "none.db"), {}, args.count, tmp)
            results["full -> embedded"] = run_mode("embedded", "sqlite:///%s" % (tmp / "emb.db"), store_pipeline, args.count, tmp)
            results["full -> embedded, re-run"] = run_mode("embedded2", "sqlite:///%s" % (tmp / "emb.db"), store_pipeline, args.count, tmp)
            results["full -> PouchDB"] = run_mode("couch", server.url, store_pipeline, args.count, tmp)
            results["full -> PouchDB, re-run"] = run_mode("couch2", server.url, store_pipeline, args.count, tmp)
            server.reset()
            results["naive PUT -> PouchDB"] = run_mode("naive", server.url, naive, args.naive_count or args.count, tmp)
        finally:
            server.stop()
    base = results["no pipelines"]["rate"]
    naive_rate = results["naive PUT -> PouchDB"]["rate"]
    print("%-28s %8s %9s %10s %10s %10s" % ("mode", "items", "seconds", "items/s", "vs none", "vs naive"))
    for name, r in results.items():
        print("%-28s %8d %9.2f %10.0f %9.2fx %9.1fx" % (
            name, r["items"], r["seconds"], r["rate"], r["rate"] / base, r["rate"] / naive_rate))
    couch = results["full -> PouchDB"]["rate"]
    print("\nfull pipeline into PouchDB: %.0f%% of no-pipeline throughput (target >= 50%%), %.1fx the naive writer "
          "(target >= 10x)" % (100 * couch / base, couch / naive_rate))
    assert results["full -> PouchDB"]["inserted"] == args.count, results["full -> PouchDB"]
    assert results["full -> PouchDB, re-run"]["unchanged"] == args.count


if __name__ == "__main__":
    main()
