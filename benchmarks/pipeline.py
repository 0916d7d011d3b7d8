"""Pipeline throughput: 20,000 events through the full event pipeline into the embedded store and
into a real PouchDB Server, against the same spider with no pipelines and a naive one-PUT-per-item
writer, all in one run. Prints items/s and the ratios, for two spiders: a synthetic one whose own
per-item cost is near zero (the harshest baseline) and the real house_floor spider parsing its
recordings; and PouchDB Server's own _bulk_docs ceiling and the deferred indexing of the reschedule view
for context.

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


def run_mode(name: str, store: str, pipelines: dict, count: int, tmp: Path, spider: str = "bench_events") -> dict:
    result_file = tmp / ("%s.json" % name)
    env = dict(os.environ, VOTERSDAILY_STORE=store, BENCH_RESULT=str(result_file),
               PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    args = [sys.executable, "-m", "scrapy", "crawl", spider, "-a", "count=%d" % count,
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
    args = parser.parse_args()
    full = {p: 100 * (i + 1) for i, p in enumerate(FULL)}
    store_pipeline = dict(full, **{"votersdaily.pipelines.EventStorePipeline": 800})
    naive = dict(full, **{"benchmarks.bench_spiders.NaivePutPipeline": 800})
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        server = PouchDBServer(tmp / "pouch", in_memory=False).start()
        try:
            ceiling = bulk_ceiling(server, args.count)
            for spider, label in (("bench_events", "synthetic rows (near-zero spider cost)"),
                                  ("bench_house_floor", "real house_floor spider on its recordings")):
                server.reset()
                results = {}
                run = lambda mode, store, pipes: run_mode("%s-%s" % (spider, mode), store, pipes,  # noqa: E731
                                                          args.count, tmp, spider)
                results["no pipelines"] = run("none", "sqlite:///%s" % (tmp / ("%s-none.db" % spider)), {})
                emb = "sqlite:///%s" % (tmp / ("%s-emb.db" % spider))
                results["full -> embedded"] = run("embedded", emb, store_pipeline)
                results["full -> embedded, re-run"] = run("embedded2", emb, store_pipeline)
                results["full -> PouchDB"] = run("couch", server.url, store_pipeline)
                catch_up = view_catch_up(server)
                results["full -> PouchDB, re-run"] = run("couch2", server.url, store_pipeline)
                server.reset()
                results["naive PUT -> PouchDB"] = run("naive", server.url, naive)
                report(label, results)
                first = results["full -> PouchDB"]
                print("deferred: PouchDB indexes a view when it is queried; by_parser_unique_key (read by the "
                      "reschedule check and the iCal export) catches up on this run's documents at the next such "
                      "query: %.1f s; the first run with it: %.0f items/s"
                      % (catch_up, first["items"] / (first["seconds"] + catch_up)))
            print("\nPouchDB Server's own ceiling for the same documents, pre-built, %d per _bulk_docs: %.0f docs/s"
                  % (BULK, ceiling))
        finally:
            server.stop()


BULK = 1000


def view_catch_up(server: PouchDBServer) -> float:
    """Seconds PouchDB Server takes to bring the reschedule view up to date after a run."""
    import time

    from votersdaily.store import open_store

    store = open_store(server.url)
    start = time.perf_counter()
    store.query("vd_events", "by_parser_unique_key", limit=1, include_docs=False)
    return time.perf_counter() - start


def bulk_ceiling(server: PouchDBServer, count: int) -> float:
    """Documents/s PouchDB Server takes through _bulk_docs when nothing else runs (the upper bound)."""
    import time

    from votersdaily.store import open_store

    store = open_store(server.url)
    store.ensure_db("ceiling")
    docs = [{"_id": "2026-09-16T23:%02d:00Z-bench_events-%d" % (i % 60, i), "datetime": "2026-09-16T23:05:00Z",
             "title": "Roll %d: Member voted Yea" % i, "source_text": "<recorded-vote>" + "x" * 200 + "</recorded-vote>",
             "branch": "Legislative", "entity": "House of Representatives", "unique_key": str(i)}
            for i in range(count)]
    start = time.perf_counter()
    for i in range(0, count, BULK):
        store.bulk_docs("ceiling", docs[i:i + BULK])
    elapsed = time.perf_counter() - start
    store.drop_db("ceiling")
    return count / elapsed


def report(label: str, results: dict) -> None:
    base = results["no pipelines"]["rate"]
    naive_rate = results["naive PUT -> PouchDB"]["rate"]
    print("\n== %s ==" % label)
    print("%-28s %8s %9s %10s %10s %10s" % ("mode", "items", "seconds", "items/s", "vs none", "vs naive"))
    for name, r in results.items():
        print("%-28s %8d %9.2f %10.0f %9.2fx %9.1fx" % (
            name, r["items"], r["seconds"], r["rate"], r["rate"] / base, r["rate"] / naive_rate))
    couch = results["full -> PouchDB"]["rate"]
    print("full pipeline into PouchDB: %.0f%% of no-pipeline throughput (target >= 50%%), %.1fx the naive writer "
          "(target >= 10x)" % (100 * couch / base, couch / naive_rate))
    items = results["no pipelines"]["items"]
    assert all(r["items"] == items for r in results.values()), results
    assert results["full -> PouchDB"]["inserted"] == items, results["full -> PouchDB"]
    assert results["full -> PouchDB, re-run"]["unchanged"] == items

if __name__ == "__main__":
    main()
