"""Wall-clock times of Congress and the Court: America/New_York, published without an offset."""

from __future__ import annotations

from datetime import date, datetime

from votersdaily.clock import now_utc
from votersdaily.datetimes import get_zone

EASTERN = "America/New_York"


def parse_local(text: str, *formats: str) -> datetime:
    """A naive local datetime from the first matching strptime format (whitespace folded)."""
    value = " ".join(text.split())
    for fmt in formats:
        try:
            return datetime.strptime(value, fmt)
        except ValueError:
            continue
    raise ValueError("%r matches none of %s" % (text, ", ".join(formats)))


def parse_local_date(text: str, *formats: str) -> date:
    return parse_local(text, *formats).date()


def eastern_today() -> date:
    """Today's date in Washington (the framework clock, so a frozen clock freezes it too)."""
    return now_utc().astimezone(get_zone(EASTERN)).date()
