"""Push a spider's start requests into its Redis queue (``python -m votersdaily enqueue``).

The spider is built with the given arguments exactly as ``scrapy crawl`` would build it, and its
``start()`` requests are serialised into the shared queue through the shared duplicate filter, so a
worker of that spider (on any machine) processes each of them once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.spiderloader import SpiderLoader
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.misc import load_object
from scrapy.utils.reactor import install_reactor
from scrapy_redis.dupefilter import RFPDupeFilter
from twisted.python.failure import Failure

from votersdaily.reactor import installed_reactor
from votersdaily.store import mask_uri

from . import queue_name, redis_server, redis_url, serializer
from .legacy import Migration, migrate
from .persistence import Persistence, RedisNotDurable, read_persistence
from .queue import StreamQueue

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.settings import Settings

logger = logging.getLogger(__name__)


@dataclass
class EnqueueReport:
    queue: str
    pushed: int = 0
    duplicates: int = 0
    skipped_items: int = 0
    #: Inputs the spider rejected (a bad line of a requests file), as "where: why".
    bad: list[str] = field(default_factory=list)
    #: What Redis said about keeping its data, and why that is not safe (None: it is).
    persistence: Persistence | None = None
    volatile: str | None = None
    #: A queue of the previous version's format moved into the stream first.
    migrated: Migration = field(default_factory=Migration)


async def _collect(crawler: Crawler) -> list[Any]:
    spider = crawler.spider
    assert spider is not None, "start_requests made it"  # noqa: S101 - invariant
    try:
        return [output async for output in spider.start()]
    finally:
        await crawler.signals.send_catch_log_async(
            signals.spider_closed, spider=crawler.spider, reason="finished"
        )


def start_requests(
    spidercls: type[Spider], settings: Settings, rejected: list[str] | None = None, **spider_args: Any
) -> tuple[list[Any], Any]:
    """The spider's start() output, run on the project's reactor (spiders may use threads/the store);
    inputs the spider rejects are appended to ``rejected``."""
    install_reactor(settings["TWISTED_REACTOR"], settings["ASYNCIO_EVENT_LOOP"])
    reactor = installed_reactor()

    from votersdaily import signals as vd_signals

    crawler = Crawler(spidercls, settings)
    # Not a crawl (no engine), but start() may count in the stats (the laundromat does).
    crawler.stats = load_object(crawler.settings["STATS_CLASS"])(crawler)
    crawler.spider = spidercls.from_crawler(crawler, **spider_args)
    if rejected is not None:

        def reject(failure: Failure, url: str, spider: Spider) -> None:
            rejected.append("%s: %s" % (url, failure.getErrorMessage()))

        for signal in (vd_signals.input_rejected, vd_signals.source_failed):
            crawler.signals.connect(reject, signal=signal, weak=False)
    outcome: list[Any] = []
    d = deferred_from_coro(_collect(crawler))
    d.addBoth(outcome.append)
    d.addBoth(lambda _: reactor.stop())
    if not outcome:
        reactor.run(installSignalHandlers=False)
    if isinstance(outcome[0], Failure):
        outcome[0].raiseException()
    return outcome[0], crawler.spider


def enqueue(spider_name: str, settings: Settings, **spider_args: Any) -> EnqueueReport:
    """Push the spider's start requests into its queue. First, Redis must keep its data (raises
    :class:`RedisNotDurable` otherwise, unless VOTERSDAILY_REDIS_REQUIRE_PERSISTENCE is False: then
    ``report.volatile`` says why it is not safe)."""
    server = redis_server(settings)
    persistence = read_persistence(server)
    problem = persistence.problem(mask_uri(redis_url(settings)))
    if problem and settings.getbool("VOTERSDAILY_REDIS_REQUIRE_PERSISTENCE"):
        raise RedisNotDurable(persistence.refusal(mask_uri(redis_url(settings))))
    spidercls = SpiderLoader.from_settings(settings).load(spider_name)
    bad: list[str] = []
    outputs, spider = start_requests(spidercls, settings, bad, **spider_args)
    name = queue_name(spidercls, settings)
    dupefilter = RFPDupeFilter(server, key="%s:dupefilter" % name)
    queue = StreamQueue(
        server, spider, "%s:requests" % name, serializer=serializer, dupefilter_key=dupefilter.key
    )
    report = EnqueueReport(queue=queue.key, bad=bad, persistence=persistence, volatile=problem)
    report.migrated = migrate(server, queue)
    # Start requests that must reach the downloader (dont_filter) can still name their own key in
    # the shared filter, so enqueuing the same input twice does not run it twice.
    queue_fingerprint = getattr(spider, "queue_fingerprint", lambda request: None)
    pairs = []
    for output in outputs:
        if not isinstance(output, Request):
            report.skipped_items += 1
            continue
        if output.dont_filter:
            pairs.append((output, queue_fingerprint(output) or ""))
        else:
            pairs.append((output, dupefilter.request_fingerprint(output)))
    added = queue.push_many(pairs)
    report.pushed = sum(added)
    report.duplicates = len(added) - report.pushed
    return report
