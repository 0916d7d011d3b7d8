"""A reliable Redis priority queue of requests: pop leases, ack after storage, requeue on expiry.

Keys, for a queue ``<name>:requests``:

- ``<name>:requests``             sorted set of waiting requests (score = -priority, as scrapy-redis)
- ``<name>:requests:processing``  sorted set token → lease deadline (ms, Redis clock)
- ``<name>:requests:payloads``    hash token → request, ``…:scores`` hash token → queue score
- ``<name>:requests:attempts``    hash sha1(request) → deliveries that expired or failed
- ``<name>:requests:dead``        list of requests given up on after ``max_attempts`` of those
- ``<name>:requests:requeued``    counter of requests recovered from dead workers

Every operation is one Lua script (atomic, one round trip); deadlines use Redis's own clock, so the
workers' clocks need not agree.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy_redis.queue import Base

from votersdaily.defaults import DEFAULTS

if TYPE_CHECKING:
    import redis
    from scrapy import Spider

_NOW_MS = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

POP = (
    _NOW_MS
    + """
local item = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #item == 0 then return false end
redis.call('ZREM', KEYS[1], item[1])
local token = ARGV[2]
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[1]), token)
redis.call('HSET', KEYS[3], token, item[1])
redis.call('HSET', KEYS[4], token, item[2])
return item[1]
"""
)

RENEW = (
    _NOW_MS
    + """
local n = 0
for i = 2, #ARGV do
  n = n + redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[1]), ARGV[i])
end
return n
"""
)

ACK = """
local n = 0
for i = 1, #ARGV do
  local item = redis.call('HGET', KEYS[2], ARGV[i])
  if item then redis.call('HDEL', KEYS[5], redis.sha1hex(item)) end
  n = n + redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('HDEL', KEYS[2], ARGV[i])
  redis.call('HDEL', KEYS[3], ARGV[i])
end
return n
"""

# KEYS: queue, processing, payloads, scores, attempts, dead, requeued; ARGV: max_attempts, limit,
# mode ("reap": expired leases; "release": given back unprocessed; "retry": processing failed), and
# (release, retry) the tokens. Reaps and retries count as attempts; a release does not.
REQUEUE = (
    _NOW_MS
    + """
local tokens
local mode = ARGV[3]
if mode ~= 'reap' then
  tokens = {}
  for i = 4, #ARGV do tokens[#tokens + 1] = ARGV[i] end
else
  tokens = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
end
local requeued, dead = 0, 0
for _, token in ipairs(tokens) do
  if redis.call('ZREM', KEYS[2], token) == 1 then
    local item = redis.call('HGET', KEYS[3], token)
    local score = redis.call('HGET', KEYS[4], token)
    redis.call('HDEL', KEYS[3], token)
    redis.call('HDEL', KEYS[4], token)
    if item then
      local tries = 0
      if mode ~= 'release' then tries = redis.call('HINCRBY', KEYS[5], redis.sha1hex(item), 1) end
      if tries >= tonumber(ARGV[1]) then
        redis.call('RPUSH', KEYS[6], item)
        redis.call('HDEL', KEYS[5], redis.sha1hex(item))
        dead = dead + 1
      else
        redis.call('ZADD', KEYS[1], tonumber(score) or 0, item)
        requeued = requeued + 1
      end
    end
  end
end
if mode == 'reap' then redis.call('INCRBY', KEYS[7], requeued) end
return {requeued, dead}
"""
)


class ReliableQueue(Base):
    """Priority queue whose pops are leases (see the module docstring)."""

    def __init__(
        self,
        server: redis.Redis,
        spider: Spider,
        key: str,
        serializer: Any = None,
        lease: float = DEFAULTS["VOTERSDAILY_REDIS_LEASE"],
        max_attempts: int = DEFAULTS["VOTERSDAILY_REDIS_MAX_ATTEMPTS"],
    ) -> None:
        super().__init__(server, spider, key, serializer)
        self.lease_ms = int(lease * 1000)
        self.max_attempts = max_attempts
        k = self.key
        self.processing = k + ":processing"
        self.payloads = k + ":payloads"
        self.scores = k + ":scores"
        self.attempts = k + ":attempts"
        self.dead = k + ":dead"
        self.requeued_key = k + ":requeued"
        self.seq = k + ":seq"
        self._pop = server.register_script(POP)
        self._renew = server.register_script(RENEW)
        self._ack = server.register_script(ACK)
        self._requeue = server.register_script(REQUEUE)

    def __len__(self) -> int:
        return self.server.zcard(self.key)

    def in_processing(self) -> int:
        return self.server.zcard(self.processing)

    def push(self, request: Request) -> None:
        self.server.zadd(self.key, {self._encode_request(request): -request.priority})

    def push_many(self, requests: Iterable[Request]) -> int:
        mapping = {self._encode_request(r): -r.priority for r in requests}
        if mapping:
            self.server.zadd(self.key, mapping)
        return len(mapping)

    def pop(self, timeout: float = 0) -> Request | None:
        """Not used: a reliable pop needs the lease token (see :meth:`lease`)."""
        raise NotImplementedError("use ReliableQueue.lease(), which returns (token, request)")

    def lease(self, token: str | None = None) -> tuple[str, Request] | None:
        """Lease the first waiting request under ``token`` (the caller's, so that a lease whose
        answer was lost with the connection can be found again: :meth:`leased`)."""
        token = token or uuid.uuid4().hex
        data = self._pop(
            keys=[self.key, self.processing, self.payloads, self.scores], args=[self.lease_ms, token]
        )
        return (token, self._decode_request(data)) if data else None

    def leased(self, token: str) -> Request | None:
        """The request leased under ``token``, if that lease exists."""
        data = self.server.hget(self.payloads, token)
        return self._decode_request(data) if data else None

    def renew(self, tokens: Iterable[str]) -> int:
        tokens = list(tokens)
        return self._renew(keys=[self.processing], args=[self.lease_ms, *tokens]) if tokens else 0

    def ack(self, tokens: Iterable[str]) -> int:
        tokens = list(tokens)
        if not tokens:
            return 0
        return self._ack(
            keys=[self.processing, self.payloads, self.scores, self.seq, self.attempts], args=tokens
        )

    def _requeue_call(self, args: list[Any]) -> tuple[int, int]:
        requeued, dead = self._requeue(
            keys=[
                self.key,
                self.processing,
                self.payloads,
                self.scores,
                self.attempts,
                self.dead,
                self.requeued_key,
            ],
            args=args,
        )
        return int(requeued), int(dead)

    def reap(self, limit: int = 500) -> tuple[int, int]:
        """Requeue requests whose lease expired (their worker died); (requeued, given up)."""
        return self._requeue_call([self.max_attempts, limit, "reap"])

    def release(self, tokens: Iterable[str]) -> int:
        """Give leased requests back at once (a worker shutting down before processing them)."""
        tokens = list(tokens)
        return self._requeue_call([self.max_attempts, len(tokens), "release", *tokens])[0] if tokens else 0

    def retry(self, tokens: Iterable[str]) -> tuple[int, int]:
        """Requeue leased requests whose processing failed (counted as an attempt, so one that
        always fails ends in the dead list); (requeued, given up)."""
        tokens = list(tokens)
        return self._requeue_call([self.max_attempts, len(tokens), "retry", *tokens]) if tokens else (0, 0)

    def clear(self) -> None:
        self.server.delete(
            self.key,
            self.processing,
            self.payloads,
            self.scores,
            self.attempts,
            self.dead,
            self.requeued_key,
            self.seq,
        )
