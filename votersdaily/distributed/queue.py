"""The shared request queue: a Redis stream read by one consumer group, one consumer per worker.

Keys, for a queue ``<name>:requests``:

- ``<name>:requests``        the stream: every request not yet done (field ``request``, JSON);
                             consumer group ``workers``. An entry is *waiting* until a worker reads
                             it, then *pending* for that worker (its lease) until acked, when it is
                             deleted. So the stream's length is waiting + leased.
- ``<name>:requests:dead``   a stream of the requests given up on (``request``, ``deliveries``,
                             ``consumer``: the last worker that had it, ``reason``: ``expired``,
                             ``failed`` or ``unrunnable``, ``entry``: its id in the queue)
- ``<name>:requests:meta``   a hash: ``epoch`` (a random id written when the queue is created: a
                             Redis that comes back without it lost the queue), ``since``, and the
                             counters ``enqueued``, ``acked``, ``dead``, ``recovered``, ``migrated``
- ``<name>:dupefilter``      scrapy-redis's duplicate filter (a set of request fingerprints)

A lease is a pending entry: Redis keeps its consumer, idle time and delivery count (``XPENDING``,
``XINFO CONSUMERS``). A worker renews its leases (``XCLAIM … JUSTID`` resets the idle time) and acks
(``XACK`` + ``XDEL``) only what it still holds. A lease idle longer than the lease time belonged to a
dead (or stalled) worker: the next worker that leases claims it (``XCLAIM``, which counts a
delivery) before reading new entries; one delivered ``max_attempts`` times without an ack goes to the
dead stream. A request given back unprocessed (a worker shutting down) or whose processing failed is
handed to the consumer ``requeued`` with its idle time set past any lease, so the next lease takes
it; a give-back does not count as a delivery, a failure does. So does an entry the leasing worker
cannot make a request of (a callback its spider lacks: another spider's request, or one of another
version during an upgrade; damaged JSON): it goes back for another worker, and after
``max_attempts`` deliveries to the dead stream as ``unrunnable``; the worker leases on (such an
entry must never stop a worker, nor, one worker after another, the whole queue).

Every operation is one Lua script (atomic, one round trip) that first checks the queue's epoch:
a Redis that restarted without its data (or was flushed) answers ``RedisQueueLost`` instead of silently
serving an empty queue. The dupefilter's fingerprint and the stream entry are added by one script,
so a Redis that loses its last writes loses both (re-enqueuing then queues them again); the entry
first, so a write Redis refuses between them (an ACL that allows the one key and not the other)
leaves a request queued, never a fingerprint without its request (whose push no retry could make).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from redis.exceptions import ResponseError
from scrapy import Request
from scrapy_redis.queue import Base

from votersdaily.clock import now_iso
from votersdaily.defaults import DEFAULTS

from . import as_text

if TYPE_CHECKING:
    import redis
    from scrapy import Spider


GROUP = "workers"
#: The consumer that holds requests given back or failed until the next lease takes them.
REQUEUED = "requeued"
#: The idle time (ms) given to a requeued entry: past any lease, so it is taken first.
_FAR_IDLE = 10**12
#: A consumer with nothing pending and idle this many leases is a worker gone: it is removed.
STALE_LEASES = 10
_LOST = "VDQUEUELOST"
#: Requests one push script queues: Redis takes or refuses each script whole (a write it refuses
#: for a full memory is the script's first), so a push refused midway is done again from its chunk.
PUSH_CHUNK = 500
#: Entries one lease may hand back as unrunnable before it answers "nothing" (the next lease goes on).
_UNRUNNABLE_PER_LEASE = 16

#: KEYS[1] stream, KEYS[2] meta; ARGV[1] the epoch the caller knows, ARGV[2] the group.
_GUARD = (
    """
local epoch = redis.call('HGET', KEYS[2], 'epoch')
if epoch ~= ARGV[1] then return redis.error_reply('%s ' .. (epoch or '-')) end
local stream, meta, group = KEYS[1], KEYS[2], ARGV[2]
local function request_of(fields)
  for i = 1, #fields, 2 do if fields[i] == 'request' then return fields[i + 1] end end
  return ''
end
local function owner_of(id)
  local p = redis.call('XPENDING', stream, group, id, id, 1)
  if #p == 0 then return false, 0 end
  return p[1][2], tonumber(p[1][4])
end
local function bury(dead, id, deliveries, consumer, reason)
  local entry = redis.call('XRANGE', stream, id, id)
  if #entry > 0 then
    redis.call('XADD', dead, '*', 'request', request_of(entry[1][2]), 'deliveries', deliveries,
      'consumer', consumer, 'reason', reason, 'entry', id)
  end
  redis.call('XACK', stream, group, id)
  redis.call('XDEL', stream, id)
  redis.call('HINCRBY', meta, 'dead', 1)
end
local function sizes()
  return redis.call('XLEN', stream), redis.call('XPENDING', stream, group)[1]
end
"""
    % _LOST
)

# KEYS: stream, meta; ARGV: new epoch, group, now (ISO). Creates the group and the epoch if absent.
ENSURE = """
local stream, meta = KEYS[1], KEYS[2]
local kind = redis.call('TYPE', stream)['ok']
if kind ~= 'stream' and kind ~= 'none' then return redis.error_reply('WRONGTYPE ' .. kind) end
local epoch = redis.call('HGET', meta, 'epoch')
local created = 0
if not epoch then
  epoch = ARGV[1]
  created = 1
  redis.call('HSET', meta, 'epoch', epoch, 'since', ARGV[3])
end
redis.pcall('XGROUP', 'CREATE', stream, ARGV[2], '0', 'MKSTREAM')
return {epoch, created}
"""

# KEYS: stream, meta, dupefilter; ARGV: epoch, group, then (fingerprint or '', request) pairs.
PUSH = (
    _GUARD
    + """
local added = {}
local n = 0
for i = 3, #ARGV, 2 do
  local fingerprint = ARGV[i]
  if fingerprint == '' or redis.call('SISMEMBER', KEYS[3], fingerprint) == 0 then
    redis.call('XADD', stream, '*', 'request', ARGV[i + 1])
    if fingerprint ~= '' then redis.call('SADD', KEYS[3], fingerprint) end
    added[#added + 1] = 1
    n = n + 1
  else
    added[#added + 1] = 0
  end
end
if n > 0 then redis.call('HINCRBY', meta, 'enqueued', n) end
return added
"""
)

# KEYS: stream, meta, dead; ARGV: epoch, group, consumer, lease ms, max deliveries, reclaim (1/0).
# Reclaims an expired lease of another consumer (or a requeued entry) first, else reads a new entry;
# an expired one delivered max times goes to the dead stream instead. Answer: {id, request, previous
# holder ('' for a new entry), deliveries, stream length, pending, given up}.
LEASE = (
    _GUARD
    + """
local me, lease, max = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local buried = 0
if ARGV[6] == '1' then
  for _, p in ipairs(redis.call('XPENDING', stream, group, 'IDLE', lease, '-', '+', 32)) do
    local id, holder, deliveries = p[1], p[2], tonumber(p[4])
    if holder == me then
      -- our own lease, late: renewed by our next renewal unless another worker takes it first
    elseif deliveries >= max and holder ~= '%s' then
      bury(KEYS[3], id, deliveries, holder, 'expired')
      buried = buried + 1
    else
      local claimed = redis.call('XCLAIM', stream, group, me, lease, id)
      if #claimed > 0 and claimed[1] then
        if holder ~= '%s' then redis.call('HINCRBY', meta, 'recovered', 1) end
        local length, pending = sizes()
        return {id, request_of(claimed[1][2]), holder, deliveries + 1, length, pending, buried}
      end
    end
  end
end
local read = redis.call('XREADGROUP', 'GROUP', group, me, 'COUNT', 1, 'STREAMS', stream, '>')
local length, pending = sizes()
if not read then return {'', '', '', 0, length, pending, buried} end
local entry = read[1][2][1]
return {entry[1], request_of(entry[2]), '', 1, length, pending, buried}
"""
    % (REQUEUED, REQUEUED)
)

# KEYS: stream, meta; ARGV: epoch, group, consumer, ids. Renews the leases still this consumer's.
# Answer: {renewed, taken over (ids), back in the queue (ids), gone (ids), stream length, pending}.
RENEW = (
    _GUARD
    + """
local me = ARGV[3]
local renewed, taken, back, gone = 0, {}, {}, {}
for i = 4, #ARGV do
  local id = ARGV[i]
  local holder = owner_of(id)
  if holder == me then
    redis.call('XCLAIM', stream, group, me, 0, id, 'JUSTID')
    renewed = renewed + 1
  elseif holder then
    taken[#taken + 1] = id
  elseif #redis.call('XRANGE', stream, id, id) > 0 then
    back[#back + 1] = id
  else
    gone[#gone + 1] = id
  end
end
local length, pending = sizes()
return {renewed, taken, back, gone, length, pending}
"""
)

# KEYS: stream, meta; ARGV: epoch, group, consumer, ids. Acks (and deletes) what is still ours.
ACK = (
    _GUARD
    + """
local me, acked = ARGV[3], 0
for i = 4, #ARGV do
  if owner_of(ARGV[i]) == me then
    redis.call('XACK', stream, group, ARGV[i])
    redis.call('XDEL', stream, ARGV[i])
    acked = acked + 1
  end
end
if acked > 0 then redis.call('HINCRBY', meta, 'acked', acked) end
local length, pending = sizes()
return {acked, length, pending}
"""
)

# KEYS: stream, meta, dead; ARGV: epoch, group, consumer, max deliveries, mode ('release': given
# back unprocessed, not a delivery; 'retry': processing failed; 'unrunnable': this worker cannot
# even make the request, a failed delivery too, given up as 'unrunnable'), ids. Answer: {requeued, dead}.
REQUEUE = (
    _GUARD
    + """
local me, max, mode = ARGV[3], tonumber(ARGV[4]), ARGV[5]
local reason = mode == 'unrunnable' and 'unrunnable' or 'failed'
local requeued, buried = 0, 0
for i = 6, #ARGV do
  local id = ARGV[i]
  local holder, deliveries = owner_of(id)
  if holder == me then
    if mode == 'release' then
      redis.call('XCLAIM', stream, group, '%s', 0, id, 'IDLE', %d,
        'RETRYCOUNT', math.max(deliveries - 1, 0), 'JUSTID')
      requeued = requeued + 1
    elseif deliveries >= max then
      bury(KEYS[3], id, deliveries, me, reason)
      buried = buried + 1
    else
      redis.call('XCLAIM', stream, group, '%s', 0, id, 'IDLE', %d, 'JUSTID')
      requeued = requeued + 1
    end
  end
end
return {requeued, buried}
"""
    % (REQUEUED, _FAR_IDLE, REQUEUED, _FAR_IDLE)
)

# KEYS: stream, meta; ARGV: epoch, group, consumer, lease ms. This consumer's live leases (a lease
# whose answer was lost with the connection is found again here): {id, request, ...}.
MINE = (
    _GUARD
    + """
local out = {}
for _, p in ipairs(redis.call('XPENDING', stream, group, '-', '+', 100000, ARGV[3])) do
  if tonumber(p[3]) < tonumber(ARGV[4]) then
    local entry = redis.call('XRANGE', stream, p[1], p[1])
    if #entry > 0 then
      out[#out + 1] = p[1]
      out[#out + 1] = request_of(entry[1][2])
    end
  end
end
return out
"""
)

# KEYS: stream, meta; ARGV: epoch, group, consumer, lease ms. Whether a lease has expired (or a
# request was requeued), and removes the consumers of workers gone (nothing pending, idle
# STALE_LEASES leases). Answer: {expired (0/1), stream length, pending, consumers removed}.
SURVEY = (
    _GUARD
    + """
local expired = #redis.call('XPENDING', stream, group, 'IDLE', tonumber(ARGV[4]), '-', '+', 1)
local removed = 0
for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', stream, group)) do
  local info = {}
  for i = 1, #c, 2 do info[c[i]] = c[i + 1] end
  if info['pending'] == 0 and info['name'] ~= ARGV[3] and info['name'] ~= '%s'
      and info['idle'] > %d * tonumber(ARGV[4]) then
    redis.call('XGROUP', 'DELCONSUMER', stream, group, info['name'])
    removed = removed + 1
  end
end
local length, pending = sizes()
return {expired, length, pending, removed}
"""
    % (REQUEUED, STALE_LEASES)
)

# KEYS: stream, meta; ARGV: epoch, group, consumer. Removes this consumer if it holds nothing.
RETIRE = (
    _GUARD
    + """
if #redis.call('XPENDING', stream, group, '-', '+', 1, ARGV[3]) > 0 then return 0 end
return redis.call('XGROUP', 'DELCONSUMER', stream, group, ARGV[3])
"""
)

# KEYS: stream, meta; ARGV: epoch, group. A write that needs memory and changes nothing (the epoch
# written again): refused as long as Redis refuses the queue's writes (memory or disk full).
PROBE = (
    _GUARD
    + """
redis.call('HSET', meta, 'epoch', ARGV[1])
return 1
"""
)

SIZES = (
    _GUARD
    + """
local length, pending = sizes()
return {length, pending}
"""
)


class RedisQueueLost(Exception):
    """The queue's epoch is gone or changed: Redis restarted without its data, or the keys were
    deleted. ``found`` is the epoch Redis has now (None: none)."""

    def __init__(self, key: str, known: str, found: str | None) -> None:
        super().__init__("the queue %s of epoch %s is gone (Redis has %s)" % (key, known, found or "none"))
        self.key = key
        self.known = known
        self.found = found


@dataclass(frozen=True)
class Sizes:
    """The queue as Redis last answered: entries in the stream, of which leased (pending)."""

    length: int
    pending: int

    @property
    def waiting(self) -> int:
        return self.length - self.pending


@dataclass(frozen=True)
class Lease:
    id: str
    request: Request
    #: The consumer that held it before ('' for a new entry; REQUEUED for one given back or failed).
    previous: str
    deliveries: int

    @property
    def recovered(self) -> bool:
        """Taken over from a worker whose lease expired (not a fresh or a requeued entry)."""
        return self.previous not in ("", REQUEUED)


class UnrunnableRequest(Exception):
    """A queue entry the leasing worker cannot make a request of (the run log's error)."""


@dataclass(frozen=True)
class Unrunnable:
    """A leased entry this worker could not make a request of: handed back as a failed delivery."""

    id: str
    reason: str
    deliveries: int
    #: Delivered ``max_attempts`` times: now in the dead stream.
    given_up: bool


@dataclass(frozen=True)
class Renewal:
    renewed: int
    #: Leases another worker holds now (ours expired): their requests run twice.
    taken: list[str]
    #: Entries in the stream that are not pending: Redis lost the read (its last writes).
    back: list[str]
    #: Entries no longer in the stream (acked or given up by another worker).
    gone: list[str]

    def then(self, later: Renewal) -> Renewal:
        """The leases this renewal and a later one found lost (the attempts of one outage), and the
        later one's renewed count."""
        return Renewal(
            later.renewed, self.taken + later.taken, self.back + later.back, self.gone + later.gone
        )


def consumer_name() -> str:
    """``host/pid/random``: which machine and process holds a lease, as ``XPENDING`` shows it."""
    return "%s/%d/%s" % (socket.gethostname(), os.getpid(), uuid.uuid4().hex[:8])


class StreamQueue(Base):
    """The shared queue of one spider (see the module docstring). Its methods raise
    :class:`RedisQueueLost` when the queue's epoch changed since :meth:`ensure`."""

    def __init__(
        self,
        server: redis.Redis,
        spider: Spider,
        key: str,
        serializer: Any = None,
        lease: float = DEFAULTS["VOTERSDAILY_REDIS_LEASE"],
        max_attempts: int = DEFAULTS["VOTERSDAILY_REDIS_MAX_ATTEMPTS"],
        consumer: str | None = None,
        dupefilter_key: str | None = None,
    ) -> None:
        super().__init__(server, spider, key, serializer)
        self.lease_ms = int(lease * 1000)
        self.max_attempts = max_attempts
        self.consumer = consumer or consumer_name()
        self.dead = self.key + ":dead"
        self.meta = self.key + ":meta"
        self.dupefilter_key = dupefilter_key or self.key.rsplit(":", 1)[0] + ":dupefilter"
        self.epoch: str | None = None
        self.last_sizes: Sizes | None = None
        #: When Redis last answered with the sizes (time.monotonic()).
        self.last_sizes_at = 0.0
        self.buried_last = 0
        #: Entries the last :meth:`lease` or :meth:`mine` could not make a request of.
        self.unrunnable_last: list[Unrunnable] = []
        self._scripts = {
            name: server.register_script(text)
            for name, text in (
                ("ensure", ENSURE),
                ("push", PUSH),
                ("lease", LEASE),
                ("renew", RENEW),
                ("ack", ACK),
                ("requeue", REQUEUE),
                ("mine", MINE),
                ("survey", SURVEY),
                ("sizes", SIZES),
                ("retire", RETIRE),
                ("probe", PROBE),
            )
        }

    # -- the epoch -----------------------------------------------------------------------------

    def ensure(self) -> bool:
        """Create the stream, its group and its epoch if absent, and take the epoch Redis has as
        the one this queue knows; True when this call created the epoch (a new queue)."""
        epoch, created = self._scripts["ensure"](
            keys=[self.key, self.meta],
            args=[uuid.uuid4().hex, GROUP, now_iso()],
        )
        self.epoch = as_text(epoch)
        return bool(created)

    def _run(self, name: str, keys: list[str], args: Sequence[Any]) -> Any:
        if self.epoch is None:
            raise RuntimeError("StreamQueue.ensure() first: the queue's epoch is not known")
        try:
            return self._scripts[name](keys=keys, args=[self.epoch, GROUP, *args])
        except ResponseError as exc:
            message = str(exc)
            if message.startswith(_LOST):
                found = message[len(_LOST) :].strip()
                raise RedisQueueLost(self.key, self.epoch, None if found == "-" else found) from None
            raise

    def _seen(self, length: int | bytes, pending: int | bytes) -> Sizes:
        self.last_sizes = Sizes(int(length), int(pending))
        self.last_sizes_at = time.monotonic()
        return self.last_sizes

    # -- sizes ---------------------------------------------------------------------------------

    def sizes(self) -> Sizes:
        return self._seen(*self._run("sizes", [self.key, self.meta], []))

    def __len__(self) -> int:
        """Requests waiting (not leased)."""
        return self.sizes().waiting

    def in_processing(self) -> int:
        return self.sizes().pending

    def counters(self) -> dict[str, str]:
        return {as_text(k): as_text(v) for k, v in self.server.hgetall(self.meta).items()}

    # -- producing -----------------------------------------------------------------------------

    def push(self, request: Request, fingerprint: str = "") -> bool:
        """Queue ``request`` unless ``fingerprint`` is already in the duplicate filter ('' : no
        check); whether it was queued."""
        return self.push_many([(request, fingerprint)]) == [True]

    def push_many(self, requests: Iterable[tuple[Request, str]], chunk: int = PUSH_CHUNK) -> list[bool]:
        """Queue ``(request, fingerprint)`` pairs as :meth:`push` does, ``chunk`` a script; one flag
        per pair."""
        added: list[bool] = []
        batch: list[str] = []
        for request, fingerprint in requests:
            batch += [fingerprint, self._encode_request(request)]
            if len(batch) >= 2 * chunk:
                added += self._push(batch)
                batch = []
        if batch:
            added += self._push(batch)
        return added

    def _push(self, batch: list[str]) -> list[bool]:
        flags = self._run("push", [self.key, self.meta, self.dupefilter_key], batch)
        return [bool(f) for f in flags]

    # -- consuming -----------------------------------------------------------------------------

    def lease(self, reclaim: bool = True) -> Lease | None:
        """Lease an expired or requeued request (when ``reclaim``), else the next waiting one; None
        when there is none (``buried_last`` then says how many expired ones were given up).
        An entry that is no request of this spider is handed back as a failed delivery
        (``unrunnable_last``) and the next waiting one leased instead."""
        self.buried_last = 0
        self.unrunnable_last = []
        for _ in range(_UNRUNNABLE_PER_LEASE):
            id_, data, previous, deliveries, length, pending, buried = self._run(
                "lease",
                [self.key, self.meta, self.dead],
                [self.consumer, self.lease_ms, self.max_attempts, "1" if reclaim else "0"],
            )
            self._seen(length, pending)
            self.buried_last += int(buried)
            if not id_:
                return None
            request = self._request_or_unrunnable(as_text(id_), data, int(deliveries))
            if request is not None:
                return Lease(as_text(id_), request, as_text(previous), int(deliveries))
            reclaim = False  # the entry handed back would be reclaimed first: a new one now
        return None

    def _request_or_unrunnable(self, id_: str, data: bytes | str, deliveries: int) -> Request | None:
        """The request of a leased entry, or None: it is handed back as a failed delivery (given up
        after ``max_attempts``) and recorded in ``unrunnable_last``."""
        try:
            return self._decode_request(data)
        except Exception as exc:  # whatever the entry holds, it must not stop the worker
            reason = "%s: %s" % (type(exc).__name__, exc)
        _requeued, dead = self._requeue("unrunnable", [id_])
        self.unrunnable_last.append(Unrunnable(id_, reason, deliveries, bool(dead)))
        return None

    def mine(self) -> list[tuple[str, Request]]:
        """This consumer's live leases (to find again a lease whose answer was lost)."""
        self.unrunnable_last = []
        flat = self._run("mine", [self.key, self.meta], [self.consumer, self.lease_ms])
        found = []
        for i in range(0, len(flat), 2):
            id_ = as_text(flat[i])
            request = self._request_or_unrunnable(id_, flat[i + 1], 0)
            if request is not None:
                found.append((id_, request))
        return found

    def renew(self, ids: Iterable[str]) -> Renewal:
        ids = list(ids)
        renewed, taken, back, gone, length, pending = self._run(
            "renew", [self.key, self.meta], [self.consumer, *ids]
        )
        self._seen(length, pending)
        return Renewal(
            int(renewed), [as_text(i) for i in taken], [as_text(i) for i in back], [as_text(i) for i in gone]
        )

    def ack(self, ids: Iterable[str]) -> int:
        """Ack (and delete) the requests this consumer still holds; how many it held."""
        ids = list(ids)
        if not ids:
            return 0
        acked, length, pending = self._run("ack", [self.key, self.meta], [self.consumer, *ids])
        self._seen(length, pending)
        return int(acked)

    def _requeue(self, mode: str, ids: list[str]) -> tuple[int, int]:
        if not ids:
            return 0, 0
        requeued, dead = self._run(
            "requeue", [self.key, self.meta, self.dead], [self.consumer, self.max_attempts, mode, *ids]
        )
        return int(requeued), int(dead)

    def release(self, ids: Iterable[str]) -> int:
        """Give leased requests back at once (a worker shutting down before processing them); not
        counted as a delivery."""
        return self._requeue("release", list(ids))[0]

    def retry(self, ids: Iterable[str]) -> tuple[int, int]:
        """Requeue leased requests whose processing failed (a delivery that counts, so one that always
        fails ends in the dead stream); (requeued, given up)."""
        return self._requeue("retry", list(ids))

    def survey(self) -> tuple[bool, int]:
        """(whether a lease has expired or a request was requeued, consumers of gone workers removed)."""
        expired, length, pending, removed = self._run(
            "survey", [self.key, self.meta], [self.consumer, self.lease_ms]
        )
        self._seen(length, pending)
        return bool(expired), int(removed)

    def retire(self) -> None:
        """Remove this worker's consumer from the group if it holds no lease (a worker stopping)."""
        self._run("retire", [self.key, self.meta], [self.consumer])

    def probe_write(self) -> None:
        """Raise what Redis answers a write now (its refusal while its memory or disk is full)."""
        self._run("probe", [self.key, self.meta], [])

    def pop(self, timeout: float = 0) -> Request | None:
        """Not used: a reliable pop is a lease (see :meth:`lease`)."""
        raise NotImplementedError("use StreamQueue.lease(), which returns a Lease")

    def clear(self) -> None:
        self.server.delete(self.key, self.dead, self.meta)
