"""``export ics|json [filters]``: a feed of events on standard output (docs/cli.md)."""

from __future__ import annotations

import sys

from ..feeds.export import FORMATS, export
from ..feeds.query import EventFilter, FeedQueryError
from ..feeds.sanitise import FeedReport
from ..store import open_store


def register(sub) -> None:
    parser = sub.add_parser("export", help="write an iCalendar or JSON feed of events to standard output")
    parser.add_argument("format", choices=FORMATS)
    parser.add_argument("--branch", help="only this branch (Executive, Legislative, Judicial, Other)")
    parser.add_argument("--entity", help='only this entity, e.g. "House of Representatives"')
    parser.add_argument("--parser", help="only events of this spider (parser_name)")
    parser.add_argument("--committee", help="only this committee (committee_code, e.g. SSFR00)")
    parser.add_argument("--since", help="from this date (YYYY-MM-DD, UTC) or datetime on")
    parser.add_argument("--until", help="up to this date (inclusive) or datetime")
    parser.set_defaults(func=run)


def run(args) -> int:
    flt = EventFilter(
        branch=args.branch,
        entity=args.entity,
        parser=args.parser,
        committee=args.committee,
        since=args.since,
        until=args.until,
    )
    try:
        flt.key_range()
    except FeedQueryError as exc:
        print("export: %s" % exc, file=sys.stderr)
        return 2
    store = open_store()
    report = FeedReport()
    try:
        sys.stdout.flush()
        export(store, args.format, flt, sys.stdout.buffer, report)
        sys.stdout.buffer.flush()
    finally:
        store.close()
    for line in report.lines():
        print("export: %s" % line, file=sys.stderr)
    return 0
