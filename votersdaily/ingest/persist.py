"""The store side of the ingest: one pipeline writing every database, batched and revision-aware
through the foundation's writers, blocking work (reads, files) in worker threads.

* ``ingest_file_result``: every result, ``_id`` = ``<ingest_type>:<base_url>``;
* the file table (:mod:`.filetable`), for successful ingests, merged family by family with the stored
  row where it is written (:class:`~votersdaily.store.families.FamilyRows`): nothing is read first,
  so a store that is down costs no ingest its row, which waits in the spool with the rest;
* ``html_meta``: successful HTML ingests, ``_id`` = sha1hex;
* TEI-XML bodies (and PDF page-0 thumbnails) in the blob store, TEI announced on the ``html-teixml`` feed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.python.failure import Failure

from votersdaily import locations
from votersdaily import signals as vd_signals
from votersdaily.blocking import ThreadLane, run_in_thread
from votersdaily.clock import now_iso
from votersdaily.plumbing.full_disk import OutputFolderFull, full_folder
from votersdaily.store.base import StoreError, StoreUnavailable
from votersdaily.store.crawler import store_for, writer_for
from votersdaily.store.families import FamilyRows

from .blobs import FolderBlobs, JsonLinesFeed, StoreBlobs, tei_path, thumbnail_path
from .filetable import file_row, table_name
from .match import load_catalog_jsonl, match_document
from .result import IngestItem

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.internet import defer

logger = logging.getLogger(__name__)

RESULTS_DB = "ingest_file_result"
HTML_META_DB = "html_meta"
#: Results whose terminal URL is longer than this are not persisted (as upstream).
MAX_TERMINAL_URL = 2048
#: Threads writing the ingests' files and reading the catalog (:meth:`IngestStorePipeline._write_files`):
#: as many as the store answers at once without a queue forming behind a slow one.
FILE_THREADS = 4
#: When a result or ``html_meta`` record was made: ignored when telling whether one changed, and of
#: two versions the later one is kept (a spooled copy delivered late never replaces a newer).
UPDATED = "updated"


def result_id(result: dict[str, Any]) -> str:
    request = result["request"]
    return "%s:%s" % (request["ingest_type"], request["base_url"])


def result_doc(result: dict[str, Any]) -> dict[str, Any]:
    doc = dict(result, _id=result_id(result))
    doc["ingest_type"] = result["request"]["ingest_type"]
    doc["base_url"] = result["request"]["base_url"]
    doc[UPDATED] = now_iso()
    return doc


def html_meta_doc(result: dict[str, Any], has_teixml: bool) -> dict[str, Any]:
    body = result.get("html_body") or {}
    return {
        "_id": result["file_meta"]["sha1hex"],
        "sha1hex": result["file_meta"]["sha1hex"],
        UPDATED: now_iso(),
        "status": result["status"],
        "scope": result.get("scope"),
        "has_teixml": has_teixml,
        "has_thumbnail": False,
        "word_count": body.get("word_count"),
        "biblio": result.get("html_biblio"),
        "resources": result.get("html_resources"),
    }


@dataclass
class FilesWritten:
    """What :meth:`IngestStorePipeline._write_files` did in its worker thread, for the reactor."""

    #: The TEI blob is in the blob store (``html_meta``'s ``has_teixml``).
    tei_kept: bool = False
    #: Full folders met, in order, each with the folder (the run says the first once).
    full: list[tuple[OutputFolderFull, str]] = field(default_factory=list)
    #: The file-table row, when the ingest is a hit (merged with the stored one where it is written).
    row: dict[str, Any] | None = None
    #: What stopped the writes (raised on the reactor thread).
    error: Exception | None = None


async def written(waiting: defer.Deferred[None] | None) -> None:
    """Wait for a writer that holds documents back (what ``CrawlerWriter.add`` answered)."""
    if waiting is not None:
        await maybe_deferred_to_future(waiting)


class IngestStorePipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        self.file_table = table_name(
            settings.get("INGEST_FILE_TABLE_VERSION"), settings.get("INGEST_FILE_TABLE_ENV")
        )
        self.catalog_db = settings.get("INGEST_CATALOG_DB")
        self.catalog_file = settings.get("INGEST_CATALOG_JSONL")
        self.results = writer_for(crawler, RESULTS_DB, ignore=(UPDATED,), newer_by=UPDATED)
        self.files = writer_for(crawler, self.file_table, hooks=FamilyRows())
        #: Whether the catalog is there to match against; None: the store did not say (down at the
        #: start): not consulted in this run.
        self._catalog_exists: bool | None = False
        #: The catalog could not be read for a row (said once a run).
        self._catalog_unread_said = False
        #: A full blob folder or feed has been said (once a run).
        self._full_said = False
        self.html_meta = writer_for(crawler, HTML_META_DB, ignore=(UPDATED,), newer_by=UPDATED)
        #: Every writer of the pipeline, opened and closed with it.
        self.writers = [self.results, self.files, self.html_meta]
        self.store = store_for(crawler)
        backend = settings.get("INGEST_BLOB_BACKEND")
        self.blobs: FolderBlobs | StoreBlobs
        if backend == "folder":
            self.blobs = FolderBlobs(locations.ingest_blob_dir(settings))
        elif backend == "store":
            self.blobs = StoreBlobs(writer_for(crawler, settings.get("INGEST_BLOB_DB")))
            self.writers.append(self.blobs.writer)
        else:
            raise NotConfigured("INGEST_BLOB_BACKEND must be 'folder' or 'store', not %r" % backend)
        feed = locations.ingest_teixml_feed(settings)
        self.feed = JsonLinesFeed(feed) if feed else None
        #: Where each ingest's files are written (:meth:`_write_files`), one hand-off an ingest.
        self.file_lane = ThreadLane(FILE_THREADS, "ingest-files")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def open_spider(self) -> None:
        # A run reading its requests from the store (-a requests=store) stops before it fetches
        # anything when the store does not answer, and says so in one line (the spider's): the
        # writers' and the catalog's own lines would only repeat it.
        said_elsewhere = getattr(self.crawler.spider, "store_requests_db", None) is not None
        for writer in self.writers:
            await maybe_deferred_to_future(writer.open(said_elsewhere))
        if self.catalog_file:
            await self._load_catalog(self.catalog_file)
        try:
            self._catalog_exists = await run_in_thread(self.store.has_db, self.catalog_db)
        except StoreError as exc:  # refused or away: the writers spool; the catalog is not consulted
            self._catalog_exists = None
            logger.log(
                logging.INFO if said_elsewhere and isinstance(exc, StoreUnavailable) else logging.WARNING,
                "catalog %s not consulted in this run (%s): file rows are stored without match0 (a stored "
                "row keeps its own)",
                self.catalog_db,
                exc,
            )

    async def _load_catalog(self, path: str) -> None:
        """``INGEST_CATALOG_JSONL`` into the catalog; a store that does not take it costs the run
        nothing but the catalog (said in one line: the rows are stored without ``match0``)."""
        try:
            count, errors = await run_in_thread(load_catalog_jsonl, self.store, path, self.catalog_db)
        except StoreError as exc:
            logger.error(
                "catalog %s not loaded into %s (%s): load it with `python -m votersdaily ingest "
                "load-catalog %s` once the store takes it",
                path,
                self.catalog_db,
                exc,
                path,
            )
            return
        logger.info("loaded %d catalog records from %s into %s", count, path, self.catalog_db)
        for error in errors:
            logger.error("catalog: %s", error)

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, IngestItem):
            return item
        result, side = item["result"], item["side"]
        terminal_url = (result.get("terminal") or {}).get("terminal_url") or ""
        if result["status"] == "existing" or len(terminal_url) > MAX_TERMINAL_URL:
            self.crawler.stats.inc_value("ingest/not_persisted")
            return item
        await written(self.results.add(result_doc(result)))
        if not result.get("file_meta"):
            return item
        tei_xml = side.get("tei_xml")
        if not (tei_xml or side.get("pdf_thumbnail") or result["hit"]):
            return item
        # One trip to the file threads per ingest: the hand-off costs the reactor more than the writes.
        files = await self.file_lane.run(self._write_files, result, side)
        for full, place in files.full:
            self._say_full(full, place)
        if files.error is not None:
            raise files.error
        if files.row is not None:
            await written(self.files.add(files.row))
            if result.get("html_body"):
                await written(self.html_meta.add(html_meta_doc(result, files.tei_kept)))
        return item

    def _write_files(self, result: dict[str, Any], side: dict[str, Any]) -> FilesWritten:
        """The ingest's files in order (TEI blob, its feed line, the thumbnail blob) and its file row, in
        a worker thread. An error stops the rest, as it stopped the item before; it is answered (with
        the full folders met before it) for the reactor to raise."""
        files = FilesWritten()
        sha1hex = result["file_meta"]["sha1hex"]
        try:
            tei_xml = side.get("tei_xml")
            if tei_xml:
                files.tei_kept = self._kept(files, self.blobs.put, tei_path(sha1hex), tei_xml.encode())
                if files.tei_kept and self.feed is not None:
                    self._kept(files, self.feed.publish, self._tei_message(result, tei_xml))
            thumbnail = side.get("pdf_thumbnail")
            if thumbnail:
                self._kept(files, self.blobs.put, thumbnail_path(sha1hex), thumbnail, "image/jpeg")
            if result["hit"]:
                files.row = self._file_row(result, side)
        except Exception as exc:  # raised on the reactor thread, after the full folders are said
            files.error = exc
        return files

    @staticmethod
    def _tei_message(result: dict[str, Any], tei_xml: str) -> dict[str, Any]:
        sha1hex = result["file_meta"]["sha1hex"]
        body = result.get("html_body") or {}
        return {
            "key": sha1hex,
            "sha1hex": sha1hex,
            "status": body.get("status", "success"),
            "tei_xml": tei_xml,
            "word_count": body.get("word_count"),
        }

    def _kept(self, files: FilesWritten, write: Callable[..., Any], *args: Any) -> bool:
        """Whether ``write`` (a blob, a feed line; worker thread) was kept. A full disk under the blob
        folder or the feed costs the result nothing (its result, file row and ``html_meta``,
        ``has_teixml: false``, are stored all the same): the folder goes to ``files.full``."""
        try:
            write(*args)
        except OSError as exc:
            feed = self.feed is not None and write == self.feed.publish
            place = self.feed.path if feed and self.feed is not None else getattr(self.blobs, "root", "")
            full = full_folder(
                exc,
                "the ingest's TEI feed" if feed else "the ingest's blob folder",
                Path(place),
                "the TEI and thumbnails that do not fit are not kept; the results are stored",
            )
            if full is None:
                raise
            files.full.append((full, str(place)))
            return False
        return True

    def _say_full(self, full: OutputFolderFull, place: str) -> None:
        """A full blob folder or feed: said once a run, and it fails the run (``OutputFolderFull``)."""
        if self._full_said:
            return
        self._full_said = True
        logger.error("%s", full.strerror)
        self.crawler.signals.send_catch_log(
            vd_signals.source_failed,
            failure=Failure(full),
            url=place,
            spider=self.crawler.spider,
            where="output",
        )

    def _file_row(self, result: dict[str, Any], side: dict[str, Any]) -> dict[str, Any]:
        """The file's row, in a worker thread (the writer merges it with the stored row)."""
        biblio = result.get("html_biblio") or {}
        grobid_meta = ((side.get("grobid") or {}).get("metadata") or {}).get("biblio") or {}
        request = result["request"]
        dois = [(request.get("ext_ids") or {}).get("doi"), biblio.get("doi"), grobid_meta.get("doi")]
        # the file's own title first (GROBID reads the PDF), then the landing page's
        pdf_info = (result.get("pdf_meta") or {}).get("pdf_info") or {}
        title = grobid_meta.get("title") or biblio.get("title") or pdf_info.get("Title")
        return file_row(result, side, self._match(dois, title))

    def _match(self, dois: list[str | None], title: str | None) -> dict[str, Any] | None:
        """The row's ``match0`` against the catalog, or None when the catalog cannot be read (the
        store is down): the row then carries no ``match0`` and the stored row's, if any, stays."""
        if self._catalog_exists is not None:
            try:
                return match_document(self.store, self.catalog_db, dois, title, self._catalog_exists)
            except StoreError as exc:
                if not self._catalog_unread_said:
                    self._catalog_unread_said = True
                    logger.warning(
                        "catalog %s cannot be read (%s): file rows are stored without match0 (a stored "
                        "row keeps its own) while it cannot",
                        self.catalog_db,
                        exc,
                    )
        return None

    async def close_spider(self) -> None:
        self.file_lane.close(wait=True)  # every item is through: the threads are idle
        for writer in self.writers:
            await maybe_deferred_to_future(writer.close())
