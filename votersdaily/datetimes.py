"""Turn whatever a source gives (local wall time, aware time, date, text) into ISO 8601 UTC.

pytz is used the only correct way: ``zone.localize(naive, is_dst=...)``, never ``tzinfo=zone``.
Wall times that do not exist (the skipped spring-forward hour) or exist twice (the repeated
fall-back hour) are resolved by a stated rule and reported, never silently guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import cache, lru_cache

import pytz
from dateutil import parser as dateutil_parser

from .clock import iso_utc

Temporal = datetime | date | str

#: Two sentinels differing in every part: what a text does not give follows the sentinel, so a
#: part that differs between the two parses was never in the text (dateutil fills it from its
#: default: today's date, if none is given). The hour tells a date from a date and time.
_DEFAULT_A = datetime(2000, 1, 1, 0, 0, 0)
_DEFAULT_B = datetime(2004, 2, 2, 1, 1, 1)


@dataclass(frozen=True)
class Normalised:
    iso: str
    all_day: bool = False
    #: ``"ambiguous"`` (repeated hour: the first, daylight-time instant is taken) or
    #: ``"nonexistent"`` (skipped hour: shifted forward by the DST gap), else None.
    dst_note: str | None = None


@cache
def get_zone(name: str) -> pytz.BaseTzInfo:
    try:
        return pytz.timezone(name)
    except pytz.UnknownTimeZoneError:
        raise ValueError("unknown IANA time zone %r" % (name,)) from None


#: (zone, wall-clock hour) → (UTC offset, dst_note): offsets change only on whole hours in the tz
#: database zones the sources use, so one pytz ``localize`` per hour serves every minute in it.
#: Zones whose transitions fall inside an hour are never cached (see ``_hour_is_uniform``).
_HOUR_CACHE: dict[tuple[str, datetime], tuple[timedelta | None, str | None]] = {}
_HOUR_CACHE_MAX = 65536


def localize(naive: datetime, zone_name: str) -> tuple[datetime, str | None]:
    """Attach ``zone_name`` to a wall-clock time, DST-correct; returns (aware, dst_note)."""
    instant, note = to_utc(naive, zone_name)
    return instant.astimezone(get_zone(zone_name)), note


def to_utc(naive: datetime, zone_name: str) -> tuple[datetime, str | None]:
    """The UTC instant of a wall-clock time in ``zone_name``, DST-correct, as :func:`localize` reads
    it; returns (instant, dst_note). What storage needs, without a round trip through pytz."""
    hour = naive.replace(minute=0, second=0, microsecond=0)
    cached = _HOUR_CACHE.get((zone_name, hour))
    if cached is None:
        cached = _localize_hour(hour, zone_name)
        if len(_HOUR_CACHE) >= _HOUR_CACHE_MAX:
            _HOUR_CACHE.clear()
        _HOUR_CACHE[(zone_name, hour)] = cached
    offset, note = cached
    if offset is None:
        aware, note = _localize_exact(naive, zone_name)
        return aware.astimezone(UTC), note
    return (naive - offset).replace(tzinfo=UTC), note


def _localize_hour(hour: datetime, zone_name: str) -> tuple[timedelta | None, str | None]:
    start, note = _localize_exact(hour, zone_name)
    end, end_note = _localize_exact(hour + timedelta(minutes=59, seconds=59), zone_name)
    offset = start.utcoffset()
    if note != end_note or _wall_offset(end, hour + timedelta(minutes=59, seconds=59)) != _wall_offset(
        start, hour
    ):
        return None, None  # a transition inside this hour: never cached, always exact
    return _wall_offset(start, hour), note if offset is not None else None


def _wall_offset(aware: datetime, wall: datetime) -> timedelta:
    """wall - UTC instant: what to subtract from the wall time to get UTC (for gap hours too)."""
    return wall - aware.astimezone(UTC).replace(tzinfo=None)


def _localize_exact(naive: datetime, zone_name: str) -> tuple[datetime, str | None]:
    zone = get_zone(zone_name)
    try:
        return zone.localize(naive, is_dst=None), None
    except pytz.AmbiguousTimeError:
        # The repeated hour: the first occurrence (still daylight time) is the one a
        # schedule published before the change means.
        return zone.localize(naive, is_dst=True), "ambiguous"
    except pytz.NonExistentTimeError:
        # The skipped hour: a clock reading 2:30 that morning is 3:30 daylight time.
        return zone.normalize(zone.localize(naive, is_dst=False)), "nonexistent"


@dataclass(frozen=True)
class PartialDate:
    """A calendar date to the precision its source gives: a year, a year and month, or a day."""

    year: int
    month: int | None = None
    day: int | None = None

    def iso(self) -> str:
        """``2017``, ``2017-01`` or ``2017-01-26`` (ISO 8601 at reduced precision)."""
        parts = [("%04d", self.year), ("%02d", self.month), ("%02d", self.day)]
        return "-".join(fmt % value for fmt, value in parts if value is not None)

    def to_date(self) -> date | None:
        """The day, when the source gave one; never a day it did not give."""
        return date(self.year, self.month, self.day) if self.month and self.day else None


def _parse_twice(text: str, what: str) -> tuple[datetime, datetime]:
    """dateutil's reading of ``text`` over each sentinel default (see :data:`_DEFAULT_A`)."""
    folded = " ".join(text.split())
    if not folded:
        raise ValueError("empty %s text" % what)
    try:
        return (
            dateutil_parser.parse(folded, default=_DEFAULT_A),
            dateutil_parser.parse(folded, default=_DEFAULT_B),
        )
    except (ValueError, OverflowError) as exc:
        raise ValueError("unparseable %s %r: %s" % (what, text, exc)) from None


def parse_partial_date(text: str) -> PartialDate:
    """A date at the precision ``text`` gives (``2017``, ``2017/01``, ``January 2017``, ``Apr 22,
    2019``), never completed from today or any default. A text without a year (``26 January``,
    ``Monday``) or with a day but no month cannot be read without inventing: ValueError."""
    a, b = _parse_twice(text, "date")
    if a.year != b.year:
        raise ValueError("%r gives no year: a date is never completed with an invented one" % text)
    month = a.month if a.month == b.month else None
    day = a.day if a.day == b.day else None
    if day is not None and month is None:
        raise ValueError("%r gives a day but no month" % text)
    return PartialDate(a.year, month, day)


def _parse_text(value: str) -> tuple[datetime, bool]:
    """A datetime (or a date: the bool) from text giving at least a whole date. A text missing its
    year, month or day is refused: dateutil would complete it from its default."""
    a, b = _parse_twice(value, "datetime")
    missing = [part for part in ("year", "month", "day") if getattr(a, part) != getattr(b, part)]
    if missing:
        raise ValueError(
            "%r gives no %s: a date is never completed with invented parts" % (value, missing[0])
        )
    date_only = a.hour != b.hour and a.tzinfo is None
    return a, date_only


def normalise(value: Temporal, zone_name: str) -> Normalised:
    """Normalise one value; naive times and dates are read in the source's zone ``zone_name``."""
    if type(value) is date or type(value) is datetime:  # exactly these: hashable, equal ones alike
        return _normalised_value(value, zone_name)
    return _normalise(value, zone_name)


@lru_cache(maxsize=16384, typed=True)
def _normalised_value(value: date | datetime, zone_name: str) -> Normalised:
    """:func:`_normalise` of a date or datetime, remembered: the events of a source share their days
    and times (a reparse meets each again), and a value takes 4–10 µs to normalise. Equal values
    normalise alike (equal aware datetimes are one instant, equal naive ones one wall time; ``typed``
    keeps a date apart from a datetime); a value that raises is not remembered."""
    return _normalise(value, zone_name)


def _normalise(value: Temporal, zone_name: str) -> Normalised:
    if isinstance(value, str):
        parsed, date_only = _parse_text(value)
        if date_only:
            return normalise(parsed.date(), zone_name)
        value = parsed
    if isinstance(value, datetime):
        if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
            instant, note = to_utc(value.replace(microsecond=0), zone_name)
            return Normalised(iso_utc(instant), dst_note=note)
        return Normalised(iso_utc(value.replace(microsecond=0)))
    if isinstance(value, date):
        # Date-only: midnight UTC of the *local* date (the contract), flagged all-day.
        midnight = datetime.combine(value, time(0, 0), tzinfo=UTC)
        return Normalised(iso_utc(midnight), all_day=True)
    raise TypeError("cannot normalise %s %r to a datetime" % (type(value).__name__, value))
