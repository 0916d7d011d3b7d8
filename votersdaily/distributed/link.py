"""Whether what a worker depends on answers (its Redis, its store), and whether its Redis takes its
writes: one warning when it goes away (or Redis refuses writes: its memory or its append-only file's
disk full), one info line when it is back, and the backoff between attempts in between (never a
traceback per attempt); a refusal no wait mends (an ACL without the queue's commands) is one error,
and the worker uses Redis no more."""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass

import redis

logger = logging.getLogger(__name__)

#: What a Redis that is down, restarting (loading its data: BusyLoadingError is one) or unreachable
#: raises; anything else is a bug and is logged as one.
REDIS_DOWN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
#: What a Redis that is up raises for a command it refuses (a database number past its ``databases``,
#: a write while its memory is full: see :func:`refusal_of`).
REDIS_REFUSED = redis.exceptions.ResponseError

#: Refusals a Redis that is up answers while a state of its own lasts, by their code, with what ends
#: that state. A worker holds what it has and tries again, as while Redis is away: it acks nothing
#: whose follow-ups it could not queue. Any other refusal (``NOPERM``: an ACL without the queue's
#: commands or keys; ``WRONGTYPE``: a key of the queue's name holding something else) is the
#: deployment's configuration, which no wait mends.
PASSING_REFUSALS = {
    "OOM": "its memory is full (maxmemory, with maxmemory-policy noeviction): raise maxmemory (CONFIG SET "
    "maxmemory, and in its configuration file) or free memory",
    "MISCONF": "it cannot write its append-only file (or snapshot): free space on the disk of its `dir`, or "
    "mend what its log names; it takes writes again by itself once it can write there",
    "READONLY": "it is a read-only replica: point the URL at the primary (after a failover, the new one)",
    "MASTERDOWN": "it is a replica that lost its primary: bring the primary back, or point the URL at the "
    "new one",
    "NOREPLICAS": "fewer replicas answer it than its min-replicas-to-write: bring them back, or lower that",
    "BUSY": "a script has run longer than its busy-reply-threshold: SCRIPT KILL it, or wait for it",
}
#: The codes older redis-py strips from the errors it has a class for (newer keeps ``status_code``).
_CODES = {
    redis.exceptions.OutOfMemoryError: "OOM",
    redis.exceptions.ReadOnlyError: "READONLY",
    redis.exceptions.NoPermissionError: "NOPERM",
    redis.exceptions.ExecAbortError: "EXECABORT",
    redis.exceptions.MasterDownError: "MASTERDOWN",
}
#: Where in a queue script Redis refused (``script: <sha>, on @user_script:31.``): nothing to act on.
_SCRIPT_PLACE = re.compile(r"\s*script: \w+, on @user_script:\d+\.?\s*$")
#: What Redis 7 says (code ``ERR``) of a command or key a script's ACL user may not use: ``NOPERM``
#: outside a script.
_SCRIPT_NOPERM = "The user executing the script can't"


class RedisRefused(Exception):
    """Redis refused a write of the queue for a reason no wait mends (the run log's error)."""


@dataclass(frozen=True)
class Refusal:
    """A command Redis refused, though it answers: its code (``OOM``, ``MISCONF``, ``NOPERM``, …) and
    what it said."""

    code: str
    said: str

    @property
    def passing(self) -> bool:
        """A state of Redis that ends (memory, disk, a failover): the worker waits it out."""
        return self.code in PASSING_REFUSALS

    @property
    def remedy(self) -> str:
        if self.passing:
            return PASSING_REFUSALS[self.code]
        if self.code == "NOPERM":
            return (
                "its ACL user may not run the queue's commands on the queue's keys: give it the ACL line "
                "of docs/operations.md (section Redis), with the keys of this deployment's prefix"
            )
        return (
            "a refusal no wait mends: check the Redis (version 7 or later, its ACL, what holds the "
            "queue's keys)"
        )


def refusal_of(exc: redis.exceptions.ResponseError) -> Refusal:
    """What Redis refused and why: the error's code (the first word of Redis's answer) and its words,
    without the place in the queue's script."""
    text = _SCRIPT_PLACE.sub("", str(exc))
    code = getattr(exc, "status_code", None) or next(
        (code for cls, code in _CODES.items() if isinstance(exc, cls)), None
    )
    if code is None:
        first = re.match(r"[A-Z]+(?= |$)", text)
        code = first.group(0) if first else "ERR"
    said = text if text.startswith(code) else "%s %s" % (code, text)
    return Refusal("NOPERM" if text.startswith(_SCRIPT_NOPERM) else code, said)


def no_such_database(exc: BaseException) -> bool:
    """Redis answered that the URL's database number is past its ``databases`` (``redis://host/99``):
    the URL is the operator's to fix, Redis is up."""
    return isinstance(exc, REDIS_REFUSED) and "DB index is out of range" in str(exc)


def redis_down_line(where: str, exc: Exception, url_from: str) -> str:
    """Why a Redis could not be used at the start, and what to fix (the URL, given by ``url_from``).
    A refused login is a ConnectionError too in redis-py, and a full memory a refusal, but Redis is
    up: starting it is no fix."""
    if no_such_database(exc):
        return (
            "Redis at %s has no database of that number (%s): Redis numbers them from 0 to its "
            "`databases` setting less one (0-15 by default); fix the /db of %s" % (where, exc, url_from)
        )
    if isinstance(exc, REDIS_REFUSED):
        refusal = refusal_of(exc)
        return "Redis at %s refuses writes (%s): %s" % (where, refusal.said, refusal.remedy)
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
        #: During an outage, the writes Redis refuses (None: it does not answer).
        self.refusal: Refusal | None = None
        #: A refusal no wait mends (:attr:`Refusal.passing` False): the worker uses Redis no more.
        self.stopped: Refusal | None = None
        self._delay = first_delay
        self.outages = 0
        #: Seconds it was away (or refused writes) in the outages that ended.
        self.away_before = 0.0

    @property
    def up(self) -> bool:
        return self.down_since is None and self.stopped is None

    @property
    def state(self) -> str:
        """How Redis is, for a log line: ``is unreachable`` or ``refuses writes (…)``."""
        refusal = self.stopped or self.refusal
        if refusal is None:
            return "is unreachable" if self.down_since is not None else "answers"
        return "refuses writes (%s)" % refusal.said

    def lost(self, exc: BaseException, holding: str) -> bool:
        """Redis failed a call: it does not answer, or refuses writes while a state of its own lasts
        (``exc`` a :attr:`Refusal.passing` one); True the first time in an outage (the caller starts
        trying again). Said once an outage, and again only when why changes (Redis answers again
        but refuses writes, or the other way round)."""
        refusal = refusal_of(exc) if isinstance(exc, REDIS_REFUSED) else None
        if self.down_since is not None:
            if (refusal and refusal.code) != (self.refusal and self.refusal.code):
                self.refusal = refusal
                self._say(exc, holding)
            return False
        self.down_since = time.monotonic()
        self.refusal = refusal
        self._delay = self.first_delay
        self.outages += 1
        self._say(exc, holding)
        return True

    def _say(self, exc: BaseException, holding: str) -> None:
        if self.refusal is None:
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
            return
        logger.warning(
            "Redis at %s refuses writes (%s): %s; %s until it takes them; trying again with backoff "
            "(at most %g s apart)",
            self.where,
            self.refusal.said,
            self.refusal.remedy,
            holding,
            self.max_delay,
        )

    @property
    def seconds_away(self) -> float:
        """Seconds it was away (or refused writes) in every outage so far, the one going on included."""
        now = time.monotonic()
        return self.away_before + (now - self.down_since if self.down_since is not None else 0.0)

    def next_delay(self) -> float:
        delay, self._delay = self._delay, min(self._delay * 2, self.max_delay)
        return delay

    def back(self, what: str) -> float:
        """It answers again (Redis: and takes writes); the seconds it was away (or refused them)."""
        away = time.monotonic() - (self.down_since or time.monotonic())
        self.away_before += away
        refused, self.refusal, self.down_since = self.refusal, None, None
        if refused is None:
            logger.info("%s at %s is back after %.1f s: %s", self.what, self.where, away, what)
        else:
            logger.info(
                "Redis at %s takes writes again after %.1f s (it refused them: %s): %s",
                self.where,
                away,
                refused.code,
                what,
            )
        return away
