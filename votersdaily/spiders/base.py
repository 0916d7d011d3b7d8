"""The event spider base: a source spider only says where its documents are and how one document
becomes events; fetching, provenance, time zones, ids, validation, storage and the run log are the
framework's job.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

import scrapy
from scrapy.http import Response

from .. import signals as vd_signals
from ..clock import now_iso
from ..extensions import START_META
from ..items import EventItem
from ..recordings import SHARED_PREFIX, recording_path
from ..sources.errors import ErrorPage, MalformedDocument, UnexpectedDocument

#: Meta key carrying the upstream URL of a replayed recording.
SOURCE_URL_META = "vd_source_url"


def split_urls(value: str | Iterable[str] | None) -> list[str]:
    if not value:
        return []
    if isinstance(value, str):
        value = value.split(",")
    return [u.strip() for u in value if u.strip()]


class EventSpider(scrapy.Spider):
    """Subclass and set: ``name``, ``version``, ``branch``, ``entity``, ``source_timezone``,
    ``frequency_hours``, ``listing_urls`` (discovery) and ``recordings`` (offline replay), and
    implement :meth:`parse_events` (and :meth:`parse_listing` if documents are discovered through
    a listing). ``parse_events`` yields dicts with at least ``datetime``, ``title``, ``unique_key``
    and ``source_text``; every other key is an ad hoc key of the event.
    """

    version: str = "1.0"
    branch: str = ""
    entity: str = ""
    source_timezone: str = "America/New_York"
    #: How often the source should be crawled, in hours (``crawl --all`` and the scheduler).
    frequency_hours: float = 6.0
    #: Where discovery starts (the live listing or feed).
    listing_urls: tuple[str, ...] = ()
    #: Recorded responses replayed by ``crawl --all --offline``: path (relative to
    #: ``votersdaily/recordings/`` or ``shared:`` + a path under ../shared) → upstream URL.
    recordings: dict[str, str] = {}

    custom_settings: dict[str, Any] = {
        "DOWNLOAD_DELAY": 1.0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
        "AUTOTHROTTLE_ENABLED": True,
        "AUTOTHROTTLE_START_DELAY": 1.0,
        "HTTPCACHE_ENABLED": True,
        # The event pipelines are synchronous; with asyncio Scrapy starts CONCURRENT_ITEMS worker
        # tasks per response (100 by default), which cost more than the items of a small document.
        "CONCURRENT_ITEMS": 8,
    }

    def __init__(self, *args, url: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.given_urls = split_urls(url)

    # -- where documents come from -----------------------------------------------------------

    async def start(self):
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

    def document_request(self, url: str, meta: dict | None = None, **kwargs) -> scrapy.Request:
        """A request for one document whose events :meth:`parse_events` yields."""
        kwargs.setdefault("callback", self.parse_document)
        return scrapy.Request(url, errback=self.source_error, meta=meta or {}, **kwargs)

    def parse_given(self, response: Response):
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

    def listing_beside(self, response: Response):
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
            if parts.scheme == "file":  # a relative link: beside the listing already
                path, upstream = Path(url2pathname(parts.path)), output.meta.get(SOURCE_URL_META)
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
            self.logger.warning(
                "%d documents listed by %s are not beside it (skipped): %s%s",
                len(missing),
                response.url,
                ", ".join(missing[:5]),
                ", …" if len(missing) > 5 else "",
            )

    def parse_listing(self, response: Response):
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
            tail = Path(name[len(SHARED_PREFIX) :] if name.startswith(SHARED_PREFIX) else name).parts
            if parts[-len(tail) :] == tail:
                return upstream
        return None

    @classmethod
    def recording_urls(cls) -> list[str]:
        """file:// URLs of this spider's recordings that exist on this machine."""
        urls = []
        for name in cls.recordings:
            path = recording_path(name)
            if path is not None and path.exists():
                urls.append(path.resolve().as_uri())
        return urls

    # -- documents into events --------------------------------------------------------------

    def parse_document(self, response: Response) -> Iterator[EventItem]:
        access = now_iso()
        for raw in self.parse_events(response):
            yield self.build_event(raw, response, access)

    def parse_events(self, response: Response) -> Iterable[dict]:
        raise NotImplementedError("%s must implement parse_events(response)" % type(self).__name__)

    def build_event(self, raw: dict, response: Response, access_datetime: str) -> EventItem:
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
        event["parser_name"] = self.name
        event["parser_version"] = self.version
        return event

    # -- failures ------------------------------------------------------------------------------

    def source_error(self, failure):
        """A download failed (DNS, refused, timeout, HTTP error status): log it for the run log."""
        url = getattr(getattr(failure, "request", None), "url", None)
        self.logger.error("could not fetch %s: %s", url, failure.getErrorMessage())
        self.crawler.signals.send_catch_log(vd_signals.source_failed, failure=failure, url=url, spider=self)
