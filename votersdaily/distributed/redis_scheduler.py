"""The worker-side Scrapy scheduler for the reliable Redis queue (``SCHEDULER`` setting).

Requests the spider yields go to the shared queue (through the shared scrapy-redis duplicate
filter); ``next_request`` leases one, unless ``VOTERSDAILY_REDIS_MAX_LEASES`` of this worker's
requests are still downloading or in their callback (the engine only backs out on a full
downloader, so a worker with slow callbacks would otherwise hoard requests other workers could
run). A request is done when Scrapy has finished with it: it has
left the engine's in-progress set, which happens only after its callback's items went through the
item pipelines (or after a redirect/retry was pushed back to the queue). Every ``ack_interval``
the done requests are acked — after the requests they yielded are in the queue and the store
writers have flushed, so an acked request's documents are in the store. A request whose callback
or item pipeline raised, or done while a store batch failed, is never acked: it goes back to the
queue as a failed attempt. Leases are renewed every third of their length; expired leases of
other (dead) workers are requeued every ``reap_interval``.

When Redis goes away (restart, network), the worker keeps its leases, its done requests and the
requests its callbacks yield, stops leasing, and reconnects with backoff; once Redis answers it
renews its leases first, then pushes and acks what it buffered, and waits a renewal period before
reaping, so the leases of live workers that only expired because Redis was away are renewed by
their owners rather than requeued.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import TYPE_CHECKING, Any, Self

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider
from scrapy.http import Response
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy_redis.dupefilter import RFPDupeFilter
from twisted.internet import defer, task

from votersdaily.blocking import run_in_thread
from votersdaily.store import mask_uri
from votersdaily.store.crawler import writers_of

from . import queue_name, redis_server, redis_url, serializer
from .link import REDIS_DOWN, RedisLink
from .queue import ReliableQueue

if TYPE_CHECKING:
    from asyncio import Future
    from collections.abc import Callable

    import redis
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from twisted.internet.defer import Deferred
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)


def _sleep(seconds: float) -> Deferred[None] | Future[None]:
    from twisted.internet import reactor

    return maybe_deferred_to_future(task.deferLater(reactor, seconds, lambda: None))


class ReliableScheduler:
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
        self.debug = s.getbool("DUPEFILTER_DEBUG")
        self.link = RedisLink(
            mask_uri(redis_url(s)),
            s.getfloat("VOTERSDAILY_REDIS_RECONNECT_DELAY"),
            s.getfloat("VOTERSDAILY_REDIS_RECONNECT_MAX_DELAY"),
        )
        self.stats = crawler.stats
        self.leased: dict[str, Request] = {}
        #: Leased requests whose callback or item pipeline raised: retried, never acked.
        self.failed: set[str] = set()
        #: Requests yielded while Redis was away: [request, duplicate filter already asked].
        self.to_push: list[list[Any]] = []
        #: The token of a lease asked for when Redis went away (its answer may have been lost).
        self._unanswered: str | None = None
        #: Leases found again after an outage, not handed to the engine yet (so not done).
        self._adopted: list[str] = []
        #: The leased request :meth:`_wake_engine` hands the engine through ``engine.crawl``.
        self._waking: Request | None = None
        self._woken: list[Request] = []
        self.queue: ReliableQueue | None = None
        self.df: RFPDupeFilter | None = None
        self._loops: list[task.LoopingCall] = []
        self._checkpointing = False
        self._idle_since: float | None = None
        self._reap_after = 0.0
        self._closing = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        scheduler = cls(crawler, redis_server(crawler.settings))
        crawler.signals.connect(scheduler.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(scheduler._callback_failed, signal=signals.spider_error)
        crawler.signals.connect(scheduler._item_failed, signal=signals.item_error)
        return scheduler

    @property
    def _opened_queue(self) -> ReliableQueue:
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
        name = queue_name(spider)
        self.spider = spider
        self.queue = ReliableQueue(
            self.server,
            spider,
            "%s:requests" % name,
            serializer=serializer,
            lease=self.lease,
            max_attempts=self.max_attempts,
        )
        self.df = RFPDupeFilter(self.server, key="%s:dupefilter" % name, debug=self.debug)
        logger.info(
            "Redis worker on queue %s (%d waiting, %d in processing)",
            self.queue.key,
            len(self.queue),
            self.queue.in_processing(),
        )
        for step, interval in (
            (self._renew, self.lease / 3),
            (self._checkpoint, self.ack_interval),
            (self._reap, self.reap_interval),
        ):
            loop = task.LoopingCall(lambda step=step: deferred_from_coro(self._guarded(step)))
            loop.start(interval, now=False)
            self._loops.append(loop)

    def close(self, reason: str) -> Deferred[None]:
        return deferred_from_coro(self._close())

    async def _close(self) -> None:
        self._closing = True
        for loop in self._loops:
            if loop.running:
                loop.stop()
        if not self.link.up:
            logger.error(
                "Redis at %s is unreachable at shutdown: %d leased requests come back when their "
                "leases expire, %d requests yielded by callbacks are lost",
                self.link.where,
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

    def has_pending_requests(self) -> bool:
        return self._redis_now(lambda: len(self._opened_queue) > 0, False)

    def enqueue_request(self, request: Request) -> bool:
        if self._waking is not None and request is self._waking:  # from _wake_engine: leased, ours
            self._woken.append(request)
            return True
        entry = [request, request.dont_filter]
        if self.link.up and not self.to_push:
            try:
                if not request.dont_filter and self._opened_dupefilter.request_seen(request):
                    self._opened_dupefilter.log(request, self.spider)
                    return False
                entry[1] = True
                self._opened_queue.push(request)
                self.stats.inc_value("scheduler/enqueued/redis")
                return True
            except REDIS_DOWN as exc:
                self._lost(exc)
        self.to_push.append(entry)  # pushed by the next checkpoint Redis answers
        self.stats.inc_value("redis/buffered")
        return True

    def next_request(self) -> Request | None:
        if self._woken:
            return self._woken.pop()
        if self._adopted:
            return self.leased[self._adopted.pop()]
        if self._working() >= self.max_leases or not self.link.up:
            return None  # the engine asks again when one of ours is done (or Redis is back)
        self._unanswered = token = uuid.uuid4().hex
        leased = self._redis_now(lambda: self._opened_queue.lease(token), None)
        if self.link.up:
            self._unanswered = None
        if leased is None:
            return None
        token, request = leased
        self.leased[token] = request
        self.stats.inc_value("scheduler/dequeued/redis")
        return request

    def __len__(self) -> int:
        return self._redis_now(lambda: len(self._opened_queue), 0)

    # -- Redis going away and coming back ------------------------------------------------------

    def _redis_now(self, call: Callable[..., Any], otherwise: Any) -> Any:
        """``call()`` on the reactor thread, or ``otherwise`` while (or as soon as) Redis is away."""
        if not self.link.up:
            return otherwise
        try:
            return call()
        except REDIS_DOWN as exc:
            self._lost(exc)
            return otherwise

    async def _guarded(self, step: Callable[..., Any]) -> Any:
        """One run of a periodic step: skipped while Redis is away; a Redis error starts the
        reconnection, any other error is logged, and the loop goes on either way."""
        if not self.link.up:
            return None
        try:
            return await step()
        except REDIS_DOWN as exc:
            self._lost(exc)
        except Exception:
            logger.exception("Redis worker step %s failed (tried again at its next turn)", step.__name__)
        return None

    def _lost(self, exc: BaseException) -> None:
        holding = "holding %d leases, %d done requests to ack and %d yielded requests to push" % (
            len(self.leased),
            len(self._done_tokens()),
            len(self.to_push),
        )
        if self.link.lost(exc, holding):
            self.stats.inc_value("redis/outages")
            deferred_from_coro(self._reconnect())

    async def _reconnect(self) -> None:
        while not self._closing:
            await _sleep(self.link.next_delay())
            try:
                await run_in_thread(self.server.ping)
                await self._adopt_unanswered()
                renewed = await self._renew()  # first: our leases must not look expired
            except REDIS_DOWN:
                continue
            except Exception:
                logger.exception("reconnecting to Redis at %s failed", self.link.where)
                continue
            self.link.back(
                "%d of %d leases renewed, %d yielded requests to push, %d done requests to ack"
                % (renewed or 0, len(self.leased), len(self.to_push), len(self._done_tokens()))
            )
            if (renewed or 0) < len(self.leased):
                logger.warning(
                    "%d leases of this worker were gone from %s (Redis restarted without its data, or "
                    "another worker took them over): their requests may run twice",
                    len(self.leased) - (renewed or 0),
                    self._opened_queue.processing,
                )
            # Other live workers renew theirs within a renewal period (plus their backoff).
            self._reap_after = time.monotonic() + self.lease / 3 + self.link.max_delay
            await self._guarded(self._checkpoint)
            self._wake_engine()
            return

    async def _adopt_unanswered(self) -> None:
        """A lease Redis granted just before it went away, whose answer never came, is ours."""
        token = self._unanswered
        if token is None:
            return
        request = await run_in_thread(self._opened_queue.leased, token)
        if request is not None:
            self.leased[token] = request
            self._adopted.append(token)
            self.stats.inc_value("scheduler/dequeued/redis")
        self._unanswered = None

    # -- leases --------------------------------------------------------------------------------

    async def _renew(self) -> int:
        if self.leased:
            return await run_in_thread(self._opened_queue.renew, list(self.leased))
        return 0

    def _wake_engine(self) -> None:
        """An idle engine asks for requests now, not at its next heartbeat (Scrapy: every 5 s,
        up to 5 s lost after every Redis reconnect or reap). Public API only: the next request is
        leased and handed to the engine with ``engine.crawl``, which wakes it; ``enqueue_request``
        knows that request and keeps it as leased instead of pushing it back to Redis."""
        engine = self.crawler.engine
        if engine is None or engine.spider is None or self._closing:
            return
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
        engine = self.crawler.engine
        if engine is None:
            return set()
        busy = set(engine.downloader.active)
        scraping = engine.scraper.slot
        if scraping is not None:
            busy.update(scraping.active)
            busy.update(request for _result, request, _done in scraping.queue)
        return busy

    def _working(self) -> int:
        """Leased requests the engine has not finished with (downloading, or in their callback)."""
        inprogress = self._inprogress()
        return sum(1 for r in self.leased.values() if r in inprogress)

    def _done_tokens(self) -> list[str]:
        inprogress = self._inprogress()
        return [t for t, r in self.leased.items() if r not in inprogress and t not in self._adopted]

    def _token_of(self, request: Request | None) -> str | None:
        if request is None:
            return None
        for token, leased in self.leased.items():
            if leased is request:
                return token
        return None

    def _callback_failed(self, failure: Failure, response: Response, spider: Spider) -> None:
        """``spider_error``: the callback (or errback) of a leased request raised."""
        self._mark_failed(getattr(response, "request", None))

    def _item_failed(self, item: Any, response: Response, spider: Spider, failure: Failure) -> None:
        """``item_error``: an item of a leased request was not stored."""
        self._mark_failed(getattr(response, "request", None) if isinstance(response, Response) else None)

    def _mark_failed(self, request: Request | None) -> None:
        token = self._token_of(request)
        if token is not None:
            self.failed.add(token)

    async def _push_buffered(self) -> None:
        """Push the requests yielded while Redis was away (duplicate filter first, once each)."""
        batch = list(self.to_push)

        def push() -> None:
            for entry in batch:
                if not entry[1]:
                    seen = self._opened_dupefilter.request_seen(entry[0])
                    entry[1] = True
                    if seen:
                        entry[0] = None
            self._opened_queue.push_many(entry[0] for entry in batch if entry[0] is not None)

        await run_in_thread(push)
        del self.to_push[: len(batch)]
        self.stats.inc_value("scheduler/enqueued/redis", sum(e[0] is not None for e in batch))

    def _write_errors(self) -> int:
        return sum(len(w.errors) for w in writers_of(self.crawler))

    async def _checkpoint(self) -> None:
        """Push what was yielded, flush the store writers, then ack the requests that were done
        before the flush (and hand back for a retry those whose results were not stored)."""
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
            errors = self._write_errors()
            await maybe_deferred_to_future(
                defer.DeferredList([w.batch.flush() for w in writers_of(self.crawler)])
            )
            lost_writes = self._write_errors() > errors
            retry = [t for t in done if lost_writes or t in self.failed]
            ack = [t for t in done if not (lost_writes or t in self.failed)]
            if ack:
                n = await run_in_thread(self._opened_queue.ack, ack)
                self._forget(ack)
                self.stats.inc_value("redis/acked", len(ack))
                if n != len(ack):
                    # Our lease had expired and another worker took the request over (a slow worker).
                    self.stats.inc_value("redis/ack_lease_lost", len(ack) - n)
            if retry:
                requeued, dead = await run_in_thread(self._opened_queue.retry, retry)
                self._forget(retry)
                self.stats.inc_value("redis/retried", requeued)
                self.stats.inc_value("redis/dead", dead)
                logger.warning(
                    "%d requests not acked (%s): %d back in %s, %d given up (%s)",
                    len(retry),
                    "a store batch failed" if lost_writes else "their callback or item pipeline raised",
                    requeued,
                    self._opened_queue.key,
                    dead,
                    self._opened_queue.dead,
                )
        finally:
            self._checkpointing = False

    def _forget(self, tokens: list[str]) -> None:
        for token in tokens:
            self.leased.pop(token, None)
            self.failed.discard(token)

    async def _reap(self) -> None:
        if time.monotonic() < self._reap_after:
            return
        requeued, dead = await run_in_thread(self._opened_queue.reap)
        if requeued or dead:
            self.stats.inc_value("redis/recovered", requeued)
            logger.warning(
                "recovered %d requests of dead workers from %s (%d given up: %s)",
                requeued,
                self._opened_queue.processing,
                dead,
                self._opened_queue.dead,
            )
            if dead:
                self.stats.inc_value("redis/dead", dead)
            self._wake_engine()

    # -- idle ----------------------------------------------------------------------------------

    def spider_idle(self, spider: Spider) -> None:
        """Workers wait for work (and for Redis while it is away); with VOTERSDAILY_REDIS_IDLE_CLOSE
        they stop once the queue and every worker's processing set have been empty that long."""
        busy = (
            bool(self.leased)
            or bool(self.to_push)
            or self._redis_now(
                lambda: len(self._opened_queue) > 0 or self._opened_queue.in_processing() > 0, True
            )
        )
        now = time.monotonic()
        if busy:
            self._idle_since = None
            raise DontCloseSpider
        if self._idle_since is None:
            self._idle_since = now
        if self.idle_close <= 0 or now - self._idle_since < self.idle_close:
            raise DontCloseSpider
