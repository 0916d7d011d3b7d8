"""Parsing helpers shared by the Congress spiders (House Clerk, docs.house.gov, Senate LIS).

Only what more than one Congress source needs lives here: the Congress/session arithmetic, integer
fields, Eastern timestamps turned into stored datetimes, and the docs.house.gov
``<files>``/committee blocks.
"""

from __future__ import annotations

from datetime import date, datetime, time
from typing import Any, overload

from lxml import etree
from w3lib.url import safe_url_string

from votersdaily.datetimes import get_zone, normalise

from .eastern import EASTERN, parse_local
from .xml import text_of

#: The first Congress met in 1789; each Congress lasts two years, one session each.
FIRST_CONGRESS_YEAR = 1789


def to_int(text: str | None) -> int | None:
    """``"00659"`` → 659; anything that is not a whole number (``""``, ``"2nd"``) → None."""
    text = (text or "").strip()
    return int(text) if text.isdigit() else None


def congress_session(year: int) -> tuple[int, int]:
    """The Congress and regular session sitting in ``year`` (2026 → (119, 2))."""
    offset = year - FIRST_CONGRESS_YEAR
    return offset // 2 + 1, offset % 2 + 1


#: Since the 20th amendment (1935) a Congress's term, and by default each regular session, begins at
#: noon on 3 January: (month, day, hour).
TERM_START = (1, 3, 12)


def sitting_year(when: datetime) -> int:
    """The year whose regular session sits at the Eastern wall time ``when`` by the calendar: until
    noon on 3 January, the previous year's."""
    return when.year - 1 if (when.month, when.day, when.hour) < TERM_START else when.year


def end_of_day(when: datetime | date) -> datetime:
    """``when`` itself, or for a date alone the last instant of that day (a date-only event counts as
    the end of its day)."""
    return when if isinstance(when, datetime) else datetime.combine(when, time.max)


def sitting_on(when: datetime | date) -> tuple[int, int]:
    """The (Congress, regular session) in session at the Eastern wall time ``when`` by the calendar
    of the 20th amendment (noon on 3 January). A date alone counts as the end of its day: what is
    dated 3 January belongs to the new Congress, which has convened by then. Sources that name
    their Congress and session (the floor summary, a roll call, a committee meeting) say better. An
    aware datetime (a feed's UTC stamp) is read at its Eastern wall time."""
    if isinstance(when, datetime) and when.tzinfo is not None:
        when = when.astimezone(get_zone(EASTERN)).replace(tzinfo=None)
    return congress_session(sitting_year(end_of_day(when)))


def session_year(congress: int, session: int) -> int:
    """The year a regular session begins in ((119, 2) → 2026)."""
    return FIRST_CONGRESS_YEAR + 2 * (congress - 1) + session - 1


def previous_session(congress: int, session: int) -> tuple[int, int]:
    """The regular session before ``(congress, session)``; a Congress has had two since 1943."""
    return (congress, session - 1) if session > 1 else (congress - 1, 2)


@overload
def stored_utc(value: datetime | date) -> str: ...
@overload
def stored_utc(value: None) -> None: ...
def stored_utc(value: datetime | date | None) -> str | None:
    """An Eastern wall-clock datetime (or an all-day date) in the stored UTC form, as the pipeline
    stores ``datetime``: for the datetimes of ad hoc keys."""
    return normalise(value, EASTERN).iso if value is not None else None


def eastern_iso(text: str, *formats: str) -> str | None:
    """An Eastern wall-clock stamp of an ad hoc key (``update-date``…) as stored UTC; None if empty."""
    if not (text or "").strip():
        return None
    return stored_utc(parse_local(text, *formats))


def document_url(raw: str | None) -> str:
    """A document link as a fetchable URL: docs.house.gov writes raw spaces and brackets."""
    raw = (raw or "").strip()
    return safe_url_string(raw) if raw else ""


def docs_house_files(element: etree._Element | None) -> list[dict[str, Any]]:
    """The ``<files><file doc-url doc-type …/>`` links of a docs.house.gov item."""
    if element is None:
        return []
    return [
        {
            "url": document_url(f.get("doc-url")),
            "doc_type": f.get("doc-type") or "",
            "add_date": eastern_iso(f.get("add-date") or "", *DOCS_HOUSE_STAMPS),
            "publish_date": eastern_iso(f.get("publish-date") or "", *DOCS_HOUSE_STAMPS),
        }
        for f in element.iterfind("files/file")
    ]


#: docs.house.gov stamps: ``2026-09-08T13:05:07.540`` (milliseconds optional), Eastern.
DOCS_HOUSE_STAMPS = ("%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S")


def docs_house_updates(element: etree._Element) -> list[dict[str, Any]]:
    """The ``<updates><update-date>`` history of a docs.house.gov item, with its notes."""
    updates = []
    for update in element.iterfind("updates/update-date"):
        notes = update.find("explanatory-notes")
        updates.append(
            {
                "date": eastern_iso(update.get("date") or "", *DOCS_HOUSE_STAMPS),
                "publish_date": eastern_iso(update.get("publish-date") or "", *DOCS_HOUSE_STAMPS),
                "doc_modified": (notes.get("doc-modified") == "True") if notes is not None else None,
                "note": text_of(notes),
            }
        )
    return updates
