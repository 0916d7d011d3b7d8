"""Ctrl-C (SIGINT, or SIGTERM) during a crawl: say what happens, stop cleanly, record it truthfully.

Scrapy's own handling says nothing below INFO, waits for every request already handed to the
downloader (including those only waiting out a download delay: seconds), records spiders that had
done all their work as ``shutdown`` like the others, and on a second Ctrl-C stops the reactor with no
run log for the spiders still open. Here:

* the first interrupt says "stopping after the current requests; Ctrl-C again to stop now". From then
  on no request is sent that was not in flight: those waiting for the downloader (a download delay, a
  concurrency limit) and those scheduled later fail with :class:`CrawlInterrupted`, counted in the
  stat ``interrupt/not_fetched``. A spider whose work is done closes as ``finished``; the others stop
  after the requests in flight (Scrapy's graceful ``shutdown``, which components such as the
  laundromat's downloads watch for); a spider still opening (its pipelines waiting for the store)
  stops so as soon as its engine runs, before it sends a request. A run that left nothing out (all
  its work was in flight and finished) keeps its own result; one that did is recorded
  ``interrupted`` (see :class:`votersdaily.extensions.RunLog`), not as a failure;
* the second stops now: the reactor stops, and each spider still open (or still opening) spools its
  run log and the documents its writers held (``RunLog.forced_stop``), delivered by the next run or
  ``flush``. A store write already in flight in a thread still finishes (or times out) before the
  process ends;
* a third ends the process at once, without waiting for those writes (their documents are still in
  the spiders' sources: the next run stores them).

Both ``python -m votersdaily crawl`` and ``scrapy crawl`` (votersdaily/commands/crawl.py) use it.
A loop that runs no crawl (the scheduler) stops through :func:`stop_requests`.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import CloseSpider, DontCloseSpider, IgnoreRequest
from scrapy.utils.defer import deferred_from_coro
from twisted.python.failure import Failure

from votersdaily import scrapy_internals
from votersdaily import signals as vd_signals
from votersdaily.reactor import installed_reactor

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler, CrawlerProcessBase

#: ``finish_reason`` of a spider still open when a second interrupt stopped the reactor.
FORCED_STOP = "forced stop"
#: ``finish_reason`` Scrapy gives a spider stopped by ``Crawler.stop`` (the first interrupt).
GRACEFUL_STOP = "shutdown"
#: The run log's ``result`` of a run stopped by either.
INTERRUPTED = "interrupted"
NOT_FETCHED_STAT = "interrupt/not_fetched"
#: Whether the first interrupt found work of the spider not yet in flight (False: all in flight).
WORK_LEFT_STAT = "interrupt/work_left"
#: The exit status of an interrupted crawl (the shell's for a process ended by SIGINT).
EXIT_INTERRUPTED = 130
#: Seconds between two looks at a spider that was still opening when the crawl was interrupted.
OPENING_POLL = 0.05


class CrawlInterrupted(IgnoreRequest):
    """A request that was waiting for the downloader when the crawl was interrupted: never fetched,
    and no failure of its source."""


def work_done(crawler: Crawler) -> bool:
    """Whether the crawler's spider has nothing left to do (Scrapy would close it as finished at its
    next idle check): nothing scheduled, downloading or being scraped, and no ``spider_idle``
    receiver (a Redis worker waiting for requests) keeps it open."""
    engine = crawler.engine
    if engine is None or engine.spider is None or not engine.spider_is_idle():
        return False
    answers = crawler.signals.send_catch_log(
        signals.spider_idle, spider=engine.spider, dont_log=(DontCloseSpider, CloseSpider)
    )
    if any(isinstance(a, Failure) and a.check(DontCloseSpider) for _, a in answers):
        return False
    return engine.spider_is_idle()


def only_in_flight(crawler: Crawler) -> bool:
    """Whether all that is left of the spider's work is in flight (downloading, waiting for the
    downloader, being scraped): every start request is out and nothing waits in its scheduler. (Scrapy
    has no public question for that: votersdaily/scrapy_internals.py asks its engine.)"""
    if crawler.engine is None or scrapy_internals.start_requests_left(crawler):
        return False
    return scrapy_internals.scheduler_has_pending(crawler) is False


def not_fetched(crawler: Crawler, request: Request) -> CrawlInterrupted:
    """What fails ``request``, which the interrupt leaves unfetched (refused, dropped while it waited
    for the downloader, or a laundromat download cut short); counted, and said to the crawl's
    components (``request_not_fetched``: a Redis-fed worker gives such a lease back)."""
    crawler.stats.inc_value(NOT_FETCHED_STAT)
    crawler.signals.send_catch_log(vd_signals.request_not_fetched, request=request)
    return CrawlInterrupted("the crawl was interrupted before %s was fetched" % request.url)


#: A scheduler's class attribute: True when a request it is given is queued where other processes
#: take it (a Redis-fed worker's queue), so an interrupted crawl may still give it requests: its
#: engine, stopping, takes none back, and they wait there for the next worker.
QUEUES_FOR_OTHERS = "queues_for_others"


def queues_for_others(crawler: Crawler) -> bool:
    """Whether the crawl's scheduler queues what it is given for other processes
    (:data:`QUEUES_FOR_OTHERS`)."""
    return bool(getattr(scrapy_internals.scheduler_of(crawler), QUEUES_FOR_OTHERS, False))


def refuse_new_requests(crawler: Crawler) -> None:
    """Every request scheduled from now on is dropped (a ``request_scheduled`` receiver raising
    :class:`CrawlInterrupted`, which Scrapy's engine takes as "do not schedule"), and counted."""

    def refuse(request: Request, spider: Spider) -> None:
        raise not_fetched(crawler, request)

    crawler.signals.connect(refuse, signal=signals.request_scheduled, weak=False)


def hold_open(crawler: Crawler) -> None:
    """Keep Scrapy from closing the spider as idle (``finished``) from now on: it is being stopped."""

    def stopping(spider: Spider) -> None:
        raise DontCloseSpider

    crawler.signals.connect(stopping, signal=signals.spider_idle, weak=False)


def drop_waiting_requests(crawler: Crawler) -> int:
    """Fail every request still queued in the downloader's slots (waiting out a download delay or
    a concurrency limit) with :class:`CrawlInterrupted`; how many."""
    if crawler.engine is None:
        return 0
    waiting = scrapy_internals.take_queued_requests(crawler)
    for request, download in waiting:
        download.errback(Failure(not_fetched(crawler, request)))
    return len(waiting)


def _closed_meanwhile(failure: Failure) -> None:
    """A spider Scrapy closed between the question and the close (its engine says "Spider not
    opened"): it finished on its own, which is what was asked."""
    failure.trap(RuntimeError)
    if "not opened" not in str(failure.value):
        failure.raiseException()


class Interrupts:
    """Replaces Scrapy's shutdown signal handlers of ``process`` (a ``CrawlerProcess`` or
    ``AsyncCrawlerProcess``) with the two steps above; ``say`` shows a line to the person."""

    def __init__(self, process: CrawlerProcessBase, say: Callable[[str], None]) -> None:
        self.process = process
        self.say = say
        #: None, GRACEFUL_STOP or FORCED_STOP: what the person asked for.
        self.stop: str | None = None

    def install(self) -> None:
        """Call before ``process.start()``: Scrapy installs its handlers once the reactor runs; these
        replace them one turn later."""
        reactor = installed_reactor()
        reactor.callWhenRunning(reactor.callLater, 0, scrapy_internals.on_shutdown_signals, self._first)

    def _first(self, signum: int, _frame: Any) -> None:
        scrapy_internals.on_shutdown_signals(self._second)
        # Nothing but that here: a signal handler may interrupt a write to the same stream.
        installed_reactor().callFromThread(self.stop_gracefully, signum)

    def _second(self, signum: int, _frame: Any) -> None:
        scrapy_internals.on_shutdown_signals(self._third)
        installed_reactor().callFromThread(self.stop_now, signum)

    def _third(self, signum: int, _frame: Any) -> None:
        # A write of our own in a signal handler: os.write, which no Python-level lock can block.
        os.write(2, b"stopped without waiting for the store writes in flight\n")
        os._exit(EXIT_INTERRUPTED)

    @staticmethod
    def _named(signum: int) -> tuple[str, str]:
        """What happened and what repeats it: ("interrupted", "Ctrl-C") for SIGINT."""
        if signum == signal.SIGINT:
            return "interrupted", "Ctrl-C"
        name = scrapy_internals.signal_name(signum)
        return name, name

    def stop_gracefully(self, signum: int = signal.SIGINT) -> None:
        self.stop = GRACEFUL_STOP
        what, again = self._named(signum)
        self.say("%s: stopping after the current requests; %s again to stop now" % (what, again))
        for crawler in list(self.process.crawlers):
            if not scrapy_internals.is_crawling(crawler):  # finished, or stopping already
                continue
            if not scrapy_internals.engine_running(crawler):
                # Still opening its spider (a pipeline's open_spider waiting for its store: the
                # embedded store's process starting). Crawler.stop_async would only mark it stopped
                # (its engine does not run yet): the engine would then start, run out of requests
                # (refused) and close the spider, and Scrapy's stop at that close, finding the
                # crawler stopped already, would never stop the engine: a crawl that never ends.
                refuse_new_requests(crawler)
                hold_open(crawler)  # its stop, not an idle close of a spider refused everything
                crawler.stats.set_value(WORK_LEFT_STAT, True)
                self._stop_once_running(crawler)
                continue
            if work_done(crawler):
                closing = deferred_from_coro(crawler.engine.close_spider_async(reason="finished"))
                closing.addErrback(_closed_meanwhile)
                continue
            if not queues_for_others(crawler):
                # What the callbacks in flight yield would be sent by no one: refused, counted. A
                # Redis-fed worker's queue keeps it for the next worker instead (or their parents,
                # acked, would take their follow-ups with them).
                refuse_new_requests(crawler)
            dropped = drop_waiting_requests(crawler)
            # All that was left in flight (nothing dropped, nothing scheduled): once those requests
            # are scraped the run has done its work, and its run log says so (see RunLog.build).
            crawler.stats.set_value(WORK_LEFT_STAT, bool(dropped) or not only_in_flight(crawler))
            deferred_from_coro(crawler.stop_async())

    def _stop_once_running(self, crawler: Crawler) -> None:
        """Stop ``crawler`` gracefully as soon as its engine runs (checked every :data:`OPENING_POLL`
        seconds; Scrapy says nothing between ``engine_started`` and ``running``); not if its crawl
        ended meanwhile (its spider failed to open) or a second interrupt stopped everything."""
        if crawler not in self.process.crawlers or not scrapy_internals.is_crawling(crawler):
            return
        if scrapy_internals.engine_running(crawler):
            deferred_from_coro(crawler.stop_async())
            return
        installed_reactor().callLater(OPENING_POLL, self._stop_once_running, crawler)

    def stop_now(self, signum: int = signal.SIGINT) -> None:
        self.stop = FORCED_STOP
        self.say(
            "%s again: stopping now; the run logs of the spiders still running and the documents "
            "they had not written are spooled" % self._named(signum)[0]
        )
        # Scrapy stops its crawlers gracefully before the reactor shuts down (and waits for that):
        # marked as stopped already, they are left as they are, and each spools its run log instead.
        for crawler in self.process.crawlers:
            opening = scrapy_internals.is_crawling(crawler) and not scrapy_internals.engine_running(crawler)
            scrapy_internals.mark_stopped(crawler)
            if opening:
                crawler.signals.send_catch_log(vd_signals.stopped_while_opening, spider=crawler.spider)
        reactor = installed_reactor()
        if reactor.running:
            reactor.stop()
        busy = len(reactor.getThreadPool().working)
        if busy:
            self.say(
                "waiting for %d store writes in flight (at most the store's timeout); "
                "%s once more to quit without them" % (busy, self._named(signum)[1])
            )


@contextmanager
def stop_requests() -> Iterator[threading.Event]:
    """For a loop that runs no crawl (the scheduler): an event that Ctrl-C (SIGINT) or SIGTERM sets;
    each also raises ``KeyboardInterrupt`` to cut short a request in flight. The loop checks the event
    between passes: Python prints and drops an exception raised while a finalizer runs (``__del__``,
    a weakref callback: where a signal's handler may run), and a loop stopped by the exception alone
    then went on. A SIGINT ignored from the start (a script's background job) stays ignored. The
    handlers before are back after the block."""
    stop = threading.Event()

    def request_stop(signum: int, frame: Any) -> None:
        stop.set()
        raise KeyboardInterrupt

    signums = [signal.SIGTERM]
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signums.append(signal.SIGINT)
    previous = {signum: signal.signal(signum, request_stop) for signum in signums}
    try:
        yield stop
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
