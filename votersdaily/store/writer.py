"""Batched, revision-aware writes from Scrapy components without blocking the reactor.

Documents are buffered and written ``batch_size`` at a time by :func:`.upsert.upsert` in a worker
thread; batches run one after another (so a later version of a document never overtakes an earlier
one), and :meth:`BatchWriter.add` returns a Deferred that applies back-pressure when ``max_pending``
batches are already in flight.
"""

from __future__ import annotations

import logging
from typing import Callable, Iterable

from twisted.internet import defer, threads

from .base import Store
from .upsert import UpsertResult, upsert

logger = logging.getLogger(__name__)

BatchHook = Callable[[Store, str, list[dict], UpsertResult], None]


class BatchWriter:
    def __init__(
        self,
        store: Store,
        db: str,
        *,
        batch_size: int = 500,
        max_pending: int = 2,
        ignore: Iterable[str] = (),
        after_batch: BatchHook | None = None,
        on_result: Callable[[UpsertResult], None] | None = None,
    ):
        self.store = store
        self.db = db
        self.batch_size = batch_size
        self.max_pending = max_pending
        self.ignore = tuple(ignore)
        self.after_batch = after_batch
        self.on_result = on_result
        self.total = UpsertResult()
        self.errors: list[BaseException] = []
        self._buffer: list[dict] = []
        self._pending = 0
        self._chain: defer.Deferred = defer.succeed(None)
        self._waiters: list[defer.Deferred] = []

    def add(self, doc: dict) -> defer.Deferred:
        self._buffer.append(doc)
        if len(self._buffer) >= self.batch_size:
            self._submit()
        if self._pending >= self.max_pending:
            waiter: defer.Deferred = defer.Deferred()
            self._waiters.append(waiter)
            return waiter
        return defer.succeed(None)

    def flush(self) -> defer.Deferred:
        """Write what is buffered; fires when every submitted batch is done."""
        if self._buffer:
            self._submit()
        done: defer.Deferred = defer.Deferred()
        self._chain.addBoth(lambda _: done.callback(None))
        return done

    def _submit(self) -> None:
        batch, self._buffer = self._buffer, []
        self._pending += 1
        self._chain.addCallback(lambda _: threads.deferToThread(self._write, batch))
        self._chain.addErrback(self._failed, batch)
        self._chain.addBoth(self._batch_done)

    def _write(self, batch: list[dict]) -> UpsertResult:
        result = upsert(self.store, self.db, batch, self.ignore)
        if self.after_batch is not None:
            self.after_batch(self.store, self.db, batch, result)
        return result

    def _failed(self, failure, batch: list[dict]):
        self.errors.append(failure.value)
        logger.error(
            "writing %d documents to %s in %s failed: %s",
            len(batch), self.db, self.store.display_uri, failure.getErrorMessage(),
            exc_info=(failure.type, failure.value, failure.getTracebackObject()),
        )
        result = UpsertResult()
        for doc in batch:
            result.failed[doc["_id"]] = "%s: %s" % (failure.type.__name__, failure.getErrorMessage())
        return result

    def _batch_done(self, result):
        self._pending -= 1
        if isinstance(result, UpsertResult):
            self.total.merge(result)
            if self.on_result is not None:
                self.on_result(result)
        while self._waiters and self._pending < self.max_pending:
            self._waiters.pop(0).callback(None)
        return None
