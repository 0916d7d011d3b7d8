"""Pipeline throughput: 20,000 events through the full event pipeline into the embedded store and
into a real PouchDB Server, against the same spider with no pipelines and a naive one-PUT-per-item
writer, all in one run. Prints items/s and the ratios, for two spiders: a synthetic one whose own
per-item cost is near zero (the harshest baseline) and the real house_floor spider parsing its
recordings.

Every mode runs ``--repeat`` times, the rounds interleaved so that each round's modes share the host's
conditions; the ratios are taken within a round and their median is reported with every round's value.
Each PouchDB mode gets a PouchDB Server of its own, started fresh, whose CPU time is measured. For
context the benchmark also measures PouchDB Server's own ceiling for the spider's documents (posted
pre-built, nothing else running) and the deferred indexing of the reschedule view.

    python3 -m benchmarks.pipeline [--count 20000] [--repeat 3] [--spiders bench_events,bench_house_floor]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.services import REPO, PouchDBServer
from votersdaily.store import open_store
from votersdaily.store.views import design_document

FULL = (
    "votersdaily.pipelines.NormaliseDatetimesPipeline",
    "votersdaily.pipelines.ValidateEventPipeline",
    "votersdaily.pipelines.EventIdPipeline",
)
SPIDERS = {
    "bench_events": "synthetic rows (near-zero spider cost)",
    "bench_house_floor": "real house_floor spider on its recordings",
}
NONE, EMB, EMB2, COUCH, COUCH2, NAIVE = (
    "no pipelines",
    "full -> embedded",
    "full -> embedded, re-run",
    "full -> PouchDB",
    "full -> PouchDB, re-run",
    "naive PUT -> PouchDB",
)
#: Documents per _bulk_docs in the ceiling measurement (the pipeline's VOTERSDAILY_BATCH_SIZE).
BULK = 1000


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux)."""
    fields = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def fresh_server(workdir: Path) -> Iterator[PouchDBServer]:
    server = PouchDBServer(workdir, in_memory=False).start()
    try:
        yield server
    finally:
        server.stop()


def run_mode(
    name: str,
    store: str,
    pipelines: dict,
    count: int,
    tmp: Path,
    spider: str,
    server: PouchDBServer | None = None,
) -> dict:
    result_file = tmp / ("%s.json" % name)
    env = dict(
        os.environ,
        VOTERSDAILY_STORE=store,
        BENCH_RESULT=str(result_file),
        PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    args = [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        spider,
        "-a",
        "count=%d" % count,
        "-s",
        "SPIDER_MODULES=benchmarks.bench_spiders",
        "-s",
        "ITEM_PIPELINES=" + json.dumps(pipelines),
        "-s",
        "LOG_LEVEL=WARNING",
    ]
    server_cpu = cpu_seconds(server.proc.pid) if server else 0.0
    proc = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not result_file.exists():
        raise SystemExit("mode %s failed:\n%s" % (name, proc.stderr[-3000:]))
    result = json.loads(result_file.read_text())
    result["rate"] = result["items"] / result["seconds"]
    result["server_cpu"] = cpu_seconds(server.proc.pid) - server_cpu if server else None
    return result


def one_round(spider: str, count: int, tmp: Path) -> tuple[dict[str, dict], float]:
    full = {p: 100 * (i + 1) for i, p in enumerate(FULL)}
    store_pipeline = dict(full, **{"votersdaily.pipelines.EventStorePipeline": 800})
    naive = dict(full, **{"benchmarks.bench_spiders.NaivePutPipeline": 800})

    def run(mode: str, store: str, pipelines: dict, server: PouchDBServer | None = None) -> dict:
        return run_mode("%s-%s" % (spider, mode), store, pipelines, count, tmp, spider, server)

    results = {NONE: run("none", "sqlite:///%s" % (tmp / ("%s-none.db" % spider)), {})}
    emb = "sqlite:///%s" % (tmp / ("%s-emb.db" % spider))
    results[EMB] = run("embedded", emb, store_pipeline)
    results[EMB2] = run("embedded2", emb, store_pipeline)
    with fresh_server(tmp / ("%s-couch" % spider)) as server:
        results[COUCH] = run("couch", server.url, store_pipeline, server)
        catch_up = view_catch_up(server)
        results[COUCH2] = run("couch2", server.url, store_pipeline, server)
    with fresh_server(tmp / ("%s-naive" % spider)) as server:
        results[NAIVE] = run("naive", server.url, naive, server)
    items = results[NONE]["items"]
    assert all(r["items"] == items for r in results.values()), results
    assert results[COUCH]["inserted"] == items, results[COUCH]
    assert results[COUCH2]["unchanged"] == items, results[COUCH2]
    return results, catch_up


def view_catch_up(server: PouchDBServer) -> float:
    """Seconds PouchDB Server takes to bring the reschedule view up to date after a run."""
    store = open_store(server.url)
    start = time.perf_counter()
    store.query("vd_events", "by_parser_unique_key", limit=1, include_docs=False)
    return time.perf_counter() - start


def bulk_ceiling(docs: list[dict], workdir: Path) -> tuple[float, float]:
    """(documents/s, server CPU s) of PouchDB Server taking ``docs`` pre-built through _bulk_docs
    into a database with the events' design document, with nothing else running: the upper bound."""
    with fresh_server(workdir) as server:
        store = open_store(server.url)
        store.ensure_db("vd_events")
        store.bulk_docs("vd_events", [design_document("vd_events")])
        server_cpu = cpu_seconds(server.proc.pid)
        start = time.perf_counter()
        for i in range(0, len(docs), BULK):
            store.bulk_docs("vd_events", docs[i : i + BULK])
        elapsed = time.perf_counter() - start
        return len(docs) / elapsed, cpu_seconds(server.proc.pid) - server_cpu


def report(label: str, rounds: list[dict[str, dict]], catch_ups: list[float], ceilings: list[tuple]) -> None:
    n = len(rounds)
    items = rounds[0][NONE]["items"]
    print("\n== %s: %d events, %d round%s ==" % (label, items, n, "s" if n > 1 else ""))
    print(
        "%-26s %9s %17s %8s %9s %11s"
        % ("mode", "items/s", "(min - max)", "vs none", "vs naive", "server CPU")
    )
    median = statistics.median
    for mode in rounds[0]:
        rates = [r[mode]["rate"] for r in rounds]
        vs_none = median([r[mode]["rate"] / r[NONE]["rate"] for r in rounds])
        vs_naive = median([r[mode]["rate"] / r[NAIVE]["rate"] for r in rounds])
        cpu = [r[mode]["server_cpu"] for r in rounds if r[mode]["server_cpu"] is not None]
        print(
            "%-26s %9.0f %8.0f - %6.0f %7.2fx %8.1fx %11s"
            % (
                mode,
                median(rates),
                min(rates),
                max(rates),
                vs_none,
                vs_naive,
                "%.1f s" % median(cpu) if cpu else "-",
            )
        )
    of_none = [r[COUCH]["rate"] / r[NONE]["rate"] for r in rounds]
    of_naive = [r[COUCH]["rate"] / r[NAIVE]["rate"] for r in rounds]
    print(
        "full pipeline into PouchDB: %.0f%% of no-pipeline throughput (target >= 50%%; rounds %s), "
        "%.1fx the naive writer (target >= 10x; rounds %s)"
        % (
            100 * median(of_none),
            ", ".join("%.0f%%" % (100 * x) for x in of_none),
            median(of_naive),
            ", ".join("%.1fx" % x for x in of_naive),
        )
    )
    per_doc = median([r[COUCH]["server_cpu"] / r[COUCH]["items"] for r in rounds])
    per_put = median([r[NAIVE]["server_cpu"] / r[NAIVE]["items"] for r in rounds])
    busy = median([r[COUCH]["server_cpu"] / r[COUCH]["seconds"] for r in rounds])
    print(
        "PouchDB Server's CPU per document: %.2f ms through the full pipeline's _bulk_docs (server CPU s / run s: "
        "%.0f%%; its JavaScript runs on one thread), and %.2f ms per naive PUT (%.1fx as much)"
        % (1000 * per_doc, 100 * busy, 1000 * per_put, per_put / per_doc)
    )
    rate, cpu = median([c[0] for c in ceilings]), median([c[1] for c in ceilings])
    print(
        "PouchDB Server alone takes these documents, pre-built, %d per _bulk_docs into a database with the "
        "views' design document, at %.0f docs/s (server CPU %.1f s): the full pipeline reaches %.0f%% of that, "
        "the no-pipeline spider runs at %.1fx it"
        % (
            BULK,
            rate,
            cpu,
            100 * median([r[COUCH]["rate"] for r in rounds]) / rate,
            median([r[NONE]["rate"] for r in rounds]) / rate,
        )
    )
    first = median(
        [r[COUCH]["items"] / (r[COUCH]["seconds"] + c) for r, c in zip(rounds, catch_ups, strict=True)]
    )
    print(
        "deferred: PouchDB indexes a view when it is queried; by_parser_unique_key (read by the reschedule check "
        "and the iCal export) catches up on a run's documents at the next such query: %.1f s; the first run with "
        "it: %.0f items/s" % (median(catch_ups), first)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--spiders", default=",".join(SPIDERS), help="comma-separated, of: %s" % ", ".join(SPIDERS)
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for spider in args.spiders.split(","):
            rounds, catch_ups, ceilings = [], [], []
            for round_no in range(args.repeat):
                work = tmp / ("%s-%d" % (spider, round_no))
                work.mkdir()
                results, catch_up = one_round(spider, args.count, work)
                rounds.append(results)
                catch_ups.append(catch_up)
                emb = open_store("sqlite:///%s" % (work / ("%s-emb.db" % spider)))
                docs = [{k: v for k, v in doc.items() if k != "_rev"} for doc in emb.iter_docs("vd_events")]
                ceilings.append(bulk_ceiling(docs, work / "ceiling"))
            report(SPIDERS[spider], rounds, catch_ups, ceilings)


if __name__ == "__main__":
    main()
