"""Spool delivery: N spooled events delivered to a real PouchDB Server, against writing the same
events through the crawl's write path, in one run.

The events are the real house_floor spider's, parsed from its recordings (repeated, each repetition's
unique keys suffixed: ``tests/repeating_spiders.py``) and stored once in an embedded store; every
mode then writes them to a fresh PouchDB Server that already holds them at another datetime (so
every event is a reschedule, the case the reschedule view is read for). Modes:

* crawl write path: batches of VOTERSDAILY_BATCH_SIZE through upsert and one RescheduleTracker;
* spool, one tracker per delivery (now): the reschedule view is read once per delivery;
* spool, one tracker per 500 documents (before): what a spool file naming the stateless
  ``mark_superseded`` hook got from earlier versions; the view is re-read for every chunk (a
  delivery hook this benchmark adds to its spool's own registry).

    python3 -m benchmarks.spool_flush [--count 5000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.services import PouchDBServer, run_cli
from votersdaily import schema
from votersdaily.settings import VOTERSDAILY_BATCH_SIZE
from votersdaily.store import open_store
from votersdaily.store.base import StoreUnavailable
from votersdaily.store.hooks import AfterBatch, WriteHooks
from votersdaily.store.identity import store_identity
from votersdaily.store.reschedules import RescheduleTracker, mark_superseded
from votersdaily.store.spool import DELIVERY_HOOKS, Spool
from votersdaily.store.upsert import upsert

DB = schema.EVENTS_DB
IGNORE = schema.VOLATILE_EVENT_KEYS


def crawled_events(count: int, workdir: Path, shift: int) -> list[dict]:
    uri = "sqlite:///%s" % (workdir / ("events-%d.db" % shift))
    args = [sys.executable, "-m", "scrapy", "crawl", "repeated_house_floor", "-a", "count=%d" % count]
    args += ["-a", "shift_days=%d" % shift, "-s", "SPIDER_MODULES=tests.repeating_spiders"]
    proc = run_cli(args, uri)
    if proc.returncode:
        raise SystemExit(proc.stderr[-3000:])
    store = open_store(uri)
    try:
        return [{k: v for k, v in doc.items() if k != "_rev"} for doc in store.iter_docs(DB)]
    finally:
        store.close()


def crawl_write_path(store, docs: list[dict], _workdir: Path) -> None:
    tracker = RescheduleTracker()
    for start in range(0, len(docs), VOTERSDAILY_BATCH_SIZE):
        batch = docs[start : start + VOTERSDAILY_BATCH_SIZE]
        result = upsert(store, DB, batch, IGNORE, before_write=lambda d: tracker.before_write(store, DB, d))
        tracker.after_batch(store, DB, batch, result)


class MarkEachChunk(AfterBatch):
    """Hooks spooled as earlier versions did: a function, called for every delivered chunk."""

    durable = "reschedules, each chunk on its own"

    def __init__(self) -> None:
        super().__init__(mark_superseded)


#: The product's delivery hooks and the earlier way, for this benchmark's spools.
HOOKS = {**DELIVERY_HOOKS, MarkEachChunk.durable: MarkEachChunk}


def spool_delivery(hooks: WriteHooks) -> Callable:
    def deliver(store, docs: list[dict], workdir: Path) -> None:
        spool = Spool(workdir / "spool", HOOKS)
        spool.write(store_identity(store.display_uri), DB, docs, IGNORE, hooks)
        spool.deliver(store, DB)

    return deliver


def indexed(store) -> None:
    """Wait until PouchDB Server has indexed the preloaded events (before the clock starts)."""
    for _ in range(10):
        try:
            store.query(DB, "by_parser_unique_key", limit=1)
            return
        except StoreUnavailable:  # a read timeout while it indexes
            continue
    raise SystemExit("the reschedule view was not indexed in time")


MODES = {
    "crawl write path (baseline)": crawl_write_path,
    "spool flush, view read once per delivery (now)": spool_delivery(RescheduleTracker()),
    "spool flush, view read per 500 documents (before)": spool_delivery(MarkEachChunk()),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        earlier, docs = crawled_events(args.count, work, 0), crawled_events(args.count, work, 1)
        print("%d events (house_floor recordings), each rescheduled by one day" % len(docs))
        times = {}
        for i, (name, write) in enumerate(MODES.items()):
            server = PouchDBServer(work / ("pouch%d" % i)).start()
            try:
                store = open_store(server.url)
                store.ensure_db(DB)
                store.install_views(DB)
                upsert(store, DB, earlier)
                indexed(store)
                started = time.perf_counter()
                write(store, docs, work / ("mode%d" % i))
                times[name] = time.perf_counter() - started
                live = sum(1 for doc in store.iter_docs(DB) if "superseded_by" not in doc)
                assert live == len(docs), (name, live)  # every reschedule marked, in every mode
                store.close()
            finally:
                server.stop()
        base = times["crawl write path (baseline)"]
        print("%-52s %9s %14s" % ("mode", "seconds", "vs write path"))
        for name, seconds in times.items():
            print("%-52s %9.2f %13.2fx" % (name, seconds, seconds / base))


if __name__ == "__main__":
    main()
