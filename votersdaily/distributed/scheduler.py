"""The worker-side Scrapy scheduler for the reliable Redis queue (``SCHEDULER`` setting).

Requests the spider yields go to the shared queue (through the shared scrapy-redis duplicate
filter); ``next_request`` leases one, unless ``VOTERSDAILY_REDIS_MAX_LEASES`` of this worker's
requests are still downloading or in their callback (the engine only backs out on a full
downloader, so a worker with slow callbacks would otherwise hoard requests other workers could
run). A request is done when Scrapy has finished with it: it has
left the engine's in-progress set, which happens only after its callback's items went through the
item pipelines (or after a redirect/retry was pushed back to the queue). Every ``ack_interval``
the done requests are acked — after the store writers have flushed, so an acked request's
documents are in the store. Leases are renewed every third of their length; expired leases of
other (dead) workers are requeued every ``reap_interval``.
"""

from __future__ import annotations

import logging
import time

from scrapy import signals
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy_redis.dupefilter import RFPDupeFilter
from twisted.internet import defer, task, threads

from ..store.crawler import writers_of
from . import queue_name, redis_server, serializer
from .queue import ReliableQueue

logger = logging.getLogger(__name__)


class ReliableScheduler:
    def __init__(self, crawler, server):
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
        self.stats = crawler.stats
        self.leased: dict[str, object] = {}
        self.queue: ReliableQueue | None = None
        self.df: RFPDupeFilter | None = None
        self._loops: list[task.LoopingCall] = []
        self._checkpointing = False
        self._idle_since: float | None = None

    @classmethod
    def from_crawler(cls, crawler):
        scheduler = cls(crawler, redis_server(crawler.settings))
        crawler.signals.connect(scheduler.spider_idle, signal=signals.spider_idle)
        return scheduler

    # -- Scrapy's scheduler interface ----------------------------------------------------------

    def open(self, spider):
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
        checkpoint = lambda: deferred_from_coro(self._checkpoint())  # noqa: E731
        for call, interval in (
            (self._renew, self.lease / 3),
            (checkpoint, self.ack_interval),
            (self._reap, self.reap_interval),
        ):
            loop = task.LoopingCall(call)
            loop.start(interval, now=False).addErrback(
                lambda f: logger.error("Redis worker loop failed: %s", f.getErrorMessage())
            )
            self._loops.append(loop)

    def close(self, reason):
        return deferred_from_coro(self._close())

    async def _close(self):
        for loop in self._loops:
            if loop.running:
                loop.stop()
        await self._checkpoint()
        if self.leased:
            # Not done (shutdown mid-run): hand them back now rather than after the lease expires.
            n = await maybe_deferred_to_future(threads.deferToThread(self.queue.release, list(self.leased)))
            logger.info("gave %d unfinished requests back to %s", n, self.queue.key)
            self.leased.clear()

    def has_pending_requests(self) -> bool:
        return len(self.queue) > 0

    def enqueue_request(self, request) -> bool:
        if not request.dont_filter and self.df.request_seen(request):
            self.df.log(request, self.spider)
            return False
        self.queue.push(request)
        self.stats.inc_value("scheduler/enqueued/redis")
        return True

    def next_request(self):
        if self._working() >= self.max_leases:
            return None  # the engine asks again when one of ours is done
        leased = self.queue.lease()
        if leased is None:
            return None
        token, request = leased
        self.leased[token] = request
        self.stats.inc_value("scheduler/dequeued/redis")
        return request

    def __len__(self) -> int:
        return len(self.queue)

    # -- leases --------------------------------------------------------------------------------

    def _renew(self):
        if self.leased:
            return threads.deferToThread(self.queue.renew, list(self.leased))

    def _inprogress(self) -> set:
        slot = getattr(self.crawler.engine, "_slot", None)
        return slot.inprogress if slot is not None else set()

    def _working(self) -> int:
        """Leased requests the engine has not finished with (downloading, or in their callback)."""
        inprogress = self._inprogress()
        return sum(1 for r in self.leased.values() if r in inprogress)

    def _done_tokens(self) -> list[str]:
        inprogress = self._inprogress()
        return [t for t, r in self.leased.items() if r not in inprogress]

    async def _checkpoint(self):
        """Flush the store writers, then ack the requests that were done before the flush."""
        if self._checkpointing or self.queue is None:
            return
        done = self._done_tokens()
        if not done:
            return
        self._checkpointing = True
        try:
            await maybe_deferred_to_future(
                defer.DeferredList([w.batch.flush() for w in writers_of(self.crawler)])
            )
            n = await maybe_deferred_to_future(threads.deferToThread(self.queue.ack, done))
            for token in done:
                self.leased.pop(token, None)
            self.stats.inc_value("redis/acked", len(done))
            if n != len(done):
                # Our lease had expired and another worker took the request over (a slow worker).
                self.stats.inc_value("redis/ack_lease_lost", len(done) - n)
        finally:
            self._checkpointing = False

    def _reap(self):
        requeued, dead = self.queue.reap()
        if requeued or dead:
            self.stats.inc_value("redis/recovered", requeued)
            logger.warning(
                "recovered %d requests of dead workers from %s (%d given up: %s)",
                requeued,
                self.queue.processing,
                dead,
                self.queue.dead,
            )
            if dead:
                self.stats.inc_value("redis/dead", dead)
            slot = getattr(self.crawler.engine, "_slot", None)
            if slot is not None:
                slot.nextcall.schedule()  # wake an idle engine now rather than at its next heartbeat

    # -- idle ----------------------------------------------------------------------------------

    def spider_idle(self, spider):
        """Workers wait for work; with VOTERSDAILY_REDIS_IDLE_CLOSE they stop once the queue and
        every worker's processing set have been empty that long."""
        busy = len(self.queue) > 0 or self.queue.in_processing() > 0 or bool(self.leased)
        now = time.monotonic()
        if busy:
            self._idle_since = None
        elif self._idle_since is None:
            self._idle_since = now
        if self.idle_close <= 0 or busy or now - self._idle_since < self.idle_close:
            raise DontCloseSpider
