"""``scrapy crawl laundromat -a url=<url>[,<url>...] [-a seedlist=<file>]``: LOD Laundromat 2.

Seeds (given URLs, a seed list file, sitemap and semantic-sitemap entries, VoID ``void:dataDump``
links found in cleaned data) go to ``ll_seeds``; each stale seed is downloaded (every HTTP hop
recorded), and its file is unpacked, recoded, guessed, parsed and cleaned by the
:class:`~votersdaily.laundromat.processor.Processor`. A run started on an existing seedlist resumes
whatever a crashed run left half-done, without redoing finished work.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urljoin, urlsplit

import scrapy
from scrapy.exceptions import CloseSpider, NotConfigured
from scrapy.http import Response
from twisted.python.failure import Failure

from votersdaily import locations
from votersdaily import signals as vd_signals
from votersdaily.blocking import run_in_thread
from votersdaily.clock import iso_utc, now_iso, now_utc
from votersdaily.crawlcontext import STOPPED_FOR_STORE, STORE_WENT_AWAY
from votersdaily.defaults import ProjectSettingsMixin
from votersdaily.interrupts import CrawlInterrupted
from votersdaily.locations import LocationUnset
from votersdaily.plumbing.inputs import checked_inputs, checked_url, input_file, url_argument
from votersdaily.plumbing.ssrf import check_policy_settings, keep_components, keep_downloader_middlewares
from votersdaily.requestmeta import START_META
from votersdaily.store import store_uri
from votersdaily.store.base import StoreError
from votersdaily.store.check import unavailable_line
from votersdaily.store.crawler import count_writes, note_not_stored, stop_for_store, store_for
from votersdaily.store.upsert import UpsertResult

from . import native, states
from .archives import ArchiveLimits
from .clean_types import CleanOptions
from .contexts import ContextOptions
from .download_records import body_excerpt, download_key, failed_hop, hop
from .fetching import OPERATOR_META, STREAM_META
from .links import BAD_URL, FoundLinks
from .processor import OutputFolderFull, Processor, describe, full_disk
from .seedlist import RecordNotStored, SeedList
from .seeds import (
    SeedListUnreadable,
    checked_seed,
    interval_for,
    is_due,
    is_seed,
    new_seed,
    seedlist_lines,
    stale_after,
)
from .sitemaps import MAX_SITEMAP_BYTES, SitemapError, looks_like_sitemap, parse_sitemap
from .uris import uri_key

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from twisted.python.failure import Failure

#: What a ``void:dataDump`` link is called where it is not followed.
VOID_LINK = "void:dataDump link"

#: Media types and extensions asked for first (LL's Accept header, plus archives).
ACCEPT = ", ".join(
    [
        "application/n-quads",
        "application/n-triples",
        "application/trig",
        "text/turtle",
        "application/rdf+xml",
        "application/ld+json;q=0.9",
        "application/xhtml+xml;q=0.5",
        "text/html;q=0.3",
        "*/*;q=0.1",
    ]
)


def read_sitemap(path: Path) -> bytes:
    """A downloaded sitemap's bytes, never more than the protocol's limit (the file may be huge)."""
    with open(path, "rb") as f:
        body = f.read(MAX_SITEMAP_BYTES + 1)
    if len(body) > MAX_SITEMAP_BYTES:
        raise SitemapError("sitemap larger than %d bytes" % MAX_SITEMAP_BYTES)
    return body


class LaundromatSpider(ProjectSettingsMixin, scrapy.Spider):
    name = "laundromat"
    version = "1.0"
    #: Settings naming where the spider writes besides the store (the run log reports them).
    output_settings = ("LAUNDROMAT_OUTPUT_DIR",)
    custom_settings: dict[str, Any] = {
        "ITEM_PIPELINES": {},
        "HTTPCACHE_ENABLED": False,
        "RETRY_ENABLED": False,
        "DEFAULT_REQUEST_HEADERS": {"Accept": ACCEPT},
        # Every fetch from crawled content passes the address policy; bodies stream to disk. No
        # Content-Encoding decoding: a gzip-encoded dump is unpacked like a .gz file.
        "DOWNLOADER_MIDDLEWARES": {
            "votersdaily.laundromat.fetching.AddressGuardMiddleware": 50,
            "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
        },
        "DOWNLOAD_HANDLERS": dict.fromkeys(
            ("http", "https", "file"), "votersdaily.laundromat.fetching.StreamingDownloadHandler"
        ),
    }

    #: Whether someone else waits out a store that goes away mid-run: a Redis worker's scheduler gives
    #: the requests that met it back to the queue (votersdaily/distributed/redis_scheduler.py), so the
    #: store's error goes to it as raised. A plain run stops for it (:meth:`_store_in_use`).
    store_outages_waited_out = False

    # Set by from_crawler: each needs the crawler's settings or store.
    output_dir: Path
    default_interval: float
    max_hops: int
    seeds: SeedList
    processor: Processor
    links: FoundLinks

    def __init__(
        self, *args: Any, url: str | None = None, seedlist: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.given_urls = url_argument(
            self.name, url, ("http", "https", "file"), "to process the stale seeds in the store"
        )
        self.seedlist_file = str(input_file(self.name, "seedlist", seedlist)) if seedlist else None
        self.start_urls = self.given_urls[:1]
        #: The store went away (or was away at the start) and the run stops for it, said once: set
        #: once said and recorded (callbacks that meet it meanwhile wait for that, then are silent).
        self._store_gone: asyncio.Event | None = None

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        """A host list entry that can never match stops the crawl before it starts."""
        super().update_settings(settings)
        check_policy_settings(settings, "LAUNDROMAT")
        # The guard stays (and Content-Encoding stays undecoded), whatever DOWNLOADER_MIDDLEWARES was given.
        keep_downloader_middlewares(settings, LaundromatSpider.custom_settings["DOWNLOADER_MIDDLEWARES"])
        # So does the streaming handler, with the download's size and time limits, whatever DOWNLOAD_HANDLERS was given.
        keep_components(settings, "DOWNLOAD_HANDLERS", LaundromatSpider.custom_settings["DOWNLOAD_HANDLERS"])

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        settings = crawler.settings
        try:
            spider.output_dir = locations.laundromat_output_dir(settings).resolve()
        except LocationUnset:
            raise NotConfigured("LAUNDROMAT_OUTPUT_DIR is empty: set the folder for cleaned files") from None
        spider.default_interval = settings.getfloat("LAUNDROMAT_DEFAULT_INTERVAL")
        spider.max_hops = settings.getint("REDIRECT_MAX_TIMES")
        spider.seeds = SeedList(store_for(crawler))
        spider.links = FoundLinks(crawler, spider.logger)
        spider.processor = Processor(
            spider.seeds,
            spider.output_dir,
            workers=settings.getint("LAUNDROMAT_WORKERS") or os.cpu_count() or 1,
            limits=ArchiveLimits.from_settings(settings),
            options=CleanOptions(
                genid_base=settings.get("LAUNDROMAT_GENID_BASE") or CleanOptions.genid_base,
                gzip_level=settings.getint("LAUNDROMAT_GZIP_LEVEL"),
                max_canonicalisation_work=settings.getint("LAUNDROMAT_MAX_CANONICALISATION_WORK"),
                contexts=ContextOptions.from_settings(settings, spider.output_dir),
            ),
            on_write=spider._count,
            on_full=spider._output_full,
            timeout=settings.getfloat("LAUNDROMAT_DOCUMENT_TIMEOUT"),
            seconds_per_mb=settings.getfloat("LAUNDROMAT_DOCUMENT_SECONDS_PER_MB"),
        )
        # Its worker starts now, so that its start-up overlaps the crawl's (extensions, middlewares,
        # opening the store) and the first download.
        spider.processor.warm()
        if native.available():
            spider.logger.info("compiled fast path: %s", native.location())
        else:
            spider.logger.warning(
                "the compiled fast path is not built here: cleaning runs the pure-Python path (same output, "
                "about half the speed); install the package with a C compiler present (docs/operations.md)"
            )
        crawler.signals.connect(spider.processor.close, signal=scrapy.signals.spider_closed)
        crawler.signals.connect(spider.report_cleaned, signal=vd_signals.run_log_building)
        crawler.signals.connect(spider.links.report, signal=vd_signals.run_log_building)
        return spider

    #: How many "cleaned file ← URL" pairs the run log keeps (the log lines name them all).
    CLEANED_IN_LOG = 200

    def report_cleaned(self, doc: dict[str, Any], spider: Spider | None = None) -> None:
        """Which cleaned file came from which URL: one log line each, and the run log's ``cleaned``;
        whether the compiled fast path cleaned them (``compiled_path``: the module this process
        loaded, None for the pure-Python path, and how many documents a worker cleaned with it)."""
        for source, file in self.processor.cleaned:
            self.logger.info("cleaned %s from %s", self.output_dir / file, source)
        doc["cleaned_count"] = len(self.processor.cleaned)
        doc["cleaned"] = [
            {"from": source, "file": file} for source, file in self.processor.cleaned[: self.CLEANED_IN_LOG]
        ]
        doc["compiled_path"] = {"module": native.location(), "documents": self.processor.cleaned_compiled}
        self.crawler.stats.set_value("laundromat/compiled_path_documents", self.processor.cleaned_compiled)

    def _count(self, result: UpsertResult) -> None:
        """Seed records the processor wrote (the laundromat writes ``ll_seeds`` itself)."""
        counts = result.counts()
        count_writes(
            self.crawler, self.seeds.db, {k: counts.get(k, 0) for k in ("inserted", "updated", "unchanged")}
        )

    def _output_full(self, full: OutputFolderFull) -> None:
        """The run fails with the full output folder (said once, by the processor): its result is
        ``OutputFolderFull``, and what did not fit waits for the next run."""
        self.crawler.signals.send_catch_log(
            vd_signals.source_failed,
            failure=Failure(full),
            url=str(self.output_dir),
            spider=self,
            where="output",
        )

    async def _db(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await run_in_thread(fn, *args)

    # -- seeds ------------------------------------------------------------------------------------

    async def start(self) -> AsyncIterator[scrapy.Request]:
        try:
            due, given = await self._due_seeds()
        except StoreError as exc:  # its seed list is there: no seed can be registered, read or moved on
            await self._stop_for_store(exc)
            raise CloseSpider(STOPPED_FOR_STORE) from None
        async with self._store_in_use():
            for doc in due:
                async for request in self.download(doc, start=doc["uri"] in given):
                    yield request

    async def _due_seeds(self) -> tuple[list[dict[str, Any]], list[str]]:
        """Register the operator's seeds, resume what a crashed run left half-done, and say which
        seeds are due: (those seeds, the operator's)."""
        await self._db(self.seeds.open)
        given = self._checked_seeds(await self._db(self._given_seeds))
        for uri in given:
            doc, created = await self.register(uri, given=True)
            if (
                doc is not None and not created and not doc.get("given")
            ):  # found in crawled data first, now the operator's
                await self._db(self.seeds.put, dict(doc, given=True))
        records = await self._db(lambda: list(self.seeds.all()))
        for doc in records:
            if not is_seed(doc) and doc.get("status") not in (states.DOWNLOADING, *states.TERMINAL):
                # Processing an archive takes its children on: a record whose status moved on since the
                # snapshot was done in this run (its file may be gone), so it is read again first.
                stored = await self._db(self.seeds.get, doc["_id"])
                if stored is None or stored.get("status") != doc.get("status"):
                    continue
                # Resume a half-done file: a sitemap goes back to the sitemap step, data to the processor.
                if await self._db(self._filed_sitemap, stored):
                    async for _ in self._sitemap(stored, download=False):
                        pass  # its due seeds are downloaded below with every other due seed
                    continue
                # Its new seeds are downloaded below with every other due seed.
                await self._dump_links(stored, await self.processor.process(stored))
        records = await self._db(lambda: list(self.seeds.all()))
        seeds = [doc for doc in records if is_seed(doc)]
        due = [doc for doc in seeds if is_due(doc)]
        self._report_not_stale(seeds, due, given)
        return due, given

    async def _stop_for_store(self, exc: StoreError) -> None:
        """The store did not answer as the run began. An event crawl or an ingest goes on and spools
        what it scrapes, but the laundromat reads and writes its seed list as it works, which cannot
        wait in a spool: the run stops before it fetches anything, said in one line with what to do,
        and its run log (the store's error as its result) is spooled after one attempt."""
        line = (
            "%s; the laundromat reads and writes its seed list (%s) there as it works, so this run "
            "stopped before fetching anything: run it again, with the same seeds, once the store answers"
            % (await self._db(unavailable_line, store_uri(self.settings), exc), self.seeds.db)
        )
        self._store_gone = asyncio.Event()
        stop_for_store(self.crawler, self, exc, line)
        self._store_gone.set()

    @contextlib.asynccontextmanager
    async def _store_in_use(self) -> AsyncIterator[None]:
        """Around the work that reads and writes the seed list once the run began: a store that goes
        away there stops the run (:meth:`_store_went_away`) instead of a traceback per callback."""
        try:
            yield
        except StoreError as exc:
            if self.store_outages_waited_out:
                raise
            await self._store_went_away(exc)
            raise CloseSpider(STORE_WENT_AWAY) from None

    async def _store_went_away(self, exc: StoreError) -> None:
        """The store stopped answering while the run worked. Said once, in one line with what to do;
        every callback that meets it later (the downloads in flight, cancelled as the run closes) is
        silent. Nothing is lost: what the run did is in the store, and a seed it had not finished is
        left due (``downloading``, or ``added`` with its last ``processed``) for the next run, which
        starts it again; the run log (the store's error as its result) is spooled after one attempt."""
        if self._store_gone is not None:
            # The first callback that met it says it: the run closes once that is recorded (before,
            # a callback closing it meanwhile left the run log without the store's error: exit 1).
            await self._store_gone.wait()
            self.logger.debug("the store is still away: %s", exc)
            return
        self._store_gone = asyncio.Event()
        try:
            line = (
                "%s; the laundromat reads and writes its seed list (%s) there as it works, so this run "
                "stopped: what it finished is stored, the seeds it had not are left due; run it again, "
                "with the same seeds, once the store answers"
                % (await self._db(unavailable_line, store_uri(self.settings), exc), self.seeds.db)
            )
            stop_for_store(self.crawler, self, exc, line)
        finally:
            self._store_gone.set()

    #: How many seeds skipped as not stale are named in the log, one line each (the operator's own
    #: first); the summary line counts them all.
    NOT_STALE_LOGGED = 20

    def _report_not_stale(
        self, seeds: list[dict[str, Any]], due: list[dict[str, Any]], given: list[str]
    ) -> None:
        """Say which seeds are not downloaded because they are not stale, and when they will be: a
        second run within the interval otherwise ends with nothing done and nothing said."""
        due_ids = {doc["_id"] for doc in due}
        failed = sum(1 for doc in seeds if doc.get("status") == states.FAILED)
        # (A seed that is not due, not relative and not failed was processed: it has a stale_after.)
        waiting = [
            (stale_after(doc) or now_utc(), doc)
            for doc in seeds
            if doc["_id"] not in due_ids and not doc.get("relative") and doc.get("status") != states.FAILED
        ]
        waiting.sort(key=lambda pair: (pair[1]["uri"] not in given, pair[0]))
        for after, doc in waiting[: self.NOT_STALE_LOGGED]:
            self.logger.info(
                "%s not downloaded: not stale (processed %s, stale after %s)",
                doc["uri"],
                doc["processed"],
                iso_utc(after),
            )
        relative = sum(1 for doc in seeds if doc.get("relative"))
        self.logger.info(
            "%d of %d seeds due%s%s%s",
            len(due),
            len(seeds),
            "; %d not stale, the first stale after %s (LAUNDROMAT_DEFAULT_INTERVAL or the sitemap's changefreq)"
            % (len(waiting), iso_utc(min(after for after, _ in waiting)))
            if waiting
            else "",
            "; %d relative URIs, never fetched" % relative if relative else "",
            "; %d failed for good, no request can be made of their URIs (their error in ll_seeds)" % failed
            if failed
            else "",
        )

    def _given_seeds(self) -> list[tuple[str, str | Exception]]:
        """``(where, seed or error)`` for the operator's seeds (``-a url=``, ``-a seedlist=``)."""
        found: list[tuple[str, str | Exception]] = [("-a url", uri) for uri in self.given_urls]
        if self.seedlist_file:
            found += list(seedlist_lines(self.seedlist_file))
        return found

    def _checked_seeds(self, found: list[tuple[str, str | Exception]]) -> list[str]:
        """The seeds that can be fetched; each other one is reported with its line and left out
        (``input_rejected``: the run log's ``rejected``, ``enqueue``'s bad lines). As the ingest's
        requests: an unreadable seed list, or given seeds none of which can be fetched, fail the run
        (``source_failed``) rather than end a run that did nothing ``success``."""
        checked = list(checked_inputs(found, checked_seed))
        any_valid = any(not isinstance(seed, ValueError) for _, seed in checked)
        given = []
        for where, seed in checked:
            if isinstance(seed, ValueError):
                self.logger.error("bad seed at %s: %s", where, seed)
                fatal = not any_valid or isinstance(seed, SeedListUnreadable)
                vd_signals.report_unusable_input(self, where, seed, fatal=fatal)
            else:
                given.append(seed)
        return given

    async def register(self, uri: str, **extra: Any) -> tuple[dict[str, Any] | None, bool]:
        """The seed of ``uri`` (registered unless it is known) and whether it is new; (None, False)
        when the store refused its record: said in one line, counted among the run's failed
        writes (the run log names it), the other seeds go on."""
        extra.setdefault("interval", self.default_interval)
        try:
            doc, created = await self._db(self.seeds.register, new_seed(uri, **extra))
        except RecordNotStored as exc:
            self.logger.error("seed %s not stored: the store refused its record (%s)", uri, exc)
            note_not_stored(self.crawler, exc.failed)
            count_writes(self.crawler, self.seeds.db, {"failed": len(exc.failed)})
            return None, False
        if created:
            count_writes(self.crawler, self.seeds.db, {"inserted": 1})
        return doc, created

    async def _follow(
        self, link: str, what: str, record: dict[str, Any], **extra: Any
    ) -> tuple[dict[str, Any] | None, bool]:
        """Register ``link`` (``what`` it is), found in ``record``'s document, as a seed: (the stored
        seed, whether it is new and due: to download now); (None, False) when it is not followed
        (``self.links`` says why): no request can be made of it, or it would be a new seed past
        the run's LAUNDROMAT_MAX_FOUND_SEEDS."""
        where = describe(record)
        uri = self.links.checked(link, what, where)
        if uri is None:
            return None, False
        if self.links.full:  # a seed known already is still followed (a sitemap's child)
            known = await self._db(self.seeds.get, uri_key(uri))
            if known is None:
                self.links.over_limit(uri, where)
            return known, False
        # The slot is taken before the store is asked, and given back unless a seed was made: two
        # sitemaps read at once both found a slot left, and both took it (CI, 2026-11-29: a fourth
        # seed past LAUNDROMAT_MAX_FOUND_SEEDS=3).
        self.links.found += 1
        created = False
        try:
            doc, created = await self.register(uri, found_in=record["_id"], **extra)
        finally:
            if not created:
                self.links.found -= 1
        return doc, created and doc is not None and is_due(doc)

    async def _sitemap_depth(self, record: dict[str, Any]) -> int:
        """How many sitemaps led to the seed ``record`` was downloaded for (0: an operator's seed)."""
        seed = await self._db(self.seeds.get, record.get("seed") or "")
        return 0 if seed is None or seed.get("given") else int(seed.get("sitemap_depth") or 0)

    async def _dump_links(self, record: dict[str, Any], links: list[str]) -> list[dict[str, Any]]:
        """Register the ``void:dataDump`` links cleaned data of ``record`` named (as deep in sitemaps
        as the data); the new seeds due now."""
        fresh = []
        links = list(dict.fromkeys(links))
        depth = await self._sitemap_depth(record) if links else 0
        for link in links:
            doc, new = await self._follow(
                link, VOID_LINK, record, origin="void:dataDump", sitemap_depth=depth or None
            )
            if new and doc is not None:
                fresh.append(doc)
        return fresh

    def seed_request(
        self,
        seed: dict[str, Any],
        start: bool = False,
        uri: str | None = None,
        hops: list[dict[str, Any]] | None = None,
        begin: str | None = None,
    ) -> scrapy.Request:
        """The request of one hop; only the first hop of an operator's seed skips the address policy.
        A URL no request can be made of (a stored seed's, a redirect's) is a ValueError saying why."""
        return scrapy.Request(
            checked_url(uri or seed["uri"], "redirect target" if uri else "seed"),
            callback=self.parse,
            errback=self.download_failed,
            dont_filter=True,
            meta={
                "seed": seed,
                "hops": hops or [],
                "begin": begin,
                "dont_redirect": True,
                "handle_httpstatus_all": True,
                "download_timeout": self.settings.getfloat("LAUNDROMAT_DOWNLOAD_TIMEOUT"),
                OPERATOR_META: uri is None and bool(seed.get("given")),
                STREAM_META: seed["download"],
                START_META: start,
            },
        )

    # -- downloads --------------------------------------------------------------------------------

    async def download(self, seed: dict[str, Any], start: bool = False) -> AsyncIterator[scrapy.Request]:
        """The request for ``seed``, after its download record is persisted (seed: downloading). A
        seed no request can be made of (a URI stored before links were checked) fails for good with
        why, and yields none: before, its ValueError stopped the start of every later run."""
        begin = now_iso()
        key = download_key(seed["_id"], begin + "-%f" % time.time())
        docs = []
        if seed["status"] == states.DOWNLOADING and seed.get("download"):
            # A crashed run left this download half-done: it ends as failed, a new one starts.
            old = await self._db(self.seeds.get, seed["download"])
            if old is not None and old.get("status") == states.DOWNLOADING:
                docs.append(dict(old, status=states.FAILED, error="interrupted (run ended during download)"))
                await self._db(self.processor.remove_files, {"file": "files/" + old["_id"]})
        try:
            request = self.seed_request(
                dict(seed, status=states.DOWNLOADING, download=key), start=start, begin=begin
            )
        except ValueError as exc:
            self.links.skip(BAD_URL, seed["uri"], "the stored seeds (%s)" % self.seeds.db, str(exc))
            await self._db(self.seeds.put, dict(seed, status=states.FAILED, error=str(exc)), *docs)
            return
        record = {
            "_id": key,
            "parent": seed["_id"],
            "seed": seed["_id"],
            "status": states.DOWNLOADING,
            "uri": seed["uri"],
            "timestamp": {"begin": begin, "end": None},
        }
        await self._db(self.seeds.put, request.meta["seed"], record, *docs)
        request.meta["download"] = record
        yield request

    async def parse(self, response: Response) -> AsyncIterator[scrapy.Request]:
        """One hop's answer (:meth:`_answered`), the store's going away said once."""
        async with self._store_in_use():
            async for request in self._answered(response):
                yield request

    async def _answered(self, response: Response) -> AsyncIterator[scrapy.Request]:
        """One hop's answer, its body already streamed to ``files/<download key>``."""
        meta = response.meta
        record = meta["download"]
        path = self.output_dir / "files" / record["_id"]
        meta["hops"].append(hop(response))
        location = response.headers.get("Location")
        if 300 <= response.status < 400 and location:
            path.unlink(missing_ok=True)
            if len(meta["hops"]) > self.max_hops:
                await self._fail(meta, "more than %d redirects" % self.max_hops)
                return
            # A redirect target is crawled content: not the operator's seed, checked by the policy.
            target = location.decode("latin-1")
            with contextlib.suppress(ValueError):  # not resolvable: the check below says why
                target = urljoin(response.url, target)
            try:
                request = self.seed_request(meta["seed"], uri=target, hops=meta["hops"], begin=meta["begin"])
            except ValueError as exc:
                await self._fail(meta, str(exc))
                return
            request.meta["download"] = record
            yield request
            return
        if not 200 <= response.status < 300:
            excerpt = await self._db(body_excerpt, path)
            await self._fail(meta, "HTTP status %d" % response.status, excerpt=excerpt)
            return
        async for request in self._filed(response, record, path):
            yield request

    async def _filed(
        self, response: Response, record: dict[str, Any], path: Path
    ) -> AsyncIterator[scrapy.Request]:
        meta = response.meta
        seed = meta["seed"]
        # Only the size here: characters, lines and line endings are counted by the recode step, in
        # the pass that checks the text's encoding (a second read of a large dump costs seconds).
        content = {"number_of_bytes": path.stat().st_size}
        name = urlsplit(response.url).path.rsplit("/", 1)[-1]
        ctype = response.headers.get("Content-Type")
        record = dict(
            record,
            status=states.FILED,
            http=meta["hops"],
            file=str(path.relative_to(self.output_dir)),
            timestamp={"begin": meta["begin"], "end": now_iso()},
            base_uri=response.url,
            name=name,
            content_type=ctype.decode("latin-1") if ctype else None,
            depth=0,
            **content,
        )
        seed = dict(seed, status=states.ADDED, processed=now_iso())
        await self._db(self.seeds.put, record, seed)
        if await self._db(self._is_sitemap, path):
            async for request in self._sitemap(record):
                yield request
            return
        for doc in await self._dump_links(record, await self.processor.process(record)):
            async for request in self.download(doc):
                yield request

    @staticmethod
    def _is_sitemap(path: Path) -> bool:
        with open(path, "rb") as f:
            return looks_like_sitemap(f.read(65536))

    def _filed_sitemap(self, doc: dict[str, Any]) -> bool:
        """Whether ``doc`` is a downloaded sitemap a crashed run left ``filed`` or ``unarchiving``."""
        if doc.get("status") not in (states.FILED, states.UNARCHIVING) or doc.get("parent") != doc.get(
            "seed"
        ):
            return False
        path = self.processor.own_file(doc.get("file"))  # a stored record may name any path
        return path is not None and path.is_file() and self._is_sitemap(path)

    async def _sitemap(self, record: dict[str, Any], download: bool = True) -> AsyncIterator[scrapy.Request]:
        """Register a sitemap's entries as seeds (``download``: and request the new, due ones); none
        of a sitemap nested deeper than LAUNDROMAT_SITEMAP_MAX_DEPTH (it fails with why)."""
        if record["status"] != states.UNARCHIVING:
            record = dict(record, status=states.UNARCHIVING)
            await self._db(self.seeds.put, record)
        try:
            sitemap = await self._db(lambda: parse_sitemap(read_sitemap(self.output_dir / record["file"])))
        except (SitemapError, OSError, EOFError) as exc:
            self.logger.warning("%s failed (sitemap): %s", record.get("uri") or record["_id"], exc)
            await self._sitemap_done(record, status=states.FAILED, error=str(exc))
            return
        entries = []
        for url in sitemap.urls + sitemap.sitemaps:
            entries.append(
                (
                    url.loc,
                    "sitemap entry",
                    {
                        "interval": interval_for(url.changefreq, self.default_interval),
                        "lastmod": url.lastmod,
                        "priority": url.priority,
                    },
                )
            )
        for dataset in sitemap.datasets:
            for dump in dataset.data_dumps:
                entries.append(
                    (
                        dump,
                        "dump location",
                        {
                            "interval": interval_for(dataset.changefreq, self.default_interval),
                            "dataset_label": dataset.label,
                            "dataset_uri": dataset.uri,
                            "linked_data_prefix": dataset.linked_data_prefixes or None,
                            "lastmod": dataset.lastmod,
                        },
                    )
                )
        depth = await self._sitemap_depth(record)
        too_deep = self.links.sitemap_too_deep(
            sitemap.kind, depth, [link for link, _, _ in entries], describe(record)
        )
        if too_deep is not None:
            await self._sitemap_done(record, status=states.FAILED, error=too_deep)
            return
        children = []
        for link, what, extra in entries:
            doc, fresh = await self._follow(
                link, what, record, origin="sitemap", sitemap_depth=depth + 1, **extra
            )
            if doc is None:
                continue
            children.append(doc["_id"])
            if download and fresh:
                async for request in self.download(doc):
                    yield request
        await self._sitemap_done(record, status=states.DEPLETED, sitemap=sitemap.kind, children=children)

    async def _sitemap_done(self, record: dict[str, Any], **changes: Any) -> None:
        """A sitemap's record ends (``changes``: depleted, or failed with its error); its file goes."""
        await self._db(self.seeds.put, dict(record, **changes))
        (self.output_dir / record["file"]).unlink(missing_ok=True)

    async def _fail(
        self, meta: dict[str, Any], error: str, excerpt: dict[str, Any] | None = None, again: bool = False
    ) -> None:
        """The download failed with ``error``; ``again``: not the seed's fault (a full output folder,
        the crawl interrupted), so the seed stays due for the next run instead of waiting out its
        interval."""
        record = dict(
            meta["download"],
            status=states.FAILED,
            http=meta["hops"],
            error=error,
            timestamp={"begin": meta["begin"], "end": now_iso()},
        )
        if excerpt:
            record["body_excerpt"] = excerpt
        seed = dict(meta["seed"], status=states.ADDED)
        if not again:
            seed["processed"] = now_iso()
        await self._db(self.seeds.put, record, seed)
        # What was received (an error page) is not kept: the record has its excerpt.
        await self._db(self.processor.remove_files, {"file": "files/" + record["_id"]})
        log = self.logger.info if again else self.logger.warning  # the folder is said once, at ERROR
        log("download of %s failed: %s", meta["seed"]["uri"], error)

    async def download_failed(self, failure: Failure) -> None:
        """A hop that got no answer (:meth:`_not_answered`), the store's going away said once."""
        async with self._store_in_use():
            await self._not_answered(failure)

    async def _not_answered(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]  # Scrapy sets it on an errback's failure
        assert failure.type is not None and failure.value is not None  # noqa: S101 - a Failure wraps an exception
        request.meta["hops"].append(failed_hop(request.url, failure.value))
        error = "%s: %s" % (failure.type.__name__, failure.getErrorMessage())
        if failure.check(CrawlInterrupted):  # the person stopped the crawl (counted in not_fetched_count)
            await self._fail(request.meta, error, again=True)
            return
        full = full_disk(failure.value, self.output_dir)
        if full is not None:
            self.processor.output_full(full)
            await self._fail(request.meta, "OutputFolderFull: %s" % failure.getErrorMessage(), again=True)
            return
        await self._fail(request.meta, error)
        self.crawler.signals.send_catch_log(
            vd_signals.source_failed, failure=failure, url=request.url, spider=self
        )
