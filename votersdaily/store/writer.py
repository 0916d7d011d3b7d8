"""Batched, revision-aware writes from Scrapy components without blocking the reactor.

Documents are buffered and written ``batch_size`` at a time by :func:`.upsert.upsert` in a worker
thread; batches run one after another (so a later version of a document never overtakes an earlier
one), and :meth:`BatchWriter.add` returns a Deferred that applies back-pressure when ``max_pending``
batches are already in flight.

Every way a store can fail to take a batch is handled alike: unreachable, timing out or answering a
server error (:class:`~.base.StoreUnavailable`: retried with exponential backoff, ``retry_times``),
refusing the credentials or the rights (:class:`~.base.StoreRefused`, also per document: never retried,
a locked-out user stays locked out), or failing otherwise (:class:`~.base.StoreError`). If a
:class:`~.spool.Spool` is given, what the store did not take is spooled for that store instead of
being lost, and later batches (and :meth:`BatchWriter.flush`) deliver the spooled documents first
(every file of the database for the store waiting ahead: another process's too), so a later version of
a document still never overtakes an earlier one. A store that could not even be opened is asked again
with the retry policy's backoff, and spooled to without a wait until it answers. A batch the spool
cannot take either (a full disk) is counted ``lost``, reported once per folder, and fails the run.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from twisted.internet import defer, threads

from votersdaily.clock import now_iso
from votersdaily.defaults import DEFAULTS

from .base import (
    EncodedDocument,
    Store,
    StoreError,
    StoreRefused,
    StoreUnavailable,
    body_json_of,
    standing_body_json,
)
from .embedded import text_md5
from .hooks import WriteHooks
from .identity import identity_of, store_key
from .revisions import unstorable
from .spool import FULL_FOLDERS, NotSpooled, Spool, SpoolBusy, ready_name
from .upsert import UpsertResult, upsert

if TYPE_CHECKING:
    from twisted.internet.base import DelayedCall
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)
T = TypeVar("T")


class Timer(Protocol):
    """What a writer needs of the reactor's clock (a test's ``twisted.internet.task.Clock`` too)."""

    def callLater(self, delay: float, func: Callable[..., Any], /, *args: Any) -> DelayedCall: ...


@dataclass
class Outage:
    """What a writer went through while the store was unavailable (for the run log)."""

    retries: int = 0
    #: Documents of this run spooled, and of those, delivered before it ended.
    spooled: int = 0
    delivered_from_spool: int = 0
    #: Documents of this run neither stored nor spooled (the spool could not take them).
    lost: int = 0
    first_failure: str | None = None
    last_failure: str | None = None
    last_error: str | None = None

    def __bool__(self) -> bool:
        return bool(self.retries or self.spooled or self.delivered_from_spool or self.lost)

    @property
    def still_spooled(self) -> int:
        """Documents of this run waiting in the spool."""
        return self.spooled - self.delivered_from_spool

    def failed(self, exc: BaseException) -> None:
        self.first_failure = self.first_failure or now_iso()
        self.last_failure = now_iso()
        self.last_error = str(exc)


def retried(
    call: Callable[[], T],
    *,
    shown: str,
    retry_times: int,
    retry_backoff: float,
    retry_max_delay: float,
    outage: Outage | None = None,
) -> T:
    """``call()``, retried with exponential backoff while the store is unavailable (in a thread: it
    sleeps); a refusal or another store error is not retried. The store retry policy
    (``VOTERSDAILY_STORE_RETRY_*``) of the writers and the run log."""
    for attempt in range(retry_times + 1):
        try:
            return call()
        except StoreError as exc:
            if outage is not None:
                outage.failed(exc)
            if (
                attempt == retry_times
                or not isinstance(exc, StoreUnavailable)
                or isinstance(exc, StoreRefused)
            ):
                raise
            delay = min(retry_max_delay, retry_backoff * 2**attempt)
            if outage is not None:
                outage.retries += 1
            logger.warning(
                "store %s unavailable (%s); retry %d/%d in %.1fs", shown, exc, attempt + 1, retry_times, delay
            )
            time.sleep(delay)
    raise AssertionError("unreachable: the last attempt returns or raises")


class BatchWriter:
    def __init__(  # noqa: PLR0913 - every knob a keyword, each default from settings.py
        self,
        store: Store,
        db: str,
        *,
        batch_size: int = DEFAULTS["VOTERSDAILY_BATCH_SIZE"],
        max_wait: float = DEFAULTS["VOTERSDAILY_BATCH_MAX_WAIT"],
        max_pending: int = DEFAULTS["VOTERSDAILY_MAX_PENDING_BATCHES"],
        ignore: Iterable[str] = (),
        probe: Iterable[str] = (),
        hooks: WriteHooks | None = None,
        newer_by: str | None = None,
        on_result: Callable[[UpsertResult], None] | None = None,
        retry_times: int = DEFAULTS["VOTERSDAILY_STORE_RETRY_TIMES"],
        retry_backoff: float = DEFAULTS["VOTERSDAILY_STORE_RETRY_BACKOFF"],
        retry_max_delay: float = DEFAULTS["VOTERSDAILY_STORE_RETRY_MAX_DELAY"],
        spool: Spool | None = None,
        clock: Timer | None = None,
    ) -> None:
        self.store = store
        self.db = db
        self.batch_size = batch_size
        #: Seconds the first buffered document waits at most for its batch (0: until the batch is
        #: full or the writer flushed): what a killed process loses is bounded in time.
        self.max_wait = max_wait
        #: The reactor's clock (a test's ``task.Clock``); the global reactor when None.
        self.clock = clock
        self.max_pending = max_pending
        self.ignore = tuple(ignore)
        #: Keys whose stored value, when it differs, proves a document changed (see upsert).
        self.probe = tuple(probe)
        self.hooks = hooks
        #: The key of the time a document was observed: a spooled copy delivered late keeps a stored
        #: version observed later (:func:`~.upsert.upsert`'s ``newer_by``).
        self.newer_by = newer_by
        self.on_result = on_result
        self.retry_times = retry_times
        self.retry_backoff = retry_backoff
        self.retry_max_delay = retry_max_delay
        self.spool = spool
        self.outage = Outage()
        #: Where what this writer spools goes: the store's identity (no credentials), which alone
        #: may receive it.
        self.target = identity_of(store)
        #: The spool's name for that store (the files of another process delivering to it now).
        self._key = store_key(self.target)
        #: This writer's spool files, oldest first (delivered in order once the store is back).
        self._spooled: list[Path] = []
        #: Spool files whose documents the store refused: left for `flush`, not tried before each write.
        self._left_for_flush: set[Path] = set()
        #: Documents other processes spooled that this writer delivered ahead of its writes, not yet
        #: told (:meth:`take_delivered_earlier`).
        self.delivered_earlier = 0
        self.total = UpsertResult()
        self.errors: list[BaseException] = []
        self._buffer: list[dict[str, Any]] = []
        self._pending = 0
        self._chain: defer.Deferred[Any] = defer.succeed(None)
        self._waiters: list[defer.Deferred[None]] = []
        self._expect_new = False
        #: Id → the MD5 of its stored JSON text, read before this run wrote anything
        #: (:meth:`know_stored_texts`), until a document of that id is added.
        self._stored_texts: dict[str, str] | None = None
        #: Ids told unchanged where they were added, and the ids among those added again since (the
        #: earlier one then counts as a duplicate, as in one batch): counted at the end
        #: (:meth:`_report_told`), once an id can no longer come again.
        self._told: dict[str, None] = {}
        self._told_again: list[str] = []
        #: Why the store could not be opened at the start of the run (:meth:`start_spooled`), until
        #: it answers again (:meth:`_answers_again`): None while it answers.
        self._down_at_start: StoreError | None = None
        #: When the store that could not be opened is asked again (time.monotonic()), and the wait
        #: after that ask (the store retry policy's backoff, doubling up to its longest).
        self._ask_at = 0.0
        self._ask_wait = retry_backoff
        #: Submits the buffer once its first document has waited ``max_wait`` (:meth:`_start_waiting`).
        self._wait: DelayedCall | None = None
        #: Id → how its first write of this run counted (inserted, updated, unchanged), for the
        #: ids a later batch writes again (:meth:`_as_one_run`).
        self._first_outcomes: dict[str, str] = {}

    @property
    def gave_up(self) -> bool:
        """Whether this writer found the store down after its retries (it spools what it writes)."""
        return self._down_at_start is not None or bool(self._spooled)

    @property
    def run_errors(self) -> list[BaseException]:
        """The store errors that are the run's: :attr:`errors`, after the store's at the start while it
        has not answered since (one that came back and took what waited in the spool failed nothing:
        the outage is in :attr:`outage`)."""
        down: list[BaseException] = [self._down_at_start] if self._down_at_start is not None else []
        return down + self.errors

    def start_spooled(self, exc: StoreError) -> None:
        """The store could not be opened (``exc``): the batches of this run go straight to the spool,
        with no retry wait, until the store answers again (asked with the store retry policy's
        backoff, :meth:`_answers_again`); then this writer delivers what it spooled and writes as
        usual (a long-lived Redis worker does not spool all its life for an outage at its start)."""
        if self.spool is None:
            raise exc
        self.outage.failed(exc)
        self._down_at_start = exc
        self._ask_at = time.monotonic() + self._ask_wait

    def _answers_again(self, final: bool = False) -> bool:
        """Whether the store, if it could not be opened at the start, answers now: opened as then
        (its database and views), asked no sooner than the backoff says, or at the writer's ``final``
        flush. A refusal (401/403) is never asked again: another failed login."""
        down = self._down_at_start
        if down is None:
            return True
        if isinstance(down, StoreRefused) or (not final and time.monotonic() < self._ask_at):
            return False
        try:
            self.store.ensure_db(self.db)
            self.store.install_views(self.db)
        except StoreError as exc:
            self.outage.failed(exc)
            self._ask_wait = min(self._ask_wait * 2, self.retry_max_delay)
            self._ask_at = time.monotonic() + self._ask_wait
            return False
        self._down_at_start = None
        return True

    @property
    def expects_new(self) -> bool:
        """Whether the last batch was mostly new documents (a first crawl's): the next is written
        before it is read, nothing of it compared."""
        return self._expect_new

    def know_stored_texts(self, digests: dict[str, str]) -> None:
        """The MD5 of each stored document's JSON text by id, read before this run wrote anything,
        from a store whose revisions are that MD5 (the embedded one).

        The first document of an id added with its text made (:class:`~.base.EncodedDocument`)
        whose text has that MD5 is the stored document itself. When the hooks need nothing of it
        (:meth:`~.hooks.WriteHooks.settled_unchanged`) it is told unchanged where it is added, with
        no batch, thread hand-off or call of the store: the store's own verdict, told without it (a
        reparse's events, mostly unchanged). It is counted when the writer is flushed; a later copy
        of it makes it a duplicate, as in one batch. Told as of the start: a document another run
        rewrites meanwhile keeps that run's version, as if this one had been compared first."""
        for doc_id in self._told:  # a told document's digest is spent (see _unchanged_as_stored)
            digests.pop(doc_id, None)
        self._stored_texts = digests

    @property
    def tells_unchanged(self) -> bool:
        """Whether documents added with their text made may be told unchanged where they are added."""
        return self._stored_texts is not None

    def add(self, doc: dict[str, Any]) -> defer.Deferred[None] | None:
        """Buffer ``doc``; None when the caller may go on, else a Deferred that fires once it may
        (``max_pending`` batches in flight: back-pressure). No Deferred for every document."""
        if self._stored_texts is not None and self._unchanged_as_stored(
            doc, body_json_of(doc), self._stored_texts
        ):
            return None
        return self._buffered(doc)

    def add_copy(self, doc: dict[str, Any], body_json: str | None = None) -> defer.Deferred[None] | None:
        """:meth:`add` of a copy of ``doc`` that the caller keeps (an :class:`~.base.EncodedDocument`
        with ``body_json``, the JSON text of its body, when given; else a dict). A document told
        unchanged where it is added (:meth:`know_stored_texts`) is told from ``doc`` and its text as
        its copy would be, and no copy is made."""
        if self._stored_texts is not None:
            text = standing_body_json(doc, body_json)  # what body_json_of would say of the copy
            if self._unchanged_as_stored(doc, text, self._stored_texts):
                return None
        return self._buffered(dict(doc) if body_json is None else EncodedDocument(doc, body_json))

    def _buffered(self, doc: dict[str, Any]) -> defer.Deferred[None] | None:
        self._buffer.append(doc)
        if len(self._buffer) >= self.batch_size:
            self._submit()
        elif len(self._buffer) == 1:
            self._start_waiting()
        if self._pending >= self.max_pending:
            waiter: defer.Deferred[None] = defer.Deferred()
            self._waiters.append(waiter)
            return waiter
        return None

    def _unchanged_as_stored(self, doc: dict[str, Any], text: str | None, digests: dict[str, str]) -> bool:
        """Whether ``doc``, whose body's JSON text is ``text`` (None: not made), is told unchanged
        here (see :meth:`know_stored_texts`). The hooks hear of every document added, in order, told
        or not."""
        doc_id = doc["_id"]
        digest = digests.pop(doc_id, None)
        # Added again (a second archived copy): a batch tells this one. A document told is one whose
        # digest was taken, so only one without a digest may have been.
        if digest is None and doc_id in self._told:
            del self._told[doc_id]
            self._told_again.append(doc_id)
        settled = self.hooks is None or self.hooks.settled_unchanged(doc)
        if digest is None or not settled or text is None:
            return False
        if text_md5(text) != digest:  # None for a text the store refuses (a lone surrogate): the write tells
            return False
        self._told[doc_id] = None
        return True

    def _report_told(self) -> None:
        """Count the documents told unchanged where they were added, as a batch's result is."""
        if not self._told and not self._told_again:
            return
        result = UpsertResult(unchanged=list(self._told), duplicates=self._told_again)
        self._told, self._told_again = {}, []
        self.total.merge(result)
        if self.on_result is not None:
            self.on_result(result)

    def take_delivered_earlier(self) -> int:
        """How many documents other processes spooled this writer delivered since the last call
        (called between batches: they are counted apart from this run's)."""
        taken, self.delivered_earlier = self.delivered_earlier, 0
        return taken

    def take_unwritten(self) -> list[dict[str, Any]]:
        """The documents buffered and not yet handed to a batch, now this caller's to keep (a forced
        stop spools them: ``CrawlerWriter.spool_unwritten``)."""
        self._report_told()
        self._stop_waiting()
        unwritten, self._buffer = self._buffer, []
        return unwritten

    def flush(self, final: bool = False) -> defer.Deferred[None]:
        """Write what is buffered (and what this writer spooled, if the store is back: a store that
        could not be opened at the start is asked at the ``final`` flush whatever the backoff says);
        fires when every submitted batch is done."""
        self._report_told()
        if self._buffer:
            self._submit()
        if self.spool is not None:
            self._submit(drain=True, final=final)
        done: defer.Deferred[None] = defer.Deferred()
        self._chain.addBoth(lambda _: done.callback(None))
        return done

    def _start_waiting(self) -> None:
        """The buffer's first document arrived: submit the buffer ``max_wait`` seconds from now,
        full or not. A slow crawl (an ingest of a request a second, a source paged slowly) otherwise
        kept up to ``batch_size`` documents in memory alone for as long as it took them to come, all
        lost with a process the OOM killer (or ``kill -9``, a lost node) ended."""
        if self.max_wait <= 0:
            return
        if self.clock is None:
            from twisted.internet import reactor

            self.clock = cast("Timer", reactor)
        self._wait = self.clock.callLater(self.max_wait, self._waited)

    def _stop_waiting(self) -> None:
        if self._wait is not None:
            if self._wait.active():
                self._wait.cancel()
            self._wait = None

    def _waited(self) -> None:
        """The buffer's first document has waited ``max_wait``: submit the buffer now, or, while a
        batch is being written, as soon as it is done (:meth:`_batch_done`): a batch of what came
        meanwhile, not a batch a document."""
        self._wait = None
        if self._buffer and not self._pending:
            self._submit()

    def _submit(self, drain: bool = False, final: bool = False) -> None:
        self._stop_waiting()
        batch, self._buffer = self._buffer, []
        self._pending += 1
        write = functools.partial(self._drain, final=final) if drain else self._write
        self._chain.addCallback(lambda _: threads.deferToThread(write, batch))
        self._chain.addErrback(self._failed, batch)
        self._chain.addBoth(self._batch_done)

    def _write(self, batch: list[dict[str, Any]]) -> UpsertResult:
        if not self._answers_again():
            return self._spool(batch)
        # While this writer has spooled documents, new batches queue up behind them in the spool.
        retries = 0 if self._spooled else self.retry_times
        result = UpsertResult()
        try:
            if self.spool is not None:  # earlier versions of these documents may be spooled
                result.merge(self._retrying(self._deliver_spooled, retries))
            result.merge(self._retrying(lambda: self._write_now(batch), retries))
        except SpoolBusy as exc:
            logger.warning("%s: %d documents for %s wait behind it in the spool", exc, len(batch), self.db)
            result.merge(self._spool(batch, reason=str(exc)))
        except StoreError:
            if self.spool is None:
                raise
            result.merge(self._spool(batch))
        return result

    def _drain(self, _batch: list[dict[str, Any]], final: bool = False) -> UpsertResult:
        """At flush: one more (retried) attempt to deliver what this writer spooled; at the ``final``
        one, what stays spooled is said."""
        if not self._spooled:
            return UpsertResult()
        try:
            if not self._answers_again(final):  # it could not be opened, and does not answer yet
                raise StoreUnavailable(self.outage.last_error)
            return self._retrying(self._deliver_spooled, self.retry_times)
        except SpoolBusy as exc:
            logger.warning(
                "%s: %d documents for %s stay spooled behind it in %s; `python -m votersdaily flush` "
                "delivers them once it is done",
                exc,
                self.outage.still_spooled,
                self.db,
                self.spool.directory if self.spool is not None else "",
            )
            return UpsertResult()
        except StoreError:
            # Said once, at the writer's end: a worker flushes at every checkpoint, and the outage
            # was said when the first documents were spooled.
            (logger.error if final else logger.debug)(
                "store %s still does not take documents: %d documents for %s stay spooled in %s; "
                "deliver them with `python -m votersdaily flush` once it does",
                self.store.display_uri,
                self.outage.still_spooled,
                self.db,
                self.spool.directory if self.spool is not None else "",
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
            probe=self.probe,
            before_write=None
            if hooks is None
            else lambda docs: hooks.before_write(self.store, self.db, docs),
            merge=None if hooks is None else hooks.merge,
        )
        # Adapt to the crawl: mostly new documents → write first; mostly known ones → read first.
        self._expect_new = len(result.inserted) * 2 > len(batch)
        if hooks is not None:
            hooks.after_batch(self.store, self.db, batch, result)
        if self.spool is not None:
            self._spool_refused(batch, result)
        return result

    def _spool_refused(self, batch: list[dict[str, Any]], result: UpsertResult) -> None:
        """Documents the store answered ``unauthorized`` or ``forbidden`` for (its rights, e.g. a
        ``validate_doc_update``) are refused like a batch is: spooled, not lost."""
        refused = {
            doc_id
            for doc_id, reason in result.failed.items()
            if reason.startswith(("unauthorized:", "forbidden:"))
        }
        if not refused:
            return
        self.outage.failed(
            StoreRefused("%s refused %d documents: %s" % (self.db, len(refused), result.failed[min(refused)]))
        )
        kept = self._spool([doc for doc in batch if doc["_id"] in refused])
        for doc_id in refused:
            del result.failed[doc_id]
        result.merge(kept)

    def _retrying(self, call: Callable[[], UpsertResult], retries: int) -> UpsertResult:
        """``call()`` under the store retry policy (:func:`retried`), its failures in :attr:`outage`."""
        return retried(
            call,
            shown=self.store.display_uri,
            retry_times=retries,
            retry_backoff=self.retry_backoff,
            retry_max_delay=self.retry_max_delay,
            outage=self.outage,
        )

    def _spool(self, batch: list[dict[str, Any]], reason: str | None = None) -> UpsertResult:
        """Keep ``batch`` in the spool for this writer's store, whole, or else in halves down to single
        documents; what even that fails for is lost: counted, reported once per folder, and one error
        of the run per batch (a Redis worker then does not ack the requests behind it)."""
        if not batch:
            return UpsertResult()
        assert self.spool is not None, "a batch is spooled only when a spool is given"  # noqa: S101 - invariant
        # A document no store could take is refused now, with its reason, as a store would refuse
        # it: neither spooled nor lost for want of room in the spool.
        refused = {id(doc): unstorable(doc) for doc in batch}
        kept = [doc for doc in batch if refused[id(doc)] is None]
        result, not_spooled = self._spool_pieces(kept, reason) if kept else (UpsertResult(), None)
        for doc in batch:
            answer = refused[id(doc)]
            if answer is not None:
                result.failed[doc["_id"]] = "bad_request: %s" % answer["reason"]
        if not_spooled is not None:
            self.outage.lost += len(result.lost)
            self.errors.append(not_spooled)
            FULL_FOLDERS.failed(not_spooled)
        return result

    def _spool_pieces(
        self, batch: list[dict[str, Any]], reason: str | None = None
    ) -> tuple[UpsertResult, NotSpooled | None]:
        assert self.spool is not None, "a batch is spooled only when a spool is given"  # noqa: S101 - invariant
        try:
            path = self.write_to_spool(batch)
        except NotSpooled as exc:
            if len(batch) == 1:
                return UpsertResult(lost=[batch[0]["_id"]]), exc
            half = len(batch) // 2  # a full disk may take part of it: as much as fits, in order
            result, first = self._spool_pieces(batch[:half], reason)
            rest, second = self._spool_pieces(batch[half:], reason)
            result.merge(rest)
            return result, first or second
        self._spooled.append(path)
        self.outage.spooled += len(batch)
        # An error for the outage's first file; the batches after it (one a second with
        # VOTERSDAILY_BATCH_MAX_WAIT) add up in the run's last lines, not a line each.
        logger.log(
            logging.ERROR if len(self._spooled) == 1 else logging.INFO,
            "store %s did not take %d documents for %s (%s): spooled to %s",
            self.store.display_uri,
            len(batch),
            self.db,
            reason or self.outage.last_error,
            path,
        )
        return UpsertResult(spooled=[doc["_id"] for doc in batch]), None

    def write_to_spool(self, docs: list[dict[str, Any]]) -> Path:
        """Spool ``docs`` as this writer's (:meth:`.spool.Spool.write`), for its store and database."""
        assert self.spool is not None, "a batch is spooled only when a spool is given"  # noqa: S101 - invariant
        return self.spool.write(self.target, self.db, docs, self.ignore, self.hooks, self.newer_by)

    def _deliver_spooled(self) -> UpsertResult:
        """Deliver, oldest first, every spool file of this database for this store that the next
        write goes after (:meth:`.spool.Spool.ahead`): this writer's own, and another process's (one
        that died delivering it, or spooled it meanwhile), or their earlier versions, delivered
        later, would replace this writer's. Those not delivered stay for the next try; another
        process's documents are counted apart (:attr:`delivered_earlier`)."""
        assert self.spool is not None, "only a spooling writer delivers"  # noqa: S101 - invariant
        result = UpsertResult()
        delivered = 0
        for spooled in self.spool.ahead(self.db, self._key):
            ready = ready_name(spooled.path)
            if ready in self._left_for_flush:
                continue
            report = self.spool.deliver_path(self.store, spooled.path)
            # Documents the store refused stay in their spool file (for `flush`): not failed, not lost.
            taken = report.documents - len(report.result.failed)
            if report.refused:
                self._left_for_flush.add(ready)
            if ready not in self._spooled:
                self.delivered_earlier += taken
                logger.warning(
                    "delivered %d documents another process spooled for %s to %s first (not counted as "
                    "this run's)",
                    taken,
                    self.db,
                    self.store.display_uri,
                )
                continue
            self._spooled.remove(ready)
            report.result.failed = {}
            delivered += taken
            self.outage.delivered_from_spool += taken
            result.merge(report.result)
        if self._spooled or delivered:
            self._spooled = []  # those not met were delivered by another process
            logger.warning(
                "store %s is back: %d spooled documents delivered to %s",
                self.store.display_uri,
                delivered,
                self.db,
            )
        return result

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
            self._as_one_run(result)
            self.total.merge(result)
            if self.on_result is not None:
                self.on_result(result)
        while self._waiters and self._pending < self.max_pending:
            self._waiters.pop(0).callback(None)
        if self._buffer and not self._pending and self._wait is None and self.max_wait > 0:
            self._submit()  # its first document waited past max_wait for this batch (_waited)

    def _as_one_run(self, result: UpsertResult) -> None:
        """Count ``result`` as if the run's documents were written in one batch, wherever its
        batches ended (``batch_size``, ``max_wait``): an id a later batch writes again makes its
        earlier write a duplicate, as two copies in one batch do, and the id counts once, as its
        last version against what the store held before the run. Before, the two recorded Federal
        Register pages that share three documents counted them duplicates in one batch and updated
        in two. The earlier batch's count is taken back (``result.withdrawn``) where that differs:
        unchanged at first, then changed, is updated."""
        first_outcomes = self._first_outcomes
        for kind in ("inserted", "updated", "unchanged"):
            ids: list[str] = getattr(result, kind)
            counted = []
            for doc_id in ids:
                first = first_outcomes.get(doc_id)
                if first is None:
                    first_outcomes[doc_id] = kind
                    counted.append(doc_id)
                    continue
                result.duplicates.append(doc_id)
                # against the store before the run: new stays new, changed stays changed
                outcome = kind if first == "unchanged" else first
                if outcome != first:
                    result.withdrawn.setdefault(first, []).append(doc_id)
                    first_outcomes[doc_id] = outcome
                    counted.append(doc_id)
            ids[:] = counted
