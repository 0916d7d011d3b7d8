"""The worker-side Scrapy scheduler for the shared Redis stream (``SCHEDULER`` setting; the queue
itself is :mod:`.queue`).

Requests the spider yields go to the shared queue (through the shared scrapy-redis duplicate
filter, in the same script); ``next_request`` leases one, unless ``VOTERSDAILY_REDIS_MAX_LEASES`` of this worker's
requests are still downloading or in their callback (the engine only backs out on a full
downloader, so a worker with slow callbacks would otherwise hoard requests other workers could
run). A request is done when Scrapy has finished with it: it has
left the engine's in-progress set, which happens only after its callback's items went through the
item pipelines (or after a redirect/retry was pushed back to the queue). Every ``ack_interval``
the done requests are acked — after the requests they yielded are in the queue and the store
writers have flushed, so an acked request's documents are in the store. A request whose callback
or item pipeline raised, or leased before a store batch was lost (neither stored nor spooled: it may
have held its documents), is never acked: it goes back to the queue as a failed attempt; one that
met the store unavailable (``StoreUnavailable``: down, refusing) is given back without counting a
delivery, and nothing is leased until the store takes writes again (asked with the store retry policy's
backoff, ``VOTERSDAILY_STORE_RETRY_BACKOFF``/``_MAX_DELAY``): a store outage never sends work to the
dead stream. Leases are renewed every third of their length; a lease of another (dead) worker that
expired is taken over by the next lease, and every ``reap_interval`` a worker with room looks for one.

When Redis goes away (restart, network), the worker keeps its leases, its done requests and the
requests its callbacks yield, stops leasing, and reconnects with backoff; once Redis answers it
renews its leases first, then pushes and acks what it buffered, and waits a renewal period before
taking over expired leases, so the leases of live workers that only expired because Redis was away
are renewed by their owners rather than run twice. A Redis that comes back without the queue (no
append-only file) is reported as what it is: how many requests were lost and leases vanished
(``RedisQueueLost`` in the run log).

A Redis that answers but refuses writes while a state of its own lasts (its memory full under
``noeviction``, its append-only file's disk full: :data:`.link.PASSING_REFUSALS`) is waited out the
same way: nothing whose follow-ups are not queued is acked, and the worker takes up again once a
write passes. A refusal no wait mends (an ACL without the queue's commands) is one error of the
run, and the worker stops (:meth:`ReliableScheduler._stop`).
"""

from __future__ import annotations

import logging
import time
import weakref
from collections import Counter
from typing import TYPE_CHECKING, Any, Self

from redis.exceptions import ResponseError
from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider
from scrapy.http import Response
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy_redis.dupefilter import RFPDupeFilter
from twisted.internet import defer, task
from twisted.python.failure import Failure

from votersdaily import scrapy_internals
from votersdaily import signals as vd_signals
from votersdaily.blocking import run_in_thread
from votersdaily.schema import LOG_DB
from votersdaily.store import mask_uri, store_uri
from votersdaily.store.base import StoreError, StoreUnavailable
from votersdaily.store.crawler import store_for, writers_of

from . import as_text, queue_name, redis_server, redis_url, serializer, spider_queue_name
from .legacy import migrate
from .link import REDIS_DOWN, REDIS_REFUSED, RedisRefused, Refusal, ServiceLink, refusal_of
from .queue import PUSH_CHUNK, RedisQueueLost, Renewal, StreamQueue, Unrunnable, UnrunnableRequest

if TYPE_CHECKING:
    from asyncio import Future
    from collections.abc import Callable

    import redis
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from twisted.internet.defer import Deferred

logger = logging.getLogger(__name__)


def _sleep(seconds: float) -> Deferred[None] | Future[None]:
    from twisted.internet import reactor

    return maybe_deferred_to_future(task.deferLater(reactor, seconds, lambda: None))


class ReliableScheduler:
    #: An interrupted worker still queues what its callbacks in flight yield (the next hops of an
    #: ingest, a sitemap's datasets): the next worker does them (``votersdaily.interrupts``).
    queues_for_others = True

    def __init__(self, crawler: Crawler, server: redis.Redis) -> None:
        self.crawler = crawler
        self.server = server
        s = crawler.settings
        self.lease = s.getfloat("VOTERSDAILY_REDIS_LEASE")
        self.ack_interval = s.getfloat("VOTERSDAILY_REDIS_ACK_INTERVAL")
        self.reap_interval = s.getfloat("VOTERSDAILY_REDIS_REAP_INTERVAL")
        self.max_attempts = s.getint("VOTERSDAILY_REDIS_MAX_ATTEMPTS")
        self.idle_close = s.getfloat("VOTERSDAILY_REDIS_IDLE_CLOSE")
        self.max_leases = s.getint("VOTERSDAILY_REDIS_MAX_LEASES") or s.getint("CONCURRENT_REQUESTS")
        self.empty_wait = s.getfloat("VOTERSDAILY_REDIS_EMPTY_WAIT")
        self.debug = s.getbool("DUPEFILTER_DEBUG")
        self.link = ServiceLink(
            "Redis",
            mask_uri(redis_url(s)),
            s.getfloat("VOTERSDAILY_REDIS_RECONNECT_DELAY"),
            s.getfloat("VOTERSDAILY_REDIS_RECONNECT_MAX_DELAY"),
        )
        #: The crawl's store, as the requests' callbacks and item pipelines met it (:meth:`_wait_for_store`).
        self.store_link = ServiceLink(
            "the store",
            mask_uri(store_uri(s)),
            s.getfloat("VOTERSDAILY_STORE_RETRY_BACKOFF"),
            s.getfloat("VOTERSDAILY_STORE_RETRY_MAX_DELAY"),
        )
        self.stats = crawler.stats
        #: This worker's leases: stream entry id -> request.
        self.leased: dict[str, Request] = {}
        #: Leased requests whose callback or item pipeline raised: retried, never acked. The request
        #: objects, not their entry ids: a stream entry keeps its id when it is delivered again.
        self.failed: set[Request] = set()
        #: The store writers' errors when each leased request was leased: one that grew since, by the
        #: checkpoint's flush, may have been a batch of its documents, lost (neither stored nor spooled).
        self._errors_at_lease: weakref.WeakKeyDictionary[Request, int] = weakref.WeakKeyDictionary()
        #: Leases a checkpoint is acking or handing back right now (not to be renewed meanwhile).
        self._settling: set[str] = set()
        #: Requests yielded while Redis was away (or its queue was lost), pushed when it answers.
        self.to_push: list[Request] = []
        #: Leases found again after an outage, not handed to the engine yet (so not done).
        self._adopted: list[str] = []
        #: The leased request :meth:`_wake_engine` hands the engine through ``engine.crawl``.
        self._waking: Request | None = None
        self._woken: list[Request] = []
        #: Expired leases taken over since the last survey, by the worker that held them.
        self._recovered: Counter[str] = Counter()
        self._buried = 0
        #: Epochs of queues this worker has reported lost (each once).
        self._lost_epochs: set[str] = set()
        self.queue: StreamQueue | None = None
        self.df: RFPDupeFilter | None = None
        self._loops: list[task.LoopingCall] = []
        self._checkpointing = False
        self._idle_since: float | None = None
        self._reap_after = 0.0
        #: Until then the queue had nothing for this worker: no lease is asked (see EMPTY_WAIT).
        self._empty_until = 0.0
        self._closing = False
        #: Whether :meth:`_join` ran: the queue's format and epoch are known.
        self._joined = False
        #: Leased requests whose callback or item pipeline met the store unavailable: given back
        #: (not a delivery) once done, while the store does not answer (:meth:`_wait_for_store`).
        self.store_waits: set[Request] = set()
        #: Leased requests an interrupt dropped before they were fetched: never acked, given back at
        #: close as unfinished work.
        self.not_fetched: set[Request] = set()
        self._waiting_for_store = False
        #: Requests whose callback or item pipeline met the store away, and how many of them were
        #: given back uncounted: the run log's ``store_wait``, their failures the outage's.
        self._met_store_outage = 0
        self._given_back_for_store = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        scheduler = cls(crawler, redis_server(crawler.settings))
        crawler.signals.connect(scheduler.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(scheduler._callback_failed, signal=signals.spider_error)
        crawler.signals.connect(scheduler._item_failed, signal=signals.item_error)
        crawler.signals.connect(scheduler._report_store_wait, signal=vd_signals.run_log_building)
        crawler.signals.connect(scheduler._dropped_unfetched, signal=vd_signals.request_not_fetched)
        return scheduler

    @property
    def _opened_queue(self) -> StreamQueue:
        """The Redis queue; Scrapy opens the scheduler before it asks for or hands over a request."""
        if self.queue is None:
            raise RuntimeError("the Redis scheduler is used before open()")
        return self.queue

    @property
    def _opened_dupefilter(self) -> RFPDupeFilter:
        if self.df is None:
            raise RuntimeError("the Redis scheduler is used before open()")
        return self.df

    # -- Scrapy's scheduler interface ----------------------------------------------------------

    def open(self, spider: Spider) -> None:
        name = queue_name(spider, self.crawler.settings)
        self.spider = spider
        self.df = RFPDupeFilter(self.server, key="%s:dupefilter" % name, debug=self.debug)
        self.queue = queue = StreamQueue(
            self.server,
            spider,
            "%s:requests" % name,
            serializer=serializer,
            lease=self.lease,
            max_attempts=self.max_attempts,
            dupefilter_key=self.df.key,
        )
        try:
            self._join(queue)
        except (*REDIS_DOWN, REDIS_REFUSED) as exc:  # gone (or refusing) since the start-up check
            self._lost(exc)
        for step, interval in (
            (self._renew, self.lease / 3),
            (self._checkpoint, self.ack_interval),
            (self._survey, self.reap_interval),
        ):
            loop = task.LoopingCall(lambda step=step: deferred_from_coro(self._guarded(step)))
            loop.start(interval, now=False)
            self._loops.append(loop)

    def _join(self, queue: StreamQueue) -> None:
        """Bring the queue into its current format and learn its epoch (what a Redis that comes back
        without it is told by), then say where this worker takes its work from: at :meth:`open`,
        or when Redis answers again if it was away then."""
        migrate(self.server, queue)
        sizes = queue.sizes()
        counters = queue.counters()
        self._joined = True
        logger.info(
            "Redis worker %s on queue %s (%d waiting, %d leased; epoch %s since %s: %s enqueued, %s acked, "
            "%s given up)",
            queue.consumer,
            queue.key,
            sizes.waiting,
            sizes.pending,
            queue.epoch,
            counters.get("since", "?"),
            counters.get("enqueued", "0"),
            counters.get("acked", "0"),
            counters.get("dead", "0"),
        )
        self._note_unprefixed(queue)

    def _note_unprefixed(self, queue: StreamQueue) -> None:
        """A deployment with a database prefix reads ``<prefix><name>:requests``; versions before
        queues took the prefix filled ``<name>:requests``, which its workers no longer read: say so
        when that queue holds requests (it may also be another deployment's, without a prefix)."""
        unprefixed = "%s:requests" % spider_queue_name(self.spider)
        if unprefixed == queue.key:
            return
        try:  # an ACL user of this deployment's keys only may not even look
            kind = as_text(self.server.type(unprefixed))
            held = {"stream": self.server.xlen, "zset": self.server.zcard}.get(kind, lambda _key: 0)(
                unprefixed
            )
        except ResponseError:
            return
        if held:
            logger.warning(
                "Redis also holds the queue %s (%d requests), which this worker does not read: its queue "
                "is %s (VOTERSDAILY_DB_PREFIX). If those requests are this deployment's (queued by a "
                "version before queues took the prefix), move them: RENAME %s %s, and the same for "
                "its :meta, :dead and the :dupefilter, before the first enqueue here",
                unprefixed,
                held,
                queue.key,
                unprefixed,
                queue.key,
            )

    def close(self, reason: str) -> Deferred[None]:
        return deferred_from_coro(self._close())

    async def _close(self) -> None:
        self._closing = True
        for loop in self._loops:
            if loop.running:
                loop.stop()
        if not self.store_link.up:
            self._store_still_away()
        if not self.link.up:
            if self.link.stopped is None:  # a stop says what it leaves when it stops
                logger.error(
                    "Redis at %s %s at shutdown: %d leased requests come back when their leases "
                    "expire, %d requests yielded by callbacks are lost",
                    self.link.where,
                    self.link.state,
                    len(self.leased),
                    len(self.to_push),
                )
            return
        while self._checkpointing:  # a loop's checkpoint is under way: its acks first
            await _sleep(0.05)
        await self._guarded(self._checkpoint)
        if self.leased and self.link.up:
            # Not done (shutdown mid-run): hand them back now rather than after the lease expires.
            n = await self._guarded(lambda: run_in_thread(self._opened_queue.release, list(self.leased)))
            logger.info("gave %d unfinished requests back to %s", n or 0, self._opened_queue.key)
            self.leased.clear()
        await self._guarded(lambda: run_in_thread(self._opened_queue.retire))
        self._log_recovered()

    def has_pending_requests(self) -> bool:
        if time.monotonic() < self._empty_until:
            return False  # a lease just found nothing: the engine's idle check needs no round trip
        return self._redis_now(lambda: self._opened_queue.sizes().waiting > 0, False)

    def enqueue_request(self, request: Request) -> bool:
        if self._waking is not None and request is self._waking:  # from _wake_engine: leased, ours
            self._woken.append(request)
            return True
        if self.link.up and not self.to_push:
            try:
                if self._opened_queue.push(request, self._fingerprint(request)):
                    self.stats.inc_value("scheduler/enqueued/redis")
                    return True
                self._opened_dupefilter.log(request, self.spider)
                return False
            except (*REDIS_DOWN, REDIS_REFUSED) as exc:
                self._lost(exc)
            except RedisQueueLost as exc:
                self._on_queue_lost(exc)
        self.to_push.append(request)  # pushed by the next checkpoint Redis answers and takes
        self.stats.inc_value("redis/buffered")
        return True

    def _fingerprint(self, request: Request) -> str:
        """The duplicate filter's key for ``request``; '' for one that must not be filtered."""
        return "" if request.dont_filter else self._opened_dupefilter.request_fingerprint(request)

    def next_request(self) -> Request | None:
        if self._woken:
            return self._woken.pop()
        if self._adopted:
            return self.leased[self._adopted.pop()]
        now = time.monotonic()
        if (
            self._working() >= self.max_leases
            or not self.link.up
            or now < self._empty_until
            or self._store_held
        ):
            return None  # the engine asks again when one of ours is done (or Redis, the store is back)
        queue = self._opened_queue
        lease = self._redis_now(lambda: queue.lease(reclaim=now >= self._reap_after), None)
        if queue.buried_last:
            self._buried += queue.buried_last
            self.stats.inc_value("redis/dead", queue.buried_last)
        self._report_unrunnable(queue.unrunnable_last)
        if lease is None:
            self._empty_until = now + self.empty_wait
            return None
        self.leased[lease.id] = lease.request
        self._errors_at_lease[lease.request] = self._write_errors()
        if lease.recovered:
            self._recovered[lease.previous] += 1
            self.stats.inc_value("redis/recovered")
        self.stats.inc_value("scheduler/dequeued/redis")
        return lease.request

    def __len__(self) -> int:
        return self._redis_now(lambda: self._opened_queue.sizes().waiting, 0)

    # -- Redis going away and coming back ------------------------------------------------------

    def _redis_now(self, call: Callable[..., Any], otherwise: Any) -> Any:
        """``call()`` on the reactor thread, or ``otherwise`` while (or as soon as) Redis is away."""
        if not self.link.up:
            return otherwise
        try:
            return call()
        except (*REDIS_DOWN, REDIS_REFUSED) as exc:
            self._lost(exc)
        except RedisQueueLost as exc:
            self._on_queue_lost(exc)
        return otherwise

    async def _guarded(self, step: Callable[..., Any]) -> Any:
        """One run of a periodic step: skipped while Redis is away; a Redis error or refusal starts
        the reconnection (see :meth:`_lost`), a lost queue is reported, any other error is logged,
        and the loop goes on."""
        if not self.link.up:
            return None
        try:
            return await step()
        except (*REDIS_DOWN, REDIS_REFUSED) as exc:
            self._lost(exc)
        except RedisQueueLost as exc:
            self._on_queue_lost(exc)
        except Exception:
            logger.exception("Redis worker step %s failed (tried again at its next turn)", step.__name__)
        return None

    def _lost(self, exc: BaseException) -> None:
        """Redis failed a call: it is away, or refuses writes while its memory or disk is full (held
        and tried again alike: nothing is acked whose follow-ups it did not take); a refusal no wait
        mends stops the worker."""
        refusal = refusal_of(exc) if isinstance(exc, REDIS_REFUSED) else None
        if refusal is not None and not refusal.passing:
            self._stop(refusal)
            return
        holding = "holding %d leases, %d done requests to ack and %d yielded requests to push" % (
            len(self.leased),
            len(self._done_tokens()),
            len(self.to_push),
        )
        if self.link.lost(exc, holding):
            self.stats.inc_value("redis/outages")
            deferred_from_coro(self._reconnect())

    def _stop(self, refusal: Refusal) -> None:
        """Redis refused a write for a reason no wait mends (its ACL, a key of the queue's name holding
        another type): said once, an error of the run (``RedisRefused``), and the worker uses Redis no
        more; it closes once the requests in flight are done (:meth:`spider_idle`)."""
        if self.link.stopped is not None:
            return
        self.link.stopped = refusal
        key = self.queue.key if self.queue is not None else "?"
        message = (
            "Redis at %s refused a write of the queue %s (%s): %s. This worker stops: its %d leased requests "
            "go back to the queue when their leases expire (VOTERSDAILY_REDIS_LEASE) and run again, "
            "yielding again what Redis did not take"
            % (self.link.where, key, refusal.said, refusal.remedy, len(self.leased))
        )
        self.stats.inc_value("redis/refused")
        self._run_failed(RedisRefused(message), key)

    async def _reconnect(self) -> None:
        """Until Redis answers and takes a write: each attempt renews this worker's leases first (a
        Redis whose memory is full still renews them, and other workers must not take them over),
        then writes a probe."""
        renewal = Renewal(0, [], [], [])
        while not self._closing and self.link.stopped is None:
            await _sleep(self.link.next_delay())
            try:
                await run_in_thread(self.server.ping)
                if not self._joined:  # Redis was away when the worker opened
                    await run_in_thread(self._join, self._opened_queue)
                try:
                    await self._adopt_mine()
                    renewal = renewal.then(await self._renew(quiet=True))  # our leases must not expire
                    await run_in_thread(self._opened_queue.probe_write)
                except RedisQueueLost as exc:
                    self._queue_lost(exc)
                    renewal = Renewal(0, [], [], [])
            except (*REDIS_DOWN, REDIS_REFUSED) as exc:
                self._lost(exc)  # said again only when why changed; a refusal no wait mends stops
                continue
            except Exception:
                logger.exception("reconnecting to Redis at %s failed", self.link.where)
                continue
            held = renewal.renewed + len(renewal.taken) + len(renewal.back) + len(renewal.gone)
            self.link.back(
                "%d of %d leases renewed, %d yielded requests to push, %d done requests to ack"
                % (renewal.renewed, held, len(self.to_push), len(self._done_tokens()))
            )
            self._report_renewal(renewal)
            # Other live workers renew theirs within a renewal period (plus their backoff).
            self._reap_after = time.monotonic() + self.lease / 3 + self.link.max_delay
            await self._guarded(self._checkpoint)
            self._wake_engine()
            return

    async def _adopt_mine(self) -> None:
        """Leases Redis granted this worker whose answers were lost with the connection."""
        for id_, request in await run_in_thread(self._opened_queue.mine):
            if id_ not in self.leased:
                self.leased[id_] = request
                self._errors_at_lease[request] = self._write_errors()
                self._adopted.append(id_)
                self.stats.inc_value("scheduler/dequeued/redis")
        self._report_unrunnable(self._opened_queue.unrunnable_last)

    def _report_unrunnable(self, entries: list[Unrunnable]) -> None:
        """Entries of the queue this worker could not make a request of (a callback its spider
        lacks: another spider's request, or another version's): each an error of the run, handed
        back as a failed delivery, given up to the dead stream after VOTERSDAILY_REDIS_MAX_ATTEMPTS."""
        queue = self._opened_queue
        for entry in entries:
            self.stats.inc_value("redis/unrunnable")
            if entry.given_up:
                self._buried += 1
                self.stats.inc_value("redis/dead")
            message = "entry %s of %s is no request %s can run (%s): %s" % (
                entry.id,
                queue.key,
                self.spider.name,
                entry.reason,
                "given up after %d deliveries, in %s" % (self.max_attempts, queue.dead)
                if entry.given_up
                else "handed back for another worker (a failed delivery)",
            )
            self._run_failed(UnrunnableRequest(message), queue.key)

    def _queue_lost(self, exc: RedisQueueLost) -> None:
        """Redis has no (or another) epoch for the queue: say what was lost, once, and go on with
        the queue Redis has now (leases are forgotten: they finish here, nothing acks them)."""
        queue = self._opened_queue
        if exc.known not in self._lost_epochs:
            self._lost_epochs.add(exc.known)
            seen = queue.last_sizes
            before = (self.link.down_since or time.monotonic()) - queue.last_sizes_at
            if seen is None:
                lost = "how many requests were lost is unknown (this worker never saw the queue's size)"
            else:
                lost = (
                    "%d waiting requests are lost and %d leases vanished, %d of them this worker's "
                    "(the queue as this worker last saw it, %.1f s before Redis went away; the leased "
                    "requests still finish, nothing can ack them)"
                    % (seen.waiting, seen.pending, len(self.leased), max(before, 0.0))
                )
            message = (
                "Redis at %s came back without the queue %s (its epoch %s is gone%s: Redis restarted without "
                "an append-only file, or the keys were deleted): %s. Enqueue the input again (the "
                "duplicate filter was lost with it, so requests already done run again) and run Redis "
                "with appendonly yes (docs/operations.md)"
                % (
                    self.link.where,
                    queue.key,
                    exc.known,
                    ", a new queue was started since, epoch %s" % exc.found if exc.found else "",
                    lost,
                )
            )
            self.stats.inc_value("redis/queue_lost")
            self.stats.inc_value("redis/lost_leases", len(self.leased))
            if seen is not None:
                self.stats.inc_value("redis/lost_waiting", seen.waiting)
            exc.args = (message,)
            self._run_failed(exc, queue.key)
        self.leased.clear()
        self.failed.clear()
        self._adopted.clear()
        queue.ensure()  # the queue Redis has now (created if absent): what is pushed next goes there

    def _on_queue_lost(self, exc: RedisQueueLost) -> None:
        try:
            self._queue_lost(exc)
        except (*REDIS_DOWN, REDIS_REFUSED) as down:  # reported already; again once Redis takes writes
            self._lost(down)

    # -- leases --------------------------------------------------------------------------------

    async def _renew(self, quiet: bool = False) -> Renewal:
        """Renew this worker's leases; those no longer its own are forgotten (and, unless
        ``quiet``, reported: the reconnection reports them itself)."""
        held = {t: r for t, r in self.leased.items() if t not in self._settling}
        if not held:
            return Renewal(0, [], [], [])
        answer = await run_in_thread(self._opened_queue.renew, list(held))

        def still_ours(lost: list[str]) -> list[str]:
            """A checkpoint may have acked some while the renewal ran: those are done, not lost."""
            return [t for t in lost if t in self.leased and t not in self._settling]

        renewal = Renewal(
            answer.renewed, still_ours(answer.taken), still_ours(answer.back), still_ours(answer.gone)
        )
        self._forget(renewal.taken + renewal.back + renewal.gone, held)
        if not quiet:
            self._report_renewal(renewal)
        return renewal

    #: Why a lease was not there to renew, by :class:`Renewal` field: what happens to its request.
    LEASE_LOST = {
        "taken": "%d leases of this worker on %s expired and other workers took them over (this worker or "
        "Redis was away longer than VOTERSDAILY_REDIS_LEASE): their requests run twice",
        "back": "%d leases of this worker on %s were undone by Redis (it lost its last writes: appendfsync "
        "everysec or no, and a crash): their requests are back in the queue and run again",
        "gone": "%d leased requests of this worker are no longer in %s (another worker that took them "
        "over acked them or gave them up)",
    }

    def _report_renewal(self, renewal: Renewal) -> None:
        for field, message in self.LEASE_LOST.items():
            ids = getattr(renewal, field)
            if ids:
                self.stats.inc_value("redis/lease_lost", len(ids))
                logger.warning(message, len(ids), self._opened_queue.key)

    def _wake_engine(self) -> None:
        """An idle engine asks for requests now, not at its next heartbeat (Scrapy: every 5 s,
        up to 5 s lost after every Redis reconnect or reap). Public API only: the next request is
        leased and handed to the engine with ``engine.crawl``, which wakes it; ``enqueue_request``
        knows that request and keeps it as leased instead of pushing it back to Redis."""
        engine = self.crawler.engine
        if engine is None or engine.spider is None or self._closing:
            return
        self._empty_until = 0.0
        request = self.next_request()
        if request is None:
            return
        self._waking = request
        try:
            engine.crawl(request)
        finally:
            self._waking = None

    def _inprogress(self) -> set[Request]:
        """Requests the engine has not finished with: downloading (the downloader's ``active``), or
        waiting for or in their callback and item pipelines (the scraper's slot). Scrapy hands a
        request from the first to the second without a reactor turn between them."""
        if self.crawler.engine is None:
            return set()
        return scrapy_internals.downloading(self.crawler) | scrapy_internals.scraping(self.crawler)

    def _working(self) -> int:
        """Leased requests the engine has not finished with (downloading, or in their callback)."""
        inprogress = self._inprogress()
        return sum(1 for r in self.leased.values() if r in inprogress)

    def _dropped_unfetched(self, request: Request) -> None:
        """``request_not_fetched``: an interrupt dropped ``request`` before it was fetched; leased, it
        is unfinished work, given back at close (its errback's outcome is not its result)."""
        self.not_fetched.add(request)

    def _done_tokens(self) -> list[str]:
        """Leases the engine has finished with, to ack or retry (not those waiting for the store, nor
        those an interrupt dropped unfetched)."""
        inprogress = self._inprogress()
        return [
            t
            for t, r in self.leased.items()
            if r not in inprogress
            and t not in self._adopted
            and r not in self.store_waits
            and r not in self.not_fetched
        ]

    def _token_of(self, request: Request | None) -> str | None:
        if request is None:
            return None
        for token, leased in self.leased.items():
            if leased is request:
                return token
        return None

    def _callback_failed(self, failure: Failure, response: Response, spider: Spider) -> None:
        """``spider_error``: the callback (or errback) of a leased request raised."""
        self._mark_failed(getattr(response, "request", None), failure)

    def _item_failed(self, item: Any, response: Response, spider: Spider, failure: Failure) -> None:
        """``item_error``: an item of a leased request was not stored."""
        self._mark_failed(
            getattr(response, "request", None) if isinstance(response, Response) else None, failure
        )

    def _mark_failed(self, request: Request | None, failure: Failure) -> None:
        if request is None or self._token_of(request) is None:
            return
        if failure.check(StoreUnavailable):
            self._wait_for_store_with(request)
        else:
            self.failed.add(request)

    # -- the store going away ------------------------------------------------------------------

    @property
    def _store_held(self) -> bool:
        """Whether leasing waits for the store: requests met it unavailable, or it does not answer."""
        return bool(self.store_waits) or not self.store_link.up

    def _wait_for_store_with(self, request: Request) -> None:
        """``request`` met the store unavailable: nothing more is leased until the store is asked
        whether it answers (:meth:`_wait_for_store`)."""
        self.store_waits.add(request)
        if not self._waiting_for_store:
            self._waiting_for_store = True
            deferred_from_coro(self._wait_for_store())

    async def _wait_for_store(self) -> None:
        """Ask the store whether it answers (with the store retry policy's backoff) until it does.
        While it does not, the requests that met it unavailable are given back once done, not
        counted as deliveries (it is no fault of theirs: another worker, or this one later, runs
        them), and nothing is leased. When it answers, leasing resumes; a request that met it
        unavailable although it answers is a failed delivery, as any other error (a store that
        fails that request alone must not hold the queue for ever)."""
        link = self.store_link
        try:
            while not self._closing:
                await _sleep(link.first_delay if link.up else link.next_delay())
                problem = await self._store_problem()
                inprogress = self._inprogress()
                done = {t: r for t, r in self.leased.items() if r in self.store_waits and r not in inprogress}
                if problem is None:
                    for request in done.values():
                        self.store_waits.discard(request)
                        self.failed.add(request)
                        if not link.up:  # it met the outage just ended: that outage's failure, not the run's
                            self._met_outage(request)
                    if self.store_waits:
                        continue
                    if not link.up:
                        link.back("leasing resumes")
                    self._wake_engine()
                    return
                given = await self._guarded(lambda held=done: self._give_back_for_store(held)) if done else 0
                holding = "%d requests that met it given back to %s (no delivery counted), none leased" % (
                    given or 0,
                    self._opened_queue.key,
                )
                if not link.lost(problem, holding) and given:
                    logger.info(
                        "%d more requests given back to %s (no delivery counted): %s at %s is still "
                        "unreachable",
                        given,
                        self._opened_queue.key,
                        link.what,
                        link.where,
                    )
        finally:
            self._waiting_for_store = False

    async def _store_problem(self) -> StoreError | None:
        """Why the crawl's store does not take writes (in its run log's database, which every run
        writes), or None when it does: a store that answers reads but fails writes (its disk full,
        a user without the right to write) is waited out as one that does not answer, never taken
        for one that fails these requests alone (:meth:`.Store.check_writes`)."""
        try:
            await run_in_thread(store_for(self.crawler).check_writes, LOG_DB)
        except StoreError as exc:
            return exc
        return None

    async def _give_back_for_store(self, held: dict[str, Request]) -> int:
        """Give the requests ``held`` back to the queue, not counted as deliveries; how many."""
        given = await run_in_thread(self._opened_queue.release, list(held))
        self._forget(list(held), held)
        self.store_waits.difference_update(held.values())
        self.stats.inc_value("redis/given_back_for_store", given)
        self._given_back_for_store += given
        for request in held.values():
            self._met_outage(request)
        return given

    def _met_outage(self, request: Request) -> None:
        """``request`` met the store away and runs again (given back, or as a failed delivery once
        the store answers): its failure is the outage's, not the run's, whose result says how its
        work ended (:data:`votersdaily.signals.outage_met`)."""
        self._met_store_outage += 1
        self.crawler.signals.send_catch_log(vd_signals.outage_met, request=request, spider=self.spider)

    def _store_still_away(self) -> None:
        """The worker stops while the store does not answer: an error of the run (the requests given
        back for it are not done), said once."""
        link = self.store_link
        message = (
            "the store at %s still did not answer when the worker stopped (away %.1f s): %d requests "
            "that met it were given back to %s, where they wait for a worker"
            % (link.where, link.seconds_away, self._given_back_for_store, self._opened_queue.key)
        )
        self._run_failed(StoreUnavailable(message), link.where, "store")

    def _run_failed(self, exc: Exception, url: str, part: str = "queue") -> None:
        """An error of the worker's run (not of a request), said once at ERROR: the run log's result;
        ``url`` the queue's key or the store's address, ``part`` which of them failed."""
        logger.error("%s", exc)
        self.crawler.signals.send_catch_log(
            vd_signals.source_failed, failure=Failure(exc), url=url, spider=self.spider, where=part
        )

    def _report_store_wait(self, doc: dict[str, Any], spider: Spider) -> None:
        """``run_log_building``: the store outages this worker waited out (``store_wait``), if any."""
        link = self.store_link
        if link.outages:
            doc["store_wait"] = {
                "outages": link.outages,
                "seconds": round(link.seconds_away, 1),
                "requests": self._met_store_outage,
                "given_back": self._given_back_for_store,
                "ended": link.up,
            }

    async def _push_buffered(self) -> None:
        """Push the requests yielded while Redis was away or refused them (through the duplicate
        filter), a chunk (one script) at a time: each leaves the buffer once Redis took it, so a
        push refused midway goes on from there, none queued twice."""
        while self.to_push:
            batch = self.to_push[:PUSH_CHUNK]
            pairs = [(request, self._fingerprint(request)) for request in batch]
            added = await run_in_thread(self._opened_queue.push_many, pairs)
            del self.to_push[: len(batch)]
            self.stats.inc_value("scheduler/enqueued/redis", sum(added))

    def _write_errors(self) -> int:
        return sum(len(w.errors) for w in writers_of(self.crawler))

    async def _checkpoint(self) -> None:
        """Push what was yielded, flush the store writers, then ack the requests that were done
        before the flush, and hand back for a retry those whose results were not stored: their
        callback or item pipeline raised, or a store batch failed (neither stored nor spooled) since
        they were leased, which may have held their documents, whenever it failed. A write Redis
        refuses ends the checkpoint there (the caller holds what is left for the next one): no
        request is acked before the requests it yielded are queued."""
        if self._checkpointing or self.queue is None:
            return
        done = self._done_tokens()
        if not done and not self.to_push:
            return
        self._checkpointing = True
        try:
            if self.to_push:
                await self._push_buffered()  # a done request's follow-ups are queued before its ack
            if not done:
                return
            await maybe_deferred_to_future(
                defer.DeferredList([w.batch.flush() for w in writers_of(self.crawler)])
            )
            errors = self._write_errors()
            done = [t for t in done if t in self.leased]  # a renewal may have found some not ours
            held = {t: self.leased[t] for t in done}
            lost = [t for t in done if errors > self._errors_at_lease.get(held[t], 0)]
            raised = [t for t in done if held[t] in self.failed and t not in lost]
            retry = lost + raised
            ack = [t for t in done if t not in retry]
            self._settling.update(done)
            if ack:
                n = await run_in_thread(self._opened_queue.ack, ack)
                self._forget(ack, held)
                self.stats.inc_value("redis/acked", n)
                if n != len(ack):
                    # Our lease had expired and another worker took the request over (a slow worker).
                    self.stats.inc_value("redis/ack_lease_lost", len(ack) - n)
            if retry:
                requeued, dead = await run_in_thread(self._opened_queue.retry, retry)
                self._forget(retry, held)
                self.stats.inc_value("redis/retried", requeued)
                self.stats.inc_value("redis/dead", dead)
                why = {
                    "a store batch failed since they were leased, neither stored nor spooled": len(lost),
                    "their callback or item pipeline raised": len(raised),
                }
                logger.warning(
                    "%d requests not acked (%s): %d back in %s, %d given up (%s)",
                    len(retry),
                    "; ".join("%d: %s" % (n, reason) for reason, n in why.items() if n),
                    requeued,
                    self._opened_queue.key,
                    dead,
                    self._opened_queue.dead,
                )
        finally:
            self._checkpointing = False
            self._settling.clear()

    def _forget(self, tokens: list[str], held: dict[str, Request]) -> None:
        """Stop tracking the leases ``tokens`` as they were when ``held`` was taken: an entry
        retried meanwhile may already be leased again by this worker, under the same id (a stream
        entry keeps it), and that new lease stays."""
        for token in tokens:
            request = held[token]
            self.failed.discard(request)
            if self.leased.get(token) is request:
                del self.leased[token]
                if token in self._adopted:
                    self._adopted.remove(token)

    async def _survey(self) -> None:
        """Log the leases of dead workers taken over since the last survey, and wake the engine
        when an expired lease (or a requeued request) waits and this worker has room."""
        self._log_recovered()
        if time.monotonic() < self._reap_after:
            return
        expired, _removed = await run_in_thread(self._opened_queue.survey)
        if expired:
            self._wake_engine()

    def _log_recovered(self) -> None:
        if self._recovered or self._buried:
            logger.warning(
                "recovered %d requests of dead workers from %s (%s); %d given up after %d deliveries (%s)",
                sum(self._recovered.values()),
                self._opened_queue.key,
                ", ".join("%d from %s" % (n, who) for who, n in self._recovered.most_common()) or "none",
                self._buried,
                self.max_attempts,
                self._opened_queue.dead,
            )
            self._recovered.clear()
            self._buried = 0

    # -- idle ----------------------------------------------------------------------------------

    def spider_idle(self, spider: Spider) -> None:
        """Workers wait for work (and for Redis while it is away); with VOTERSDAILY_REDIS_IDLE_CLOSE
        they stop once the queue (waiting and leased, by any worker) has been empty that long, and at
        once when Redis refused a write no wait mends (:meth:`_stop`)."""
        if self.link.stopped is not None:
            return
        busy = (
            bool(self.leased)
            or bool(self.to_push)
            or self._redis_now(lambda: self._opened_queue.sizes().length > 0, True)
        )
        now = time.monotonic()
        if busy:
            self._idle_since = None
            raise DontCloseSpider
        if self._idle_since is None:
            self._idle_since = now
        if self.idle_close <= 0 or now - self._idle_since < self.idle_close:
            raise DontCloseSpider
