"""The one place the framework reads the wall clock, so tests and replays can freeze it.

Set ``VOTERSDAILY_FROZEN_NOW`` (ISO 8601, e.g. ``2026-10-02T18:00:00Z``) to freeze the clock, in this
process and in any crawl subprocess that inherits the environment.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

FROZEN_NOW_ENV = "VOTERSDAILY_FROZEN_NOW"


def now_utc() -> datetime:
    """Current time in UTC, second precision (the precision of every stored datetime)."""
    frozen = os.environ.get(FROZEN_NOW_ENV)
    if frozen:
        value = datetime.fromisoformat(frozen.replace("Z", "+00:00"))
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).replace(microsecond=0)
    return datetime.now(UTC).replace(microsecond=0)


def iso_utc(value: datetime) -> str:
    """``2009-08-19T13:43:21Z`` for an aware datetime (the storage format of every datetime)."""
    if value.tzinfo is None:
        raise ValueError("iso_utc needs an aware datetime, got naive %r" % (value,))
    v = value if value.tzinfo is UTC else value.astimezone(UTC)
    return "%04d-%02d-%02dT%02d:%02d:%02dZ" % (v.year, v.month, v.day, v.hour, v.minute, v.second)


def now_iso() -> str:
    return iso_utc(now_utc())
