"""Selecting events and run logs through the views: filters → the most selective view → key range.

Rows are fetched a page at a time with CouchDB's own pagination rule (restart at the last key and
skip the rows of that key already seen), so a feed of any size streams in constant memory on both
backends.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from votersdaily import schema
from votersdaily.schema import is_live
from votersdaily.store.base import Store, StoreError, StoreUnavailable

from .sanitise import FeedReport, feed_event, newest

if TYPE_CHECKING:
    from votersdaily.store.base import Row

#: CouchDB's ``{}``: collates after every string, the high end of a key prefix.
HIGH: dict[str, Any] = {}
PAGE_SIZE = 500

DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
CANCELLED_RE = re.compile(r"cancel", re.I)


class FeedQueryError(ValueError):
    """A filter value cannot be turned into a query (e.g. a malformed --since date)."""


def bound(value: str | None, *, end: bool) -> str | None:
    """A ``--since``/``--until`` value as a stored datetime: dates cover their whole (UTC) day."""
    if not value:
        return None
    value = value.strip()
    if DATE_RE.match(value):
        return value + ("T23:59:59Z" if end else "T00:00:00Z")
    from votersdaily.datetimes import normalise

    try:
        return normalise(value, "UTC").iso
    except (ValueError, TypeError, OverflowError) as exc:
        raise FeedQueryError("not a date or datetime: %r (%s)" % (value, exc)) from None


#: Each filter: (EventFilter field, document key, view keyed by it), most selective first. A key
#: that holds a list (``bill_ids``, ``dockets``) matches when the value is one of its members.
FILTERS = (
    ("bill", "bill_ids", "by_bill"),
    ("docket", "dockets", "by_docket"),
    ("committee", "committee_code", "by_committee_datetime"),
    ("parser", "parser_name", "by_parser_datetime"),
    ("entity", "entity", "by_entity_datetime"),
    ("branch", "branch", "by_branch_datetime"),
)

#: The views of the list keys, which emit a row per member.
LIST_VIEWS = frozenset({"by_bill", "by_docket"})


@dataclass(frozen=True)
class EventFilter:
    """The filters of ``export``; every one set must match."""

    branch: str | None = None
    entity: str | None = None
    parser: str | None = None
    committee: str | None = None
    #: One bill or resolution (``hr1234-119``) or Supreme Court docket (``24-123``): its events
    #: across sources and branches.
    bill: str | None = None
    docket: str | None = None
    since: str | None = None
    until: str | None = None
    #: Keep events an event of the same parser and unique key has replaced (reschedules).
    include_superseded: bool = False

    def values(self) -> dict[str, str]:
        """Document key → wanted value, most selective first."""
        return {key: getattr(self, name) for name, key, _ in FILTERS if getattr(self, name)}

    def view(self) -> tuple[str, str | None]:
        """The view to read and the value of its leading key component (None: ``by_datetime``)."""
        for name, _, view in FILTERS:
            if getattr(self, name):
                return view, getattr(self, name)
        return "by_datetime", None

    def key_range(self) -> tuple[Any, Any]:
        since, until = bound(self.since, end=False), bound(self.until, end=True)
        if since and until and until < since:
            raise FeedQueryError("--until %s is before --since %s" % (self.until, self.since))
        _, prefix = self.view()
        if prefix is None:
            return since, until
        return [prefix, since or ""], [prefix, until or HIGH]

    def matches(self, doc: dict[str, Any]) -> bool:
        if not self.include_superseded and not is_live(doc):
            return False
        for key, value in self.values().items():
            found = doc.get(key)
            if not (found == value or (type(found) is list and value in found)):
                return False
        return True


def is_cancelled(doc: dict[str, Any]) -> bool:
    """The source itself says the event was cancelled (ad hoc ``cancelled`` or a status key)."""
    if doc.get("cancelled") is True:
        return True
    return any(
        isinstance(doc.get(k), str) and CANCELLED_RE.search(doc[k]) for k in ("status", "meeting_status")
    )


def iter_rows(
    store: Store,
    db: str,
    view: str,
    startkey: Any = None,
    endkey: Any = None,
    *,
    descending: bool = False,
    include_docs: bool = True,
    page: int = PAGE_SIZE,
) -> Iterator[Row]:
    """Every row of ``view`` between the keys, fetched ``page`` rows at a time."""
    if not store.has_db(db):
        return
    skip = 0
    while True:
        try:
            rows = store.query(
                db,
                view,
                startkey=startkey,
                endkey=endkey,
                descending=descending,
                limit=page,
                skip=skip,
                include_docs=include_docs,
            )
        except StoreUnavailable:
            raise
        except StoreError as exc:
            raise StoreError(
                "%s (are the views installed? `python -m votersdaily views push`)" % exc
            ) from exc
        yield from rows
        if len(rows) < page:
            return
        last = rows[-1].key
        # Restart at the last key; skip the rows with that key already returned.
        skip = sum(1 for r in rows if r.key == last) + (skip if last == startkey else 0)
        startkey = last


def iter_events(
    store: Store, flt: EventFilter = EventFilter(), report: FeedReport | None = None
) -> Iterator[dict[str, Any]]:
    """Event documents matching ``flt`` in datetime order (the order of every datetime view), as
    a feed may show them (see :func:`.sanitise.feed_event`; ``report`` collects what was not)."""
    report = FeedReport() if report is None else report
    view, _ = flt.view()
    low, high = flt.key_range()
    # A list key may name one id twice: the event is shown once (one bill's events: a small set).
    seen: set[str] = set()
    for row in iter_rows(store, schema.EVENTS_DB, view, low, high):
        if row.doc is None or row.id in seen:
            continue
        if view in LIST_VIEWS:
            seen.add(row.id)
        doc = feed_event(row.doc, report)
        if doc is not None and flt.matches(doc):
            yield doc


def distinct_leading_keys(store: Store, db: str, view: str) -> list[str]:
    """The distinct first key components of a compound-key view, one short query per value."""
    if not store.has_db(db):
        return []
    found: list[str] = []
    startkey: Any = None
    while True:
        rows = store.query(db, view, startkey=startkey, limit=1, include_docs=False)
        if not rows:
            return found
        value = rows[0].key[0]
        found.append(value)
        startkey = [value, HIGH]


def siblings(store: Store, docs: list[dict[str, Any]]) -> dict[str, set[str]]:
    """For each doc id, the ids of the other documents of its parser_name and unique_key."""
    keyed: dict[tuple[str, str], list[str]] = {}
    for doc in docs:
        keyed.setdefault((doc["parser_name"], doc["unique_key"]), []).append(doc["_id"])
    if not keyed:
        return {}
    rows = store.query(
        schema.EVENTS_DB, "by_parser_unique_key", keys=[list(k) for k in keyed], include_docs=False
    )
    found: dict[str, set[str]] = {doc["_id"]: set() for doc in docs}
    for row in rows:
        for current in keyed.get(tuple(row.key), ()):
            if row.id != current:
                found[current].add(row.id)
    return found


def superseded_by_newer(store: Store, docs: list[dict[str, Any]], others: dict[str, set[str]]) -> set[str]:
    """Ids of ``docs`` that a newer live document of the same event replaces (a key two racing
    runs or a lost write answer left with two live documents, until a crawl repairs it)."""
    wanted = {other for ids in others.values() for other in ids}
    if not wanted:
        return set()
    known = {doc["_id"]: doc for doc in docs}
    known.update(store.get_many(schema.EVENTS_DB, wanted - known.keys()))
    hidden = set()
    for doc in docs:
        for other_id in others.get(doc["_id"], ()):
            other = known.get(other_id)
            if (
                other is not None
                and is_live(other)
                and isinstance(other.get("datetime"), str)
                and schema.DATETIME_RE.match(other["datetime"])
                and newest(other) > newest(doc)
            ):
                hidden.add(doc["_id"])
                break
    return hidden
