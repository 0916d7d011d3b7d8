"""Event and run-log documents for the feeds tests, written through the foundation's own write path.

These are hand-made documents of the project's schema (docs/events.md §2–3), not a source's format; the
tests' expected values are the values written here.
"""

from __future__ import annotations

from votersdaily import schema
from votersdaily.store.reschedules import mark_superseded
from votersdaily.store.upsert import upsert


def event(datetime: str, parser: str, key: str, **extra) -> dict:
    doc = {
        "datetime": datetime,
        "title": "%s %s" % (parser, key),
        "description": None,
        "end_datetime": None,
        "branch": "Legislative",
        "entity": "Senate",
        "source_url": "https://example.gov/%s/%s.xml" % (parser, key),
        "source_text": "<event id='%s'>SECRET-SOURCE-TEXT</event>" % key,
        "access_datetime": "2026-09-01T12:00:00Z",
        "parser_name": parser,
        "parser_version": "1.0",
        "event_url": None,
        "source_timezone": "America/New_York",
        "unique_key": key,
    }
    doc.update(extra)
    schema.validate_event(doc)
    doc["_id"] = schema.event_id(doc["datetime"], parser, key)
    return doc


VOTE = event(
    "2026-09-16T23:05:00Z",
    "t_votes",
    "119-2-314",
    entity="House of Representatives",
    title="Roll Call 314: On Passage",
    description="Retire, through; Ownership Act",
    event_url="https://clerk.example.gov/Votes/2026314",
)
HEARING_ALL_DAY = event(
    "2026-09-17T00:00:00Z",
    "t_hearings",
    "h1",
    all_day=True,
    end_datetime="2026-09-19T00:00:00Z",
    committee_code="SSFR00",
    title="Foreign Relations conference",
)
WHITE_HOUSE = event(
    "2026-09-15T14:00:00Z",
    "t_wh",
    "p51617",
    branch="Executive",
    entity="White House",
    title="Executive Order on Things",
    description="",
)
MOVED_OLD = event(
    "2026-09-20T15:00:00Z", "t_hearings", "h2", committee_code="SSFR00", title="Nominations hearing"
)
MOVED_NEW = dict(
    MOVED_OLD,
    datetime="2026-09-22T15:00:00Z",
    _id=schema.event_id("2026-09-22T15:00:00Z", "t_hearings", "h2"),
)
CANCELLED = event(
    "2026-09-18T14:30:00Z",
    "t_hearings",
    "h3",
    committee_code="SSJU00",
    meeting_status="Canceled",
    title="Judiciary markup",
)
ORDER = event(
    "2026-10-05T00:00:00Z",
    "t_orders",
    "100526zor",
    branch="Judicial",
    entity="Supreme Court",
    all_day=True,
    title="Order List",
)

LIVE = [VOTE, HEARING_ALL_DAY, WHITE_HOUSE, MOVED_NEW, CANCELLED, ORDER]


def write_events(store, docs: list[dict]):
    """One batch through the event store's write path: upsert, then the reschedule hook."""
    result = upsert(store, schema.EVENTS_DB, docs)
    mark_superseded(store, schema.EVENTS_DB, docs, result)
    return result


def load_events(store) -> None:
    """All events, then the reschedule of MOVED_OLD → MOVED_NEW the way the event pipeline does it."""
    store.ensure_db(schema.EVENTS_DB)
    store.install_views(schema.EVENTS_DB)
    write_events(store, [VOTE, HEARING_ALL_DAY, WHITE_HOUSE, MOVED_OLD, CANCELLED, ORDER])
    result = write_events(store, [MOVED_NEW])
    assert result.superseded == [MOVED_OLD["_id"]]


def run_log(parser: str, when: str, items: int, result: str = "success", **extra) -> dict:
    doc = {
        "parser_name": parser,
        "parser_version": "1.0",
        "parser_runtime": 1.5,
        "source_url": "https://example.gov/%s" % parser,
        "source_text": "",
        "access_datetime": when,
        "insert_count": items,
        "updated_count": 0,
        "unchanged_count": 0,
        "items_scraped": items,
        "dropped_count": 0,
        "result": result,
        "finish_reason": "finished",
        "empty": result == "success" and items == 0,
    }
    doc.update(extra)
    doc["_id"] = schema.log_id(when, parser, result)
    return doc


def load_logs(store, docs: list[dict]) -> None:
    store.ensure_db(schema.LOG_DB)
    store.install_views(schema.LOG_DB)
    answers = store.bulk_docs(schema.LOG_DB, docs)
    assert all("error" not in a for a in answers), answers
