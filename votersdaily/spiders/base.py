"""The event spider base: a source spider only says where its documents are and how one document
becomes events; fetching, provenance, time zones, ids, validation, storage and the run log are the
framework's job.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self
from urllib.parse import urlsplit
from urllib.request import url2pathname

import scrapy
from scrapy.extensions.httpcache import FilesystemCacheStorage
from scrapy.http import Response
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.spider import iterate_spider_output
from twisted.internet import defer

from votersdaily import scrapy_internals
from votersdaily import signals as vd_signals
from votersdaily.clock import now_iso
from votersdaily.crawlcontext import SOURCE_TIMEZONE, crawl_context
from votersdaily.defaults import ProjectSettingsMixin
from votersdaily.interrupts import CrawlInterrupted
from votersdaily.items import EventItem
from votersdaily.locations import http_cache_dir
from votersdaily.plumbing.inputs import (
    BadSpiderArgument,
    checked_url,
    one_of,
    shown,
    spider_argument_names,
    unknown_spider_arguments,
    url_argument,
    yes_or_no,
)
from votersdaily.recordings import recording_path
from votersdaily.requestmeta import ACCESS_META, ARCHIVE_META, REPLAY_META, SOURCE_URL_META, START_META
from votersdaily.sources.errors import BadLink, ErrorPage, MalformedDocument, SourceError, UnexpectedDocument

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from twisted.python.failure import Failure

    # Imported where they are used: listing the spiders imports this module too, and needs neither
    # the archive nor the event pipelines.
    from votersdaily.archive import ArchivedResponse
    from votersdaily.reparse import Reparse

#: What a record's parse may raise to drop that record alone: the source's own errors and the
#: errors of reading a field that is missing or of the wrong type.
RECORD_ERRORS = (SourceError, ValueError, TypeError, LookupError, AttributeError)

#: Meta of a reparse: the callback that parsed the archived response.
REPLAY_CALLBACK_META = "vd_replay_callback"


logger = logging.getLogger(__name__)


class HomeCacheStorage(FilesystemCacheStorage):
    """Scrapy's filesystem HTTP cache with a relative ``HTTPCACHE_DIR`` under the data home
    (``locations.http_cache_dir``): Scrapy would put it under the project's ``.scrapy`` and, run
    outside a project (the installed command), switch the cache off with a warning."""

    def __init__(self, settings: BaseSettings) -> None:
        resolved = settings.copy()
        resolved.frozen = False  # a copy of the crawler's frozen settings, for this storage alone
        resolved.set("HTTPCACHE_DIR", str(http_cache_dir(settings)), priority=99)
        super().__init__(resolved)

    #: Cache folders whose failure to take a response was said (once per folder and process).
    _said: ClassVar[set[str]] = set()

    def store_response(self, spider: scrapy.Spider, request: scrapy.Request, response: Response) -> None:
        """The cache is a copy: a response it cannot take (a full disk, a folder it may not write)
        never costs the response (before: "could not fetch …: [Errno 28]", the run's events lost).
        The entry it was writing is removed, so that no half-written entry is served later."""
        try:
            super().store_response(spider, request, response)
        except OSError as exc:
            shutil.rmtree(scrapy_internals.cache_entry_path(self, spider, request), ignore_errors=True)
            if self.cachedir not in self._said:
                self._said.add(self.cachedir)
                logger.error(
                    "the HTTP cache %s cannot take responses (%s): they are parsed without being cached "
                    "(HTTPCACHE_DIR)",
                    self.cachedir,
                    exc.strerror or exc,
                )


class EventSpider(ProjectSettingsMixin, scrapy.Spider):
    """Subclass and set: ``name``, ``version``, ``branch``, ``entity``, ``source_timezone``,
    ``frequency_hours``, ``listing_urls`` (discovery) and ``recordings`` (offline replay), and
    implement :meth:`parse_records` and :meth:`parse_record` (or, for a document that is a single
    event, :meth:`parse_events`), plus :meth:`parse_listing` if documents are discovered through a
    listing. Events are dicts with at least ``datetime``, ``title``, ``unique_key`` and
    ``source_text``; every other key is an ad hoc key of the event.

    A document that is wrong as a whole (an error page, the wrong root, a truncated body) fails the
    page: :meth:`parse_records` raises. A *record* that cannot become an event fails only itself:
    what :meth:`parse_record` raises (one of :data:`RECORD_ERRORS`) drops that record with its reason
    (stats ``events/dropped/record:<exception>``, the run log's ``dropped``) and the rest are kept.
    """

    version: str = "1.0"
    branch: str = ""
    entity: str = ""
    source_timezone: str = SOURCE_TIMEZONE
    #: How often the source should be crawled, in hours (``crawl --all`` and the scheduler).
    frequency_hours: float = 6.0
    #: Recorded responses replayed by ``crawl --all --offline``: path relative to
    #: ``votersdaily/recordings/`` (shipped with the package) → upstream URL.
    recordings: dict[str, str] = {}

    @property
    def listing_urls(self) -> tuple[str, ...]:
        """Where discovery starts (the live listing or feed): a class attribute in most spiders, a
        property where it depends on the date or the spider's arguments."""
        return ()

    custom_settings: dict[str, Any] = {
        "DOWNLOAD_DELAY": 1.0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
        "AUTOTHROTTLE_ENABLED": True,
        "AUTOTHROTTLE_START_DELAY": 1.0,
        "HTTPCACHE_ENABLED": True,
        "HTTPCACHE_STORAGE": "votersdaily.spiders.base.HomeCacheStorage",
        # The event pipelines are synchronous; with asyncio Scrapy starts CONCURRENT_ITEMS worker
        # tasks per response (100 by default), which cost more than the items of a small document.
        "CONCURRENT_ITEMS": 8,
        # Every parsed response is archived (votersdaily.archive); a reparse replays the archive
        # instead of fetching (votersdaily.reparse).
        "DOWNLOADER_MIDDLEWARES": {
            "votersdaily.reparse.ReplayMiddleware": 1,
            # After the replay (a reparse fetches nothing), before anything connects.
            "votersdaily.spiders.address_guard.EventAddressGuard": 10,
            "votersdaily.archive.ArchiveMiddleware": 50,
        },
    }

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        super().update_settings(settings)
        from votersdaily.plumbing.ssrf import check_policy_settings, keep_downloader_middlewares

        from .address_guard import PREFIX

        check_policy_settings(settings, PREFIX)  # a host entry that can never match stops it here
        # The replay, the address guard and the archive stay, whatever DOWNLOADER_MIDDLEWARES was given.
        keep_downloader_middlewares(settings, EventSpider.custom_settings["DOWNLOADER_MIDDLEWARES"])
        # A runaway response is refused rather than parsed (a spider's own custom_settings win).
        if (settings.getpriority("DOWNLOAD_MAXSIZE") or 0) < SETTINGS_PRIORITIES["spider"]:
            settings.set("DOWNLOAD_MAXSIZE", settings.getint("VOTERSDAILY_EVENT_MAXSIZE"), priority="spider")

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        """The spider, and what its crawl's components read about it: its source's time zone and
        the reparse it was asked for (``crawl_context(crawler)``, votersdaily/crawlcontext.py)."""
        spider = super().from_crawler(crawler, *args, **kwargs)
        context = crawl_context(crawler)
        context.source_timezone = spider.source_timezone
        context.reparse = spider.reparse
        return spider

    @classmethod
    def argument_names(cls) -> set[str]:
        """The spider arguments (``-a NAME=VALUE``) this spider takes: the keyword parameters of its
        classes' ``__init__``."""
        return spider_argument_names(cls)

    def __init__(
        self,
        *args: Any,
        url: str | None = None,
        reparse: str | None = None,
        since: str | None = None,
        until: str | None = None,
        dry_run: str | bool | None = None,
        offline: str | bool | None = None,
        **kwargs: Any,
    ) -> None:
        unknown = unknown_spider_arguments(type(self), kwargs)
        if unknown:
            raise BadSpiderArgument(unknown)
        super().__init__(*args, **kwargs)
        # `-a url=$UNSET` is no live crawl of everything; a typo is said now, not as a failed run
        self.given_urls = url_argument(self.name, url, ("http", "https", "file"), "for the live source")
        #: ``-a offline=true``: replay the recordings shipped with the package where the spider runs (a
        #: scrapyd node finds its own copy; no path of another machine is handed over). Never live.
        if yes_or_no("offline", offline):
            if self.given_urls:
                raise ValueError("give url or offline, not both")
            self.given_urls = self.recording_urls()
            if not self.given_urls:
                raise ValueError("offline: %s has no recording shipped on this machine" % self.name)
        #: ``-a reparse=archive``: parse the archived documents instead of fetching (see votersdaily.reparse).
        self.reparse: Reparse | None = None
        dry = yes_or_no("dry_run", dry_run)
        # Given, even empty (``-a reparse=$UNSET``), is not left out: that would crawl the live source.
        if reparse is None and (since is not None or until is not None or dry):  # else a live crawl
            raise ValueError("since, until and dry_run are for -a reparse=archive")
        if reparse is not None:
            one_of("reparse", reparse, ("archive",))
            from votersdaily.reparse import Reparse, parse_date_arg

            self.reparse = Reparse(
                since=parse_date_arg(since, end=False, name="since"),
                until=parse_date_arg(until, end=True, name="until"),
                dry_run=dry,
            )
        self._archived: dict[tuple[str, int], ArchivedResponse] = {}
        self._replayed: defer.Deferred[None] | None = None

    # -- where documents come from -----------------------------------------------------------

    async def start(self) -> AsyncIterator[scrapy.Request]:
        if self.reparse is not None:
            async for request in self.archived_requests():
                yield request
            return
        for request in self.initial_requests():
            yield request

    def initial_requests(self) -> Iterator[scrapy.Request]:
        """The given documents (``-a url=``), else the discovery listing(s)."""
        if self.given_urls:
            for url in self.given_urls:
                yield self.document_request(
                    url,
                    meta={START_META: True, SOURCE_URL_META: self.upstream_url(url)},
                    callback=self.parse_given,
                )
        else:
            for url in self.listing_urls:
                yield scrapy.Request(
                    url,
                    callback=self.parse_listing,
                    errback=self.source_error,
                    meta={START_META: True},
                    dont_filter=True,
                )

    # -- reparsing the archive ---------------------------------------------------------------------

    async def archived_requests(self) -> AsyncIterator[scrapy.Request]:
        """One request per archived response, oldest run first, each parsed before the next is made
        (so a reschedule across runs is seen in the order it happened)."""
        from votersdaily.archive import archive_dir, archived_runs, read_responses
        from votersdaily.plumbing.warc_reader import DamagedWarc, WarcDamage

        assert self.reparse is not None  # noqa: S101 - invariant
        # One bound method for every request: Scrapy checks a generator callback for a returned
        # value by reading and parsing its source, remembered only while that very callable lives,
        # and the requests of a replay live one at a time (200,000 archived documents: 4 s).
        callback, errback = self._parse_archived, self._archived_failed
        for path in archived_runs(
            archive_dir(self.settings), self.name, self.reparse.since, self.reparse.until
        ):
            self.reparse.files.append(path.name)
            for archived in read_responses(path):
                if isinstance(archived, WarcDamage):  # named, skipped; the rest is read on
                    self.reparse.damage.append(archived)
                    self.logger.error("reparse of %s: %s: skipped", self.name, archived.describe())
                    self.crawler.signals.send_catch_log(
                        vd_signals.archive_unreadable, exception=DamagedWarc(archived.describe()), spider=self
                    )
                    continue
                self.reparse.read[(archived.warc_file, archived.warc_offset)] = archived.record_id
                if not callable(getattr(self, archived.callback, None)):
                    self.logger.warning(
                        "reparse: %s has no callback %r (record %s of %s): skipped",
                        self.name,
                        archived.callback,
                        archived.record_id,
                        path.name,
                    )
                    continue
                key = (archived.warc_file, archived.warc_offset)
                self._archived[key] = archived
                self._replayed = defer.Deferred()
                yield scrapy.Request(
                    archived.url,
                    callback=callback,
                    errback=errback,
                    dont_filter=True,
                    meta={
                        **archived.meta,
                        REPLAY_META: key,
                        REPLAY_CALLBACK_META: archived.callback,
                        ACCESS_META: archived.date,
                        ARCHIVE_META: {
                            "warc_file": archived.warc_file,
                            "warc_record_id": archived.record_id,
                            "warc_offset": archived.warc_offset,
                        },
                    },
                )
                await maybe_deferred_to_future(self._replayed)

    def take_archived(self, key: Iterable[Any] | None) -> ArchivedResponse | None:
        """The archived response a replay request stands for (given to the replay middleware once)."""
        return self._archived.pop(tuple(key), None) if key else None

    def _parse_archived(self, response: Response) -> Iterator[Any]:
        """The recorded callback over the archived response; the requests it makes are not followed
        (what they led to was archived and is replayed on its own)."""
        assert self.reparse is not None  # noqa: S101 - invariant
        self.reparse.replayed.add(response.meta[ARCHIVE_META]["warc_record_id"])
        try:
            output = getattr(self, response.meta[REPLAY_CALLBACK_META])(response)
            for item in iterate_spider_output(output):
                if not isinstance(item, scrapy.Request):
                    yield item
        finally:
            self._archived_done()

    def _archived_failed(self, failure: Failure) -> None:
        self._archived_done()
        return self.source_error(failure)

    def _archived_done(self) -> None:
        if self._replayed is not None and not self._replayed.called:
            self._replayed.callback(None)

    def linked_url(self, response: Response, link: str, what: str) -> str | None:
        """``link`` (from ``response``'s content) joined to the response's URL, or None when no
        request can be made of it (an unclosed IPv6 literal, a port out of range, no host, another
        scheme): dropped as a record is (:class:`BadLink`, its reason in the run log), so the rest
        of the listing is read on. Where it may be fetched from is the address guard's to say."""
        try:
            return checked_url(response.urljoin(link), what)
        except ValueError as exc:  # urljoin raises for an unclosed IPv6 literal too
            message = (
                str(exc)
                if str(exc).startswith(what)
                else "%s is not a URL (%s): %s" % (what, exc, shown(link))
            )
            self.drop_record(response, BadLink(message), link=True)
            return None

    def document_request(self, url: str, meta: dict[str, Any] | None = None, **kwargs: Any) -> scrapy.Request:
        """A request for one document whose events :meth:`parse_events` yields."""
        kwargs.setdefault("callback", self.parse_document)
        return scrapy.Request(url, errback=self.source_error, meta=meta or {}, **kwargs)

    def parse_given(self, response: Response) -> Iterator[EventItem | scrapy.Request]:
        """A ``-a url=`` document, or a listing (a Clerk index, a vote menu, a feed) followed like the
        live one: what the spider cannot read as one of its documents it reads as its listing; a page
        that is neither fails with the document's error."""
        produced = False
        try:
            for output in self.parse_document(response):
                produced = True
                yield output
        except (ErrorPage, UnexpectedDocument, MalformedDocument) as not_a_document:
            if produced or type(self).parse_listing is EventSpider.parse_listing:
                raise  # a document that went wrong, or the listing is the document
            try:
                listing = list(self.listing_beside(response))
            except (ErrorPage, UnexpectedDocument, MalformedDocument):
                raise not_a_document from None
            yield from listing

    def listing_beside(self, response: Response) -> Iterator[EventItem | scrapy.Request]:
        """:meth:`parse_listing` of a given listing; when the listing is a file (a recording), what it
        lists is read from the files beside it (named as the URL's last segment) and keeps its
        upstream URL as ``source_url``; listed documents that are not there are skipped and named."""
        outputs = self.parse_listing(response)
        if urlsplit(response.url).scheme != "file":
            yield from outputs
            return
        folder = Path(url2pathname(urlsplit(response.url).path)).parent
        missing = []
        for output in outputs:
            if not isinstance(output, scrapy.Request):
                yield output
                continue
            parts = urlsplit(output.url)
            if parts.scheme == "file":  # a relative link: beside the listing already (or not beside at all)
                path, upstream = Path(url2pathname(parts.path)), output.meta.get(SOURCE_URL_META)
                if folder.resolve() not in path.resolve().parents:  # file:///etc/… in a listing
                    missing.append(str(path))
                    continue
            else:
                path, upstream = folder / (parts.path.rstrip("/").rsplit("/", 1)[-1] or "index"), output.url
            if not path.is_file():
                missing.append(path.name)
                continue
            callback = self.listing_beside if output.callback == self.parse_listing else output.callback
            meta = {**output.meta, SOURCE_URL_META: upstream}
            yield output.replace(url=path.resolve().as_uri(), callback=callback, meta=meta)
        if missing:
            self.crawler.stats.inc_value("replay/not_beside", len(missing))
            self.crawler.signals.send_catch_log(
                vd_signals.documents_not_beside, listing=response.url, missing=missing, spider=self
            )
            self.logger.warning(
                "%d documents listed by %s are not beside it (skipped): %s%s",
                len(missing),
                response.url,
                ", ".join(missing[:5]),
                ", …" if len(missing) > 5 else "",
            )

    def parse_listing(self, response: Response) -> Iterator[scrapy.Request | EventItem]:
        """Default: the listing is itself the document (feeds, single-file sources)."""
        return self.parse_document(response)

    def upstream_url(self, url: str) -> str | None:
        """The upstream URL of a replayed recording given as a file:// URL, if it is one."""
        if urlsplit(url).scheme != "file":
            return None
        parts = Path(urlsplit(url).path).resolve().parts
        for name, upstream in self.recordings.items():
            # Matched by the recording's relative name, so a copy of the recordings elsewhere (a
            # scrapyd node unpacking the egg, another checkout) still replays under its upstream URL.
            tail = Path(name).parts
            if parts[-len(tail) :] == tail:
                return upstream
        return None

    @classmethod
    def recording_urls(cls) -> list[str]:
        """file:// URLs of this spider's recordings that exist on this machine."""
        urls = []
        for name in cls.recordings:
            path = recording_path(name)
            if path.exists():
                urls.append(path.resolve().as_uri())
        return urls

    # -- documents into events --------------------------------------------------------------

    def parse_document(self, response: Response) -> Iterator[EventItem | scrapy.Request]:
        access = response.meta.get(ACCESS_META) or now_iso()
        for raw in self.parse_events(response):
            yield self.build_event(raw, response, access)

    def parse_events(self, response: Response) -> Iterable[dict[str, Any]]:
        """One event per record of :meth:`parse_records`; a record that cannot become one is
        dropped with its reason, never the page."""
        for record in self.parse_records(response):
            try:
                event = self.parse_record(record, response)
            except RECORD_ERRORS as exc:
                self.drop_record(response, exc)
                continue
            if event is not None:
                yield event

    def parse_records(self, response: Response) -> Iterable[Any]:
        """The document's records (rows, items, elements), after checking the document as a whole:
        raise :mod:`~votersdaily.sources.errors` exceptions here for what fails the page."""
        raise NotImplementedError(
            "%s must implement parse_records(response) and parse_record(record, response), "
            "or parse_events(response)" % type(self).__name__
        )

    def parse_record(self, record: Any, response: Response) -> dict[str, Any] | None:
        """One record → one event dict, or None for a record that is legitimately no event (a
        placeholder); raise for a record that should be one and cannot."""
        raise NotImplementedError("%s must implement parse_record(record, response)" % type(self).__name__)

    def drop_record(self, response: Response, exc: Exception, link: bool = False) -> None:
        """Count and report a record that could not become an event (the run log lists it);
        ``link``: a listing's link to a document (:data:`~votersdaily.signals.record_dropped`)."""
        reason = "record:%s" % type(exc).__name__
        from votersdaily.pipelines import count_dropped

        count_dropped(self.crawler.stats, reason)
        self.logger.warning("record dropped (%s) from %s: %s", reason, response.url, exc)
        self.crawler.signals.send_catch_log(
            vd_signals.record_dropped,
            response=response,
            reason=reason,
            message=str(exc),
            spider=self,
            link=link,
        )

    def build_event(self, raw: dict[str, Any], response: Response, access_datetime: str) -> EventItem:
        event = EventItem(
            description=None,
            end_datetime=None,
            event_url=None,
            branch=self.branch,
            entity=self.entity,
            source_timezone=self.source_timezone,
        )
        event.update(raw)
        event.setdefault("source_url", response.meta.get(SOURCE_URL_META) or response.url)
        if response.meta.get(SOURCE_URL_META):
            event.setdefault("replayed_from", response.url)
        event["access_datetime"] = access_datetime
        archived = response.meta.get(ARCHIVE_META)
        if archived:  # where the document's exact bytes are (votersdaily.archive)
            event.update(archived)
        event["parser_name"] = self.name
        event["parser_version"] = self.version
        return event

    # -- failures ------------------------------------------------------------------------------

    def source_error(self, failure: Failure) -> None:
        """A download failed (DNS, refused, timeout, HTTP error status): log it for the run log."""
        url = getattr(getattr(failure, "request", None), "url", None)
        if failure.check(CrawlInterrupted):  # the person stopped the crawl: the source is fine
            self.logger.debug("not fetched: %s", failure.getErrorMessage())
            return
        self.logger.error("could not fetch %s: %s", url, failure.getErrorMessage())
        self.crawler.signals.send_catch_log(vd_signals.source_failed, failure=failure, url=url, spider=self)
