"""Memory held by sub-resource downloads: bodies hashed as they stream, and byte budgets.

Scrapy's HTTP handler keeps a body in memory until its download ends, so what a download holds
is bounded by reserving its worst case before it starts: ``INGEST_MAX_RESOURCE_BYTES``, cut to
the announced ``Content-Length`` as soon as the headers arrive (small resources give back
almost all of it at once). A page's downloads share ``INGEST_RESOURCE_BYTES_PER_PAGE`` and all
pages of a worker ``INGEST_RESOURCE_BYTES_PER_WORKER``; a download waits for room in both. Its
SHA-1 and SHA-256 are computed from the chunks as they arrive and only the first MiB is kept
for libmagic, so a finished body is dropped at once instead of waiting for its page's others.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import deque
from typing import TYPE_CHECKING, Any

from .filemeta import SNIFF_BYTES

if TYPE_CHECKING:
    from scrapy.http import Headers, Request

#: request.meta key of a sub-resource download's :class:`Reservation` and :class:`StreamDigest`.
STREAM_META = "ingest_resource_stream"


class BudgetClosed(Exception):
    """The page gave up waiting (its ingest ran out of time)."""


class ByteBudget:
    """A first-come, first-served semaphore counted in bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.closed = False
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    def close(self) -> None:
        """Fail every waiter and every later :meth:`take` with :class:`BudgetClosed`."""
        self.closed = True
        while self._waiters:
            _, waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(BudgetClosed())

    async def take(self, n: int) -> None:
        if self.closed:
            raise BudgetClosed()
        if not self._waiters and self.used + n <= self.limit:
            self.used += n
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append((n, waiter))
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.give(n)  # granted just as we were cancelled: hand it on
            else:
                self._waiters.remove((n, waiter))
            raise

    def give(self, n: int) -> None:
        self.used -= n
        while self._waiters and self.used + self._waiters[0][0] <= self.limit:
            n_next, waiter = self._waiters.popleft()
            if not waiter.done():
                self.used += n_next
                waiter.set_result(None)


class Reservation:
    """Bytes one download holds in its page's and its worker's budgets."""

    def __init__(self, budgets: tuple[ByteBudget, ...], n: int) -> None:
        self.budgets = budgets
        self.n = 0
        self._wanted = n

    async def take(self) -> None:
        taken: list[ByteBudget] = []
        try:
            for budget in self.budgets:  # always page before worker: no two waits in opposite order
                await budget.take(self._wanted)
                taken.append(budget)
        except BaseException:
            for budget in taken:
                budget.give(self._wanted)
            raise
        self.n = self._wanted

    def shrink(self, n: int) -> None:
        """The body is announced to be ``n`` bytes: give back the rest of the worst case."""
        if 0 <= n < self.n:
            for budget in self.budgets:
                budget.give(self.n - n)
            self.n = n

    def release(self) -> None:
        self.shrink(0)


class StreamDigest:
    """SHA-1, SHA-256 and size of a body from its chunks, and its first bytes for libmagic."""

    def __init__(self) -> None:
        self.sha1 = hashlib.sha1(usedforsecurity=False)
        self.sha256 = hashlib.sha256()
        self.size = 0
        self.head = bytearray()
        #: The wire bytes are content-encoded (gzip…): the hashes must be of the decoded body.
        self.encoded = False

    def update(self, data: bytes) -> None:
        self.sha1.update(data)
        self.sha256.update(data)
        self.size += len(data)
        if len(self.head) < SNIFF_BYTES:
            self.head += data[: SNIFF_BYTES - len(self.head)]

    def covers(self, body: bytes) -> bool:
        """Whether the streamed bytes are exactly ``body`` (not encoded, nothing added or lost)."""
        return not self.encoded and self.size == len(body)

    def hashes(self) -> dict[str, Any]:
        return {"sha1hex": self.sha1.hexdigest(), "sha256hex": self.sha256.hexdigest()}


def _stream_of(request: Request) -> tuple[Reservation, StreamDigest] | None:
    return request.meta.get(STREAM_META) if request is not None else None


class ResourceStreams:
    """The reservations and digests of sub-resource requests, fed by the ingest spider's receivers
    of the download signals (:meth:`~votersdaily.ingest.spider.IngestSpider._headers_received`:
    one receiver a signal for every request, hops and sub-resources alike)."""

    def __init__(self, per_worker: int) -> None:
        self.worker = ByteBudget(per_worker)

    def headers(self, headers: Headers, body_length: int, request: Request) -> None:
        """``headers_received`` of a request: a sub-resource's announced size shrinks its reservation."""
        stream = _stream_of(request)
        if stream is None:
            return
        reservation, digest = stream
        encoding = headers.get(b"Content-Encoding") or b"identity"
        digest.encoded = encoding.strip().lower() != b"identity"
        if isinstance(body_length, int):  # not Twisted's UNKNOWN_LENGTH
            reservation.shrink(body_length)

    def received(self, data: bytes, request: Request) -> None:
        """``bytes_received`` of a request: a sub-resource's bytes go to its digest."""
        stream = _stream_of(request)
        if stream is not None and not stream[1].encoded:
            stream[1].update(data)
