"""Every read or write of Scrapy's internals, in one place: attributes and helpers Scrapy does not
document as API, which a Scrapy release may rename or reshape without a deprecation.

The project needs a few: exactly-once acking of the Redis workers asks which requests the engine
still holds (votersdaily/distributed/redis_scheduler.py), the ingest keeps the per-domain limit for
sub-resources by looking at the downloader's slots (votersdaily/ingest/downloader_room.py), Ctrl-C
drops the requests waiting for the downloader and asks whether any work was not yet in flight
(votersdaily/interrupts.py), the store's back-pressure and the laundromat's downloads look at the
engine's state, the laundromat's agent uses Scrapy's TLS settings, the HTTP cache removes an
entry it could not write, and ``scrapy crawl`` prepares what Scrapy's start-up line asks. Each function names the Scrapy releases it was checked on, and
``tests/test_scrapy_internals.py`` (marker ``scrapy_internals``) checks every attribute it relies on
in a real crawl: ``.ci/run`` runs those tests again against the newest Scrapy release on the
registry, so an upgrade that breaks one fails there, by name, before the pin in pyproject.toml
(``scrapy<2.20``) is raised. Nothing else in the package touches these attributes.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request, Spider
    from scrapy.core.engine import ExecutionEngine
    from scrapy.core.scheduler import BaseScheduler
    from scrapy.crawler import Crawler
    from scrapy.extensions.httpcache import FilesystemCacheStorage
    from scrapy.http import Response
    from scrapy.settings import BaseSettings, Settings
    from twisted.internet.defer import Deferred

#: The Scrapy releases every function below was checked on (tests/test_scrapy_internals.py, run in a
#: throwaway virtual environment per release; the newest on the registry by .ci/newest-scrapy).
CHECKED_ON = ("2.18.0", "2.19.0")


class ScrapyInternalsChanged(RuntimeError):
    """The installed Scrapy lacks an internal this module relies on (a Scrapy upgrade changed it)."""


def _engine(crawler: Crawler) -> ExecutionEngine:
    engine = crawler.engine
    if engine is None:
        raise RuntimeError("the crawl has no engine yet (it is made when the crawl starts)")
    return engine


# -- requests the engine holds ------------------------------------------------------------------


def downloading(crawler: Crawler) -> set[Request]:
    """Requests handed to the downloader and not finished: waiting for their slot, or downloading
    (``engine.downloader.active``). Checked on Scrapy 2.18.0 and 2.19.0."""
    return set(_engine(crawler).downloader.active)


def scraping(crawler: Crawler) -> set[Request]:
    """Requests whose response (or failure) waits for, or is in, its callback and the item pipelines
    (the scraper's slot: ``engine.scraper.slot.active`` and the ``(result, request, deferred)``
    tuples of its ``queue``). Checked on Scrapy 2.18.0 and 2.19.0."""
    slot = _engine(crawler).scraper.slot
    return set() if slot is None else scraper_slot_requests(slot)


def scraper_slot_requests(slot: Any) -> set[Request]:
    """The requests of a scraper slot (``scrapy.core.scraper.Slot``), active or queued."""
    return {*slot.active, *(request for _result, request, _done in slot.queue)}


def take_queued_requests(crawler: Crawler) -> list[tuple[Request, Deferred[Response]]]:
    """Take every request waiting in a downloader slot's queue (a download delay or the slot's
    concurrency holds it), with the Deferred the downloader fires with its response: the caller
    must fire it (an errback) so the request leaves the crawl. ``engine.downloader.slots[*].queue``
    of ``(request, deferred)``; checked on Scrapy 2.18.0 and 2.19.0."""
    taken = []
    for slot in _engine(crawler).downloader.slots.values():
        while slot.queue:
            taken.append(slot.queue.popleft())
    return taken


async def download(crawler: Crawler, request: Request) -> Response:
    """``request`` fetched by the engine for a callback that awaits it (the ingest's hops, sub-resources
    and GROBID calls): through every downloader middleware and download signal, not the scheduler
    (``engine.download_async``). Checked on Scrapy 2.18.0 and 2.19.0."""
    engine = _engine(crawler)
    download_async = getattr(engine, "download_async", None)
    if download_async is None:
        raise ScrapyInternalsChanged("the engine has no download_async")
    return cast("Response", await download_async(request))


# -- the HTTP handler's connections ---------------------------------------------------------------

#: Host names whose IDNA encoding :func:`remember_host_encodings` keeps (least recently used first out).
HOST_ENCODINGS_KEPT = 4096


def remember_host_encodings() -> None:
    """Each host name's IDNA encoding computed once a process, not once a request: Scrapy's HTTP/1.1
    handler makes a Twisted ``HostnameEndpoint`` for every request, which encodes the host with the
    ``idna`` package (IDNA 2008, label by label: some 3 % of the ingest's reactor CPU on a PDF chain).
    The encoding is a pure function of the name, so the endpoint's ``_idnaBytes`` becomes an LRU
    cache (:data:`HOST_ENCODINGS_KEPT` names) of the function it calls: Scrapy's fallbacks for names
    the ``idna`` package rejects (``_idna_patch._install_twisted_idna_fallbacks``, which the handler
    installs when it is made) are installed first, so the cache answers what the handler's own
    function would. A name that fails raises each time (``functools.lru_cache`` keeps no exception).
    Idempotent. Checked on Scrapy 2.18.0 and 2.19.0 (Twisted 25.5 and 26.10)."""
    from twisted.internet import endpoints

    current = endpoints._idnaBytes
    if hasattr(current, "cache_info"):
        return
    try:
        from scrapy.core.downloader._idna_patch import _install_twisted_idna_fallbacks
    except ImportError:  # a Scrapy without the fallbacks: its handler patches nothing either
        pass
    else:
        _install_twisted_idna_fallbacks()
    endpoints._idnaBytes = functools.lru_cache(maxsize=HOST_ENCODINGS_KEPT)(endpoints._idnaBytes)


# -- the downloader's slots ------------------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    """Requests in the downloader (or one of its slots) and how many it takes at once (0: no limit)."""

    active: int
    limit: int


def slot_key(crawler: Crawler, request: Request) -> str:
    """The downloader slot ``request`` goes to (its host, or ``meta["download_slot"]``):
    ``engine.downloader.get_slot_key``. Checked on Scrapy 2.18.0 and 2.19.0."""
    return str(_engine(crawler).downloader.get_slot_key(request))


def downloader_load(crawler: Crawler) -> Load:
    """Requests in the downloader against ``CONCURRENT_REQUESTS`` (``downloader.active``,
    ``downloader.total_concurrency``). Checked on Scrapy 2.18.0 and 2.19.0."""
    downloader = _engine(crawler).downloader
    return Load(len(downloader.active), int(downloader.total_concurrency))


def slot_load(crawler: Crawler, key: str) -> Load | None:
    """Requests in the downloader slot ``key`` against its concurrency (``downloader.slots[key]``:
    ``.active``, ``.concurrency``); None when the downloader has no such slot (yet, or any more).
    Checked on Scrapy 2.18.0 and 2.19.0."""
    slot = _engine(crawler).downloader.slots.get(key)
    return None if slot is None else Load(len(slot.active), int(slot.concurrency))


def schedule(crawler: Crawler, request: Request) -> bool:
    """Hand ``request`` to the scheduler as the engine hands a request the spider's ``start()``
    yielded (``engine.crawl``: the ``request_scheduled`` signal, the scheduler, the engine's next
    turn); False, and nothing done, once the spider is closed (the engine drops such a request too).
    Checked on Scrapy 2.18.0 and 2.19.0."""
    engine = _engine(crawler)
    if engine.spider is None:
        return False
    engine.crawl(request)
    return True


# -- the engine's state ---------------------------------------------------------------------------


def start_requests_left(crawler: Crawler) -> bool:
    """Whether the spider's ``start()`` may still yield (the engine still holds its iterator,
    ``engine._start``; None once exhausted or before it starts). Checked on Scrapy 2.18.0 and 2.19.0."""
    engine = _engine(crawler)
    if not hasattr(engine, "_start"):
        raise ScrapyInternalsChanged("ExecutionEngine has no _start (the spider's start iterator)")
    return engine._start is not None


def scheduler_of(crawler: Crawler) -> BaseScheduler | None:
    """The crawl's scheduler; None when the spider is not open. ``engine.scheduler`` from Scrapy
    2.19, ``engine._slot.scheduler`` before; checked on Scrapy 2.18.0 and 2.19.0."""
    engine = _engine(crawler)
    if hasattr(type(engine), "scheduler"):
        return engine.scheduler
    slot = engine._slot  # Scrapy < 2.19
    return None if slot is None else slot.scheduler


def scheduler_has_pending(crawler: Crawler) -> bool | None:
    """Whether the crawl's scheduler holds requests not yet handed to the downloader; None when the
    spider is not open (no scheduler)."""
    scheduler = scheduler_of(crawler)
    return None if scheduler is None else bool(scheduler.has_pending_requests())


#: A spider middleware's class attribute: True when it neither changes nor drops a request of a
#: callback's output (it may add to the output: the ingest's ``DroppedHopGuard``).
PASSES_REQUESTS = "passes_requests_through"


def request_processors(crawler: Crawler) -> list[Callable[[Request, Response], Request | None]] | None:
    """What the spider middlewares do to a request a callback yields, as one call each, in the order
    Scrapy's ``process_spider_output`` chain applies them (``engine.scraper.spidermw.methods``): each
    middleware's ``get_processed_request`` (a request back, or None: dropped). None when a middleware
    of the chain does more with a callback's output (:func:`processes_each_request_alone`). A
    middleware whose class says it lets every request by untouched (:data:`PASSES_REQUESTS`) has
    none. Checked on Scrapy 2.18.0 and 2.19.0."""
    scraper = getattr(_engine(crawler), "scraper", None)
    methods = getattr(getattr(scraper, "spidermw", None), "methods", None)
    if methods is None or "process_spider_output" not in methods:
        raise ScrapyInternalsChanged("the engine has no scraper.spidermw.methods['process_spider_output']")
    processors: list[Callable[[Request, Response], Request | None]] = []
    for method in methods["process_spider_output"]:
        if method is None:  # a middleware without one (HttpErrorMiddleware)
            continue
        middleware = method.__self__
        if getattr(middleware, PASSES_REQUESTS, False):
            continue
        if not processes_each_request_alone(middleware):
            return None
        processors.append(middleware.get_processed_request)
    return processors


def count_as_scraping(crawler: Crawler, response: Response) -> Callable[[], None]:
    """Count ``response`` toward the scraper slot's ``active_size`` as Scrapy counts a response it
    hands to a callback (its body, at least ``Slot.MIN_RESPONSE_SIZE``), until the call returned is
    made (once): above ``SCRAPER_SLOT_MAX_ACTIVE_SIZE`` the engine starts no more requests, so
    bodies a callback holds (a hop it fetched itself) hold back the downloads as scheduled ones did.
    ``engine.scraper.slot.active_size``; checked on Scrapy 2.18.0 and 2.19.0."""
    slot = getattr(_engine(crawler).scraper, "slot", None)
    if slot is None:  # the spider is closing
        return lambda: None
    if not hasattr(slot, "active_size") or not hasattr(slot, "MIN_RESPONSE_SIZE"):
        raise ScrapyInternalsChanged("the scraper's slot has no active_size or MIN_RESPONSE_SIZE")
    size = max(len(response.body), slot.MIN_RESPONSE_SIZE)
    slot.active_size += size
    counted = [size]

    def release() -> None:
        if counted:
            slot.active_size -= counted.pop()

    return release


#: What a spider middleware may override to do more with a callback's output than process each request.
_OUTPUT_METHODS = ("process_spider_output", "process_spider_output_async", "_get_processed")


def processes_each_request_alone(middleware: object) -> bool:
    """Whether all a spider middleware does to a request in a callback's output is its
    ``get_processed_request``: a ``BaseSpiderMiddleware`` without its own ``process_spider_output``,
    ``process_spider_output_async`` or ``_get_processed`` (Scrapy's ``DepthMiddleware`` overrides the
    first two only to give the response its depth, which a callback's response already has)."""
    from scrapy.spidermiddlewares.base import BaseSpiderMiddleware
    from scrapy.spidermiddlewares.depth import DepthMiddleware

    if not isinstance(middleware, BaseSpiderMiddleware):
        return False
    kind = type(middleware)
    own = {name for name in _OUTPUT_METHODS if getattr(kind, name) is not getattr(BaseSpiderMiddleware, name)}
    if issubclass(kind, DepthMiddleware):
        own = {name for name in own if getattr(kind, name) is not getattr(DepthMiddleware, name)}
    return not own


def engine_paused(crawler: Crawler) -> bool:
    """Whether someone paused the engine (``engine.pause()``; the ``paused`` flag). Checked on
    Scrapy 2.18.0 and 2.19.0."""
    return bool(_engine(crawler).paused)


def engine_running(crawler: Crawler) -> bool:
    """Whether the engine runs (False before it starts, while the spider opens, and once it is
    stopping: Ctrl-C, ``close_spider``); the ``running`` flag. Checked on Scrapy 2.18.0 and 2.19.0."""
    return bool(_engine(crawler).running)


def is_crawling(crawler: Crawler) -> bool:
    """Whether the crawler is crawling and not yet stopping (``Crawler.crawling``). Checked on
    Scrapy 2.18.0 and 2.19.0."""
    return bool(crawler.crawling)


def mark_stopped(crawler: Crawler) -> None:
    """Mark the crawler as stopping already (``Crawler.crawling = False``), so that Scrapy's graceful
    stop at reactor shutdown leaves it alone (the forced stop of votersdaily/interrupts.py).
    Checked on Scrapy 2.18.0 and 2.19.0."""
    crawler.crawling = False


# -- helpers Scrapy keeps for itself ------------------------------------------------------------


def tls_context_factory(crawler: Crawler) -> Any:
    """The TLS context factory Scrapy's HTTP handler would use (``DOWNLOADER_CLIENTCONTEXTFACTORY``,
    ``DOWNLOADER_CLIENT_TLS_METHOD``): the private ``_load_context_factory_from_settings(crawler)``,
    or ``load_context_factory_from_settings(settings, crawler)`` in releases before it. Checked on
    Scrapy 2.18.0 and 2.19.0."""
    from scrapy.core.downloader import contextfactory

    if hasattr(contextfactory, "_load_context_factory_from_settings"):
        return contextfactory._load_context_factory_from_settings(crawler)
    return contextfactory.load_context_factory_from_settings(crawler.settings, crawler)  # older Scrapy


def cache_entry_path(storage: FilesystemCacheStorage, spider: Spider, request: Request) -> str:
    """The folder of ``request``'s entry in a filesystem HTTP cache (``_get_request_path``).
    Checked on Scrapy 2.18.0 and 2.19.0."""
    return str(storage._get_request_path(spider, request))


def on_shutdown_signals(handler: Callable[[int, Any], None]) -> None:
    """Make ``handler`` the handler of the shutdown signals (SIGINT, SIGTERM, SIGBREAK), as Scrapy's
    crawler process installs its own (``scrapy.utils.ossignal.install_shutdown_handlers``).
    Checked on Scrapy 2.18.0 and 2.19.0."""
    from scrapy.utils.ossignal import install_shutdown_handlers

    install_shutdown_handlers(handler)


def signal_name(signum: int) -> str:
    """``SIGTERM`` for 15 (``scrapy.utils.ossignal.signal_names``). Checked on Scrapy 2.18.0 and 2.19.0."""
    from scrapy.utils.ossignal import signal_names

    return signal_names.get(signum, "signal %d" % signum)


# -- the crawl's start-up line ------------------------------------------------------------------


def prepare_version_line(settings: BaseSettings) -> None:
    """Scrapy's start-up line lists ``LOG_VERSIONS``; its "Platform" is :func:`platform.platform`
    (``scrapy.utils.versions``), which runs ``uname -p`` in a subprocess and reads the interpreter's
    binary for its C library: 5-6 ms on the crawl's start, at any log level. Computed in a thread
    while the command reads its options, it is in Python's own cache when the crawler process logs
    the line (the same text: the same call). Checked on Scrapy 2.18.0 and 2.19.0."""
    import platform
    import threading

    if "platform" in (name.lower() for name in settings.getlist("LOG_VERSIONS")):
        threading.Thread(target=platform.platform, name="platform-line", daemon=True).start()


# -- the log file ---------------------------------------------------------------------------------


def wrap_log_handler(adopt: Callable[[logging.FileHandler], logging.Handler]) -> None:
    """Scrapy's log handler for ``LOG_FILE`` passed through ``adopt`` as it is made
    (votersdaily/scrapy_outputs.py: a full disk under the log costs one line, not a traceback per record and
    the crawl). Scrapy makes the handler in ``scrapy.utils.log._get_handler``, for the crawler
    process and again for each crawler, and has no setting for its class. Once per process: a
    second call changes nothing. Checked on Scrapy 2.18.0 and 2.19.0."""
    from scrapy.utils import log

    made = log._get_handler
    if getattr(made, "wrapped_by_votersdaily", False):
        return

    @functools.wraps(made)
    def wrapped(settings: Settings) -> logging.Handler:
        handler = made(settings)
        return adopt(handler) if type(handler) is logging.FileHandler else handler

    wrapped.wrapped_by_votersdaily = True  # type: ignore[attr-defined]
    log._get_handler = wrapped


# -- the start requests' failure ------------------------------------------------------------------

#: The logger and message of Scrapy's engine when its start requests fail (scheduling one of them
#: raised: a full ``JOBDIR``'s disk queue; an exception raised by the spider's ``start()`` itself is
#: logged otherwise, and the crawl goes on). The engine then stops itself with the reason
#: ``shutdown``, the reason of a person's stop, and sends no signal that names the exception: its log
#: record is the one place that does.
_ENGINE_LOGGER = "scrapy.core.engine"
_START_FAILED = "Error while processing requests from start()"


def is_start_failure(record: logging.LogRecord, spider: Spider) -> bool:
    """Whether ``record`` is Scrapy's engine's saying that ``spider``'s start requests failed (its
    exception: ``votersdaily.logformatter.record_exception``). Checked on Scrapy 2.18.0 and 2.19.0."""
    return (
        record.name == _ENGINE_LOGGER
        and record.msg == _START_FAILED
        and getattr(record, "spider", None) is spider
    )


def engine_logger() -> logging.Logger:
    """The logger whose records :func:`is_start_failure` tells apart."""
    return logging.getLogger(_ENGINE_LOGGER)
