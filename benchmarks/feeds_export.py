"""Feed and site throughput: N events read back through the views as ICS, as JSON and as the whole
static site, against the baseline of one unpaged view query returning every document, on the embedded
store and on a real PouchDB Server, in one run. Prints seconds, events/s and the ratios.

    python3 -m benchmarks.feeds_export [--count 5000] [--no-couch]
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from pathlib import Path

from tests.support.services import PouchDBServer
from votersdaily import schema
from votersdaily.feeds.export import export
from votersdaily.feeds.query import EventFilter, iter_events
from votersdaily.feeds.site import SiteConfig, build_site
from votersdaily.store import open_store
from votersdaily.store.upsert import upsert

KINDS = [
    ("Legislative", "House of Representatives", "b_house"),
    ("Legislative", "Senate", "b_senate"),
    ("Executive", "White House", "b_wh"),
    ("Judicial", "Supreme Court", "b_scotus"),
]


def events(count: int) -> list[dict]:
    docs = []
    for i in range(count):
        branch, entity, parser = KINDS[i % len(KINDS)]
        day, minute = divmod(i, 40)
        dt = "2026-%02d-%02dT%02d:%02d:00Z" % (
            1 + (day // 28) % 12,
            1 + day % 28,
            13 + minute // 10,
            (minute % 10) * 5,
        )
        all_day = i % 7 == 0
        if all_day:
            dt = dt[:11] + "00:00:00Z"
        doc = {
            "datetime": dt,
            "title": "Event %d of %s" % (i, parser),
            "description": "Description %d " % i * 5,
            "end_datetime": None,
            "branch": branch,
            "entity": entity,
            "source_url": "https://example.gov/%s/%d" % (parser, i),
            "source_text": "<item>%s</item>" % ("x" * 2000),
            "access_datetime": "2026-01-01T00:00:00Z",
            "parser_name": parser,
            "parser_version": "1.0",
            "event_url": None,
            "source_timezone": "America/New_York",
            "unique_key": str(i),
        }
        if all_day:
            doc["all_day"] = True
        if parser == "b_senate":
            doc["committee_code"] = "SS%02d00" % (i % 9)
        doc["_id"] = schema.event_id(dt, parser, doc["unique_key"])
        docs.append(doc)
    return docs


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(label: str, uri: str, docs: list[dict], site_dir: Path) -> list[tuple[str, float]]:
    store = open_store(uri)
    store.ensure_db(schema.EVENTS_DB)
    store.install_views(schema.EVENTS_DB)
    for i in range(0, len(docs), 1000):
        upsert(store, schema.EVENTS_DB, docs[i : i + 1000])
    store.query(schema.EVENTS_DB, "by_datetime", limit=1)  # build the CouchDB index outside the timings
    for view in (
        "by_branch_datetime",
        "by_entity_datetime",
        "by_parser_datetime",
        "by_committee_datetime",
        "by_parser_unique_key",
    ):
        store.query(schema.EVENTS_DB, view, limit=1)
    rows = [
        ("baseline: one unpaged view query", timed(lambda: store.query(schema.EVENTS_DB, "by_datetime"))),
        ("paged iteration (iter_events)", timed(lambda: sum(1 for _ in iter_events(store)))),
        ("export json", timed(lambda: export(store, "json", EventFilter(), io.BytesIO()))),
        ("export ics", timed(lambda: export(store, "ics", EventFilter(), io.BytesIO()))),
        ("site build (all pages and feeds)", timed(lambda: build_site(store, site_dir, SiteConfig()))),
    ]
    store.close()
    return [("%s | %s" % (label, name), seconds) for name, seconds in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--no-couch", action="store_true", help="embedded store only")
    args = parser.parse_args()
    docs = events(args.count)
    results = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        results += measure("embedded", "sqlite:///%s" % (tmp / "bench.db"), docs, tmp / "site-embedded")
        if not args.no_couch:
            server = PouchDBServer(tmp / "pouch").start()
            try:
                results += measure("PouchDB", server.url, docs, tmp / "site-couch")
            finally:
                server.stop()
    print("%d events" % args.count)
    print("%-58s %9s %11s %8s" % ("measurement", "seconds", "events/s", "ratio"))
    baseline = {}
    for name, seconds in results:
        backend = name.split(" | ")[0]
        baseline.setdefault(backend, seconds)
        print(
            "%-58s %9.3f %11.0f %7.1fx" % (name, seconds, args.count / seconds, seconds / baseline[backend])
        )


if __name__ == "__main__":
    main()
