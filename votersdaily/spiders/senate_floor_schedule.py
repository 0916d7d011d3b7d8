"""When the Senate next convenes, from senate.gov ``floor_schedule.json``.

One event per entry of ``floorProceedings`` (one convening), keyed by the convene date. The feed is
hand-made JSON: every value is a string, the offset key is misspelled ``coveneOffsetMinutes``, the
file starts with a blank line and mixes tabs and spaces. Which time is authoritative: the
``convene*`` fields are Eastern wall-clock time (what the Senate announces), and are converted with
the DST rules of America/New_York. ``lastUpdated`` (``2026-09-29T19:17-05:00``) carries its own UTC
offset, and that offset is true even in summer: the stamp is -05:00 all year, not Eastern time, as
the HTTP ``Last-Modified`` of the same file shows (19:17-05:00 = 00:17Z against Last-Modified
00:18:17 GMT on 30 Sep 2026). A stamp without an offset would be read as Eastern.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from votersdaily.sources.congress import stored_utc
from votersdaily.sources.errors import UnexpectedDocument
from votersdaily.sources.json_text import JsonText, load_with_text, require

from .base import EventSpider

if TYPE_CHECKING:
    from scrapy.http import Response

CONVENE_KEYS = ("conveneYear", "conveneMonth", "conveneDay", "conveneHour", "conveneMinutes")
#: The misspelling the Senate publishes, and the spelling it may one day fix it to.
OFFSET_KEYS = ("coveneOffsetMinutes", "conveneOffsetMinutes")
#: ``lastUpdated``: a wall time and, normally, a UTC offset (``-05:00``).
LAST_UPDATED_RE = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?)(Z|[+-]\d{2}:?\d{2})?")
SENATE = "https://www.senate.gov/"


def _str(entry: dict[str, Any], key: str) -> str:
    value = entry.get(key)
    return value.strip() if isinstance(value, str) else ("" if value is None else str(value))


class SenateFloorScheduleSpider(EventSpider):
    name = "senate_floor_schedule"
    version = "1.1"
    branch = "Legislative"
    entity = "Senate"
    frequency_hours = 1.0
    listing_urls = ("https://www.senate.gov/legislative/schedule/floor_schedule.json",)
    recordings = {
        "gov/senate_floor_schedule/floor_schedule_start.json": "https://www.senate.gov/legislative/schedule/floor_schedule.json",
        "gov/senate_floor_schedule/floor_schedule_end.json": "https://www.senate.gov/legislative/schedule/floor_schedule.json",
        "gov/senate_floor_schedule/floor_schedule_session_day_2026-09-30_wayback.json": "https://www.senate.gov/legislative/schedule/floor_schedule.json",
    }
    custom_settings = {
        **EventSpider.custom_settings,
        "DOWNLOAD_DELAY": 2.0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    }

    def parse_events(self, response: Response) -> list[dict[str, Any]]:
        doc = load_with_text(response.body, response.url)
        require(doc, (), dict, response.url)
        proceedings = require(doc, ("floorProceedings",), list, response.url).members
        assert isinstance(proceedings, list), "an array's members are a list"  # noqa: S101 - invariant
        return [self._event(entry, response.url) for entry in proceedings]

    def _event(self, entry: JsonText, url: str) -> dict[str, Any]:
        if not isinstance(entry.value, dict):
            raise UnexpectedDocument(
                "%s: a floorProceedings entry is %s, not an object" % (url, type(entry.value).__name__)
            )
        data = entry.value
        when = self._parse_datetime(data, url)
        return {
            "datetime": when,
            "title": "Senate convenes",
            "description": None,  # the feed has no text about the session itself
            "unique_key": when.date().isoformat(),
            "source_text": entry.text,
            "event_url": _str(data, "convenedSessionStream"),
            "convene_date": when.date().isoformat(),
            "convene_time": when.strftime("%H:%M"),
            "convene_offset_minutes": self._parse_offset_minutes(data),
            "stream_url": _str(data, "convenedSessionStream"),
            "session_link": self._parse_link(data, "convenedSessionLink"),
            "out_of_session_link": self._parse_link(data, "outSessionLink"),
            "last_updated": self._parse_last_updated(data),
            "last_updated_published": _str(data, "lastUpdated"),
        }

    @staticmethod
    def _parse_datetime(data: dict[str, Any], url: str) -> datetime:
        missing = [k for k in CONVENE_KEYS if not _str(data, k)]
        if missing:
            raise UnexpectedDocument("%s: convening without %s" % (url, ", ".join(missing)))
        try:
            year, month, day, hour, minute = (int(_str(data, k)) for k in CONVENE_KEYS)
            return datetime(year, month, day, hour, minute)
        except ValueError as exc:
            raise UnexpectedDocument("%s: convening time is not a date: %s" % (url, exc)) from None

    @staticmethod
    def _parse_offset_minutes(data: dict[str, Any]) -> int | None:
        """``coveneOffsetMinutes`` as published (its meaning is undocumented), as a number."""
        for key in OFFSET_KEYS:
            value = _str(data, key)
            if value.lstrip("-").isdigit():
                return int(value)
        return None

    @staticmethod
    def _parse_link(data: dict[str, Any], key: str) -> str:
        value = _str(data, key)
        return urljoin(SENATE, value) if value else ""

    @staticmethod
    def _parse_last_updated(data: dict[str, Any]) -> str:
        """UTC ISO text of ``lastUpdated`` at the offset it gives (Eastern if it gives none)."""
        match = LAST_UPDATED_RE.match(_str(data, "lastUpdated"))
        if not match:
            return ""
        return stored_utc(datetime.fromisoformat(match.group(1) + (match.group(2) or "")))
