"""Whether what a worker depends on answers (its Redis, its store): one warning when it goes away, one
info line when it is back, and the backoff between attempts to reach it in between (never a
traceback per attempt)."""

from __future__ import annotations

import logging
import time

import redis

logger = logging.getLogger(__name__)

#: What a Redis that is down, restarting (loading its data: BusyLoadingError is one) or unreachable
#: raises; anything else is a bug and is logged as one.
REDIS_DOWN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
#: What a Redis that is up raises for a command it refuses (a database number past its ``databases``).
REDIS_REFUSED = redis.exceptions.ResponseError


def no_such_database(exc: BaseException) -> bool:
    """Redis answered that the URL's database number is past its ``databases`` (``redis://host/99``):
    the URL is the operator's to fix, Redis is up."""
    return isinstance(exc, REDIS_REFUSED) and "DB index is out of range" in str(exc)


def redis_down_line(where: str, exc: Exception, url_from: str) -> str:
    """Why a Redis could not be used at the start, and what to fix (the URL, given by ``url_from``).
    A refused login is a ConnectionError too in redis-py, but Redis is up: starting it is no fix."""
    if no_such_database(exc):
        return (
            "Redis at %s has no database of that number (%s): Redis numbers them from 0 to its "
            "`databases` setting less one (0-15 by default); fix the /db of %s" % (where, exc, url_from)
        )
    if isinstance(exc, redis.exceptions.AuthenticationError):
        return (
            "Redis at %s refused the credentials (%s): give its ACL user and password in %s "
            "(redis://<user>:<password>@host:port/db, docs/operations.md, section Redis)"
            % (where, exc, url_from)
        )
    return "cannot reach Redis at %s (%s): start redis-server or fix %s" % (where, exc, url_from)


class ServiceLink:
    def __init__(self, what: str, where: str, first_delay: float, max_delay: float) -> None:
        #: What it is, as a line names it ("Redis", "the store"), and where (no credentials).
        self.what = what
        self.where = where
        self.first_delay = first_delay
        self.max_delay = max_delay
        self.down_since: float | None = None
        self._delay = first_delay
        self.outages = 0

    @property
    def up(self) -> bool:
        return self.down_since is None

    def lost(self, exc: BaseException, holding: str) -> bool:
        """It failed a call; True the first time in an outage (the caller starts reconnecting)."""
        if self.down_since is not None:
            return False
        self.down_since = time.monotonic()
        self._delay = self.first_delay
        self.outages += 1
        logger.warning(
            "%s at %s is unreachable (%s: %s); %s until it is back; reconnecting with backoff "
            "(at most %g s apart)",
            self.what,
            self.where,
            type(exc).__name__,
            exc,
            holding,
            self.max_delay,
        )
        return True

    def next_delay(self) -> float:
        delay, self._delay = self._delay, min(self._delay * 2, self.max_delay)
        return delay

    def back(self, what: str) -> float:
        """It answers again; the seconds it was away."""
        away = time.monotonic() - (self.down_since or time.monotonic())
        self.down_since = None
        logger.info("%s at %s is back after %.1f s: %s", self.what, self.where, away, what)
        return away
