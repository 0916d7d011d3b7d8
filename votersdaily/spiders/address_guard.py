"""Which URLs an event spider may fetch: the one address policy of the ingest and the laundromat.

An event spider starts where its code or its operator says (its listing URLs, ``-a url=``: requests
marked ``START_META``) and follows what the documents it reads name: a Clerk index's pages, a feed's
enclosures, an API's ``next_page_url``, a redirect. Those URLs are crawled content: a source (or
whoever answers in its place) could name ``file:///etc/…``, a cloud's metadata address or another
service on the crawling machine. So every such URL goes through :class:`AddressPolicy`
(``VOTERSDAILY_EVENT_ALLOW_PRIVATE``, ``VOTERSDAILY_EVENT_PRIVATE_HOSTS``,
``VOTERSDAILY_EVENT_ALLOWED_HOSTS``): http(s) to public addresses only. Two things pass without it,
both chosen by the operator: a URL on the scheme, host and port of a start URL (the source itself,
or the local server a replay or a test serves it from), and a ``file:`` URL inside the folder of a
``file:`` start URL (the documents of a recorded listing, read from beside it). A redirect of a
start request is checked as crawled content. A refused URL is a failed fetch of the run
(``PrivateAddressRefused``, ``HostNotAllowed``), never a connection.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Self
from urllib.parse import urlsplit
from urllib.request import url2pathname

from votersdaily.plumbing.address_policy import AddressPolicy
from votersdaily.plumbing.ssrf import PrivateAddressRefused, SsrfGuardMiddleware
from votersdaily.requestmeta import START_META

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request

#: The settings of the policy: ``<PREFIX>_ALLOW_PRIVATE``, ``_PRIVATE_HOSTS``, ``_ALLOWED_HOSTS``.
PREFIX = "VOTERSDAILY_EVENT"


def file_path(url: str) -> Path:
    """The absolute, resolved path of a ``file:`` URL."""
    return Path(url2pathname(urlsplit(url).path)).resolve()


class EventAddressGuard(SsrfGuardMiddleware):
    trusted_meta = START_META

    def __init__(self, policy: AddressPolicy) -> None:
        super().__init__(policy=policy)
        #: (scheme, host:port) of the start URLs; folders of the ``file:`` start URLs.
        self._start_origins: set[tuple[str, str]] = set()
        self._start_folders: set[Path] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        guard = cls(AddressPolicy.from_settings(crawler.settings, PREFIX))
        guard.install(crawler)
        return guard

    async def process_request(self, request: Request) -> None:
        parts = urlsplit(request.url)
        scheme = parts.scheme.lower()
        if request.meta.get(START_META) and not request.meta.get("redirect_urls"):
            if scheme == "file":
                self._start_folders.add(file_path(request.url).parent)
            else:
                self._start_origins.add((scheme, parts.netloc.lower()))
            return None
        await self.check_crawled(request.url)
        return None

    async def check_crawled(self, url: str) -> list[str] | None:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme == "file":
            path = file_path(url)
            if not any(folder in path.parents for folder in self._start_folders):
                raise PrivateAddressRefused(
                    "refusing %s: a file: URL named by crawled content, not beside a listing the run "
                    "started from" % url
                )
            return None
        if (scheme, parts.netloc.lower()) in self._start_origins:
            return None
        return await self.check(url)
