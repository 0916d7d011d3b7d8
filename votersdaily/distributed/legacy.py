"""Moving a queue left by the previous version (a sorted set with Lua leases) into the stream.

The previous format, for ``<name>:requests``: the key itself a sorted set of waiting requests;
``…:processing`` (token → lease deadline), ``…:payloads`` and ``…:scores`` (token → request, score)
for the leased ones; ``…:attempts``, ``…:requeued``, ``…:seq``; ``…:dead`` a list. Nothing of it is
dropped: the waiting requests are added to the stream in their priority order, the leased ones after
them (their old workers are gone after an upgrade; a request an old worker had finished but not
acked runs again), and the dead list becomes dead entries (``reason`` ``legacy``). The keys are first
renamed aside in one step, then moved in batches, each one script: a migration interrupted
anywhere is finished by the next worker or ``enqueue`` that opens the queue.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import redis

    from .queue import StreamQueue

logger = logging.getLogger(__name__)

#: The previous format's keys, by suffix (the waiting set is the queue key itself).
_LEASED, _DEAD = ":processing", ":dead"
_DROPPED = (":processing", ":scores", ":attempts", ":requeued", ":seq")

# KEYS: queue, payloads, dead, aside waiting, aside leased, aside dead, then the bookkeeping keys to
# delete. Renames (or appends to) the aside keys; nothing is lost if they already exist.
SET_ASIDE = """
local moved = 0
if redis.call('TYPE', KEYS[1])['ok'] == 'zset' then
  if redis.call('EXISTS', KEYS[4]) == 1 then
    redis.call('ZUNIONSTORE', KEYS[4], 2, KEYS[4], KEYS[1])
    redis.call('DEL', KEYS[1])
  else
    redis.call('RENAME', KEYS[1], KEYS[4])
  end
  moved = 1
end
if redis.call('TYPE', KEYS[2])['ok'] == 'hash' then
  local kv = redis.call('HGETALL', KEYS[2])
  for i = 1, #kv, 2 do redis.call('HSET', KEYS[5], kv[i], kv[i + 1]) end
  redis.call('DEL', KEYS[2])
  moved = 1
end
if redis.call('TYPE', KEYS[3])['ok'] == 'list' then
  for _, item in ipairs(redis.call('LRANGE', KEYS[3], 0, -1)) do redis.call('RPUSH', KEYS[6], item) end
  redis.call('DEL', KEYS[3])
  moved = 1
end
if moved == 1 then
  for i = 7, #KEYS do redis.call('DEL', KEYS[i]) end
end
return moved
"""

# KEYS: stream, meta, dead stream, aside waiting, aside leased, aside dead; ARGV: batch size.
# Moves one batch; answer {waiting moved, leased moved, dead moved, left}.
MOVE = """
local n = tonumber(ARGV[1])
local waiting, leased, dead = 0, 0, 0
for _, item in ipairs(redis.call('ZRANGE', KEYS[4], 0, n - 1)) do
  redis.call('XADD', KEYS[1], '*', 'request', item)
  redis.call('ZREM', KEYS[4], item)
  waiting = waiting + 1
end
if waiting < n then
  local fields = redis.call('HGETALL', KEYS[5])
  for i = 1, math.min(#fields, 2 * (n - waiting)), 2 do
    redis.call('XADD', KEYS[1], '*', 'request', fields[i + 1])
    redis.call('HDEL', KEYS[5], fields[i])
    leased = leased + 1
  end
end
for _, item in ipairs(redis.call('LPOP', KEYS[6], n) or {}) do
  redis.call('XADD', KEYS[3], '*', 'request', item, 'reason', 'legacy')
  dead = dead + 1
end
local moved = waiting + leased
if moved > 0 then
  redis.call('HINCRBY', KEYS[2], 'enqueued', moved)
  redis.call('HINCRBY', KEYS[2], 'migrated', moved)
end
if dead > 0 then redis.call('HINCRBY', KEYS[2], 'dead', dead) end
local left = redis.call('ZCARD', KEYS[4]) + redis.call('HLEN', KEYS[5]) + redis.call('LLEN', KEYS[6])
return {waiting, leased, dead, left}
"""


@dataclass
class Migration:
    waiting: int = 0
    leased: int = 0
    dead: int = 0

    def __bool__(self) -> bool:
        return bool(self.waiting or self.leased or self.dead)


def aside_keys(key: str) -> tuple[str, str, str]:
    return key + ":legacy-waiting", key + ":legacy-leased", key + ":legacy-dead"


def set_aside(server: redis.Redis, key: str) -> bool:
    """Rename the previous format's keys of queue ``key`` aside (one atomic step); whether any."""
    return bool(
        server.eval(
            SET_ASIDE,
            6 + len(_DROPPED),
            key,
            key + ":payloads",
            key + _DEAD,
            *aside_keys(key),
            *(key + suffix for suffix in _DROPPED),
        )
    )


def move_aside_keys(server: redis.Redis, key: str, meta: str, batch: int = 500) -> Migration:
    """Move what :func:`set_aside` put aside into the stream (which must exist: ``ensure()`` first)."""
    done = Migration()
    script = server.register_script(MOVE)
    aside = aside_keys(key)
    if not any(server.exists(k) for k in aside):
        return done
    while True:
        waiting, leased, dead, left = script(keys=[key, meta, key + _DEAD, *aside], args=[batch])
        done.waiting += int(waiting)
        done.leased += int(leased)
        done.dead += int(dead)
        if not int(left):
            return done


def migrate(server: redis.Redis, queue: StreamQueue) -> Migration:
    """Bring a queue of the previous format into ``queue`` (a :class:`StreamQueue`), then ensure it;
    what was moved (logged)."""
    set_aside(server, queue.key)
    queue.ensure()
    moved = move_aside_keys(server, queue.key, queue.meta)
    if moved:
        logger.warning(
            "moved the previous version's queue %s (a sorted set) into a Redis stream: %d waiting "
            "requests, %d that old workers had leased (run again: an old worker may have finished "
            "them without acking), %d dead letters into %s",
            queue.key,
            moved.waiting,
            moved.leased,
            moved.dead,
            queue.dead,
        )
    return moved
