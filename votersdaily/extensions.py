"""The run log: one ``vd_log`` document per spider run (docs/events.md §3), written at spider close.

It observes the crawl (signals, and what the store writers report in
:class:`~.store.crawler.WriteTotals`) and never touches the items: what was fetched from the
start URL, how long the run took, what the store did with the items, what was dropped and why, and
the exception (with traceback) that made the run fail. A failed run leaves stored data untouched.
"""

from __future__ import annotations

import base64
import json
import logging
import time
import traceback as tb
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.http import TextResponse

from . import locations, schema, scrapy_internals
from . import signals as vd_signals
from .blocking import run_in_thread
from .clock import now_iso
from .crawlcontext import STOPPED_FOR_STORE, RunRecord, crawl_context
from .interrupts import (
    FORCED_STOP,
    GRACEFUL_STOP,
    INTERRUPTED,
    NOT_FETCHED_STAT,
    WORK_LEFT_STAT,
    CrawlInterrupted,
)
from .items import EventItem
from .logformatter import record_exception
from .plumbing.full_disk import full_folder
from .reactor import installed_reactor
from .requestmeta import SOURCE_URL_META, START_META
from .sources.errors import AllRecordsDropped
from .store import mask_uri, store_uri
from .store.base import Store, StoreError, StoreRefused, StoreUnavailable
from .store.crawler import (
    count_spool_delivered,
    crawl_writes,
    retry_policy,
    store_for,
    store_given_up,
    write_totals,
    writers_of,
)
from .store.identity import store_identity
from .store.names import db_prefix
from .store.spool import FULL_FOLDERS, NotSpooled, Spool
from .store.writer import retried

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response
    from scrapy.settings import BaseSettings
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)


def is_robots_request(request: Request) -> bool:
    """A robots.txt request of Scrapy's RobotsTxtMiddleware."""
    return bool(request.meta.get("dont_obey_robotstxt")) and urlsplit(request.url).path == "/robots.txt"


def first_start_url(spider: Spider) -> str:
    """Where the run meant to start (for a run that fetched nothing): given, listing or start URL."""
    for attr in ("given_urls", "listing_urls", "start_urls"):
        urls = getattr(spider, attr, None)
        if urls:
            return str(next(iter(urls)))
    return ""


def spool_run_log(settings: BaseSettings, doc: dict[str, Any]) -> Spool:
    """Keep a run log its store did not take like any other document: spooled for that store until it
    takes it (the next run or ``python -m votersdaily flush`` delivers it). Raises
    :class:`~.store.spool.NotSpooled` when the spool cannot take it either (reported once per folder)."""
    doc.setdefault("_id", schema.log_id(doc["access_datetime"], doc["parser_name"], doc["result"]))
    spool = Spool.from_settings(settings)
    try:
        spool.write(store_identity(store_uri(settings), db_prefix(settings)), schema.LOG_DB, [doc])
    except NotSpooled as exc:
        FULL_FOLDERS.failed(exc)
        raise
    return spool


def unavailable_run_log(spidercls: type[Spider], source_url: str, exc: BaseException) -> dict[str, Any]:
    """The run log of a run that did not start because its store was unavailable."""
    doc = not_started_run_log(
        spidercls,
        source_url,
        exc,
        result=StoreUnavailable.__name__,
        where="store",
        reason=STOPPED_FOR_STORE,
    )
    doc["store_outage"] = {schema.LOG_DB: {"error": str(exc)}}
    return doc


def not_started_run_log(
    spidercls: type[Spider], source_url: str, exc: BaseException, *, result: str, where: str, reason: str
) -> dict[str, Any]:
    """The run log of a run that never started: ``result`` (the run log's word for why), the
    exception's name and message in ``errors``, nothing fetched or stored."""
    now = now_iso()
    message = str(exc)
    return {
        "parser_name": spidercls.name,
        "parser_version": str(getattr(spidercls, "version", "0")),
        "parser_runtime": 0.0,
        "source_url": source_url,
        "source_text": "",
        "access_datetime": now,
        "latest_access_datetime": now,
        "insert_count": 0,
        "result": result,
        "error_message": message,
        "errors": [{"exception": type(exc).__name__, "message": message, "where": where, "url": None}],
        "error_count": 1,
        "traceback": "",
        "finish_reason": reason,
        "items_scraped": 0,
        "responses": 0,
        "empty": False,
    }


def keep_refused_run_log(settings: BaseSettings, doc: dict[str, Any]) -> str:
    """Writes the run log of a start refused before any crawl (a scrapyd job's mistyped setting,
    seen otherwise only in scrapyd's job log) to ``vd_log`` of the configured store if it answers
    (an embedded store is never created for it), else spools it for that store; says where it went.
    Raises :class:`~.store.spool.NotSpooled` when neither took it."""
    from .store import open_store
    from .store.embedded import EmbeddedStore

    doc.setdefault("_id", schema.log_id(doc["access_datetime"], doc["parser_name"], doc["result"]))
    uri = store_uri(settings)
    try:
        if locations.is_embedded_uri(uri) and not Path(EmbeddedStore.path_of(uri)).is_file():
            raise StoreUnavailable("no store at %s" % mask_uri(uri))
        store = open_store(uri, settings)
        try:
            store.ensure_db(schema.LOG_DB)
            answer = store.bulk_docs(schema.LOG_DB, [doc])[0]
        finally:
            store.close()
        if "error" in answer:
            raise StoreError("run log write refused: %s" % (answer,))
    except Exception as exc:  # any refusal (down, 401/403, an error answer): kept like any run log
        spool = spool_run_log(settings, doc)
        return "its run log (%s) is spooled to %s: the store %s did not take it (%s)" % (
            doc["result"],
            spool.directory,
            mask_uri(uri),
            exc,
        )
    return "its run log (%s) is in %s of %s" % (doc["result"], schema.LOG_DB, mask_uri(uri))


def _same_run_log(stored: dict[str, Any] | None, doc: dict[str, Any]) -> bool:
    """Whether ``stored`` is ``doc`` (its ``_rev`` and attachment stubs aside): the same run's log."""
    if stored is None:
        return False
    unstored = ("_rev", "_attachments")
    mine = json.loads(json.dumps({k: v for k, v in doc.items() if k not in unstored}))
    return {k: v for k, v in stored.items() if k not in unstored} == mine


def running_code() -> dict[str, str]:
    """Which code this run is: the package's version and the folder (or egg) it was imported from,
    so a scrapyd node that runs a checkout instead of the deployed egg shows it."""
    import votersdaily

    return {
        "version": votersdaily.__version__,
        "path": str(Path(votersdaily.__file__).absolute().parent),
    }


def run_input(spider: Spider) -> str | None:
    """Where an event spider's documents came from: ``listing`` (discovery), ``offline`` (every
    shipped recording, as ``crawl --offline`` replays them), ``replay`` (recordings picked by hand)
    or ``given`` (other documents given with ``-a url=``). The health page counts only the first two."""
    given = getattr(spider, "given_urls", None)
    recordings = getattr(spider, "recording_urls", None)
    if given is None or recordings is None:
        return None  # not an event spider: its inputs are always given
    if not given:
        return "listing"
    if all(urlsplit(u).scheme == "file" for u in given):
        return "offline" if set(given) == set(recordings()) else "replay"
    return "given"


class RunLog:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        self.inline_limit = settings.getint("VOTERSDAILY_LOG_INLINE_LIMIT")
        self.preview_chars = settings.getint("VOTERSDAILY_LOG_PREVIEW_CHARS")
        self.started: float | None = None
        self.access_datetime = ""
        self.source_url: str | None = None
        self.source_from_start = False
        self.source_body: bytes | None = None
        self.source_text: str | None = None
        self.source_type = "text/plain"
        self.failures: list[dict[str, Any]] = []
        self.rejected: list[dict[str, Any]] = []
        self.responses = 0
        #: Items the pipelines passed (every kind: an ingest's results, a reparse's events).
        self.items_scraped = 0
        #: Per reply (response URL): events kept and records/events dropped, to tell a reply whose
        #: every record was dropped (a changed format) from one that had nothing.
        self.kept_by_reply: Counter[str] = Counter()
        self.dropped_by_reply: Counter[str] = Counter()
        self.dropped_records: list[dict[str, Any]] = []
        #: Events and records dropped, by reason (the run log's ``dropped``).
        self.dropped: Counter[str] = Counter()
        #: Documents a replayed listing names that are not recorded beside it (skipped).
        self.not_beside = 0
        #: The log is being (or was) written: a forced stop leaves it to that write.
        self.closing = False
        #: The reactor's "before shutdown" trigger that spools the log if the reactor stops first.
        self._forced_stop_trigger: Any = None
        #: Reads Scrapy's engine's log for the failure of this spider's start requests (open only).
        self._start_failures: _StartFailures | None = None
        #: When the start requests failed (:meth:`start_failed`), if they did.
        self.start_failed_at: str | None = None
        #: The failures of each request whose callback or item pipeline failed, so that those an
        #: outage caused are taken back out (:meth:`outage_met`).
        self._failures_of: WeakKeyDictionary[Request, list[dict[str, Any]]] = WeakKeyDictionary()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.getbool("VOTERSDAILY_RUN_LOG_ENABLED"):
            raise NotConfigured("the run log is off (VOTERSDAILY_RUN_LOG_ENABLED=False)")
        ext = cls(crawler)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(ext.response_received, signal=signals.response_received)
        crawler.signals.connect(ext.spider_error, signal=signals.spider_error)
        crawler.signals.connect(ext.item_error, signal=signals.item_error)
        crawler.signals.connect(ext.source_failed, signal=vd_signals.source_failed)
        crawler.signals.connect(ext.input_rejected, signal=vd_signals.input_rejected)
        crawler.signals.connect(ext.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(ext.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(ext.record_dropped, signal=vd_signals.record_dropped)
        crawler.signals.connect(ext.documents_not_beside, signal=vd_signals.documents_not_beside)
        crawler.signals.connect(ext.archive_unreadable, signal=vd_signals.archive_unreadable)
        crawler.signals.connect(ext.forced_stop, signal=vd_signals.stopped_while_opening)
        crawler.signals.connect(ext.outage_met, signal=vd_signals.outage_met)
        return ext

    # -- observation ---------------------------------------------------------------------------

    def spider_opened(self, spider: Spider) -> None:
        self.started = time.monotonic()
        self.access_datetime = now_iso()
        logger.info("code: votersdaily %(version)s from %(path)s", running_code())
        # A second Ctrl-C stops the reactor with this spider still open: its log is spooled then.
        self._forced_stop_trigger = installed_reactor().addSystemEventTrigger(
            "before", "shutdown", self.forced_stop, spider
        )
        self._start_failures = _StartFailures(self, spider)
        scrapy_internals.engine_logger().addHandler(self._start_failures)

    def response_received(self, response: Response, request: Request, spider: Spider) -> None:
        self.responses += 1
        if is_robots_request(request):
            return  # never the run's source: Scrapy fetches it before the start document
        if self.source_from_start:
            return
        start = bool(request.meta.get(START_META))
        if not start and self.source_url is not None:
            return
        # The first start document; until one arrives, the first response (a spider that marks none).
        self.source_from_start = start
        self.source_url = request.meta.get(SOURCE_URL_META) or response.url
        self.source_body = response.body
        if isinstance(response, TextResponse):
            self.source_text = response.text
            self.source_type = "%s; charset=utf-8" % (
                (response.headers.get("Content-Type") or b"text/plain")
                .decode("latin-1")
                .split(";")[0]
                .strip()
                or "text/plain"
            )
        else:
            self.source_text = None
            self.source_type = response.headers.get("Content-Type", b"application/octet-stream").decode(  # type: ignore[union-attr]  # a default is given
                "latin-1"
            )

    def _record(self, failure: Failure, where: str, url: str | None = None) -> dict[str, Any]:
        assert failure.type is not None and failure.value is not None  # noqa: S101 - a Failure wraps an exception
        message = failure.getErrorMessage()
        response = getattr(failure.value, "response", None)
        if response is not None and getattr(response, "status", None):
            # HttpError says only "Ignoring non-200 response": name the status and the URL.
            message = "HTTP %d from %s (%s)" % (response.status, response.url, message)
        entry = {
            "exception": failure.type.__name__,
            "message": message,
            "http_status": getattr(response, "status", None),
            "where": where,
            "url": url,
            "traceback": "".join(
                tb.format_exception(failure.type, failure.value, failure.getTracebackObject())
            ),
        }
        self.failures.append(entry)
        return entry

    def _record_of_request(self, failure: Failure, where: str, response: Response | Failure) -> None:
        """A callback's or item pipeline's failure, kept with its request (Scrapy gives the response,
        or an errback's failure, which names it too)."""
        entry = self._record(failure, where, getattr(response, "url", None))
        request = getattr(response, "request", None)
        if request is not None:
            self._failures_of.setdefault(request, []).append(entry)

    def spider_error(self, failure: Failure, response: Response, spider: Spider) -> None:
        self._record_of_request(failure, "spider", response)

    def item_error(self, item: Any, response: Response, spider: Spider, failure: Failure) -> None:
        self._record_of_request(failure, "pipeline", response)

    def outage_met(self, request: Request, spider: Spider) -> None:
        """``request`` failed because a service it needs was away, and runs again: its failures are
        the outage's (recorded by what waited it out), not the run's, which ends as its work does."""
        met = self._failures_of.pop(request, [])
        self.failures = [f for f in self.failures if not any(f is m for m in met)]

    def start_failed(self, exc: BaseException) -> None:
        """The spider's start requests failed (scheduling one raised: a full ``JOBDIR``'s queue):
        Scrapy stops the engine with a person's stop's reason, ``shutdown``, so
        before this the run log said ``interrupted``. It names the exception, as for any failure,
        and a person sees why in one line (Scrapy's own says only that the start requests failed);
        a full job folder is named as the other full folders are (``OutputFolderFull``)."""
        from twisted.python.failure import Failure  # at run time only here: a typing import above

        self.start_failed_at = now_iso()
        jobdir = self.crawler.settings.get("JOBDIR")
        full = (
            full_folder(
                exc,
                "the job folder (JOBDIR)",
                Path(jobdir).absolute(),
                "its requests could not be queued there, and the run stopped; make room and run it again",
            )
            if jobdir
            else None
        )
        if full is not None:
            full.__cause__ = exc
            exc = full
        logger.error(
            "%s: its start requests failed: %s",
            self.crawler.spider.name if self.crawler.spider else "the spider",
            full.strerror if full is not None else "%s: %s" % (type(exc).__name__, exc),
        )
        self._record(
            Failure(exc, exc_tb=exc.__traceback__ or getattr(exc.__cause__, "__traceback__", None)), "start"
        )

    def source_failed(self, failure: Failure, url: str, spider: Spider, where: str = "download") -> None:
        if failure.check(CrawlInterrupted):
            return  # never fetched because the person stopped the crawl: counted in not_fetched_count
        self._record(failure, where, url)

    def item_scraped(self, item: Any, response: Response, spider: Spider) -> None:
        self.items_scraped += 1
        if isinstance(item, EventItem):
            self.kept_by_reply[getattr(response, "url", "")] += 1

    def item_dropped(self, item: Any, response: Response, exception: BaseException, spider: Spider) -> None:
        if isinstance(item, EventItem):
            self.dropped_by_reply[getattr(response, "url", "")] += 1
        # Imported here: the run log is in every crawl, the event pipelines only in event spiders'.
        from .pipelines import InvalidEvent

        if isinstance(exception, InvalidEvent):
            self.dropped[exception.reason] += 1

    def record_dropped(
        self, response: Response, reason: str, message: str, spider: Spider, link: bool = False
    ) -> None:
        url = getattr(response, "url", "")
        self.dropped[reason] += 1
        if not link:
            self.dropped_by_reply[url] += 1
        self.dropped_records.append({"reason": reason, "message": message, "url": url})

    def documents_not_beside(self, listing: str, missing: list[str], spider: Spider) -> None:
        self.not_beside += len(missing)

    def _all_dropped_replies(self) -> None:
        """A reply whose every record was dropped fails the run (``AllRecordsDropped``)."""
        for url, dropped in self.dropped_by_reply.items():
            if dropped and not self.kept_by_reply[url]:
                message = "all %d records of %s were dropped (see dropped)" % (dropped, url)
                self._failed_without_traceback(AllRecordsDropped(message), "spider", url)

    def archive_unreadable(self, exception: Exception, spider: Spider) -> None:
        self._failed_without_traceback(exception, "archive", None)

    def _failed_without_traceback(self, exception: Exception, where: str, url: str | None) -> None:
        """A failure the framework found (not raised by a callback: its traceback says nothing)."""
        cls, message = type(exception), str(exception)
        self.failures.append(
            {
                "exception": cls.__name__,
                "message": message,
                "http_status": None,
                "where": where,
                "url": url,
                "traceback": "%s.%s: %s\n" % (cls.__module__, cls.__name__, message),
            }
        )

    def input_rejected(self, failure: Failure, url: str, spider: Spider) -> None:
        assert failure.type is not None and failure.value is not None  # noqa: S101 - a Failure wraps an exception
        self.rejected.append(
            {"exception": failure.type.__name__, "message": failure.getErrorMessage(), "where": url}
        )

    # -- the log document ------------------------------------------------------------------------

    def _stop_watching_shutdown(self) -> None:
        self.closing = True
        if self._start_failures is not None:
            scrapy_internals.engine_logger().removeHandler(self._start_failures)
            self._start_failures = None
        if self._forced_stop_trigger is not None:
            installed_reactor().removeSystemEventTrigger(self._forced_stop_trigger)
            self._forced_stop_trigger = None

    def forced_stop(self, spider: Spider) -> None:
        """The reactor is stopping with this spider open (a second Ctrl-C): the documents its writers
        held and its run log (result ``interrupted``, ``finish_reason`` "forced stop") go to the
        spool, synchronously: the store may be slow or gone, the person wants out."""
        if self.closing:
            return  # spider_closed is writing the log (the reactor's thread pool finishes that write)
        self._stop_watching_shutdown()  # and spider_closed, should it still come, writes nothing
        for writer in writers_of(self.crawler):
            writer.spool_unwritten()
        doc = self.build(spider, FORCED_STOP)
        try:
            spool = spool_run_log(self.crawler.settings, doc)
        except NotSpooled:  # the spool said why, once for its folder
            logger.error("%s stopped before it finished: its run log is lost", spider.name)
            return
        self.crawler.stats.set_value("votersdaily/run_log_spooled", str(spool.directory))
        logger.error(
            "%s stopped before it finished: its run log (%d items scraped) spooled to %s",
            spider.name,
            doc["items_scraped"],
            spool.directory,
        )

    async def spider_closed(self, spider: Spider, reason: str) -> None:
        if self.closing:
            return  # a forced stop spooled this run's log already
        self._stop_watching_shutdown()
        doc = self.build(spider, reason)
        if crawl_context(self.crawler).dry_run:
            return  # a dry run writes nothing (nor spools), its log neither
        try:
            await run_in_thread(self._write, doc)
        except Exception as exc:  # any refusal (down, 401/403, 5xx, an error answer): kept like events
            self._keep(spider, doc, exc)
        self._say_lost(spider)

    def _keep(self, spider: Spider, doc: dict[str, Any], exc: Exception) -> None:
        """The store did not take the run log: spool it, or (the spool cannot take it either) count it lost."""
        if self.started is None and isinstance(exc, StoreError):  # never opened: its store failed first
            doc.update(
                {
                    k: v
                    for k, v in unavailable_run_log(type(spider), doc["source_url"], exc).items()
                    if k != "_id"
                },
                access_datetime=doc["access_datetime"],
            )
        stats = self.crawler.stats
        record = self.record
        shown = mask_uri(store_uri(self.crawler.settings))
        try:
            spool = spool_run_log(self.crawler.settings, doc)
        except NotSpooled:
            record.run_log = "lost"
            record.lost += 1
            stats.set_value("votersdaily/run_log", "lost")
            stats.inc_value("votersdaily/lost")
            logger.error(
                "store %s did not take the run log of %s (%s) and the spool could not",
                shown,
                spider.name,
                exc,
            )
            return
        record.run_log = "spooled"
        record.spooled += 1
        stats.set_value("votersdaily/run_log", "spooled")
        stats.inc_value("votersdaily/spooled")
        logger.error(
            "store %s did not take the run log of %s (%s): spooled to %s",
            shown,
            spider.name,
            exc,
            spool.directory,
        )

    def _say_lost(self, spider: Spider) -> None:
        """One line per run that lost documents (its run log may be among them, and may be the only
        record of the others): what was lost. The full folder was named when it first refused."""
        record = self.record
        if record.lost:
            logger.error(
                "%s lost %d documents%s: neither the store nor the spool took them",
                spider.name,
                record.lost,
                " (its run log among them)" if record.run_log == "lost" else "",
            )

    def build(self, spider: Spider, reason: str) -> dict[str, Any]:
        stats = self.crawler.stats
        totals = write_totals(self.crawler)
        total = totals.total()
        outage = {w.db: dict(vars(w.outage)) for w in writers_of(self.crawler) if w.outage}
        still_spooled = sum(w.outage.still_spooled for w in writers_of(self.crawler))
        lost = sum(w.outage.lost for w in writers_of(self.crawler))
        for writer in writers_of(self.crawler):
            for exc in writer.run_errors:
                self.failures.append(
                    {
                        "exception": type(exc).__name__,
                        "message": str(exc),
                        "where": "store",
                        "url": None,
                        "traceback": "".join(tb.format_exception(type(exc), exc, exc.__traceback__)),
                    }
                )
        self._all_dropped_replies()
        dropped = dict(self.dropped)
        # Stopped by the person (Ctrl-C, scrapyd's cancel), or ended with requests left unfetched;
        # a stop that found all the work in flight, which then finished, left nothing out.
        not_fetched = int(stats.get_value(NOT_FETCHED_STAT, 0))
        if reason == GRACEFUL_STOP and stats.get_value(WORK_LEFT_STAT) is False and not not_fetched:
            reason = "finished"
        # Scrapy stops the engine itself, with a person's stop's reason, when the start requests fail.
        stopped_by_scrapy = self.start_failed_at is not None and stats.get_value(WORK_LEFT_STAT) is None
        interrupted = (reason in (GRACEFUL_STOP, FORCED_STOP) and not stopped_by_scrapy) or bool(not_fetched)
        if self.failures:
            result = self.failures[0]["exception"]
        elif interrupted:  # not broken, not complete either
            result = INTERRUPTED
        elif reason != "finished":
            result = reason
        else:
            result = "success"
        items = self.items_scraped
        # A replayed listing whose documents were not beside it found nothing only for that reason.
        not_beside = self.not_beside
        doc = {
            "parser_name": spider.name,
            "parser_version": str(getattr(spider, "version", "0")),
            # A spider that never opened (its store failed first) ran for no time at all.
            "parser_runtime": round(time.monotonic() - self.started, 3) if self.started is not None else 0.0,
            "source_url": self.source_url or first_start_url(spider),
            "source_text": "",
            "access_datetime": self.access_datetime or now_iso(),
            "insert_count": int(total.get("inserted", 0)),
            "result": result,
            "updated_count": int(total.get("updated", 0)),
            "unchanged_count": int(total.get("unchanged", 0)),
            "superseded_count": int(total.get("superseded", 0)),
            "replaced_count": int(total.get("replaced", 0)),
            "repaired_count": int(total.get("repaired", 0)),
            "duplicate_count": int(total.get("duplicates", 0)),
            "failed_writes": int(total.get("failed", 0)),
            "items_scraped": int(items),
            "dropped_count": int(sum(dropped.values())),
            "dropped": dropped,
            "responses": self.responses,
            "finish_reason": reason,
            "empty": result == "success" and items == 0 and not dropped and not not_beside,
            "store": {db: dict(c) for db, c in totals.by_db.items()},
            "spooled_count": int(total.get("spooled", 0)),
            "still_spooled_count": still_spooled,
            "lost_count": lost,
            "spool_delivered_count": sum(crawl_writes(self.crawler).spool_delivered.values()),
            "latest_access_datetime": now_iso(),
            "code": running_code(),
        }
        if outage:
            doc["store_outage"] = outage
        if interrupted:
            doc["interrupted"] = "forced" if reason == FORCED_STOP else "graceful"
            doc["not_fetched_count"] = not_fetched
        not_stored = crawl_writes(self.crawler).not_stored
        if not_stored:
            doc["failed_documents"] = dict(not_stored)
        if self.dropped_records:
            doc["dropped_records"] = self.dropped_records[:50]
        if not_beside:
            doc["not_beside_count"] = not_beside
        # Where this run's relative locations were resolved: any node can tell where its files are.
        doc["data_home"] = str(locations.data_home(self.crawler.settings))
        outputs = self.outputs(spider)
        if outputs:
            doc["outputs"] = outputs
        source_input = run_input(spider)
        if source_input:
            doc["input"] = source_input
        if self.rejected:
            doc["rejected_count"] = len(self.rejected)
            doc["rejected"] = self.rejected[:50]
        if self.failures:
            doc["traceback"] = self.failures[0]["traceback"]
            doc["error_message"] = self.failures[0]["message"]
            doc["errors"] = [{k: v for k, v in f.items() if k != "traceback"} for f in self.failures[:50]]
            doc["error_count"] = len(self.failures)
        self.crawler.signals.send_catch_log(vd_signals.run_log_building, doc=doc, spider=spider)
        self._attach_source(doc)
        # Kept whatever went into it: a failure's message the store would refuse cost the whole log.
        storable = schema.storable_value(doc)
        doc.clear()
        doc.update(storable)
        crawl_context(self.crawler).run = RunRecord.from_run_log(doc, schema.EVENTS_DB)
        # For operators (Scrapy's stats dump); the commands read the record.
        stats.set_value("votersdaily/spooled", still_spooled)
        stats.set_value("votersdaily/lost", lost)
        for key in ("result", "insert_count", "updated_count", "unchanged_count", "parser_runtime"):
            name = {
                "insert_count": "inserted",
                "updated_count": "updated",
                "unchanged_count": "unchanged",
                "parser_runtime": "runtime",
            }.get(key, key)
            stats.set_value("votersdaily/%s" % name, doc[key])
        return doc

    @property
    def record(self) -> RunRecord:
        """The run's record (:meth:`build` made it)."""
        record = crawl_context(self.crawler).run
        if record is None:
            raise RuntimeError("the run log's record is made by RunLog.build, before it is written")
        return record

    def outputs(self, spider: Spider) -> dict[str, str]:
        """Where the spider wrote besides the store: its ``output_settings`` as absolute paths
        (votersdaily/locations.py)."""
        return locations.locations(self.crawler.settings, tuple(getattr(spider, "output_settings", ())))

    def _attach_source(self, doc: dict[str, Any]) -> None:
        if self.source_text is not None:
            data = self.source_text.encode("utf-8")
            if len(data) <= self.inline_limit:
                doc["source_text"] = self.source_text
                return
            doc["source_text"] = self.source_text[: self.preview_chars]
        elif self.source_body:
            data = self.source_body
        else:
            return
        doc["source_text_truncated"] = True
        doc["source_text_attachment"] = "source_text"
        doc["source_text_bytes"] = len(data)
        doc["_attachments"] = {
            "source_text": {"content_type": self.source_type, "data": base64.b64encode(data).decode("ascii")}
        }

    def _write(self, doc: dict[str, Any]) -> None:
        store = store_for(self.crawler)
        # Retried under the store retry policy, as the writers' batches are: a store that fails a
        # request now and then (a restart, a proxy's hiccup) still gets the log.
        policy = retry_policy(self.crawler.settings)
        if self.started is None or store_given_up(self.crawler):  # known down: one attempt, then the spool
            policy["retry_times"] = 0
        retried(lambda: self._ready(store), shown=store.display_uri, **policy)
        # Run logs an earlier run spooled for this store go first: it takes documents again. They
        # are that run's; this one only counts them apart.
        earlier = Spool.from_settings(self.crawler.settings).deliver_earlier(store, schema.LOG_DB)
        count_spool_delivered(self.crawler, schema.LOG_DB, earlier.documents)
        doc["spool_delivered_count"] = sum(crawl_writes(self.crawler).spool_delivered.values())
        self.record.spool_delivered = doc["spool_delivered_count"]
        answer = retried(lambda: self._insert(store, doc), shown=store.display_uri, **policy)
        if answer.get("error") in ("unauthorized", "forbidden"):
            raise StoreRefused("the run log was refused: %s: %s" % (answer["error"], answer.get("reason")))
        if "error" in answer:
            raise StoreError("run log write refused: %s" % (answer,))
        logger.info(
            "run log %s: result=%s inserted=%d updated=%d unchanged=%d dropped=%d; data in %s%s",
            doc["_id"],
            doc["result"],
            doc["insert_count"],
            doc["updated_count"],
            doc["unchanged_count"],
            doc["dropped_count"],
            store.display_uri,
            "".join(" and %s" % path for path in doc.get("outputs", {}).values()),
        )
        self.crawler.stats.set_value("votersdaily/run_log_id", doc["_id"])

    @staticmethod
    def _ready(store: Store) -> None:
        store.ensure_db(schema.LOG_DB)
        store.install_views(schema.LOG_DB)

    @staticmethod
    def _insert(store: Store, doc: dict[str, Any]) -> dict[str, Any]:
        """Insert ``doc`` under its log id, or the next free ``-2``, ``-3``... (another run of the
        same source, result and second). A conflict with this very document is a retry whose first
        answer was lost after the store took it: that one is the answer, not a second copy."""
        base_id = schema.log_id(doc["access_datetime"], doc["parser_name"], doc["result"])
        for attempt in range(1, 100):
            doc["_id"] = base_id if attempt == 1 else "%s-%d" % (base_id, attempt)
            answer = store.bulk_docs(schema.LOG_DB, [doc])[0]
            if answer.get("error") != "conflict":
                return answer
            if _same_run_log(store.get(schema.LOG_DB, doc["_id"]), doc):
                return {"id": doc["_id"], "ok": True}
        return answer


class _StartFailures(logging.Handler):
    """Hands the run log the exception of Scrapy's engine's record that its spider's start requests
    failed (:func:`votersdaily.scrapy_internals.is_start_failure`)."""

    def __init__(self, run_log: RunLog, spider: Spider) -> None:
        super().__init__(logging.ERROR)
        self.run_log = run_log
        self.spider = spider

    def emit(self, record: logging.LogRecord) -> None:
        exc = record_exception(record)
        if exc is not None and scrapy_internals.is_start_failure(record, self.spider):
            self.run_log.start_failed(exc)
