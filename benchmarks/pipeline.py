"""Event pipeline throughput: the full pipeline into the embedded store against the same spider with
``ITEM_PIPELINES={}``, both in one run, archive on in both.

Default: ``bench_federal_register`` (the real federal_register spider on its two recordings, repeated:
20,000 documents). The modes of a round run one after another and the rounds are interleaved, so a
round's modes share the host's conditions; each round's ratio is taken within the round and the best
and median are printed with every round's value and the load average, and beside them the ratio of
the two modes' best rates (a round whose baseline alone ran slow cannot lift it). Besides items/s each mode
shows its CPU seconds (the process, the reactor thread, the store's writer thread, the garbage
collector) and how long the writers held the engine back: where the time goes.

``--reparse N`` does the same for a reparse of archived history (``-a reparse=archive``): a crawl of N
events (not timed) fills an archive and a store; then the reparse runs through the full pipeline into
that store (every event found unchanged; with ``--new-version`` a new parser version, so every event is
updated) against the same reparse with ``ITEM_PIPELINES={}`` into an empty store (with the events in
it, the reparse would mark every one withdrawn). Both are timed from the spider's opening to its
closing, the reparse's own reads and checks included.

``--reparse-stages`` adds, each round, the reparse through the three stages before the store
pipeline alone (no store pipeline), into an empty store and into the filled one: what the stages,
the reparse's reads of the stored events and the store pipeline each add to the bare reparse.

``--stores embedded,pouchdb`` adds the PouchDB Server modes on ``--spiders`` (full pipeline into a
fresh server, a re-run, a naive one-PUT-per-item writer, the server's own ceiling for the documents,
its deferred view indexing): the figures of the CouchDB write path.

    flock /tmp/bench.lock python3 -m benchmarks.pipeline [--count 20000] [--repeat 5] [--reparse 200000 [--reparse-stages]]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.services import REPO, PouchDBServer
from votersdaily import settings
from votersdaily.store import open_store
from votersdaily.store.views import design_document

#: The full pipeline: the project's default (votersdaily/settings.py).
PIPELINES = dict(settings.ITEM_PIPELINES)
#: The stages before the store, then a naive writer in the store's place.
STAGES = (
    "votersdaily.pipelines.NormaliseDatetimesPipeline",
    "votersdaily.pipelines.ValidateEventPipeline",
    "votersdaily.pipelines.EventIdPipeline",
)
NAIVE = {path: 100 * (i + 1) for i, path in enumerate(STAGES)} | {
    "benchmarks.bench_spiders.NaivePutPipeline": 800
}
SPIDERS = {
    "bench_federal_register": "real federal_register spider on its recordings",
    "bench_house_floor": "real house_floor spider on its recordings",
    "bench_events": "synthetic rows (near-zero spider cost)",
}
#: Documents per _bulk_docs in the PouchDB ceiling measurement (the pipeline's VOTERSDAILY_BATCH_SIZE).
BULK = 1000


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux)."""
    fields = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load() -> str:
    return "%.1f" % os.getloadavg()[0]


@contextmanager
def fresh_server(workdir: Path) -> Iterator[PouchDBServer]:
    server = PouchDBServer(workdir, in_memory=False).start()
    try:
        yield server
    finally:
        server.stop()


def crawl(
    name: str,
    spider: str,
    store: str,
    pipelines: dict,
    work: Path,
    archive: Path,
    args: list[str],
    server: PouchDBServer | None = None,
) -> dict:
    """One ``scrapy crawl`` of a benchmark spider; its figures (benchmarks/bench_spiders.py:BenchResult)."""
    result_file = work / ("%s.json" % name)
    env = dict(
        os.environ,
        VOTERSDAILY_STORE=store,
        VOTERSDAILY_ARCHIVE_DIR=str(archive),
        VOTERSDAILY_SPOOL_DIR=str(work / "spool"),
        BENCH_RESULT=str(result_file),
        PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    command = [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        spider,
        *args,
        "-s",
        "SPIDER_MODULES=benchmarks.bench_spiders",
        "-s",
        "ITEM_PIPELINES=" + json.dumps(pipelines),
        "-s",
        "LOG_LEVEL=WARNING",
    ]
    server_cpu = cpu_seconds(server.proc.pid) if server else 0.0
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0 or not result_file.exists():
        raise SystemExit("mode %s failed:\n%s" % (name, proc.stderr[-3000:]))
    result = json.loads(result_file.read_text())
    result["rate"] = result["items"] / result["seconds"]
    # The whole process tree, start-up included (the crawl and the store's process): what a loaded
    # machine has to find CPU for, whatever the wall clock says.
    result["tree_cpu"] = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    result["server_cpu"] = cpu_seconds(server.proc.pid) - server_cpu if server else None
    result["load"] = load()
    return result


def where(result: dict) -> str:
    """Where a mode's time went: CPU seconds of the process, its threads and the collector."""
    threads = result["thread_cpu"]
    writer = sum(v for k, v in threads.items() if k.startswith("PoolThread") and not k.endswith(" sys"))
    return (
        "process tree cpu %.1f s (start-up included); timed cpu %.1f s: reactor %.1f, store writer %.1f, "
        "archive %.1f, gc %.1f; engine held %.1f s"
    ) % (
        result["tree_cpu"],
        result["cpu"],
        result["reactor_cpu"],
        writer,
        threads.get("archive-writer", 0.0),
        sum(result["gc"]["seconds"]),
        result["paused"][1],
    )


def report_ratio(title: str, rounds: list[dict[str, dict]], base: str, full: str, target: float) -> None:
    ratios = [r[full]["rate"] / r[base]["rate"] for r in rounds]
    print("\n== %s: %d items, %d rounds ==" % (title, rounds[0][base]["items"], len(rounds)))
    for mode in rounds[0]:
        rates = [r[mode]["rate"] for r in rounds]
        print(
            "%-34s %7.0f items/s best, %7.0f median  [%s]"
            % (mode, max(rates), statistics.median(rates), " ".join("%.0f" % x for x in rates))
        )
        best = max(rounds, key=lambda r: r[mode]["rate"])[mode]
        print("%-34s %s" % ("", where(best)))
    print(
        "ratio %s / %s: best %.2f, median %.2f, best rates %.2f (target >= %.2f); rounds %s; "
        "load average at each: %s"
        % (
            full,
            base,
            max(ratios),
            statistics.median(ratios),
            max(r[full]["rate"] for r in rounds) / max(r[base]["rate"] for r in rounds),
            target,
            " ".join("%.2f" % x for x in ratios),
            " ".join("%s/%s" % (r[base]["load"], r[full]["load"]) for r in rounds),
        )
    )


# -- the crawl: 20,000 documents into the embedded store ------------------------------------------


def embedded_rounds(spider: str, count: int, repeat: int, tmp: Path) -> list[dict[str, dict]]:
    rounds = []
    for round_no in range(repeat):
        work = tmp / ("%s-%d" % (spider, round_no))
        work.mkdir()
        args = ["-a", "count=%d" % count]
        results = {}
        for mode, pipelines in (("no pipelines", {}), ("full pipeline -> embedded", PIPELINES)):
            store = "sqlite:///%s" % (work / ("%s.db" % mode.split()[0]))
            results[mode] = crawl(mode.split()[0], spider, store, pipelines, work, work / "archive", args)
        rounds.append(results)
        shutil.rmtree(work)
    return rounds


# -- the reparse of archived history -----------------------------------------------------------------


def reparse_rounds(
    count: int, repeat: int, new_version: bool, tmp: Path, stages: bool = False
) -> list[dict[str, dict]]:
    """A crawl of ``count`` events fills an archive and a store (not timed); then the rounds. With
    ``stages``, each round also runs the three stages before the store pipeline (no store pipeline)
    into an empty store and into the filled one: where the full run's time goes."""
    spider = "bench_federal_register"
    work = tmp / "reparse"
    work.mkdir()
    archive = work / "archive"
    history = work / "history.db"
    print("filling the archive: %d events of %s (not timed) ..." % (count, spider), flush=True)
    filled = crawl(
        "fill", spider, "sqlite:///%s" % history, PIPELINES, work, archive, ["-a", "count=%d" % count]
    )
    print("  %d events stored in %.0f s" % (filled["inserted"], filled["seconds"]))
    args = ["-a", "reparse=archive", "-a", "count=%d" % count]
    if new_version:
        args += ["-a", "version=2.0"]
    rounds = []
    for round_no in range(repeat):
        results = {}
        empty = work / ("empty-%d.db" % round_no)
        results["reparse, no pipelines"] = crawl(
            "reparse-none", spider, "sqlite:///%s" % empty, {}, work, archive, args
        )
        if stages:
            only_stages = {path: 100 * (i + 1) for i, path in enumerate(STAGES)}
            no_events = work / ("stages-empty-%d.db" % round_no)
            results["reparse, stages, empty store"] = crawl(
                "reparse-stages-empty", spider, "sqlite:///%s" % no_events, only_stages, work, archive, args
            )
            no_events.unlink()
            filled_copy = work / ("stages-%d.db" % round_no)
            shutil.copy(history, filled_copy)
            results["reparse, stages, filled store"] = crawl(
                "reparse-stages", spider, "sqlite:///%s" % filled_copy, only_stages, work, archive, args
            )
            filled_copy.unlink()
        # Every round reparses the same history: the store as the crawl left it.
        store = work / ("store-%d.db" % round_no)
        shutil.copy(history, store)
        results["reparse, full pipeline -> embedded"] = crawl(
            "reparse-full", spider, "sqlite:///%s" % store, PIPELINES, work, archive, args
        )
        full = results["reparse, full pipeline -> embedded"]
        expected = "updated" if new_version else "unchanged"
        if full[expected] != filled["inserted"]:
            raise SystemExit(
                "the reparse %s %d of %d events" % (expected, full[expected], filled["inserted"])
            )
        rounds.append(results)
        store.unlink()
        empty.unlink()
    return rounds


# -- PouchDB Server ------------------------------------------------------------------------------


def pouchdb_round(spider: str, count: int, tmp: Path) -> tuple[dict[str, dict], float, tuple]:
    work = tmp
    archive = tmp / "archive"
    args = ["-a", "count=%d" % count]
    results = {
        "no pipelines": crawl("none", spider, "sqlite:///%s" % (work / "none.db"), {}, work, archive, args)
    }
    with fresh_server(work / "couch") as server:
        results["full -> PouchDB"] = crawl(
            "couch", spider, server.url, PIPELINES, work, archive, args, server
        )
        catch_up = view_catch_up(server)
        results["full -> PouchDB, re-run"] = crawl(
            "couch2", spider, server.url, PIPELINES, work, archive, args, server
        )
        docs = [
            {k: v for k, v in doc.items() if k != "_rev"}
            for doc in open_store(server.url).iter_docs("vd_events")
        ]
    with fresh_server(work / "naive") as server:
        results["naive PUT -> PouchDB"] = crawl(
            "naive", spider, server.url, NAIVE, work, archive, args, server
        )
    assert results["full -> PouchDB, re-run"]["unchanged"] == results["full -> PouchDB"]["inserted"], results
    return results, catch_up, bulk_ceiling(docs, work / "ceiling")


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


def report_pouchdb(label: str, rounds: list[dict[str, dict]], catch_ups: list[float], ceilings: list) -> None:
    median = statistics.median
    print(
        "\n== PouchDB Server, %s: %d events, %d rounds =="
        % (label, rounds[0]["no pipelines"]["items"], len(rounds))
    )
    for mode in rounds[0]:
        rates = [r[mode]["rate"] for r in rounds]
        vs_none = median([r[mode]["rate"] / r["no pipelines"]["rate"] for r in rounds])
        vs_naive = median([r[mode]["rate"] / r["naive PUT -> PouchDB"]["rate"] for r in rounds])
        cpu = [r[mode]["server_cpu"] for r in rounds if r[mode]["server_cpu"] is not None]
        print(
            "%-26s %7.0f items/s median (%.0f - %.0f) %5.2fx none %6.1fx naive  server CPU %s"
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
    full = "full -> PouchDB"
    of_none = [r[full]["rate"] / r["no pipelines"]["rate"] for r in rounds]
    of_naive = [r[full]["rate"] / r["naive PUT -> PouchDB"]["rate"] for r in rounds]
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
    per_doc = median([r[full]["server_cpu"] / r[full]["items"] for r in rounds])
    per_put = median(
        [r["naive PUT -> PouchDB"]["server_cpu"] / r["naive PUT -> PouchDB"]["items"] for r in rounds]
    )
    print(
        "PouchDB Server's CPU per document: %.2f ms through the full pipeline's _bulk_docs, %.2f ms per naive "
        "PUT (%.1fx as much)" % (1000 * per_doc, 1000 * per_put, per_put / per_doc)
    )
    rate, cpu = median([c[0] for c in ceilings]), median([c[1] for c in ceilings])
    print(
        "PouchDB Server alone takes these documents, pre-built, %d per _bulk_docs into a database with the "
        "views' design document, at %.0f docs/s (server CPU %.1f s): the full pipeline reaches %.0f%% of that"
        % (BULK, rate, cpu, 100 * median([r[full]["rate"] for r in rounds]) / rate)
    )
    print(
        "deferred: PouchDB indexes a view when it is queried; by_parser_unique_key catches up on a run's "
        "documents at the next such query: %.1f s" % median(catch_ups)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=20000, help="events of the crawl")
    parser.add_argument("--repeat", type=int, default=5, help="rounds (each runs every mode once)")
    parser.add_argument(
        "--spiders", default="bench_federal_register", help="comma-separated, of: %s" % ", ".join(SPIDERS)
    )
    parser.add_argument("--stores", default="embedded", help="comma-separated: embedded, pouchdb")
    parser.add_argument(
        "--reparse", type=int, default=0, metavar="N", help="also a reparse of N archived events"
    )
    parser.add_argument("--reparse-only", action="store_true", help="only the reparse")
    parser.add_argument(
        "--reparse-stages",
        action="store_true",
        help="also the reparse through the stages alone, into an empty and a filled store",
    )
    parser.add_argument(
        "--new-version",
        action="store_true",
        help="the reparse's parser has a new version: every event updated",
    )
    args = parser.parse_args()
    print(
        "load average before: %.2f %.2f %.2f (%d CPUs)" % (*os.getloadavg(), os.cpu_count() or 0), flush=True
    )
    stores = args.stores.split(",")
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for spider in [] if args.reparse_only else args.spiders.split(","):
            if "embedded" in stores:
                rounds = embedded_rounds(spider, args.count, args.repeat, tmp)
                report_ratio(
                    "%s (%s), archive on" % (spider, SPIDERS[spider]),
                    rounds,
                    "no pipelines",
                    "full pipeline -> embedded",
                    0.8,
                )
            if "pouchdb" in stores:
                rounds, catch_ups, ceilings = [], [], []
                for round_no in range(args.repeat):
                    work = tmp / ("%s-couch-%d" % (spider, round_no))
                    work.mkdir()
                    results, catch_up, ceiling = pouchdb_round(spider, args.count, work)
                    rounds.append(results)
                    catch_ups.append(catch_up)
                    ceilings.append(ceiling)
                    shutil.rmtree(work)
                report_pouchdb(SPIDERS[spider], rounds, catch_ups, ceilings)
        if args.reparse:
            rounds = reparse_rounds(args.reparse, args.repeat, args.new_version, tmp, args.reparse_stages)
            report_ratio(
                "reparse of archived history (%s)"
                % (
                    "a new parser version: every event updated"
                    if args.new_version
                    else "every event unchanged"
                ),
                rounds,
                "reparse, no pipelines",
                "reparse, full pipeline -> embedded",
                0.8,
            )


if __name__ == "__main__":
    main()
