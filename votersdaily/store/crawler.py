"""One store per crawler, shared by every component of that crawl (pipelines, run log, spiders).

``writer_for(crawler, db)`` gives a component a :class:`CrawlerWriter`: a :class:`BatchWriter`
whose results add up in the crawl's :class:`WriteTotals` (``write_totals(crawler)``, which the run
log reads) and, for operators, in the crawl stats as ``store/<db>/<inserted|updated|…>``. While a
writer holds items back (the store is behind), the crawl's engine is paused: Scrapy would otherwise
go on downloading and parking responses (up to ``SCRAPER_SLOT_MAX_ACTIVE_SIZE`` of them, each with
its own item workers) that cannot be stored yet (``VOTERSDAILY_PAUSE_ENGINE_ON_BACKPRESSURE = False``
lets it).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy import signals
from twisted.internet import defer, threads
from twisted.python.failure import Failure

from votersdaily import scrapy_internals
from votersdaily import signals as vd_signals
from votersdaily.crawlcontext import PerCrawl

from . import open_store, store_uri
from .base import Store, StoreError, StoreUnavailable
from .embedded import EmbeddedStore
from .hooks import WriteHooks
from .process import StoreProcess
from .spool import FULL_FOLDERS, NotSpooled, Spool
from .upsert import UpsertResult
from .writer import BatchWriter, Outage

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)


@dataclass
class WriteTotals:
    """What a crawl's writes did, per database: the run log's ``store`` and counts."""

    by_db: dict[str, Counter[str]] = field(default_factory=dict)

    def add(self, db: str, counts: Mapping[str, int]) -> None:
        if any(counts.values()):
            self.by_db.setdefault(db, Counter()).update(counts)

    def total(self) -> Counter[str]:
        return sum(self.by_db.values(), Counter())


@dataclass
class EngineHold:
    """Items the crawl's writers hold back, and whether the writers paused the engine for them."""

    waiting: int = 0
    paused: bool = False
    #: When the writers last paused the engine (time.monotonic()).
    since: float = 0.0


@dataclass
class CrawlWrites:
    """What one crawler's components share to write: its store, writers and their totals."""

    store: Store | None = None
    #: What the writers write through: the store itself, or an embedded store in a process of its
    #: own (:mod:`.process`).
    writer_store: Store | None = None
    writers: list[CrawlerWriter] = field(default_factory=list)
    totals: WriteTotals = field(default_factory=WriteTotals)
    #: Documents spooled by earlier runs that this crawl delivered, by database: never its own work.
    spool_delivered: Counter[str] = field(default_factory=Counter)
    #: Documents of this crawl not stored (the store refused them on their own: over its
    #: ``max_document_size``, not JSON; no later try can store them): id → why, the first
    #: :data:`NOT_STORED_SHOWN` (the run log's ``failed_writes`` counts them all).
    not_stored: dict[str, str] = field(default_factory=dict)
    hold: EngineHold = field(default_factory=EngineHold)
    #: Why the store was found unavailable by a component that reads it as it works (the
    #: laundromat's seed list), which stopped the crawl before its work; None while it answered.
    down: StoreError | None = None


crawl_writes = PerCrawl(CrawlWrites)
#: How many documents not stored a run log names (``failed_documents``); ``failed_writes`` counts all.
NOT_STORED_SHOWN = 50


def store_for(crawler: Crawler) -> Store:
    writes = crawl_writes(crawler)
    if writes.store is None:
        writes.store = open_store(store_uri(crawler.settings), crawler.settings)
        logger.info("votersdaily store: %s", writes.store.display_uri)
    return writes.store


def writer_store_for(crawler: Crawler) -> Store:
    """The store the crawl's writers write through: an embedded store in a process of its own while
    ``VOTERSDAILY_STORE_PROCESS`` is on (closed when the engine stops), else the crawl's store."""
    writes = crawl_writes(crawler)
    if writes.writer_store is None:
        store = store_for(crawler)
        if isinstance(store, EmbeddedStore) and crawler.settings.getbool("VOTERSDAILY_STORE_PROCESS"):
            process = StoreProcess.of(
                store,
                freeze=crawler.settings.getbool("VOTERSDAILY_GC_FREEZE"),
                young_threshold=crawler.settings.getint("VOTERSDAILY_GC_YOUNG_THRESHOLD"),
            )
            crawler.signals.connect(process.close, signal=signals.engine_stopped, weak=False)
            writes.writer_store = process
        else:
            writes.writer_store = store
    return writes.writer_store


def retry_policy(settings: BaseSettings) -> dict[str, Any]:
    """The store retry policy (``VOTERSDAILY_STORE_RETRY_*``) as the keywords of
    :func:`~.writer.retried` and :class:`~.writer.BatchWriter`: the writers' and the run log's."""
    return {
        "retry_times": settings.getint("VOTERSDAILY_STORE_RETRY_TIMES"),
        "retry_backoff": settings.getfloat("VOTERSDAILY_STORE_RETRY_BACKOFF"),
        "retry_max_delay": settings.getfloat("VOTERSDAILY_STORE_RETRY_MAX_DELAY"),
    }


def store_given_up(crawler: Crawler) -> bool:
    """Whether a writer of this crawl found the store down after its retries, or a component that
    reads it as it works stopped the crawl for it (:func:`stopped_for_store`): what is written after
    that (the run log) gets one attempt before the spool, not the retry policy's wait again."""
    return crawl_writes(crawler).down is not None or any(
        writer.batch.gave_up for writer in writers_of(crawler)
    )


def stopped_for_store(crawler: Crawler, exc: StoreError) -> None:
    """A component that must read the store as it works met it unavailable (``exc``) and stops the
    crawl (before its work, or as the store went away under it): its run log is spooled after one
    attempt (:func:`store_given_up`)."""
    crawl_writes(crawler).down = exc


def stop_for_store(crawler: Crawler, spider: Spider, exc: StoreError, line: str) -> None:
    """A spider that must read the store as it works met it unavailable (``exc``): ``line`` said
    once (what happened and what to do), the crawl stopped for the store (:func:`stopped_for_store`),
    and the run failed with ``line`` as its error, where ``store``. The caller raises
    ``CloseSpider`` with the run's ``finish_reason``."""
    spider.logger.error("%s", line)
    stopped_for_store(crawler, exc)
    failed = type(exc)(line)
    failed.__cause__ = exc
    crawler.signals.send_catch_log(
        vd_signals.source_failed,
        failure=Failure(failed),
        url=store_for(crawler).display_uri,
        spider=spider,
        where="store",
    )


def writers_of(crawler: Crawler) -> list[CrawlerWriter]:
    return list(crawl_writes(crawler).writers)


def write_totals(crawler: Crawler) -> WriteTotals:
    return crawl_writes(crawler).totals


def count_spool_delivered(crawler: Crawler, db: str, documents: int) -> None:
    """Documents an earlier run spooled for this store, delivered by this crawl: counted apart from
    its own writes (the run log's ``spool_delivered_count``; ``spool/<db>/delivered`` in the stats)."""
    if documents:
        crawl_writes(crawler).spool_delivered[db] += documents
        crawler.stats.inc_value("spool/%s/delivered" % db, documents)


def note_not_stored(crawler: Crawler, failed: Mapping[str, str]) -> None:
    """Keep the ids of documents the store did not take and why (the first
    :data:`NOT_STORED_SHOWN`), for the run log and the crawl's last lines."""
    kept = crawl_writes(crawler).not_stored
    for doc_id, reason in failed.items():
        if len(kept) >= NOT_STORED_SHOWN:
            return
        kept.setdefault(doc_id, reason)


def count_writes(crawler: Crawler, db: str, counts: Mapping[str, int]) -> None:
    """Add what a write to ``db`` did to the crawl's totals (and to the stats, for operators)."""
    write_totals(crawler).add(db, counts)
    for kind, n in counts.items():
        if n:
            crawler.stats.inc_value("store/%s/%s" % (db, kind), n)


class CrawlerWriter:
    def __init__(
        self,
        crawler: Crawler,
        db: str,
        *,
        ignore: Iterable[str] = (),
        probe: Iterable[str] = (),
        hooks: WriteHooks | None = None,
        newer_by: str | None = None,
    ) -> None:
        self.crawler = crawler
        self.db = db
        self.store = store_for(crawler)
        settings = crawler.settings
        self.batch = BatchWriter(
            writer_store_for(crawler),
            db,
            batch_size=settings.getint("VOTERSDAILY_BATCH_SIZE"),
            max_wait=settings.getfloat("VOTERSDAILY_BATCH_MAX_WAIT"),
            max_pending=settings.getint("VOTERSDAILY_MAX_PENDING_BATCHES"),
            ignore=ignore,
            probe=probe,
            hooks=hooks,
            newer_by=newer_by,
            on_result=self._count,
            **retry_policy(settings),
            spool=Spool.from_settings(settings) if settings.getbool("VOTERSDAILY_SPOOL_ENABLED") else None,
        )
        self.pause_engine = settings.getbool("VOTERSDAILY_PAUSE_ENGINE_ON_BACKPRESSURE")
        self._opened: defer.Deferred[None] | None = None

    @property
    def hooks(self) -> WriteHooks | None:
        """What runs beside each batch's write (for events, the reschedule tracker)."""
        return self.batch.hooks

    @property
    def takes_body_json(self) -> bool:
        """Whether documents with their JSON text made (:class:`~.base.EncodedDocument`) save work
        (CouchDB encodes a batch whole: never). The embedded store in this process writes that text as
        it is. One in a process of its own is sent what it writes (the text only doubles the bytes to
        pickle), but an unchanged document is told in this process by hashing its text, nothing of it
        sent (:meth:`~.process.StoreProcess.compare_stored`): the text is made while the documents
        written are not mostly new, not for a first crawl's, and always while the writer tells
        unchanged documents where they are added (a reparse: :meth:`BatchWriter.know_stored_texts`).
        It pays in a reparse (each event holds its stored access time); a re-crawl's events, fetched
        anew, are sent whole with it."""
        store = self.batch.store
        if isinstance(store, StoreProcess):
            return self.batch.tells_unchanged or not self.batch.expects_new
        return isinstance(store, EmbeddedStore)

    @property
    def revisions_hash_texts(self) -> bool:
        """Whether each revision the store written to makes is the MD5 of the document's JSON text
        (the embedded store, in this process or its own: :func:`~.embedded.text_md5_of`), so a
        stored document's digest tells an unchanged one (:meth:`BatchWriter.know_stored_texts`)."""
        return isinstance(self.batch.store, (EmbeddedStore, StoreProcess))

    def _count(self, result: UpsertResult) -> None:
        count_writes(self.crawler, self.db, result.counts())
        note_not_stored(self.crawler, result.failed)
        count_spool_delivered(self.crawler, self.db, self.batch.take_delivered_earlier())

    @property
    def errors(self) -> list[BaseException]:
        return self.batch.errors

    @property
    def run_errors(self) -> list[BaseException]:
        return self.batch.run_errors

    def open(self, said_elsewhere: bool = False) -> defer.Deferred[None]:
        """Create the database and its views (idempotent), in a thread. ``said_elsewhere``: a store
        that does not answer is the caller's to say (the run stops for it in its own line), so this
        writer's line is INFO, not one more ERROR; its documents are spooled all the same. (A store
        that refuses is said here whatever the caller says.)"""
        if self._opened is None:
            self._opened = threads.deferToThread(self._open_blocking, said_elsewhere)
        return self._opened

    def _open_blocking(self, said_elsewhere: bool) -> None:
        try:  # through the store the batches go through (an embedded store's process starts now)
            self.batch.store.ensure_db(self.db)
            self.batch.store.install_views(self.db)
        except StoreError as exc:
            # One line, not a traceback per component; the run goes on and its documents are spooled
            # until the store answers again (the run log records the error as the run's result
            # unless it does, and takes what waited in the spool).
            logger.log(
                logging.INFO if said_elsewhere and isinstance(exc, StoreUnavailable) else logging.ERROR,
                "store %s cannot be opened (%s): the run's documents for %s are spooled until it "
                "answers again; `python -m votersdaily flush` delivers what is left in the spool",
                self.store.display_uri,
                exc,
                self.db,
            )
            self.batch.start_spooled(exc)
            return
        if self.batch.spool is not None:
            try:
                report = self.batch.spool.deliver_earlier(self.store, self.db)
            except StoreError as exc:  # what is left stays spooled; this run's batches handle the store
                logger.warning(
                    "could not deliver what earlier runs spooled for %s (%s): it stays spooled", self.db, exc
                )
                return
            count_spool_delivered(self.crawler, self.db, report.documents)

    @property
    def outage(self) -> Outage:
        return self.batch.outage

    def add(self, doc: dict[str, Any]) -> defer.Deferred[None] | None:
        """Buffer ``doc`` for writing; None, or a Deferred to wait for when the store is behind."""
        return self._held(self.batch.add(doc))

    def add_copy(self, doc: dict[str, Any], body_json: str | None = None) -> defer.Deferred[None] | None:
        """Buffer a copy of ``doc`` (with its body's JSON text ``body_json``; no copy of a document
        told unchanged: :meth:`.writer.BatchWriter.add_copy`); as :meth:`add`."""
        return self._held(self.batch.add_copy(doc, body_json))

    def _held(self, waiting: defer.Deferred[None] | None) -> defer.Deferred[None] | None:
        if waiting is not None and self.pause_engine:
            self._hold_engine(waiting)
        return waiting

    def _hold_engine(self, accepted: defer.Deferred[None]) -> None:
        """Pause the engine until every item held back by the crawl's writers is accepted (an
        engine someone else paused is left to them)."""
        engine = getattr(self.crawler, "engine", None)
        if engine is None:
            return
        hold = crawl_writes(self.crawler).hold
        if hold.waiting == 0 and not scrapy_internals.engine_paused(self.crawler):
            engine.pause()
            hold.paused = True
            hold.since = time.monotonic()
            self.crawler.stats.inc_value("store/engine_paused")
        hold.waiting += 1

        def release(result: Any) -> Any:
            hold.waiting -= 1
            if hold.waiting == 0 and hold.paused:
                hold.paused = False
                paused = time.monotonic() - hold.since
                stats = self.crawler.stats
                stats.set_value(
                    "store/engine_paused_seconds", stats.get_value("store/engine_paused_seconds", 0) + paused
                )
                # The held item's response finishes scraping next, and the engine then asks for
                # the next request itself (Scrapy schedules its loop when a request is done).
                engine.unpause()
            return result

        accepted.addBoth(release)

    def close(self) -> defer.Deferred[None]:
        return self.batch.flush(final=True)

    def spool_unwritten(self) -> int:
        """The reactor is stopping before this writer was closed (a forced stop): spool the
        documents still buffered, synchronously, so the next run or ``flush`` delivers them; a
        batch already handed to a thread finishes there. How many were spooled."""
        batch = self.batch
        unwritten = batch.take_unwritten()
        if not unwritten:
            return 0
        if batch.spool is None:
            logger.error(
                "%d documents for %s were not written: the crawl was stopped and the spool is off "
                "(VOTERSDAILY_SPOOL_ENABLED=False)",
                len(unwritten),
                self.db,
            )
            return 0
        ids = [doc["_id"] for doc in unwritten]
        try:
            path = batch.write_to_spool(unwritten)
        except NotSpooled as exc:
            FULL_FOLDERS.failed(exc)  # the folder and why, said once
            self._count(UpsertResult(lost=ids))
            return 0
        self._count(UpsertResult(spooled=ids))
        logger.error(
            "the crawl was stopped before %d documents for %s were written: spooled to %s",
            len(ids),
            self.db,
            path,
        )
        return len(ids)


def writer_for(
    crawler: Crawler,
    db: str,
    *,
    ignore: Iterable[str] = (),
    probe: Iterable[str] = (),
    hooks: WriteHooks | None = None,
    newer_by: str | None = None,
) -> CrawlerWriter:
    """The crawl's writer of ``db`` (flushed and closed with the crawl): ``ignore``, ``probe`` and
    ``newer_by`` as :func:`~.upsert.upsert` reads them, ``hooks`` beside each batch."""
    writer = CrawlerWriter(crawler, db, ignore=ignore, probe=probe, hooks=hooks, newer_by=newer_by)
    crawl_writes(crawler).writers.append(writer)
    return writer
