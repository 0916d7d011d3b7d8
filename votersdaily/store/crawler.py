"""One store per crawler, shared by every component of that crawl (pipelines, run log, spiders).

``writer_for(crawler, db)`` gives a component a :class:`CrawlerWriter`: a :class:`BatchWriter`
whose counts land in the crawl stats as ``store/<db>/<inserted|updated|unchanged|superseded|repaired|failed>``
(the run log reads them from there). While a writer holds items back (the store is behind), the
crawl's engine is paused: Scrapy would otherwise go on downloading and parking responses (up to
``SCRAPER_SLOT_MAX_ACTIVE_SIZE`` of them, each with its own item workers) that cannot be stored yet
(``VOTERSDAILY_PAUSE_ENGINE_ON_BACKPRESSURE = False`` lets it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from twisted.internet import defer, threads

from . import open_store, store_uri
from .base import Store, StoreError
from .hooks import WriteHooks
from .spool import Spool
from .upsert import UpsertResult
from .writer import BatchWriter

logger = logging.getLogger(__name__)

_STORE_ATTR = "_votersdaily_store"
_WRITERS_ATTR = "_votersdaily_writers"
_HOLD_ATTR = "_votersdaily_engine_hold"


def store_for(crawler) -> Store:
    store = getattr(crawler, _STORE_ATTR, None)
    if store is None:
        store = open_store(store_uri(crawler.settings))
        setattr(crawler, _STORE_ATTR, store)
        logger.info("votersdaily store: %s", store.display_uri)
    return store


def writers_of(crawler) -> list[CrawlerWriter]:
    return list(getattr(crawler, _WRITERS_ATTR, []))


class CrawlerWriter:
    def __init__(self, crawler, db: str, *, ignore: Iterable[str] = (), hooks: WriteHooks | None = None):
        self.crawler = crawler
        self.db = db
        self.store = store_for(crawler)
        settings = crawler.settings
        self.batch = BatchWriter(
            self.store,
            db,
            batch_size=settings.getint("VOTERSDAILY_BATCH_SIZE"),
            max_pending=settings.getint("VOTERSDAILY_MAX_PENDING_BATCHES"),
            ignore=ignore,
            hooks=hooks,
            on_result=self._count,
            retry_times=settings.getint("VOTERSDAILY_STORE_RETRY_TIMES"),
            retry_backoff=settings.getfloat("VOTERSDAILY_STORE_RETRY_BACKOFF"),
            retry_max_delay=settings.getfloat("VOTERSDAILY_STORE_RETRY_MAX_DELAY"),
            spool=Spool.from_settings(settings) if settings.getbool("VOTERSDAILY_SPOOL_ENABLED") else None,
        )
        self.pause_engine = settings.getbool("VOTERSDAILY_PAUSE_ENGINE_ON_BACKPRESSURE")
        self._opened: defer.Deferred | None = None

    def _count(self, result: UpsertResult) -> None:
        stats = self.crawler.stats
        prefix = "store/%s/" % self.db
        for name in (
            "inserted",
            "updated",
            "unchanged",
            "duplicates",
            "superseded",
            "replaced",
            "repaired",
            "spooled",
        ):
            n = len(getattr(result, name))
            if n:
                stats.inc_value(prefix + name, n)
        if result.failed:
            stats.inc_value(prefix + "failed", len(result.failed))
        if result.conflicts_resolved:
            stats.inc_value(prefix + "conflicts_resolved", result.conflicts_resolved)

    @property
    def errors(self) -> list[BaseException]:
        return self.batch.errors

    def open(self) -> defer.Deferred:
        """Create the database and its views (idempotent), in a thread."""
        if self._opened is None:
            self._opened = threads.deferToThread(self._open_blocking)
        return self._opened

    def _open_blocking(self) -> None:
        try:
            self.store.ensure_db(self.db)
            self.store.install_views(self.db)
        except StoreError as exc:
            # One line, not a traceback per component; the run goes on and its documents are spooled
            # (the run log records the error as the run's result).
            logger.error(
                "store %s cannot be opened (%s): the run's documents for %s are spooled; "
                "deliver them with `python -m votersdaily flush` once it works",
                self.store.display_uri,
                exc,
                self.db,
            )
            self.batch.start_spooled(exc)
            return
        spool = self.batch.spool
        if spool is not None and spool.pending_files(self.db):
            # Documents an earlier run could not write go first (the store is reachable again).
            report = spool.deliver(self.store, self.db)
            self.batch.outage.delivered_from_spool += report.documents
            self._count(report.result)
            logger.warning(
                "delivered %d documents spooled by an earlier run to %s", report.documents, self.db
            )

    @property
    def outage(self):
        return self.batch.outage

    def add(self, doc: dict) -> defer.Deferred:
        accepted = self.batch.add(doc)
        if not accepted.called and self.pause_engine:
            self._hold_engine(accepted)
        return accepted

    def _hold_engine(self, accepted: defer.Deferred) -> None:
        """Pause the engine until every item held back by the crawl's writers is accepted (an
        engine someone else paused is left to them)."""
        engine = getattr(self.crawler, "engine", None)
        if engine is None:
            return
        hold = self.crawler.__dict__.setdefault(_HOLD_ATTR, {"waiting": 0, "paused": False})
        if hold["waiting"] == 0 and not engine.paused:
            engine.pause()
            hold["paused"] = True
            self.crawler.stats.inc_value("store/engine_paused")
        hold["waiting"] += 1

        def release(result):
            hold["waiting"] -= 1
            if hold["waiting"] == 0 and hold["paused"]:
                hold["paused"] = False
                engine.unpause()
                slot = getattr(engine, "_slot", None)  # resume now, not at the next heartbeat
                if slot is not None:
                    slot.nextcall.schedule()
            return result

        accepted.addBoth(release)

    def close(self) -> defer.Deferred:
        return self.batch.flush()


def writer_for(
    crawler, db: str, *, ignore: Iterable[str] = (), hooks: WriteHooks | None = None
) -> CrawlerWriter:
    writer = CrawlerWriter(crawler, db, ignore=ignore, hooks=hooks)
    writers = getattr(crawler, _WRITERS_ATTR, None)
    if writers is None:
        writers = []
        setattr(crawler, _WRITERS_ATTR, writers)
    writers.append(writer)
    return writer
