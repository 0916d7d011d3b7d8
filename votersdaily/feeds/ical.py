"""Events as an RFC 5545 calendar, written one VEVENT at a time by the icalendar library.

The UID comes from ``parser_name`` + ``unique_key`` (not from ``_id``, which contains the datetime), so
a rescheduled event keeps its UID and calendar clients move it instead of showing it twice. All-day
events are DATE values; every other time is UTC.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from typing import Any, BinaryIO
from urllib.parse import quote

from icalendar import Calendar, Event

from votersdaily import __version__

from .query import is_cancelled

PRODID = "-//votersdaily//votersdaily %s//EN" % __version__
UID_DOMAIN = "votersdaily"
#: Serialised VEVENTs by (_id, _rev, SEQUENCE), shared by the feeds of one site build.
VeventCache = dict[tuple[str, str | None, int], bytes]


def event_uid(doc: dict[str, Any]) -> str:
    """Stable across reschedules: the source's identity of the event, not its time."""
    return "%s/%s@%s" % (
        quote(doc["parser_name"], safe=""),
        quote(str(doc["unique_key"]), safe="-_.~:"),
        UID_DOMAIN,
    )


def utc(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def local_date(value: str) -> date:
    """All-day events store ``T00:00:00Z`` of their source-local date: the date part is that date."""
    return date.fromisoformat(value[:10])


def rev_generation(doc: dict[str, Any]) -> int:
    rev = str(doc.get("_rev") or "1-")
    head = rev.split("-", 1)[0]
    return int(head) if head.isdigit() else 1


def to_vevent(doc: dict[str, Any], sequence: int = 0) -> Event:
    event = Event()
    event.add("uid", event_uid(doc))
    stamp = utc(doc.get("access_datetime") or doc["datetime"])
    event.add("dtstamp", stamp)
    event.add("last-modified", stamp)
    event.add("sequence", sequence)
    if doc.get("all_day"):
        start = local_date(doc["datetime"])
        event.add("dtstart", start)
        if doc.get("end_datetime"):
            # DTEND of a DATE event is exclusive: the day after the last day.
            event.add("dtend", max(local_date(doc["end_datetime"]), start) + timedelta(days=1))
    else:
        event.add("dtstart", utc(doc["datetime"]))
        if doc.get("end_datetime"):
            event.add("dtend", utc(doc["end_datetime"]))
    event.add("summary", doc.get("title") or "")
    description = doc.get("description") or ""
    if doc.get("source_url"):
        description = (description + "\n\n" if description else "") + "Source: " + doc["source_url"]
    if description:
        event.add("description", description)
    url = doc.get("event_url") or doc.get("source_url")
    if url:
        event.add("url", url)
    categories = [c for c in (doc.get("branch"), doc.get("entity")) if c]
    if categories:
        event.add("categories", categories)
    if isinstance(doc.get("location"), str) and doc["location"].strip():
        event.add("location", doc["location"])
    event.add("comment", "%s %s" % (doc.get("parser_name", ""), doc.get("parser_version", "")))
    event.add("status", "CANCELLED" if is_cancelled(doc) else "CONFIRMED")
    return event


def calendar_head(name: str) -> bytes:
    cal = Calendar()
    cal.add("prodid", PRODID)
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    cal.add("method", "PUBLISH")
    cal.add("x-wr-calname", name)
    text = cal.to_ical()
    end = text.rindex(b"END:VCALENDAR")
    return text[:end]


def write_ics(
    events: Iterable[tuple[dict[str, Any], int]],
    out: BinaryIO,
    name: str = "votersdaily",
    cache: VeventCache | None = None,
) -> int:
    """Write a VCALENDAR of ``(doc, earlier_versions)`` pairs to ``out``; returns the event count.

    ``earlier_versions`` counts the superseded documents of the event: with the revision number it
    makes SEQUENCE grow on every change, as RFC 5545 asks of an updated event. ``cache`` keeps the
    serialised VEVENTs for the next feed (the site writes each event into several feeds).
    """
    out.write(calendar_head(name))
    count = 0
    for doc, earlier in events:
        sequence = rev_generation(doc) - 1 + earlier
        key = (doc["_id"], doc.get("_rev"), sequence)
        text = cache.get(key) if cache is not None else None
        if text is None:
            text = to_vevent(doc, sequence).to_ical()
            if cache is not None:
                cache[key] = text
        out.write(text)
        count += 1
    out.write(b"END:VCALENDAR\r\n")
    return count
