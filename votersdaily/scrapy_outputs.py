"""Scrapy's own outputs that an operator names: its log file (``LOG_FILE``, ``--logfile``; scrapyd
gives every job one) and its feed exports to local files (``-o``, ``-O``, ``FEEDS``), on a full disk
or at a place that cannot be written.

- **The log file.** Scrapy writes it with a plain ``logging.FileHandler``. On a full disk that
  printed "--- Logging error ---" and a traceback for every record from then on, and the crawl ended
  in an ``OSError`` traceback, exit 1, when Scrapy closed the handler to make the crawler's own; a
  disk full from the start crawled nothing. The log is the operator's record of a run, not its data:
  the crawl goes on and stores what it stores, one ERROR line says which file failed and why, and
  that record and every later one go to standard error (a scrapyd job's is in scrapyd's own log).
- **A feed.** Scrapy's ``FileFeedStorage`` let the exporter's writes fail item by item ("Error caught
  on signal handler" per item), then said "Stored jsonl feed" and the crawl exited 0 with the feed
  empty or cut. The events are stored all the same; the feed is cut short where the disk filled,
  said once at ERROR, and the run fails with ``OutputFolderFull`` (exit 1), as the laundromat's and
  the ingest's output folders do.
- **The job folder** (``JOBDIR``, Scrapy's queue on disk for a crawl that can be paused): when its
  disk is full, Scrapy stops the crawl before its first request; the run log names the folder
  (``OutputFolderFull``, :meth:`votersdaily.extensions.RunLog.start_failed`), not ``interrupted``.
- **Before the crawl**, a log file, a local feed or a job folder that could not be opened (a folder in
  its place, a file where its folder should be, its log folder missing) is refused
  (:func:`output_problems`): one line, exit 2, instead of a traceback after the crawl (a feed) or
  before any (a log file).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar, cast

from scrapy.extensions.feedexport import FileFeedStorage
from twisted.python.failure import Failure

from . import scrapy_internals
from . import signals as vd_signals
from .locations import not_a_folder
from .plumbing.full_disk import full_folder

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)


class GuardedLogFile(logging.FileHandler):
    """A ``logging.FileHandler`` that, when its file fails a write, says so once and writes this
    record and every later one to standard error instead."""

    #: Log files that failed a write in this process. Scrapy makes a new handler for each crawler;
    #: one made for a file that failed writes to standard error from the start, so that a log is
    #: never split back and forth between the file and standard error.
    failed: ClassVar[set[str]] = set()
    #: Whether this handler writes to standard error now (a class default: :meth:`adopt` gives an
    #: existing handler this class without running ``__init__``).
    moved = False

    @classmethod
    def adopt(cls, handler: logging.FileHandler) -> GuardedLogFile:
        """``handler`` (Scrapy's, its file open, its formatter, level and filters set) as one of
        this class: the same object, so nothing Scrapy set on it is copied or lost."""
        handler.__class__ = cls
        assert isinstance(handler, cls)  # noqa: S101 - for the type checker
        if handler.baseFilename in cls.failed:
            handler.acquire()
            try:
                handler._to_standard_error()
            finally:
                handler.release()
        return handler

    def handleError(self, record: logging.LogRecord) -> None:
        failure = sys.exc_info()[1]
        if self.moved or not isinstance(failure, OSError):
            super().handleError(record)  # standard error itself failing, or a bad record: logging's way
            return
        self._to_standard_error()
        if self.baseFilename not in self.failed:
            self.failed.add(self.baseFilename)
            logger.error(
                "the log file %s cannot take more (%s): the rest of the log goes to standard error; "
                "make room in %s or point LOG_FILE elsewhere",
                self.baseFilename,
                failure.strerror or failure,
                Path(self.baseFilename).parent,
            )
        self.emit(record)  # the record the file did not take, whole, where the rest goes

    def _to_standard_error(self) -> None:
        """Leave the file (what its buffer held is what the disk did not take) for standard error."""
        broken = self.stream
        self.stream = cast("Any", sys.stderr)  # typeshed types a FileHandler's stream as its file
        self.moved = True
        if broken is not None:
            with contextlib.suppress(OSError):  # its descriptor is closed all the same
                broken.close()

    def close(self) -> None:
        if self.moved:
            self.acquire()
            try:
                self.stream = None  # standard error is not this handler's to close
            finally:
                self.release()
        try:
            super().close()
        except OSError as failure:  # the file's last lines did not fit as Scrapy replaced the handler
            if self.baseFilename not in self.failed:
                self.failed.add(self.baseFilename)
                print(
                    "the log file %s could not take its last lines (%s); make room in %s"
                    % (self.baseFilename, failure.strerror or failure, Path(self.baseFilename).parent),
                    file=sys.stderr,
                    flush=True,
                )


def output_problems(settings: BaseSettings | Any) -> list[str]:
    """One line for each of Scrapy's outputs (``LOG_FILE``, ``JOBDIR``, a local feed of ``FEEDS``)
    that could not be opened: before, Scrapy met it as the crawl started (the log file: a
    ``FileNotFoundError`` or ``IsADirectoryError`` traceback) or once it was over (a feed: an error
    per item, then a traceback, exit 0). A relative name is Scrapy's: under the working folder."""
    problems = []
    name = settings.get("LOG_FILE")
    if name:
        log_file = Path(os.path.abspath(os.fspath(name)))
        problem = _cannot_write("LOG_FILE names %s" % log_file, log_file.parent, log_file)
        if problem is None and not log_file.parent.is_dir():  # Scrapy makes no folder for its log
            problem = "LOG_FILE names %s, whose folder %s does not exist: make it, or name another file" % (
                log_file,
                log_file.parent,
            )
        if problem is not None:
            problems.append(problem)
    jobdir = settings.get("JOBDIR")
    if jobdir:
        folder = Path(os.path.abspath(os.fspath(jobdir)))
        blocked = not_a_folder(folder)
        if blocked is not None:
            where, what = blocked
            under = "" if where == folder else ", under %s" % where
            problems.append("JOBDIR names %s%s, which is %s, not a folder" % (folder, under, what))
    for uri in _feed_uris(settings):
        local = _local_feed(uri)
        if local is not None:
            problem = _cannot_write("the feed (-o, FEEDS) names %s" % uri, *local)
            if problem is not None:
                problems.append(problem)
    return problems


def _feed_uris(settings: BaseSettings | Any) -> list[str]:
    feeds = settings.getdict("FEEDS") if hasattr(settings, "getdict") else dict(settings.get("FEEDS") or {})
    return [str(uri) for uri in feeds]


def _local_feed(uri: str) -> tuple[Path, Path | None] | None:
    """(the folder, the file) a feed URI writes on this machine (Scrapy's ``FileFeedStorage``: no
    scheme, or ``file:``); with ``%(…)s`` parameters, filled in at the crawl, the folder before the
    first and no file. None for a remote feed or standard output."""
    from urllib.parse import urlparse

    from w3lib.url import file_uri_to_path

    if urlparse(uri).scheme not in ("", "file"):
        return None
    path = file_uri_to_path(uri) if uri.startswith("file:") else uri
    fixed, parameters, _ = path.partition("%(")
    if not parameters:
        file = Path(os.path.abspath(path))
        return file.parent, file
    return Path(os.path.abspath(fixed.rpartition(os.sep)[0] or os.sep)), None


def _cannot_write(subject: str, folder: Path, file: Path | None) -> str | None:
    """Why ``file`` in ``folder`` cannot be opened to write, as "<subject>, which is …", or None. A
    missing folder is no reason here: Scrapy makes a feed's folders."""
    if file is not None and file.is_dir():
        return "%s, which is a folder, not a file" % subject
    blocked = not_a_folder(folder)
    if blocked is not None:
        where, what = blocked
        return "%s, under %s, which is %s, not a folder" % (subject, where, what)
    existing = next(
        p for p in ((file,) if file is not None else ()) + (folder, *folder.parents) if p.exists()
    )
    if not os.access(existing, os.W_OK):
        return "%s, which this user may not write (or its disk is read-only)" % subject
    return None


def guard_log_file() -> None:
    """Every log file Scrapy opens from now on in this process a :class:`GuardedLogFile`; called by
    the crawl commands before Scrapy builds its crawler process."""
    scrapy_internals.wrap_log_handler(GuardedLogFile.adopt)


class GuardedFileFeedStorage(FileFeedStorage):
    """Scrapy's storage of a feed in a local file (``FEED_STORAGES``: no scheme and ``file:``), whose
    file says once that the disk is full and takes no more: the feed is cut short there, the run
    fails with ``OutputFolderFull`` (its run log's result, exit 1), and the items, stored by the
    pipelines, are kept. Any other error is Scrapy's to report, as before."""

    def __init__(
        self, uri: str, *, feed_options: dict[str, Any] | None = None, crawler: Crawler | None = None
    ):
        super().__init__(uri, feed_options=feed_options)
        self.crawler = crawler
        self.said = False

    @classmethod
    def from_crawler(
        cls, crawler: Crawler, uri: str, *, feed_options: dict[str, Any] | None = None
    ) -> GuardedFileFeedStorage:
        return cls(uri, feed_options=feed_options, crawler=crawler)

    def open(self, spider: Spider) -> IO[bytes]:
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)  # as Scrapy's storage does
        return io.BufferedWriter(_FeedFile(self, self.path, self.write_mode.replace("b", "")))

    def failed(self, exc: OSError) -> bool:
        """Whether ``exc``, met writing the feed, was a full disk: said once, and the run fails with it."""
        full = full_folder(
            exc,
            "the feed's folder",
            Path(self.path).parent,
            "the feed %s is cut short where it filled; the items missing from it are in the store"
            % self.path,
        )
        if full is None:
            return False
        if not self.said:
            self.said = True
            logger.error("%s", full.strerror)
            if self.crawler is not None:
                self.crawler.signals.send_catch_log(
                    vd_signals.source_failed,
                    failure=Failure(full),
                    url=self.path,
                    spider=self.crawler.spider,
                    where="output",
                )
        return True


class _FeedFile(io.FileIO):
    """The feed's file: once a write met a full disk, every write is taken and dropped, so that the
    exporter's buffer never fails again item by item."""

    def __init__(self, storage: GuardedFileFeedStorage, path: str, mode: str) -> None:
        super().__init__(path, mode)
        self.storage = storage

    def write(self, data: Any) -> int:
        if self.storage.said:
            return len(memoryview(data))
        try:
            return super().write(data)
        except OSError as exc:
            if not self.storage.failed(exc):
                raise
            return len(memoryview(data))
