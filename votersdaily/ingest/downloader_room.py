"""Room in the downloader before a sub-resource request is handed to it.

Scrapy 2.19's downloader starts every request queued in a slot at once when a transfer ends: its
``_process_queue`` counts free slots from ``transferring``, which a request joins only when its
download task starts, so the loop drains the whole queue. The engine never queues much (it backs
off at CONCURRENT_REQUESTS), but a page's sub-resources handed over together with
``scrapy_internals.download`` did: the benchmark saw 400+ simultaneous connections to one host with
CONCURRENT_REQUESTS_PER_DOMAIN = 32, and Twisted's pool then opened and dropped ~4 connections per
page. Waiting for room keeps the per-domain limit (politeness) and the pooled connections.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals

from votersdaily import scrapy_internals
from votersdaily.scrapy_internals import Load

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

_KEY = "ingest_room_slot"
#: The slot forgets a finished request a little after ``request_left_downloader``: waiters are also
#: re-checked this often while any wait.
_RECHECK = 0.005


class DownloaderRoom:
    """``await room.wait(request)`` before ``scrapy_internals.download(crawler, request)``; ``room.left(request)``
    after it (in ``finally``). Waiters queue per slot and are let through in order as places free
    up; a place is reserved for a request let through until it reaches the downloader (its
    middlewares run first), so two waiters cannot take the same place."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.per_domain = crawler.settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN")
        self._queues: dict[str, deque[asyncio.Future[None]]] = {}
        self._entering: dict[str, int] = {}
        self._timer: asyncio.TimerHandle | None = None
        # request_reached_downloader: the ingest spider's receiver calls reached()
        crawler.signals.connect(self._wake, signal=signals.request_left_downloader)

    def _has_room(self, key: str) -> bool:
        downloader = scrapy_internals.downloader_load(self.crawler)
        if 0 < downloader.limit <= downloader.active + sum(self._entering.values()):
            return False
        slot = scrapy_internals.slot_load(self.crawler, key) or Load(0, self.per_domain)
        return slot.active + self._entering.get(key, 0) < slot.limit

    def _reserve(self, key: str, request: Request) -> None:
        self._entering[key] = self._entering.get(key, 0) + 1
        request.meta[_KEY] = key

    async def wait(self, request: Request) -> None:
        """Return when ``request``'s slot (and the downloader) can take one more request."""
        key = scrapy_internals.slot_key(self.crawler, request)
        if not self._queues.get(key) and self._has_room(key):
            self._reserve(key, request)
            return
        waiter = asyncio.get_running_loop().create_future()
        self._queues.setdefault(key, deque()).append(waiter)
        self._schedule_recheck()
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # a place was reserved for us: give it back
                self._release(key)
            raise
        request.meta[_KEY] = key  # _wake() counted the place already

    def left(self, request: Request) -> None:
        """The request is done (or failed before reaching the downloader)."""
        self._arrived(request)
        self._wake()

    def _arrived(self, request: Request) -> None:
        key = request.meta.pop(_KEY, None)
        if key is not None:
            self._release(key)

    def _release(self, key: str) -> None:
        self._entering[key] -= 1
        if not self._entering[key]:
            del self._entering[key]

    def reached(self, request: Request) -> None:
        """``request_reached_downloader`` of a request: the place reserved for it is now the
        downloader's."""
        self._arrived(request)

    def _wake(self, *args: Any, **kwargs: Any) -> None:
        for key, queue in list(self._queues.items()):
            while queue and self._has_room(key):
                waiter = queue.popleft()
                if not waiter.done():
                    waiter.set_result(None)
                    # counted now, before the waiter runs, so the next check sees the place taken
                    self._entering[key] = self._entering.get(key, 0) + 1
            if not queue:
                del self._queues[key]
        self._schedule_recheck()

    def _schedule_recheck(self) -> None:
        if self._queues and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(_RECHECK, self._recheck)

    def _recheck(self) -> None:
        self._timer = None
        self._wake()
