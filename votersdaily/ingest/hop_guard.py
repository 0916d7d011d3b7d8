"""The spider middleware that gives an ingest a result when the next hop its callback yielded to
Scrapy's scheduler never got there (:class:`DroppedHopGuard`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self, cast

from scrapy.http import Response

from . import hops as H

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from scrapy.crawler import Crawler

    from .spider import IngestSpider


class DroppedHopGuard:
    """Engine side of every other spider middleware (``SPIDER_MIDDLEWARES`` order 0), for an ingest
    whose hops go through Scrapy's scheduler (a Redis-fed worker's, or a crawl with a spider
    middleware that does more than process each request): a hop's callback yields one thing, the
    ingest's result or its next hop, so a callback whose output comes out empty had its next hop
    dropped by a spider middleware (DEPTH_LIMIT's, or one of the crawl's own), and the ingest, which
    had no result at all, ends as :meth:`~.spider.IngestSpider.hop_dropped` says. A hop its callback
    fetches is checked there (``IngestSpider._next_hop``); a hop refused after this point, at
    ``request_scheduled`` (an interrupted crawl), is left without a result on either path."""

    #: It lets every request by untouched (:data:`votersdaily.scrapy_internals.PASSES_REQUESTS`): a
    #: callback may still fetch its hops itself.
    passes_requests_through = True

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_spider_output(
        self, response: Response | None, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        came = False
        async for output in result:
            came = True
            yield output
        if came or not isinstance(response, Response) or H.STATE_META not in response.meta:
            return
        spider = cast("IngestSpider", self.crawler.spider)  # only the ingest spiders list it
        if spider.schedules_hops():
            yield spider.hop_dropped(response.meta[H.STATE_META])
