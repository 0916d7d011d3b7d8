"""Whether a Redis keeps the queue across a restart: asked by every worker and ``enqueue`` at start.

Only the append-only file keeps a queue: without it a restart loses every waiting request, every
lease and the duplicate filter (RDB snapshots keep what was there at the last snapshot, minutes
old). And only a Redis that never evicts the queue's keys keeps it when memory runs out
(``maxmemory-policy noeviction``, or a ``volatile-*`` policy, which spares keys without a TTL).
``CONFIG GET`` says both; a user whose ACL refuses ``CONFIG`` (managed Redis services rename or
forbid it) is asked ``INFO persistence`` and ``INFO memory`` instead, which tell whether the file
is on and the eviction policy, but not the fsync policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from redis.exceptions import ResponseError
from scrapy.exceptions import NotConfigured

from . import as_text

if TYPE_CHECKING:
    import redis

#: What each ``appendfsync`` policy keeps, for the start-up line and the refusal.
FSYNC_GUARANTEES = {
    "always": "a Redis crash or a power cut loses nothing Redis answered",
    "everysec": "a Redis crash loses nothing Redis answered; a power cut or kernel crash up to the last second",
    "no": "a Redis crash loses nothing Redis answered; a power cut or kernel crash what the kernel had not "
    "written yet (about 30 s on Linux)",
}

REMEDY = (
    "start it with appendonly yes (docs/operations.md, section Redis), or accept losing work on a restart "
    "with VOTERSDAILY_REDIS_REQUIRE_PERSISTENCE=False (enqueue: --allow-volatile-redis)"
)

#: What going on without persistence means, for the warning of those told to.
LOSS = "a Redis restart loses the queue; the workers then report how many requests were lost"


class RedisNotDurable(NotConfigured):
    """The Redis of a queue would lose it on a restart (no append-only file), or will not say."""


@dataclass(frozen=True)
class Persistence:
    #: None: Redis did not say (CONFIG and INFO both refused).
    appendonly: bool | None
    #: None: unknown (INFO does not say it).
    appendfsync: str | None = None
    #: RDB snapshot rules (``save``), when CONFIG GET answered.
    save: str | None = None
    #: What answered: "CONFIG GET", "INFO persistence" or "" (neither).
    source: str = "CONFIG GET"
    #: Why CONFIG GET (and INFO) were refused, when they were.
    refused: str = ""
    #: ``maxmemory-policy``: an ``allkeys-*`` policy evicts queued requests when memory is full.
    eviction: str | None = None

    def describe(self) -> str:
        if self.appendonly is None:
            return "persistence unknown (%s)" % self.refused
        if not self.appendonly:
            snapshots = 'save "%s"' % self.save if self.save is not None else "RDB snapshots unknown"
            return "appendonly no, %s" % snapshots
        fsync = self.appendfsync or "unknown (%s refused: %s)" % ("CONFIG GET", self.refused)
        return "appendonly yes, appendfsync %s" % fsync

    def guarantee(self) -> str:
        if self.appendonly and self.appendfsync in FSYNC_GUARANTEES:
            return FSYNC_GUARANTEES[self.appendfsync]
        if self.appendonly:
            return "the append-only file is on; what a power cut loses depends on its fsync policy"
        return "a restart loses the queue, its leases and the duplicate filter"

    def problem(self, where: str) -> str | None:
        """Why the queue at ``where`` is not safe here (one line, no remedy), or None."""
        if self.appendonly and (self.eviction or "").startswith("allkeys"):
            return (
                "Redis at %s evicts keys when its memory is full (maxmemory-policy %s): queued requests and "
                "leases would vanish" % (where, self.eviction)
            )
        if self.appendonly:
            return None
        if self.appendonly is None:
            return (
                "Redis at %s does not say whether it keeps its data (CONFIG GET and INFO persistence refused: %s)"
                % (
                    where,
                    self.refused,
                )
            )
        snapshots = (
            "no RDB snapshots either"
            if not self.save
            else "RDB snapshots only (save %s: a restart loses what changed since the last one)" % self.save
        )
        return "Redis at %s keeps no append-only file (appendonly no, %s): %s" % (
            where,
            snapshots,
            self.guarantee(),
        )

    def refusal(self, where: str) -> str | None:
        """:meth:`problem` with what to do about it."""
        problem = self.problem(where)
        if problem is None:
            return None
        if self.appendonly is None:
            return "%s: let this user run CONFIG GET or INFO, or %s" % (problem, REMEDY.split(", or ", 1)[1])
        if self.appendonly:
            return "%s; set maxmemory-policy noeviction (docs/operations.md, section Redis), or %s" % (
                problem,
                REMEDY.split(", or ", 1)[1],
            )
        return "%s; %s" % (problem, REMEDY)


def read_persistence(server: redis.Redis) -> Persistence:
    """What ``server`` says about its persistence (CONFIG GET, else INFO persistence and memory)."""
    try:
        conf = _pairs(server.execute_command("CONFIG", "GET", "append*"))
        for name in ("save", "maxmemory-policy"):
            conf.update(_pairs(server.execute_command("CONFIG", "GET", name)))
    except ResponseError as exc:
        refused = str(exc)
    else:
        return Persistence(
            appendonly=conf.get("appendonly") == "yes",
            appendfsync=conf.get("appendfsync"),
            save=conf.get("save"),
            eviction=conf.get("maxmemory-policy"),
        )
    try:
        info = server.info("persistence")
        memory = server.info("memory")
    except ResponseError as exc:
        return Persistence(None, source="", refused="%s; %s" % (refused, exc))
    return Persistence(
        bool(int(info.get("aof_enabled", 0))),
        source="INFO persistence",
        refused=refused,
        eviction=as_text(memory.get("maxmemory_policy", "")) or None,
    )


def _pairs(answer: Any) -> dict[str, str]:
    """CONFIG GET's answer: a flat list (RESP2) or a dict (RESP3 / redis-py's parsing)."""
    if isinstance(answer, dict):
        return {as_text(k): as_text(v) for k, v in answer.items()}
    items = list(answer)
    return {as_text(items[i]): as_text(items[i + 1]) for i in range(0, len(items) - 1, 2)}
