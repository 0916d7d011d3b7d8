"""``export ics|json [filters]``: a feed of events on standard output (docs/cli.md)."""

from __future__ import annotations

import argparse
from datetime import date
from typing import TYPE_CHECKING

from votersdaily import schema
from votersdaily.feeds.export import FORMATS, export
from votersdaily.feeds.query import EventFilter, FeedQueryError, bound
from votersdaily.feeds.sanitise import FeedReport
from votersdaily.sources.canonical_ids import BILL_TYPE_NAMES, bill_id_of, docket_of
from votersdaily.store.check import checked_store, require_database

from . import fail, say
from .options import one_of
from .standard_output import staged_stdout

if TYPE_CHECKING:
    from votersdaily.store.base import Store


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("export", help="write an iCalendar or JSON feed of events to standard output")
    parser.add_argument("format", choices=FORMATS)
    parser.add_argument(
        "--branch",
        type=one_of(schema.BRANCHES, "branch"),
        help="only this branch (%s; any case)" % ", ".join(schema.BRANCHES),
    )
    parser.add_argument(
        "--entity",
        type=one_of(schema.ENTITIES, "entity"),
        help='only this entity, e.g. "House of Representatives"',
    )
    parser.add_argument("--parser", help="only events of this spider (parser_name)")
    parser.add_argument("--committee", help="only this committee (committee_code, e.g. SSFR00)")
    parser.add_argument(
        "--bill",
        type=bill_argument,
        help="only the events that name this bill or resolution, across sources (e.g. hr1234-119)",
    )
    parser.add_argument(
        "--docket",
        type=docket_argument,
        help="only the events of this Supreme Court docket (e.g. 24-123, 23A456, 22O141)",
    )
    parser.add_argument(
        "--since", type=date_or_datetime, help="from this date (YYYY-MM-DD, UTC) or datetime on"
    )
    parser.add_argument("--until", type=date_or_datetime, help="up to this date (inclusive) or datetime")
    parser.set_defaults(func=run)


def bill_argument(value: str) -> str:
    """An argparse type: a canonical bill id, in any case."""
    bill = bill_id_of(value)
    if bill is None:
        raise argparse.ArgumentTypeError(
            "not a bill id: %r (expected <type><number>-<congress>, e.g. hr1234-119; types: %s)"
            % (value, ", ".join(BILL_TYPE_NAMES))
        )
    return bill


def docket_argument(value: str) -> str:
    """An argparse type: one Supreme Court docket, as the Court writes it ("23a456", "No. 141,
    Orig." are read as 23A456, 22O141)."""
    docket = docket_of(value)
    if docket is None:
        raise argparse.ArgumentTypeError(
            "not a Supreme Court docket: %r (expected e.g. 24-123, an application 23A456 or an original "
            "action 22O141)" % value
        )
    return docket


def date_or_datetime(value: str) -> str:
    """An argparse type: a real calendar date (``2026-02-30`` is not one) or an ISO datetime."""
    try:
        if not value.strip():  # `--since "$FROM"` with FROM unset: not "every date"
            raise ValueError(value)
        if len(value.strip()) == 10:
            date.fromisoformat(value.strip())
        bound(value, end=False)
    except (ValueError, FeedQueryError):
        raise argparse.ArgumentTypeError(
            "not a date or datetime: %r (YYYY-MM-DD or ISO 8601)" % value
        ) from None
    return value


def known_parsers() -> list[str]:
    from votersdaily.plumbing.environment import project_settings

    from .crawl import event_spiders

    return sorted(event_spiders(project_settings()))


def stored_committees(store: Store) -> list[str]:
    """The committee codes stored events carry (the ``by_committee_datetime`` view's keys)."""
    from votersdaily.feeds.query import distinct_leading_keys

    return sorted(
        str(code)
        for code in distinct_leading_keys(store, schema.EVENTS_DB, "by_committee_datetime")
        if isinstance(code, str)
    )


def run(args: argparse.Namespace) -> int:
    if args.parser is not None and args.parser not in (parsers := known_parsers()):
        return fail("unknown parser %r; known: %s" % (args.parser, ", ".join(parsers)))
    store = checked_store(must_exist=True)
    require_database(store, schema.EVENTS_DB)
    try:
        committee = args.committee
        if committee is not None:
            # Committees are whatever the sources name: known ones are those stored events carry.
            codes = stored_committees(store)
            committee = {c.casefold(): c for c in codes}.get(committee.strip().casefold())
            if committee is None:
                return fail(
                    "no events of committee %r in %s; committees with events: %s"
                    % (args.committee, store.display_uri, ", ".join(codes) or "none")
                )
        flt = EventFilter(
            branch=args.branch,
            entity=args.entity,
            parser=args.parser,
            committee=committee,
            bill=args.bill,
            docket=args.docket,
            since=args.since,
            until=args.until,
        )
        try:
            flt.key_range()
        except FeedQueryError as exc:
            return fail(str(exc))
        report = FeedReport()
        with staged_stdout() as out:
            count = export(store, args.format, flt, out, report)
    finally:
        store.close()
    for line in report.lines():
        say(line)
    if count == 0 and (args.bill or args.docket):
        say("no stored event names %s: the feed is empty" % (args.bill or args.docket))
    return 0
