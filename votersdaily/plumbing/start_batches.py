"""The spider middleware that hands a spider's start requests to the scheduler as many at a time as
the downloader has free places (:class:`StartBatches`).

Scrapy's engine takes one request from ``start()`` per turn of the reactor while its downloader has
room (it waits for its next turn after each), and drains ``start()`` at once only when the
downloader is full. A spider whose requests each start a chain of fetches (the ingest: a redirect,
a landing page, the PDF, each fetched by the callback of the one before) seldom fills it, so on a
busy reactor, whose turns take milliseconds, chains entered at one every other turn and the crawl
held 20 of the 32 it could: with this (and four calls per extraction process), 200 local PDF chains
took 1.84-2.04 s against 2.33-2.41 s (docs/scale.md, session 25). Each request still passes every
other spider middleware, in order, and is scheduled as the engine schedules a yielded one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

from scrapy import Request

from votersdaily import scrapy_internals

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from scrapy.crawler import Crawler


class StartBatches:
    """Engine side of every other spider middleware (the lowest ``SPIDER_MIDDLEWARES`` order): when
    the engine asks ``start()`` for its next request and the downloader has ``n`` free places
    (``CONCURRENT_REQUESTS`` less the requests it holds), the next ``n`` requests are read, the
    first ``n - 1`` handed to the scheduler here and the last yielded to the engine, so they keep
    ``start()``'s order. An item, a full downloader, or ``CONCURRENT_REQUESTS = 0`` (no limit to
    measure room by) leaves the engine's own pace. Should ``start()`` raise, what it yielded before
    is scheduled first, as the engine would have. Should the scheduler refuse a request here (its
    ``JOBDIR`` on a full disk), that request goes to the engine and batches stop: the engine
    schedules it itself, or fails the run's start as it does without this middleware."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._batching = True

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _free_places(self) -> int:
        if not self._batching:
            return 1
        load = scrapy_internals.downloader_load(self.crawler)
        return max(load.limit - load.active, 1) if load.limit > 0 else 1

    def _scheduled(self, request: Request) -> bool | None:
        """True when ``request`` is scheduled; False when the spider is closed (nothing more is
        read); None when the scheduler raised: the engine is to have it."""
        try:
            return scrapy_internals.schedule(self.crawler, request)
        except Exception:  # the engine meets it again, and says it as its own
            self._batching = False
            return None

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        iterator = aiter(start)
        async for first in iterator:
            output = first
            room = self._free_places() if isinstance(output, Request) else 1
            for _ in range(room - 1):
                try:
                    following = await anext(iterator)
                except StopAsyncIteration:
                    break
                except Exception:
                    if self._scheduled(output) is None:
                        yield output
                    raise
                scheduled = self._scheduled(output)
                if scheduled is False:
                    return  # the spider is closed: the engine reads no more of start()
                if scheduled is None:
                    yield output
                    output = following
                    break
                output = following
                if not isinstance(output, Request):
                    break  # an item goes to the engine, which sends it to the pipelines
            yield output
