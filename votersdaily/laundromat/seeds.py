"""Seed records and staleness.

A seed record (``_id`` = :func:`uri_key`) is ``{uri, relative, status, added, interval, processed}``;
``added``/``processed`` are ISO 8601 UTC strings (``processed`` is None until the first download),
``interval`` is seconds. A seed is stale, and due for (re-)download, when ``processed + interval < now``;
a never processed seed is due at once. Relative URIs are registered but never fetched.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from votersdaily.clock import iso_utc, now_utc
from votersdaily.defaults import DEFAULTS
from votersdaily.plumbing.inputs import MAX_URL, checked_url, listed_lines

from . import states
from .uris import is_relative, normalise_uri, uri_key

DAY = 86400.0
#: Seconds before a processed seed is stale (the 2017 code's one day), unless a sitemap says otherwise.
DEFAULT_INTERVAL: float = DEFAULTS["LAUNDROMAT_DEFAULT_INTERVAL"]
#: sitemaps.org ``changefreq`` values as seconds; "never" (archived) is 100 years, "always" zero.
CHANGEFREQ_SECONDS = {
    "always": 0.0,
    "hourly": 3600.0,
    "daily": DAY,
    "weekly": 7 * DAY,
    "monthly": 30 * DAY,
    "yearly": 365 * DAY,
    "never": 36500 * DAY,
}


class BadSeed(ValueError):
    """An operator's seed (``-a url=``, a seed list line) that is no URL the laundromat can fetch."""


class SeedListUnreadable(BadSeed):
    """The seed list file (``-a seedlist=``) cannot be read at all: the run fails."""


def checked_seed(uri: str) -> str:
    """``uri`` stripped, or :class:`BadSeed` saying why it can never be fetched (before it is
    registered, queued or shared with other workers): an http(s) URL with a host, or a file: URL."""
    try:
        return checked_url(uri, "seed")
    except ValueError as exc:
        raise BadSeed(str(exc)) from None


def seedlist_lines(path: str | Path) -> Iterator[tuple[str, str | Exception]]:
    """``(where, seed or error)`` for the seeds of a seed list file (one per line, ``#`` comments);
    an unreadable file is one error."""
    try:
        yield from listed_lines(path, MAX_URL + 2)
    except OSError as exc:
        yield str(path), SeedListUnreadable("cannot read the seed list: %s" % exc)


def interval_for(changefreq: str | None, default: float = DEFAULT_INTERVAL) -> float:
    """The re-download interval for a sitemap ``changefreq`` (unknown or absent → ``default``)."""
    if not changefreq:
        return default
    return CHANGEFREQ_SECONDS.get(changefreq.strip().lower(), default)


def new_seed(
    uri: str, *, interval: float = DEFAULT_INTERVAL, now: datetime | None = None, **extra: Any
) -> dict[str, Any]:
    """A fresh seed record for ``uri`` (status ``added``); ``extra`` keys (sitemap metadata) are kept."""
    uri = uri.strip()
    doc = {
        "_id": uri_key(uri),
        "uri": uri,
        "normalized_uri": normalise_uri(uri),
        "relative": is_relative(uri),
        "status": states.ADDED,
        "added": iso_utc(now or now_utc()),
        "interval": float(interval),
        "processed": None,
    }
    doc.update({k: v for k, v in extra.items() if v is not None})
    return doc


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def stale_after(seed: dict[str, Any]) -> datetime | None:
    """When a processed seed becomes stale (``processed + interval``); None when never processed."""
    processed = seed.get("processed")
    if not processed:
        return None
    return parse_iso(processed) + timedelta(seconds=float(seed.get("interval") or 0.0))


def is_stale(seed: dict[str, Any], now: datetime | None = None) -> bool:
    """``processed + interval < now``; a seed never processed is stale; relative seeds never are."""
    if seed.get("relative"):
        return False
    after = stale_after(seed)
    return after is None or after < (now or now_utc())


def is_seed(doc: dict[str, Any]) -> bool:
    """Seed records have a ``uri`` and no ``parent`` (downloads, entries and cleaned files have one)."""
    return "uri" in doc and "parent" not in doc and "dirty" not in doc


def is_due(seed: dict[str, Any], now: datetime | None = None) -> bool:
    """A seed to fetch now: waiting (``added``) or interrupted (``downloading``), and stale."""
    if seed.get("status") == states.DOWNLOADING:
        return not seed.get("relative")
    return seed.get("status") == states.ADDED and is_stale(seed, now)
