"""The ``ingest`` spider: sandcrawler-style ingest of HTML and PDF documents, fetched live.

``scrapy crawl ingest -a url=<url>[,<url>...] -a ingest_type=<pdf|html|xml|src|component>``, or
``-a requests=<file.jsonl>``, or ``-a requests=store`` (the ``ingest_requests`` database; or
``store:<db>``). One ``ingest_file_result`` per request, written by
:class:`votersdaily.ingest.persist.IngestStorePipeline`.

Per-request state travels in ``request.meta["ingest"]`` (never on the spider), so a subclass fed
from another queue only has to call :meth:`IngestSpider.make_ingest_request` with each request dict.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import TYPE_CHECKING, Any, Self

import scrapy
from scrapy.exceptions import CloseSpider, IgnoreRequest, StopDownload
from scrapy.http import Response
from twisted.python.failure import Failure

from votersdaily import signals as vd_signals
from votersdaily.blocking import run_in_thread
from votersdaily.crawlcontext import STOPPED_FOR_STORE
from votersdaily.defaults import ProjectSettingsMixin
from votersdaily.interrupts import CrawlInterrupted
from votersdaily.plumbing.address_policy import PrivateAddressRefused
from votersdaily.plumbing.inputs import checked_inputs, meant, one_of, url_argument, yes_or_no
from votersdaily.plumbing.ssrf import (
    TRUSTED_META,
    check_policy_settings,
    keep_components,
    keep_downloader_middlewares,
)
from votersdaily.requestmeta import START_META
from votersdaily.scrapy_internals import (
    count_as_scraping,
    download,
    remember_host_encodings,
    request_processors,
)
from votersdaily.store.base import StoreError

from . import hops as H
from . import ingest_requests as R
from .config import IngestConfig
from .downloader_room import DownloaderRoom
from .fetch_failures import TIMEOUTS, failure_status
from .grobid import grobid_request, grobid_result
from .membudget import (
    STREAM_META,
    BudgetClosed,
    ByteBudget,
    Reservation,
    ResourceStreams,
    StreamDigest,
)
from .process import (
    BadGzip,
    GzipTooLarge,
    HopFacts,
    examine_hop,
    process_html_bytes,
    process_pdf,
    xml_error,
)
from .resource_sniff import ResourceSniffer
from .result import IngestItem, cdx, dt14, failed, finished, header_mimetype, iso_seconds, terminal
from .scope import ACCEPTED_SCOPES, BLOCKED_SCOPES
from .thumbnail import (
    RENDER_QUEUE_DEPTH,
    Page0,
    close_renderers,
    page0_renderable,
    render_page0,
    warm_renderer,
)
from .warc import WARC_META
from .workers import ExtractionCrashed, ExtractPool, NoTemporaryFolder

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from scrapy.crawler import Crawler
    from scrapy.http import Headers, Request
    from scrapy.settings import BaseSettings


class IngestSpider(ProjectSettingsMixin, scrapy.Spider):
    name = "ingest"
    version = "1.0"
    #: Settings naming where the spider writes besides the store (the run log reports them).
    output_settings = ("INGEST_BLOB_DIR", "INGEST_TEIXML_FEED", "INGEST_WARC_DIR")
    #: What the recurring scheduler runs it with: the requests queued in the store (`ingest enqueue`).
    schedule_arguments = {"requests": "store"}

    custom_settings: dict[str, Any] = {
        "ITEM_PIPELINES": {"votersdaily.ingest.persist.IngestStorePipeline": 800},
        "DOWNLOADER_MIDDLEWARES": {
            "votersdaily.plumbing.ssrf.SsrfGuardMiddleware": 50,
            "votersdaily.ingest.gzipcheck.HopGzipMiddleware": 640,
        },
        "SPIDER_MIDDLEWARES": {
            # start requests as many at a time as the downloader has room for (not one a turn)
            "votersdaily.plumbing.start_batches.StartBatches": -1,
            # engine side of every other spider middleware: it sees what they let through
            "votersdaily.ingest.hop_guard.DroppedHopGuard": 0,
        },
        "COOKIES_ENABLED": False,
        "HTTPCACHE_ENABLED": False,
        # Every callback yields exactly one item or request per response; with asyncio Scrapy
        # starts CONCURRENT_ITEMS worker tasks per response (100 by default: ~1 ms each time).
        "CONCURRENT_ITEMS": 4,
        # A result is stored within a second of its ingest (VOTERSDAILY_BATCH_MAX_WAIT), not when
        # the batch is full: an ingest of hours killed by the OOM killer loses that second only.
        "VOTERSDAILY_BATCH_MAX_WAIT": 1.0,
    }

    #: Whether a chain's next hop is yielded to Scrapy's scheduler (a Redis-fed worker's queue, which
    #: shares every hop among the workers) instead of being fetched by the callback that found it.
    hops_through_scheduler = False
    #: :meth:`_hop_processors`' answer, once asked.
    _processors: list[Callable[[Request, Response], Request | None]] | None

    # Set by from_crawler: each needs the crawler's settings or signals.
    config: IngestConfig
    extract: ExtractPool
    hop_timeout: float
    room: DownloaderRoom
    resource_streams: ResourceStreams
    #: Page-0 renders running at once (:meth:`_page0`).
    renders: asyncio.Semaphore
    #: libmagic for the sub-resources, in threads of its own.
    sniffer: ResourceSniffer

    def __init__(
        self,
        *args: Any,
        url: str | None = None,
        ingest_type: str = "pdf",
        requests: str | None = None,
        link_source: str | None = None,
        link_source_id: str | None = None,
        ingest_request_source: str | None = None,
        release_stage: str | None = None,
        force_recrawl: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.given_urls = url_argument(self.name, url, ("http", "https"), "and give -a requests=")
        self.ingest_type = one_of("ingest_type", ingest_type, R.ARGUMENT_INGEST_TYPES)
        if requests is not None and requests.strip() in ("", "store:"):  # `-a requests=$UNSET`
            raise ValueError("requests takes a JSON-lines file, store or store:<database>, not %r" % requests)
        if requests and requests != "store" and not requests.startswith("store:"):
            requests = str(R.requests_file(self.name, requests))
        self.requests_source = requests
        self.request_extra = {
            "link_source": link_source,
            "link_source_id": link_source_id,
            "ingest_request_source": ingest_request_source,
            "release_stage": release_stage,
            "force_recrawl": yes_or_no("force_recrawl", force_recrawl) if force_recrawl is not None else None,
        }

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        """The WARC writer joins the downloader only when INGEST_WARC_ENABLED (not a "Disabled"
        warning on every run without it); a host list entry that can never match stops the crawl
        before it starts."""
        super().update_settings(settings)
        check_policy_settings(settings, "INGEST")
        # The guard stays, whatever DOWNLOADER_MIDDLEWARES was given; so does the WARC writer, and
        # whatever SPIDER_MIDDLEWARES was given, the spider middleware every ingest's result needs.
        keep_downloader_middlewares(settings, IngestSpider.custom_settings["DOWNLOADER_MIDDLEWARES"])
        keep_components(settings, "SPIDER_MIDDLEWARES", IngestSpider.custom_settings["SPIDER_MIDDLEWARES"])
        if settings.getbool("INGEST_WARC_ENABLED"):
            keep_downloader_middlewares(settings, {"votersdaily.ingest.warc.WarcWriterMiddleware": 650})

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.config = IngestConfig.from_settings(crawler.settings)
        spider.extract = ExtractPool(spider.config.extract_processes, crawler, spider.config.extract_nice)
        # a warm renderer per extraction process, each handed RENDER_QUEUE_DEPTH PDFs at once
        spider.renders = asyncio.Semaphore(max(spider.config.extract_processes, 1) * RENDER_QUEUE_DEPTH)
        spider.sniffer = ResourceSniffer()
        # not ``download_timeout``: Scrapy reads (and deprecates) that spider attribute
        spider.hop_timeout = crawler.settings.getfloat("DOWNLOAD_TIMEOUT")
        spider.room = DownloaderRoom(crawler)
        remember_host_encodings()  # a hop or sub-resource host's IDNA encoding, once a process
        spider.resource_streams = ResourceStreams(spider.config.resource_bytes_per_worker)
        # the pool starts with the crawl (not for `enqueue`, which only runs start())
        crawler.signals.connect(spider._start_extraction, signal=scrapy.signals.spider_opened)
        spider.extract.prepare()  # its fork server's imports overlap the rest of the start-up
        crawler.signals.connect(spider.extract.close, signal=scrapy.signals.spider_closed)
        crawler.signals.connect(spider.sniffer.close, signal=scrapy.signals.spider_closed)
        crawler.signals.connect(close_renderers, signal=scrapy.signals.spider_closed)
        # one receiver a download signal for hops and sub-resources alike (each costs every request;
        # each takes ``**_``, so PyDispatcher hands it the signal's arguments without sorting them)
        crawler.signals.connect(spider._request_reached, signal=scrapy.signals.request_reached_downloader)
        crawler.signals.connect(spider._headers_received, signal=scrapy.signals.headers_received)
        crawler.signals.connect(spider._bytes_received, signal=scrapy.signals.bytes_received)
        return spider

    def _start_extraction(self) -> None:
        """``spider_opened``: the extraction processes start, so the first pages do not wait for them;
        when none can (:class:`~.workers.NoTemporaryFolder`), the crawl says why in one line, its run
        log's result is that, and it closes before it fetches anything (no ingest fails for it)."""
        try:
            self.extract.start()
        except NoTemporaryFolder as exc:
            self.logger.error("%s", exc)
            self.crawler.signals.send_catch_log(
                vd_signals.source_failed, failure=Failure(exc), url=None, spider=self, where="start"
            )
            raise CloseSpider("no temporary folder") from None

    def _request_reached(self, request: Request, **_: object) -> None:
        """``request_reached_downloader``: a hop starts its ingest's clock; a sub-resource's place in
        the downloader room is the downloader's now."""
        if H.STATE_META in request.meta:
            self._start_clock(request)
        else:
            self.room.reached(request)

    def _headers_received(self, headers: Headers, body_length: int, request: Request, **_: object) -> None:
        """``headers_received``: a hop's announced size is checked; a sub-resource's shrinks its
        byte reservation."""
        if H.STATE_META in request.meta:
            self._stop_if_too_large(headers, body_length, request)
        else:
            self.resource_streams.headers(headers, body_length, request)

    def _bytes_received(self, data: bytes, request: Request, **_: object) -> None:
        """``bytes_received``: a hop's bytes are counted; a sub-resource's are hashed as they come."""
        if H.STATE_META in request.meta:
            self._count_bytes(data, request)
        else:
            self.resource_streams.received(data, request)

    # -- bodies over INGEST_MAX_BODY_BYTES ---------------------------------------------------------

    def _stop_if_too_large(self, headers: Headers, body_length: int, request: Request) -> None:
        """A hop announcing more than INGEST_MAX_BODY_BYTES is stopped with its response kept, so
        ``body-too-large`` names the URL, status and date that were fetched (DOWNLOAD_MAXSIZE would
        fail the request without them)."""
        if H.STATE_META in request.meta and body_length is not None and body_length > self.config.max_body:
            self._too_large(request, "%d bytes announced (limit %d)" % (body_length, self.config.max_body))

    def _count_bytes(self, data: bytes, request: Request) -> None:
        """The same for a hop whose body grows past the limit unannounced."""
        if H.STATE_META not in request.meta:
            return
        received = request.meta[_RECEIVED] = request.meta.get(_RECEIVED, 0) + len(data)
        if received > self.config.max_body:
            self._too_large(request, "more than %d bytes (limit)" % self.config.max_body)

    @staticmethod
    def _too_large(request: Request, message: str) -> None:
        request.meta[H.TOO_LARGE_META] = message
        raise StopDownload(fail=False)

    # -- input -----------------------------------------------------------------------------------

    async def start(self) -> AsyncIterator[scrapy.Request | IngestItem]:
        try:
            inputs = await self.input_requests()
        except StoreError as exc:  # requests=store: they are there, and nothing can be read
            await self._stop_for_store(exc)
            raise CloseSpider(STOPPED_FOR_STORE) from None
        checked = list(checked_inputs(inputs, self.checked_request))
        # One bad request among good ones is rejected and listed, and the run still succeeds (as
        # sandcrawler records a status per request); an unreadable source, or nothing valid at all,
        # fails the run.
        any_valid = any(not isinstance(request, ValueError) for _, request in checked)
        for where, request in checked:
            if isinstance(request, ValueError):
                self._reject(where, request, fatal=not any_valid or isinstance(request, R.RequestSourceError))
                continue
            made = self._start_request(request)
            if made is not None:
                yield made

    async def _stop_for_store(self, exc: StoreError) -> None:
        """The store did not answer as the run began, and this run's requests are there
        (``-a requests=store``): the run stops before it fetches anything, said in one line with
        what to do (exit status 3), and its run log is spooled after one attempt."""
        from votersdaily.locations import store_uri
        from votersdaily.store.check import unavailable_line
        from votersdaily.store.crawler import stop_for_store

        line = (
            "%s; this ingest reads its requests from %s there, so it stopped before fetching anything: "
            "run it again once the store answers"
            % (
                await run_in_thread(unavailable_line, store_uri(self.settings), exc),
                self.store_requests_db,
            )
        )
        stop_for_store(self.crawler, self, exc, line)

    @property
    def store_requests_db(self) -> str | None:
        """The database the requests are read from (``-a requests=store[:db]``), else None."""
        source = self.requests_source
        if source and (source == "store" or source.startswith("store:")):
            return source.split(":", 1)[1] if ":" in source else self.config.requests_db
        return None

    async def input_requests(self) -> list[tuple[str, Any]]:
        """(where, request dict or error) from the arguments, a JSON-lines file or the store (its
        :class:`StoreError` raised: the store did not answer)."""
        found: list[tuple[str, Any]] = [
            ("-a url", raw) for raw in R.from_args(self.given_urls, self.ingest_type, **self.request_extra)
        ]
        source = self.requests_source
        db = self.store_requests_db
        if db is not None:
            found += await run_in_thread(self._store_requests, db)
        elif source:
            try:
                found += list(R.iter_jsonl(source))
            except OSError as exc:
                found.append((source, R.RequestSourceError("cannot read requests file: %s" % exc)))
        if not self.given_urls and not source:
            found.append(
                (
                    "arguments",
                    R.NoIngestRequests(
                        "no ingest requests: give -a url=..., -a requests=<file.jsonl> or -a requests=store"
                    ),
                )
            )
        elif not found:
            self.logger.warning("nothing to ingest: %s holds no requests", source)
        return found

    def _store_requests(self, db: str) -> list[tuple[str, Any]]:
        from votersdaily.store.crawler import store_for

        store = store_for(self.crawler)
        if not store.has_db(db):  # a typo (store:ingest_requst) names the database meant
            queues = [self.settings.get("INGEST_REQUESTS_DB"), self.settings.get("INGEST_CATALOG_DB")]
            return [
                (
                    "store:%s" % db,
                    R.RequestSourceError("the store has no database %r%s" % (db, meant(db, queues))),
                )
            ]
        return [("store:%s/%s" % (db, doc["_id"]), R.from_store_doc(doc)) for doc in store.iter_docs(db)]

    def make_ingest_request(self, raw: Any, where: str = "request") -> scrapy.Request | IngestItem | None:
        """A scrapy Request starting the hop loop for one ingest request, an early result, or None
        for invalid input (logged, and listed in the run log's ``rejected``)."""
        try:
            if isinstance(raw, Exception):
                raise raw
            request = self.checked_request(raw)
        except R.IngestRequestError as exc:
            self._reject(where, exc, fatal=isinstance(exc, R.RequestSourceError))
            return None
        return self._start_request(request)

    def checked_request(self, raw: Any) -> dict[str, Any]:
        """The request normalised (:func:`~.ingest_requests.normalize_request`), with a base_url this
        crawl fetches: one longer than URLLENGTH_LIMIT (:func:`~.urls.over_length_limit`) is a bad
        request, as one longer than MAX_BASE_URL is (Scrapy would drop its start request unsaid)."""
        return R.fetchable_request(raw, self.config.url_length_limit)

    def _reject(self, where: str, exc: Exception, fatal: bool) -> None:
        self.logger.error("bad ingest request at %s: %s", where, exc)
        self.crawler.stats.inc_value("ingest/bad_request")
        vd_signals.report_unusable_input(self, where, exc, fatal=fatal)

    def _start_request(self, request: dict[str, Any]) -> scrapy.Request | IngestItem:
        state = H.new_state(request)
        base = state["hops"][0]
        if H.before_fetch(base, self.config.blocklists) == "skip-url-blocklist":
            return self._item(failed(request, "skip-url-blocklist"))
        return self._hop_request(base, state, first=True)

    def queue_fingerprint(self, request: scrapy.Request) -> str | None:
        """Key of a start request in the shared Redis duplicate filter: one ingest per (ingest_type,
        base_url), like sandcrawler's result key; ``force_recrawl`` requests are never filtered."""
        state = request.meta.get(H.STATE_META)
        if not state or not request.meta.get(START_META) or state["request"].get("force_recrawl"):
            return None
        key = "%s %s" % (state["request"]["ingest_type"], state["request"]["base_url"])
        return hashlib.sha1(key.encode("utf-8"), usedforsecurity=False).hexdigest()

    def _hop_request(
        self, url: str, state: dict[str, Any], first: bool = False
    ) -> scrapy.Request | IngestItem:
        blocked = H.before_fetch(url, self.config.blocklists)
        if blocked:
            return self._finish(state, blocked, "%s matched a %s pattern" % (url, blocked))
        accept = R.PREFERRED_MIMETYPE.get(state["request"]["ingest_type"])
        meta = {
            H.STATE_META: state,
            "dont_redirect": True,
            "handle_httpstatus_all": True,
            "download_maxsize": self.config.max_body,
        }
        remaining = self._remaining(state)
        if remaining < self.hop_timeout:  # a hop never outlives the ingest's deadline
            meta["download_timeout"] = max(remaining, 0.001)
        if first:
            meta[START_META] = True
        return scrapy.Request(
            url,
            callback=self.parse_hop,
            errback=self.hop_failed,
            dont_filter=True,
            meta=meta,
            headers={"Accept": "%s,*/*;q=0.8" % accept} if accept else None,
        )

    # -- results -----------------------------------------------------------------------------------

    def _remaining(self, state: dict[str, Any]) -> float:
        """Seconds left before this ingest ends as ``timeout`` (INGEST_TIMEOUT, sandcrawler's 300 s)."""
        if state.get("started") is None:
            return self.config.timeout
        return self.config.timeout - (time.time() - state["started"])

    def _start_clock(self, request: Request) -> None:
        """An ingest's INGEST_TIMEOUT runs from its first fetch (:meth:`_request_reached`)."""
        state = request.meta.get(H.STATE_META)
        if state is not None and state.get("started") is None:
            state["started"] = time.time()

    def _timeout(self, state: dict[str, Any], where: str = "") -> IngestItem:
        return self._finish(
            state,
            "timeout",
            "ingest took longer than INGEST_TIMEOUT (%g s)%s"
            % (self.config.timeout, " " + where if where else ""),
        )

    def _item(self, result: dict[str, Any], side: dict[str, Any] | None = None) -> IngestItem:
        self.crawler.stats.inc_value("ingest/status/%s" % result["status"])
        return IngestItem(result=result, side=side or {})

    def _finish(
        self,
        state: dict[str, Any],
        status: str,
        error_message: str | None = None,
        side: dict[str, Any] | None = None,
        **fields: Any,
    ) -> IngestItem:
        return self._item(finished(state, status, error_message, **fields), side)

    # -- the hop loop ------------------------------------------------------------------------------

    async def parse_hop(self, response: Response) -> AsyncIterator[scrapy.Request | IngestItem]:
        """A fetched hop and the chain's next hops: each next hop is fetched from here
        (:meth:`_next_hop`), not yielded to the scheduler, unless :attr:`hops_through_scheduler`.
        An extraction process that died twice on a hop fails this ingest only."""
        processors = self._hop_processors()
        release = None  # stops counting the body of the hop this callback fetched last
        try:
            while True:
                follow = None
                try:
                    async for output in self._parse_hop(response):
                        if processors is not None and isinstance(output, scrapy.Request):
                            follow = output
                        else:
                            yield output
                except ExtractionCrashed as exc:
                    state = response.meta[H.STATE_META]
                    term = terminal(response.url, dt14(), response.status)
                    yield self._finish(state, "extract-process-died", str(exc), terminal=term)
                if follow is None or processors is None:
                    return
                fetched = await self._next_hop(follow, response, processors)
                if not isinstance(fetched, Response):
                    if fetched is not None:
                        yield fetched
                    return
                if release is not None:
                    release()
                # its body holds the engine's downloads back, as a scheduled hop's did in the scraper
                release = count_as_scraping(self.crawler, fetched)
                response = fetched
        finally:
            if release is not None:
                release()

    def schedules_hops(self) -> bool:
        """Whether a chain's next hops go through Scrapy's scheduler (:meth:`_hop_processors`)."""
        return self._hop_processors() is None

    def _hop_processors(self) -> list[Callable[[Request, Response], Request | None]] | None:
        """The spider middlewares' processing of a yielded request (asked once a crawl), or None when
        hops go through the scheduler: :attr:`hops_through_scheduler`, or a spider middleware that
        does more with a callback's output than process each request
        (:func:`~votersdaily.scrapy_internals.request_processors`). A method, not a property: the
        Redis queue looks for a request's callback among the spider's members before a crawl."""
        try:
            return self._processors
        except AttributeError:
            self._processors = None if self.hops_through_scheduler else request_processors(self.crawler)
            return self._processors

    async def _next_hop(
        self,
        request: scrapy.Request,
        response: Response,
        processors: list[Callable[[Request, Response], Request | None]],
    ) -> Response | IngestItem | None:
        """The hop ``request`` found on ``response``, fetched as the scheduler's path would fetch it,
        with less of Scrapy's work per hop (no scheduler queue, no new callback chain of spider
        middlewares for its response): the spider middlewares process it (the ``Referer``, the URL
        length limit, the depth), ``request_scheduled`` is sent (an interrupted crawl refuses it,
        as it refuses a scheduled one), and every downloader middleware and download signal sees
        it. Its response; the ingest's result when the fetch failed (:meth:`hop_failed`, its
        errback) or a spider middleware dropped it (:meth:`hop_dropped`); None when it was refused
        at ``request_scheduled`` or dropped unfetched by an interrupt, as Scrapy drops a scheduled
        request."""
        for process in processors:
            processed = process(request, response)
            if processed is None:
                return self.hop_dropped(request.meta[H.STATE_META])
            request = processed
        refusals = self.crawler.signals.send_catch_log(
            scrapy.signals.request_scheduled, request=request, spider=self, dont_log=IgnoreRequest
        )
        if any(
            isinstance(answer, Failure) and isinstance(answer.value, IgnoreRequest) for _, answer in refusals
        ):
            return None
        try:
            return await download(self.crawler, request)
        except Exception:
            failure = Failure()
            failure.request = request  # type: ignore[attr-defined]  # as Scrapy sets it for an errback
            return self.hop_failed(failure)

    async def _parse_hop(self, response: Response) -> AsyncIterator[scrapy.Request | IngestItem]:
        state = response.meta[H.STATE_META]
        itype = state["request"]["ingest_type"]
        url = response.url
        code = response.status
        if self._remaining(state) <= 0:
            yield self._timeout(state)
            return
        for unusable, unusable_status in (
            (H.TOO_LARGE_META, "body-too-large"),
            (H.BAD_GZIP_META, "bad-gzip-encoding"),
        ):
            if response.meta.get(unusable):
                H.add_terminal(state, url)
                yield self._finish(
                    state, unusable_status, response.meta[unusable], terminal=terminal(url, dt14(), code)
                )
                return
        if 300 <= code < 400 and code != 304:
            target, status, message = H.redirect_target(
                state,
                url,
                code,
                response.headers.get("Location"),
                self.config.max_redirects,
                self.config.blocklists,
                self.config.url_length_limit,
            )
            if status:
                # a failed chain stops at the last URL fetched (sandcrawler's last CDX row); a
                # blocked target is named, never fetched
                if status in H.CHAIN_FAILURES:
                    H.add_terminal(state, url)
                    term = terminal(url, dt14(), code)
                else:
                    term = terminal(target or state["redirect_chain"][-1]["location"], None, None)
                yield self._finish(state, status, message, terminal=term)
            else:
                assert target is not None, "a redirect that does not fail has a target"  # noqa: S101 - invariant
                yield self._hop_request(target, state)
            return
        dt = dt14()
        H.add_terminal(state, url)
        term = terminal(url, dt, code)
        body = response.body
        refused = H.fetched_refusal(url, code, len(body), self.config.max_body, self.config.blocklists)
        if refused:
            yield self._finish(state, *refused, terminal=term)
            return
        try:
            facts = await self.extract.run(
                examine_hop,
                body,
                url,
                content_type(response),
                itype,
                list(state["hops"]),
                self.config,
            )
        except GzipTooLarge as exc:
            yield self._finish(state, "body-too-large", str(exc), terminal=term)
            return
        except BadGzip as exc:
            yield self._finish(state, "bad-gzip-encoding", str(exc), terminal=term)
            return
        if not facts.file_meta:
            yield self._finish(state, "empty-blob", "empty body after gunzip from %s" % url, terminal=term)
            return
        landing = facts.landing
        if landing is not None:
            leads = H.landing_hop(
                state,
                url,
                landing.biblio,
                landing.next_hop,
                self.config.max_hops,
                self.config.blocklists,
                landing.unusable_link,
                self.config.url_length_limit,
            )
            target, status, message = leads or (None, None, None)
            if status:
                yield self._finish(state, status, message, terminal=term)
                return
            self._skipped_links(state, url, "link", [landing.unusable_link])
            if target:
                yield self._hop_request(target, state)
                return
        if H.hops_exceeded(state, self.config.max_hops):
            yield self._finish(
                state, "max-hops-exceeded", "%d hops reached" % self.config.max_hops, terminal=term
            )
            return
        yield await self._terminal(state, response, facts, term)

    async def _terminal(
        self, state: dict[str, Any], response: Response, facts: HopFacts, term: dict[str, Any]
    ) -> IngestItem:
        """The accepted terminal document: hashes, CDX row, mimetype check, type processing
        (already done by :func:`examine_hop` in the worker)."""
        itype = state["request"]["ingest_type"]
        url = response.url
        meta = facts.file_meta
        term["terminal_sha1hex"] = meta["sha1hex"]
        warc = response.meta.get(WARC_META)
        header_mime = header_mimetype(response.headers.get("Content-Type")) or meta["mimetype"]
        row = cdx(url, term["terminal_dt"], header_mime, response.status, meta["sha1hex"], warc)
        side = {"magic": facts.magic, "warc": warc, "header_mimetype": header_mime}
        common: dict[str, Any] = {"terminal": term, "file_meta": meta, "cdx": row}
        if facts.sniffed_mimetype:  # HTML by the declared type; libmagic said otherwise
            common.update(mimetype_sniffed=facts.sniffed_mimetype, mimetype_declared=meta["mimetype"])
        mimetype = meta["mimetype"]
        refused = H.terminal_refusal(url, mimetype, itype, self.config.blocklists)
        if refused:
            return self._finish(state, *refused, side, **common)
        body = facts.body if facts.body is not None else response.body
        if itype == "pdf" or (itype == "component" and mimetype == "application/pdf"):
            if facts.pdf is not None:
                return await self._terminal_pdf(state, body, facts.pdf, side, common, facts.page0)
            pdf = await self.extract.run(process_pdf, body, self.config)
            return await self._terminal_pdf(state, body, pdf, side, common)
        if itype == "xml":
            error = (
                facts.xml_error if facts.xml_error is not None else await self.extract.run(xml_error, body)
            )
            if error:
                return self._finish(
                    state, "xml-parse-error", error, side, xml_meta={"status": "xml-parse-error"}, **common
                )
            return self._finish(state, "success", None, side, xml_meta={"status": "success"}, **common)
        if itype == "html":
            return await self._terminal_html(state, facts, body, content_type(response), side, common)
        return self._finish(state, "success", None, side, **common)

    async def _terminal_pdf(
        self,
        state: dict[str, Any],
        body: bytes,
        pdf: tuple[dict[str, Any], str, bytes | None],
        side: dict[str, Any],
        common: dict[str, Any],
        rendered: Page0 | None = None,
    ) -> IngestItem:
        """``rendered``: the page-0 render's outcome when the extraction process rendered it."""
        pdf_meta, text, thumbnail = pdf
        if rendered is not None:
            self._page0_failure(pdf_meta, rendered)
        elif thumbnail is None:
            pdf_meta, thumbnail = await self._page0(body, pdf_meta)
        side["pdf_text"] = text
        side["pdf_thumbnail"] = thumbnail
        fields = dict(common, pdf_meta=pdf_meta)
        if self.config.grobid_url:
            request = grobid_request(
                self.config.grobid_url,
                body,
                meta={TRUSTED_META: True, "download_timeout": self.config.grobid_timeout, "dont_retry": True},
            )
            try:
                answer = await download(self.crawler, request)
                grobid, tei = await self.extract.run(grobid_result, answer.status, answer.body)
            except Exception as exc:
                grobid, tei = {"status": "error", "status_code": None, "error_msg": str(exc)[:1000]}, None
            side["grobid_tei"] = tei
            side["grobid"] = dict(grobid)
            fields["grobid"] = grobid
        return self._finish(state, "success", None, side, **fields)

    async def _page0(self, body: bytes, pdf_meta: dict[str, Any]) -> tuple[dict[str, Any], bytes | None]:
        """(``pdf_meta`` saying whether there is one, the page-0 JPEG or None) for a PDF the extraction
        process did not render (:func:`~.process.start_page0`: no warm renderer there, so a
        ``pdftoppm`` process): rendered by a warm renderer, awaited on the reactor (else by
        ``pdftoppm``, from a thread), as many at once as :data:`~.thumbnail.RENDER_QUEUE_DEPTH` per
        extraction process, so the extraction processes read the next documents meanwhile. A render
        that fails is logged with its reason and counted."""
        if not (self.config.pdf_thumbnails and page0_renderable(pdf_meta)):  # INGEST_PDF_THUMBNAILS
            return pdf_meta, None
        async with self.renders:
            warm = warm_renderer()
            page0 = await (warm.render_async(body) if warm else run_in_thread(render_page0, body))
        self._page0_failure(pdf_meta, page0)
        return dict(pdf_meta, has_page0_thumbnail=page0.jpeg is not None), page0.jpeg

    def _page0_failure(self, pdf_meta: dict[str, Any], page0: Page0) -> None:
        """A render that failed is logged with its reason and counted."""
        if page0.reason is not None:
            self.crawler.stats.inc_value("ingest/page0/failed")
            self.logger.info("no page-0 thumbnail for the PDF %s: %s", pdf_meta.get("sha1hex"), page0.reason)

    async def _terminal_html(
        self,
        state: dict[str, Any],
        facts: HopFacts,
        body: bytes,
        ctype: str | None,
        side: dict[str, Any],
        common: dict[str, Any],
    ) -> IngestItem:
        landing = facts.landing
        if landing is None or landing.parse_error:
            return self._finish(
                state, "html-selectolax-error", landing.parse_error if landing else None, side, **common
            )
        out = facts.html or await self.extract.run(
            process_html_bytes,
            body,
            common["terminal"]["terminal_url"],
            ctype,
            landing.biblio,
            self.config.ojs_fulltext_fix,
            self.config.resource_domain_blocklist,
        )
        if out.get("status"):
            return self._finish(state, out["status"], out.get("error_message"), side, **common)
        self._skipped_links(
            state, common["terminal"]["terminal_url"], "sub-resource", out["unusable_resources"]
        )
        if landing.biblio:
            state["partial"]["html_biblio"] = landing.biblio
        fields = dict(common, scope=out["scope"], platform=out["platform"])
        scope = out["scope"]
        if scope in BLOCKED_SCOPES:
            return self._finish(state, scope, "page scope is %s" % scope, side, **fields)
        fields["html_body"] = out["html_body"]
        if scope not in ACCEPTED_SCOPES:
            return self._finish(state, "wrong-scope", "page scope is %s" % scope, side, **fields)
        resources = out["resources"]
        if len(resources) > self.config.max_resources:
            return self._finish(
                state,
                "too-many-resources",
                "%d sub-resources (limit %d)" % (len(resources), self.config.max_resources),
                side,
                **fields,
            )
        side["tei_xml"] = out["tei_xml"]
        if self.config.fetch_resources:
            resources = await self._fetch_resources(resources, self._remaining(state))
            if resources is None:
                return self._timeout(state, "while fetching sub-resources")
        fields["html_resources"] = resources
        bad = [r for r in resources if r.get("error") or not (200 <= (r.get("status_code") or 0) < 300)]
        if self.config.fetch_resources and bad:
            self.crawler.stats.inc_value("ingest/resources/failed", len(bad))
            fields["html_resources_failed"] = len(bad)
            if self.config.strict_resources:
                return self._finish(
                    state,
                    "html-resource-no-capture",
                    "HTML sub-resource not found: %s" % bad[0]["url"],
                    side,
                    **fields,
                )
        if scope == "unknown":
            return self._finish(state, "unknown-scope", "page scope could not be decided", side, **fields)
        return self._finish(state, "success", None, side, **fields)

    async def _fetch_resources(
        self, resources: list[dict[str, Any]], within: float
    ) -> list[dict[str, Any]] | None:
        """Fetch every sub-resource of a page concurrently, within the page's and the worker's
        byte budgets, each hashed as it streams and dropped once described; None if they are not
        all fetched ``within`` seconds (downloads under way are left to finish under
        DOWNLOAD_TIMEOUT, their results dropped; those still waiting for room never start)."""
        page = ByteBudget(self.config.resource_bytes_per_page)
        tasks = [asyncio.ensure_future(self._fetch_resource(r, page)) for r in resources]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=max(within, 0))
            if pending:
                page.close()
                return None
        return [task.result() for task in tasks]

    async def _fetch_resource(self, resource: dict[str, Any], page: ByteBudget) -> dict[str, Any]:
        """Fetch and describe one sub-resource; a failure is recorded on the record, never raised."""
        cap = self.config.resource_cap
        request = scrapy.Request(
            resource["url"],
            dont_filter=True,
            meta={"download_maxsize": cap, "handle_httpstatus_all": True, "dont_retry": True},
        )
        record = dict(resource)  # url, resource_type, surt (from the worker)
        reservation = Reservation((page, self.resource_streams.worker), cap)
        try:
            await reservation.take()
        except BudgetClosed:
            record.update(status_code=None, error="not fetched: the ingest ran out of time")
            return record
        digest = StreamDigest()
        request.meta[STREAM_META] = (reservation, digest)
        try:
            await self.room.wait(request)
            try:
                response = await download(self.crawler, request)
            except Exception as exc:
                record.update(status_code=None, error="%s: %s" % (type(exc).__name__, str(exc)[:300]))
                return record
            finally:
                self.room.left(request)
            self.crawler.stats.inc_value("ingest/resources/fetched")
            record.update(timestamp=iso_seconds(dt14()), status_code=response.status, size=len(response.body))
            if response.url != resource["url"]:
                record["terminal_url"] = response.url
            if response.meta.get(WARC_META):
                record.update(response.meta[WARC_META])
            info, head = await self._described(digest, response.body)
            mimetype = await self.sniffer.mimetype(info["sha256hex"], head) if head else None
            record.update(info, mimetype=mimetype or header_mimetype(response.headers.get("Content-Type")))
            return record
        finally:
            reservation.release()

    @staticmethod
    async def _described(digest: StreamDigest, body: bytes) -> tuple[dict[str, Any], bytes]:
        """(hashes, first bytes for libmagic) of a body: from its stream, or (content-encoded
        bodies, which Scrapy decodes after the stream) from the decoded body, in a thread."""
        if digest.covers(body):
            return digest.hashes(), bytes(digest.head)
        whole = StreamDigest()
        await run_in_thread(whole.update, body)
        return whole.hashes(), bytes(whole.head)

    def _skipped_links(self, state: dict[str, Any], url: str, kind: str, why: list[str | None]) -> None:
        """Links of the page at ``url`` skipped because no fetch can use them (``why``, None for none),
        while its ingest goes on: said in one line for the page, and counted."""
        skipped = [reason for reason in why if reason]
        if not skipped:
            return
        self.crawler.stats.inc_value("ingest/skipped/unusable_%s" % kind.replace("-", "_"), len(skipped))
        self.logger.info(
            "ingest of %s: skipped %d %s(s) of %s that no fetch can use: %s%s",
            state["request"]["base_url"],
            len(skipped),
            kind,
            url,
            skipped[0],
            " and more" if len(skipped) > 1 else "",
        )

    # -- failures ----------------------------------------------------------------------------------

    def hop_failed(self, failure: Failure) -> IngestItem | None:
        """A hop could not be fetched: the failure becomes the ingest's status. None for a hop an
        interrupt dropped before it was fetched (:class:`~votersdaily.interrupts.CrawlInterrupted`):
        the ingest was stopped, not failed, and has no result; the next run does it (a Redis-fed
        worker gives its request back to the queue)."""
        request = failure.request  # type: ignore[attr-defined]  # Scrapy sets it on an errback's failure
        assert failure.value is not None  # noqa: S101 - a Failure wraps an exception
        if isinstance(failure.value, CrawlInterrupted):
            return None
        state = request.meta[H.STATE_META]
        if isinstance(failure.value, TIMEOUTS) and self._remaining(state) <= 0:
            return self._timeout(state)  # the hop's download_timeout was the ingest's deadline
        status, message = failure_status(failure.value)
        if isinstance(failure.value, PrivateAddressRefused):
            # Untrusted data (or a mistyped request) tried to steer a fetch inside the network: the
            # operator hears of it, and the run's result (PrivateAddressRefused) is not a success.
            self.logger.warning("ingest of %s refused: %s", state["request"]["base_url"], message)
            self.crawler.signals.send_catch_log(
                vd_signals.source_failed, failure=failure, url=request.url, spider=self
            )
        else:
            self.logger.info(
                "ingest of %s: %s at %s (%s)", state["request"]["base_url"], status, request.url, message
            )
        return self._finish(state, status, message, terminal=terminal(request.url, None, None))

    def hop_dropped(self, state: dict[str, Any]) -> IngestItem:
        """The ingest whose next hop a spider middleware dropped before it was fetched (DEPTH_LIMIT's,
        or one of the crawl's own; Scrapy's say so at most in a line of their own, never to the
        callback, and the ingest had no result at all): ``fetch-error`` saying so, its terminal the
        hop not fetched. From :meth:`_next_hop`, and from :class:`~.hop_guard.DroppedHopGuard` for a
        hop yielded to the scheduler."""
        url = H.next_url(state)
        message = (
            "not fetched: a spider middleware dropped the hop to %s (a limit such as DEPTH_LIMIT, or a "
            "middleware of the crawl's own; the crawl's stats say which)" % url
        )
        self.crawler.stats.inc_value("ingest/hop_dropped")
        self.logger.info("ingest of %s: fetch-error at %s (%s)", state["request"]["base_url"], url, message)
        return self._finish(state, "fetch-error", message, terminal=terminal(url, None, None))


def content_type(response: Response) -> str | None:
    """The response's ``Content-Type`` header as text (its charset decodes HTML)."""
    value = response.headers.get("Content-Type")
    return value.decode("latin-1") if value else None


#: Request meta: bytes of a hop received so far.
_RECEIVED = "ingest_bytes_received"
