"""Batched, revision-aware writes from Scrapy components without blocking the reactor.

Documents are buffered and written ``batch_size`` at a time by :func:`.upsert.upsert` in a worker
thread; batches run one after another (so a later version of a document never overtakes an earlier
one), and :meth:`BatchWriter.add` returns a Deferred that applies back-pressure when ``max_pending``
batches are already in flight.

When the store is unavailable (unreachable or 5xx) a batch is retried with exponential backoff
(``retry_times``); if it still fails and a :class:`~.spool.Spool` is given, the batch is spooled to a
local file instead of being lost, and later batches (and :meth:`BatchWriter.flush`) deliver the
spooled documents first, so a later version of a document still never overtakes an earlier one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from twisted.internet import defer, threads

from votersdaily.clock import now_iso

from .base import Store, StoreUnavailable
from .hooks import WriteHooks
from .spool import Spool
from .upsert import UpsertResult, upsert

if TYPE_CHECKING:
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)


@dataclass
class Outage:
    """What a writer went through while the store was unavailable (for the run log)."""

    retries: int = 0
    spooled: int = 0
    delivered_from_spool: int = 0
    first_failure: str | None = None
    last_failure: str | None = None
    last_error: str | None = None

    def __bool__(self) -> bool:
        return bool(self.retries or self.spooled or self.delivered_from_spool)

    def failed(self, exc: BaseException) -> None:
        self.first_failure = self.first_failure or now_iso()
        self.last_failure = now_iso()
        self.last_error = str(exc)


class BatchWriter:
    def __init__(
        self,
        store: Store,
        db: str,
        *,
        batch_size: int = 500,
        max_pending: int = 2,
        ignore: Iterable[str] = (),
        hooks: WriteHooks | None = None,
        on_result: Callable[[UpsertResult], None] | None = None,
        retry_times: int = 0,
        retry_backoff: float = 1.0,
        retry_max_delay: float = 30.0,
        spool: Spool | None = None,
    ) -> None:
        self.store = store
        self.db = db
        self.batch_size = batch_size
        self.max_pending = max_pending
        self.ignore = tuple(ignore)
        self.hooks = hooks
        self.on_result = on_result
        self.retry_times = retry_times
        self.retry_backoff = retry_backoff
        self.retry_max_delay = retry_max_delay
        self.spool = spool
        self.outage = Outage()
        self._spool_path: Path | None = None
        self.total = UpsertResult()
        self.errors: list[BaseException] = []
        self._buffer: list[dict[str, Any]] = []
        self._pending = 0
        self._chain: defer.Deferred[Any] = defer.succeed(None)
        self._waiters: list[defer.Deferred[None]] = []
        self._expect_new = False
        #: The store could not be opened at the start of the run (see :meth:`start_spooled`).
        self._store_down = False

    def start_spooled(self, exc: BaseException) -> None:
        """The store could not be opened: every batch of this run goes straight to the spool (one
        quick delivery attempt each, no retry wait) and ``exc`` is the run's store error."""
        if self.spool is None:
            raise exc
        self.errors.append(exc)
        self.outage.failed(exc)
        self._store_down = True

    def add(self, doc: dict[str, Any]) -> defer.Deferred[None]:
        self._buffer.append(doc)
        if len(self._buffer) >= self.batch_size:
            self._submit()
        if self._pending >= self.max_pending:
            waiter: defer.Deferred[None] = defer.Deferred()
            self._waiters.append(waiter)
            return waiter
        return defer.succeed(None)

    def flush(self) -> defer.Deferred[None]:
        """Write what is buffered (and what this writer spooled, if the store is back); fires when
        every submitted batch is done."""
        if self._buffer:
            self._submit()
        if self.spool is not None:
            self._submit(drain=True)
        done: defer.Deferred[None] = defer.Deferred()
        self._chain.addBoth(lambda _: done.callback(None))
        return done

    def _submit(self, drain: bool = False) -> None:
        batch, self._buffer = self._buffer, []
        self._pending += 1
        write = self._drain if drain else self._write
        self._chain.addCallback(lambda _: threads.deferToThread(write, batch))
        self._chain.addErrback(self._failed, batch)
        self._chain.addBoth(self._batch_done)

    def _write(self, batch: list[dict[str, Any]]) -> UpsertResult:
        if self._store_down:
            return self._spool(batch)
        # While this writer has spooled documents, new batches queue up behind them in the spool.
        retries = 0 if self._spool_path is not None else self.retry_times
        result = UpsertResult()
        try:
            if self._spool_path is not None:
                result.merge(self._retrying(self._deliver_spooled, retries))
            result.merge(self._retrying(lambda: self._write_now(batch), retries))
        except StoreUnavailable:
            if self.spool is None:
                raise
            result.merge(self._spool(batch))
        return result

    def _drain(self, _batch: list[dict[str, Any]]) -> UpsertResult:
        """At flush: one more (retried) attempt to deliver what this writer spooled."""
        if self._spool_path is None:
            return UpsertResult()
        try:
            if self._store_down:  # it could not even be opened: the spool is delivered by `flush`
                raise StoreUnavailable(self.outage.last_error)
            return self._retrying(self._deliver_spooled, self.retry_times)
        except StoreUnavailable:
            logger.error(
                "store %s still unavailable: %d documents for %s stay spooled in %s; "
                "deliver them with `python -m votersdaily flush`",
                self.store.display_uri,
                self.outage.spooled,
                self.db,
                self._spool_path,
            )
            return UpsertResult()

    def _write_now(self, batch: list[dict[str, Any]]) -> UpsertResult:
        hooks = self.hooks
        result = upsert(
            self.store,
            self.db,
            batch,
            self.ignore,
            insert_first=self._expect_new,
            before_write=None
            if hooks is None
            else lambda docs: hooks.before_write(self.store, self.db, docs),
        )
        # Adapt to the crawl: mostly new documents → write first; mostly known ones → read first.
        self._expect_new = len(result.inserted) * 2 > len(batch)
        if hooks is not None:
            hooks.after_batch(self.store, self.db, batch, result)
        return result

    def _retrying(self, call: Callable[[], UpsertResult], retries: int) -> UpsertResult:
        """``call()``, retried with exponential backoff while the store is unavailable (in a thread)."""
        for attempt in range(retries + 1):
            try:
                return call()
            except StoreUnavailable as exc:
                self.outage.failed(exc)
                if attempt == retries:
                    raise
                delay = min(self.retry_max_delay, self.retry_backoff * 2**attempt)
                self.outage.retries += 1
                logger.warning(
                    "store %s unavailable (%s); retry %d/%d in %.1fs",
                    self.store.display_uri,
                    exc,
                    attempt + 1,
                    retries,
                    delay,
                )
                time.sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _spool(self, batch: list[dict[str, Any]]) -> UpsertResult:
        if not batch:
            return UpsertResult()
        assert self.spool is not None, "a batch is spooled only when a spool is given"  # noqa: S101 - invariant
        if self._spool_path is None:
            self._spool_path = self.spool.new_file(self.db)
        n = self.spool.append(self._spool_path, self.db, batch, self.ignore, self.hooks)
        self.outage.spooled += n
        logger.error(
            "store %s unavailable: %d documents for %s spooled to %s",
            self.store.display_uri,
            n,
            self.db,
            self._spool_path,
        )
        return UpsertResult(spooled=[doc["_id"] for doc in batch])

    def _deliver_spooled(self) -> UpsertResult:
        assert self.spool is not None and self._spool_path is not None, "only a spooling writer delivers"  # noqa: S101 - invariant
        path, self._spool_path = self._spool_path, None
        try:
            report = self.spool.deliver_path(self.store, path)
        except BaseException:
            self._spool_path = path
            raise
        self.outage.delivered_from_spool += report.documents
        logger.warning(
            "store %s is back: %d spooled documents delivered to %s",
            self.store.display_uri,
            report.documents,
            self.db,
        )
        return report.result

    def _failed(self, failure: Failure, batch: list[dict[str, Any]]) -> UpsertResult:
        assert failure.type is not None and failure.value is not None  # noqa: S101 - a Failure wraps an exception
        self.errors.append(failure.value)
        logger.error(
            "writing %d documents to %s in %s failed: %s",
            len(batch),
            self.db,
            self.store.display_uri,
            failure.getErrorMessage(),
            exc_info=(failure.type, failure.value, failure.getTracebackObject()),
        )
        result = UpsertResult()
        for doc in batch:
            result.failed[doc["_id"]] = "%s: %s" % (failure.type.__name__, failure.getErrorMessage())
        return result

    def _batch_done(self, result: UpsertResult | Failure) -> None:
        self._pending -= 1
        if isinstance(result, UpsertResult):
            self.total.merge(result)
            if self.on_result is not None:
                self.on_result(result)
        while self._waiters and self._pending < self.max_pending:
            self._waiters.pop(0).callback(None)
