"""Every Scrapy internal the package relies on (votersdaily/scrapy_internals.py), checked in a real crawl.

Marked ``scrapy_internals``: ``.ci/run`` runs these tests a second time against the newest Scrapy
release on the registry (in a throwaway virtual environment), so a release that renames or reshapes
one of these attributes fails here, naming the function and attribute, before the pin in
pyproject.toml is raised. One probe crawl of a local site (a real recorded roll call served three
times) records what each function answered at the moments the package asks it.
"""

from __future__ import annotations

import asyncio
import re
import signal
from pathlib import Path
from typing import Any

import pytest
import scrapy
from scrapy import signals
from scrapy.core.scheduler import Scheduler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request, TextResponse
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware
from scrapy.spidermiddlewares.depth import DepthMiddleware
from scrapy.spidermiddlewares.httperror import HttpErrorMiddleware
from scrapy.spidermiddlewares.referer import RefererMiddleware
from scrapy.utils.test import get_crawler
from twisted.python.failure import Failure
from twisted.web.iweb import IPolicyForHTTPS

from tests.conftest import recording
from tests.support.inprocess import session_reactor
from votersdaily import scrapy_internals
from votersdaily.scrapy_internals import Load

pytestmark = pytest.mark.scrapy_internals

ROLL314 = recording("gov/house_roll_call/roll314.xml")
HOST = "127.0.0.1"


class Probe(scrapy.Spider):
    """Fetches /a; in its callback asks the engine about itself and schedules /b and /c, which wait
    in the downloader slot (a 5 s download delay) until the probe takes them out of the queue."""

    name = "scrapy_internals_probe"
    custom_settings = {
        "DOWNLOAD_DELAY": 5.0,  # /b and /c wait in the slot's queue (at least 2.5 s with the jitter)
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "CONCURRENT_REQUESTS": 16,
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "INFO",
    }

    def __init__(self, base: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.base = base
        self.seen: dict[str, Any] = {}
        self.released: asyncio.Future[None] | None = None

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(spider.idle, signal=signals.spider_idle)
        crawler.signals.connect(spider.opened, signal=signals.spider_opened)
        return spider

    def opened(self, spider: scrapy.Spider) -> None:
        # the spider opens before its engine starts (votersdaily/interrupts.py stops it once it runs)
        self.seen["running_while_opening"] = scrapy_internals.engine_running(self.crawler)
        self.seen["crawling_while_opening"] = scrapy_internals.is_crawling(self.crawler)

    async def start(self):
        self.released = asyncio.get_running_loop().create_future()
        yield Request(self.base + "/a", callback=self.parse_a)
        await self.released  # start() is not exhausted until /a's callback has looked

    def reached(self, request: Request, spider: scrapy.Spider) -> None:
        crawler = self.crawler
        path = request.url.rsplit("/", 1)[1]
        if path == "a":
            self.seen["downloading"] = request in scrapy_internals.downloading(crawler)
            key = scrapy_internals.slot_key(crawler, request)
            self.seen["slot_key"] = key
            self.seen["slot_load"] = scrapy_internals.slot_load(crawler, key)
            self.seen["no_slot"] = scrapy_internals.slot_load(crawler, "no.such.slot")
            self.seen["downloader_load"] = scrapy_internals.downloader_load(crawler)
        elif path == "c":
            # /c joins the slot's queue right after this signal: look one reactor turn later.
            from twisted.internet import reactor

            reactor.callLater(0, self.take_queued)

    def take_queued(self) -> None:
        taken = scrapy_internals.take_queued_requests(self.crawler)
        self.seen["taken"] = sorted(request.url.rsplit("/", 1)[1] for request, _ in taken)
        for request, download in taken:
            download.errback(Failure(IgnoreRequest("taken by the probe: %s" % request.url)))

    def parse_a(self, response: TextResponse):
        crawler = self.crawler
        self.seen["scraping"] = response.request in scrapy_internals.scraping(crawler)
        self.seen["processors"] = scrapy_internals.request_processors(crawler)
        slot = crawler.engine.scraper.slot
        before = slot.active_size
        release = scrapy_internals.count_as_scraping(crawler, response)
        during = slot.active_size
        release()
        release()  # once only
        self.seen["counted"] = (during - before, slot.active_size - before, len(response.body))
        self.seen["start_left_while_start_waits"] = scrapy_internals.start_requests_left(crawler)
        self.seen["pending_before"] = scrapy_internals.scheduler_has_pending(crawler)
        crawler.engine.crawl(Request(self.base + "/b", callback=self.parse_a))
        crawler.engine.crawl(Request(self.base + "/c", callback=self.parse_a))
        self.seen["pending_after"] = scrapy_internals.scheduler_has_pending(crawler)
        crawler.engine.pause()
        self.seen["paused"] = scrapy_internals.engine_paused(crawler)
        crawler.engine.unpause()
        self.seen["unpaused"] = scrapy_internals.engine_paused(crawler)
        self.seen["running"] = scrapy_internals.engine_running(crawler)
        self.seen["crawling"] = scrapy_internals.is_crawling(crawler)
        assert self.released is not None
        self.released.set_result(None)
        return []

    def idle(self, spider: scrapy.Spider) -> None:
        crawler = self.crawler
        self.seen["start_left_at_idle"] = scrapy_internals.start_requests_left(crawler)
        self.seen["pending_at_idle"] = scrapy_internals.scheduler_has_pending(crawler)
        self.seen["downloading_at_idle"] = scrapy_internals.downloading(crawler)
        self.seen["scraping_at_idle"] = scrapy_internals.scraping(crawler)


@pytest.fixture(scope="module")
def probe():
    """One probe crawl (about 3 s) whose observations every test below reads."""
    from scrapy.crawler import CrawlerRunner

    from tests.support.services import LocalSite

    site = LocalSite().start()
    try:
        body = ROLL314.read_bytes()
        for path in ("/a", "/b", "/c"):
            site.route(path, body, content_type="text/xml")
        runner = CrawlerRunner({"TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor"})
        crawler = runner.create_crawler(Probe)
        session_reactor().call(lambda: runner.crawl(crawler, base=site.url), 120)
        yield crawler
    finally:
        site.stop()


def seen(crawler, what: str) -> Any:
    assert what in crawler.spider.seen, "the probe crawl never reached %r (its log says why)" % what
    return crawler.spider.seen[what]


def test_the_probe_crawl_finished(probe):
    assert probe.stats.get_value("finish_reason") == "finished"
    assert probe.stats.get_value("response_received_count") == 1  # /a; /b and /c were taken


def test_downloading_is_the_downloaders_active_requests(probe):
    assert seen(probe, "downloading") is True
    assert seen(probe, "downloading_at_idle") == set()


def test_scraping_is_the_scraper_slots_requests(probe):
    assert seen(probe, "scraping") is True
    assert seen(probe, "scraping_at_idle") == set()


def test_the_scraper_slots_queue_holds_result_request_deferred():
    """The queue a response waits in before its callback is empty whenever a crawl can look (Scrapy
    takes from it in the same turn it adds): Scrapy's own slot fills it here."""
    from scrapy.core.scraper import Slot

    slot = Slot()
    request = Request("http://%s/a" % HOST)
    slot.add_response_request(TextResponse(request.url, body=b"x", request=request), request)
    assert scrapy_internals.scraper_slot_requests(slot) == {request}
    slot.next_response_request_deferred()
    assert scrapy_internals.scraper_slot_requests(slot) == {request}  # now active


def test_request_processors_are_the_spider_middlewares_get_processed_request(probe):
    names = [type(process.__self__).__name__ for process in seen(probe, "processors")]
    # process_spider_output's order: the highest SPIDER_MIDDLEWARES_BASE number first
    assert names == [
        "MetaCopyDetectionMiddleware",
        "DepthMiddleware",
        "UrlLengthMiddleware",
        "RefererMiddleware",
        "StartSpiderMiddleware",
    ]
    source = Request(probe.spider.base + "/a", meta={"depth": 0})  # as DepthMiddleware leaves it
    response = TextResponse(source.url, body=b"x", request=source)
    processed = Request(probe.spider.base + "/b")
    for process in seen(probe, "processors"):
        processed = process(processed, response)
    assert processed.meta["depth"] == 1
    assert processed.headers.get("Referer") == source.url.encode()


def test_count_as_scraping_adds_a_body_to_the_scrapers_size_until_released(probe):
    added, left, body = seen(probe, "counted")
    assert body > 1024 and added == body and left == 0


class OwnOutput(BaseSpiderMiddleware):
    def process_spider_output(self, response, result):
        yield from result


class OwnAsyncOutput(BaseSpiderMiddleware):
    async def process_spider_output_async(self, response, result):
        async for o in result:
            yield o


class DeeperDepth(DepthMiddleware):
    def _get_processed(self, o, response):
        return o


class OnlyRequests(BaseSpiderMiddleware):
    def get_processed_request(self, request, response):
        return request


def test_a_middleware_doing_more_with_the_output_is_told_apart():
    crawler = get_crawler()
    alone = [
        OnlyRequests(crawler),
        DepthMiddleware.from_crawler(crawler),
        RefererMiddleware(crawler.settings),
    ]
    assert all(scrapy_internals.processes_each_request_alone(mw) for mw in alone)
    more = [
        OwnOutput(crawler),
        OwnAsyncOutput(crawler),
        DeeperDepth.from_crawler(crawler),
        HttpErrorMiddleware,
    ]
    assert not any(scrapy_internals.processes_each_request_alone(mw) for mw in more)


class Fetcher(scrapy.Spider):
    """Fetches /a; its callback awaits /b fetched through ``scrapy_internals.download`` (as the
    ingest's hops and sub-resources are) and keeps what came back and which signals saw it."""

    name = "scrapy_internals_fetcher"
    custom_settings = {"ROBOTSTXT_OBEY": False, "TELNETCONSOLE_ENABLED": False, "LOG_LEVEL": "INFO"}

    def __init__(self, base: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.base = base
        self.seen: dict[str, Any] = {"reached": [], "received": []}

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(spider.received, signal=signals.response_received)
        return spider

    def reached(self, request: Request, spider: scrapy.Spider) -> None:
        self.seen["reached"].append(request.url.rsplit("/", 1)[1])

    def received(self, response, request: Request, spider: scrapy.Spider) -> None:
        self.seen["received"].append(request.url.rsplit("/", 1)[1])

    async def start(self):
        yield Request(self.base + "/a", callback=self.parse_a)

    async def parse_a(self, response: TextResponse):
        fetched = await scrapy_internals.download(self.crawler, Request(self.base + "/b", dont_filter=True))
        self.seen["fetched"] = (fetched.url.rsplit("/", 1)[1], fetched.status, fetched.body)
        return
        yield


def test_download_fetches_for_a_callback_through_the_downloader():
    """``download`` (``engine.download_async``): the awaited response, seen by the downloader's
    signals as a scheduled request is."""
    from scrapy.crawler import CrawlerRunner

    from tests.support.services import LocalSite

    site = LocalSite().start()
    try:
        body = ROLL314.read_bytes()
        for path in ("/a", "/b"):
            site.route(path, body, content_type="text/xml")
        runner = CrawlerRunner({"TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor"})
        crawler = runner.create_crawler(Fetcher)
        session_reactor().call(lambda: runner.crawl(crawler, base=site.url), 120)
    finally:
        site.stop()
    assert crawler.spider.seen.get("fetched") == ("b", 200, body), "the crawl's log says why"
    assert crawler.spider.seen["reached"] == ["a", "b"]
    assert crawler.spider.seen["received"] == ["a", "b"]


def test_slot_key_and_loads(probe):
    assert seen(probe, "slot_key") == HOST
    assert seen(probe, "slot_load") == Load(active=1, limit=1)  # CONCURRENT_REQUESTS_PER_DOMAIN
    assert seen(probe, "no_slot") is None
    assert seen(probe, "downloader_load") == Load(active=1, limit=16)  # CONCURRENT_REQUESTS


def test_take_queued_requests_takes_what_waits_in_the_slot(probe):
    assert seen(probe, "taken") == ["b", "c"]


def test_start_requests_left(probe):
    assert seen(probe, "start_left_while_start_waits") is True
    assert seen(probe, "start_left_at_idle") is False


def test_scheduler_has_pending(probe):
    assert seen(probe, "pending_before") is False
    assert seen(probe, "pending_after") is True  # engine.crawl puts a request in the scheduler
    assert seen(probe, "pending_at_idle") is False


def test_engine_paused_and_running(probe):
    assert seen(probe, "paused") is True and seen(probe, "unpaused") is False
    assert seen(probe, "running") is True
    assert seen(probe, "running_while_opening") is False and seen(probe, "crawling_while_opening") is True
    assert scrapy_internals.engine_running(probe) is False  # the crawl is over


def test_crawling_is_read_and_marked(probe):
    assert seen(probe, "crawling") is True
    crawler = get_crawler(Probe, {"TWISTED_REACTOR": None})
    crawler.crawling = True  # as Crawler.crawl sets it
    scrapy_internals.mark_stopped(crawler)
    assert scrapy_internals.is_crawling(crawler) is False


def test_tls_context_factory():
    crawler = get_crawler(Probe, {"TWISTED_REACTOR": None})
    assert IPolicyForHTTPS.providedBy(scrapy_internals.tls_context_factory(crawler))


def test_cache_entry_path_is_where_the_cache_wrote(tmp_path):
    from scrapy.extensions.httpcache import FilesystemCacheStorage
    from scrapy.settings import Settings

    storage = FilesystemCacheStorage(
        Settings({"HTTPCACHE_DIR": str(tmp_path), "HTTPCACHE_EXPIRATION_SECS": 0})
    )
    spider = Probe.from_crawler(get_crawler(Probe, {"TWISTED_REACTOR": None}), base="http://%s" % HOST)
    storage.open_spider(spider)
    request = Request("http://%s/a" % HOST)
    storage.store_response(
        spider, request, TextResponse(request.url, body=ROLL314.read_bytes(), request=request)
    )
    entry = scrapy_internals.cache_entry_path(storage, spider, request)
    assert str(tmp_path) in entry
    assert (Path(entry) / "response_body").read_bytes() == ROLL314.read_bytes()


def test_shutdown_signal_handlers_and_names():
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum: int, frame: Any) -> None:
        pass

    try:
        scrapy_internals.on_shutdown_signals(handler)
        assert signal.getsignal(signal.SIGTERM) is handler and signal.getsignal(signal.SIGINT) is handler
    finally:
        for signum, old in before.items():
            signal.signal(signum, old)
    assert scrapy_internals.signal_name(signal.SIGTERM) == "SIGTERM"
    assert scrapy_internals.signal_name(999) == "signal 999"


def test_the_platform_of_scrapys_start_up_line_is_computed_ahead(monkeypatch):
    """Scrapy's "Platform" (``uname -p`` in a subprocess) is computed in a thread as ``scrapy crawl``
    reads its options; the line Scrapy then writes takes it from Python's cache, unchanged."""
    import platform
    import subprocess
    import threading

    from scrapy.settings import Settings
    from scrapy.utils.versions import get_versions

    monkeypatch.setattr(platform, "_uname_cache", None)  # as in a fresh interpreter
    monkeypatch.setattr(platform, "_platform_cache", {})
    scrapy_internals.prepare_version_line(Settings({"LOG_VERSIONS": ["lxml"]}))
    assert "platform-line" not in {t.name for t in threading.enumerate()}  # not asked for: not computed
    scrapy_internals.prepare_version_line(Settings())  # Scrapy's default LOG_VERSIONS name it
    for thread in threading.enumerate():
        if thread.name == "platform-line":
            thread.join(10)

    def no_subprocess(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("uname ran on the crawl's start: %r" % (args,))

    monkeypatch.setattr(subprocess, "check_output", no_subprocess)
    assert dict(get_versions(["Platform"])) == {"Platform": platform.platform()}


def test_the_log_handler_scrapy_makes_for_a_log_file_passes_through_the_wrapper(tmp_path):
    """``wrap_log_handler``: the handler Scrapy's ``install_scrapy_root_handler`` makes for ``LOG_FILE``
    (the crawler process's, then each crawler's) is what ``adopt`` returns; another handler is
    Scrapy's own; a second wrapper changes nothing."""
    import inspect
    import logging

    from scrapy.settings import Settings
    from scrapy.utils import log

    made = log._get_handler
    log._get_handler = inspect.unwrap(made)  # Scrapy's own, should a crawl of this process have wrapped it
    seen: list[logging.Handler] = []

    def adopt(handler: logging.FileHandler) -> logging.Handler:
        seen.append(handler)
        return handler

    try:
        scrapy_internals.wrap_log_handler(adopt)
        scrapy_internals.wrap_log_handler(adopt)
        log.install_scrapy_root_handler(Settings({"LOG_FILE": str(tmp_path / "crawl.log")}))
        handler = log.get_scrapy_root_handler()
        assert seen == [handler] and type(handler) is logging.FileHandler
        log.install_scrapy_root_handler(Settings({"LOG_FILE": None}))
        assert len(seen) == 1 and type(log.get_scrapy_root_handler()) is logging.StreamHandler
    finally:
        log._uninstall_scrapy_root_handler()
        log._get_handler = made


class QueueFails(Scheduler):
    """A scheduler whose queue cannot take a request (as a full ``JOBDIR``'s disk queue)."""

    def enqueue_request(self, request: Request) -> bool:
        raise LookupError("the queue cannot take %s" % request.url)


class StartFails(scrapy.Spider):
    """A spider whose first start request its scheduler cannot take."""

    name = "scrapy_internals_start_fails"
    custom_settings = {
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "SCHEDULER": "%s.QueueFails" % __name__,
    }

    async def start(self):
        yield Request("http://%s:9/never" % HOST, callback=self.parse)

    def parse(self, response: TextResponse):
        return []


def test_the_engines_record_of_failed_start_requests_is_told_apart():
    """``is_start_failure``: Scrapy's engine logs the failure of a spider's start requests (here its
    scheduler refusing the first) with the exception, for that spider, and stops with ``shutdown``."""
    import logging

    from scrapy.crawler import CrawlerRunner

    from votersdaily.logformatter import record_exception

    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    keep = Keep(logging.ERROR)
    scrapy_internals.engine_logger().addHandler(keep)
    try:
        runner = CrawlerRunner({"TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor"})
        crawler = runner.create_crawler(StartFails)
        session_reactor().call(lambda: runner.crawl(crawler), 60)
    finally:
        scrapy_internals.engine_logger().removeHandler(keep)
    told = [r for r in records if scrapy_internals.is_start_failure(r, crawler.spider)]
    assert len(told) == 1 and isinstance(record_exception(told[0]), LookupError)
    assert not [r for r in records if scrapy_internals.is_start_failure(r, Probe(base=""))]
    assert crawler.stats.get_value("finish_reason") == "shutdown"


#: How the package would reach Scrapy's internals: through the engine or crawler, by attribute.
INTERNALS = re.compile(
    r"engine\)?\.(downloader|scraper|_slot|_start|paused|running|download_async|download)\b|crawler\)?\.crawling\b"
    r"|\.(slots|total_concurrency|get_slot_key)\b|_get_request_path|context_factory_from_settings"
    r"|scrapy\.utils\.ossignal|_get_handler\b|processing requests from start"
)


def test_no_module_but_the_adapter_touches_scrapys_internals():
    """The fence: every such read goes through votersdaily/scrapy_internals.py, so that the tests
    above cover them all."""
    package = Path(scrapy_internals.__file__).parent
    found = [
        "%s:%d: %s" % (path.relative_to(package), number, line.strip())
        for path in sorted(package.rglob("*.py"))
        if path.name != "scrapy_internals.py" and "recordings" not in path.parts
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if INTERNALS.search(line.split("#", 1)[0])
    ]
    assert found == []


#: Host names for the IDNA encoding: ASCII, an address, upper case, non-ASCII, a punycode emoji label
#: and an underscore (both refused by the idna package, taken by Scrapy's fallbacks), and two that no
#: encoding takes.
HOST_NAMES = (
    "127.0.0.1",
    "example.org",
    "WWW.Example.ORG",
    "bücher.example",
    "xn--i-7iq.ws",
    "under_score.example.com",
    "bad host.example",
    "ex!ample.org",
)


def _encoding(encode: Any, host: str) -> bytes | type[BaseException]:
    try:
        return encode(host)
    except UnicodeError as exc:
        return type(exc)


def test_remembered_host_encodings_are_what_the_handlers_function_answers(monkeypatch):
    """``remember_host_encodings``: the endpoint's ``_idnaBytes`` answers what Scrapy's HTTP handler
    installs (``_idna_patch._patched_idna_bytes``, the idna package with its fallbacks) for every
    name, a second time from memory, and failing names fail each time; a handler made afterwards
    leaves the cache in place."""
    from scrapy.core.downloader import _idna_patch
    from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
    from twisted.internet import _idna, endpoints

    # Twisted as imported: neither Scrapy's fallbacks nor the cache (both put back after the test)
    for module in (_idna, endpoints):
        monkeypatch.setattr(module, "_idnaBytes", _idna_patch._original_idna_bytes)
    scrapy_internals.remember_host_encodings()
    scrapy_internals.remember_host_encodings()  # idempotent: one cache, not a cache of a cache
    remembered = endpoints._idnaBytes
    assert remembered.__wrapped__ is _idna_patch._patched_idna_bytes
    expected = [_encoding(_idna_patch._patched_idna_bytes, host) for host in HOST_NAMES]
    assert expected[5] == b"under_score.example.com"  # the fallback's answer, not the idna error
    assert expected[6] is expected[7]  # some names no encoding takes
    assert issubclass(expected[6], UnicodeError)
    assert [_encoding(remembered, host) for host in HOST_NAMES] == expected
    hits = remembered.cache_info().hits
    assert [_encoding(remembered, host) for host in HOST_NAMES] == expected
    assert remembered.cache_info().hits == hits + len(HOST_NAMES) - 2  # the failures are not kept
    HTTP11DownloadHandler(get_crawler())
    assert endpoints._idnaBytes is remembered
    assert [endpoints.HostnameEndpoint._hostAsBytesAndText(host)[:2] for host in HOST_NAMES[:6]] == [
        (False, encoded) for encoded in expected[:6]
    ]


class StartReader(scrapy.Spider):
    """Yields ``/0`` … ``/n-1`` from ``start()``, an item after ``/5`` (when there is one), then, with ``fail``, raises;
    keeps the order in which the engine scheduled its requests and the downloader got them."""

    name = "scrapy_internals_start_reader"
    custom_settings = {
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "CONCURRENT_REQUESTS": 5,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 5,
    }

    def __init__(self, base: str, n: int, fail: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.base, self.n, self.fail = base, n, fail
        self.events: list[str] = []
        self.items: list[Any] = []

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(spider.reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(spider.scraped, signal=signals.item_scraped)
        return spider

    def scheduled(self, request: Request, spider: scrapy.Spider) -> None:
        self.events.append("s" + request.url.rsplit("/", 1)[1])

    def reached(self, request: Request, spider: scrapy.Spider) -> None:
        self.events.append("r" + request.url.rsplit("/", 1)[1])

    def scraped(self, item: Any, spider: scrapy.Spider, **kwargs: Any) -> None:
        self.items.append(item)

    async def start(self):
        for i in range(self.n):
            yield Request("%s/%d" % (self.base, i), callback=self.parse)
            if i == 5:
                yield {"after": 5}
        if self.fail:
            raise ValueError("the rest of the input is unreadable")

    def parse(self, response: TextResponse):
        return []


def _read_start(n: int, middlewares: dict[str, int], fail: bool = False) -> tuple[Any, StartReader]:
    from scrapy.crawler import CrawlerRunner

    from tests.support.services import LocalSite

    site = LocalSite().start()
    try:
        for i in range(n):
            site.route("/%d" % i, b"%d" % i, content_type="text/plain")
        runner = CrawlerRunner(
            {
                "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
                "SPIDER_MIDDLEWARES": middlewares,
            }
        )
        crawler = runner.create_crawler(StartReader)
        session_reactor().call(lambda: runner.crawl(crawler, base=site.url, n=n, fail=fail), 120)
    finally:
        site.stop()
    return crawler, crawler.spider


START_BATCHES = {"votersdaily.plumbing.start_batches.StartBatches": -1}


def test_start_requests_fill_the_downloaders_free_places_at_once_and_keep_their_order():
    """``schedule`` (``engine.crawl``) as ``StartBatches`` uses it: the first five requests (the
    downloader's CONCURRENT_REQUESTS, all free) are scheduled before the downloader gets the first,
    in ``start()``'s order. Scrapy alone schedules one a turn (``s0 r0 s1 …``), which the crawl
    without the middleware shows."""
    crawler, spider = _read_start(12, START_BATCHES)
    assert spider.events[:5] == ["s0", "s1", "s2", "s3", "s4"]
    scheduled = [e for e in spider.events if e.startswith("s")]
    assert scheduled == ["s%d" % i for i in range(12)]
    assert sorted(e for e in spider.events if e.startswith("r")) == sorted("r%d" % i for i in range(12))
    assert spider.items == [{"after": 5}]
    assert crawler.stats.get_value("response_received_count") == 12
    assert crawler.stats.get_value("finish_reason") == "finished"

    _, alone = _read_start(12, {})
    assert alone.events[:3] == ["s0", "r0", "s1"]


def test_a_start_that_raises_still_has_what_it_yielded_before_fetched():
    crawler, spider = _read_start(4, START_BATCHES, fail=True)
    assert spider.events[:4] == ["s0", "s1", "s2", "s3"]  # all in one batch, then start() raised
    assert crawler.stats.get_value("response_received_count") == 4
    assert spider.items == []
    assert crawler.stats.get_value("spider_exceptions/ValueError") == 1
