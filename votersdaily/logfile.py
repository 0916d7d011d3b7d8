"""Scrapy's log file (``LOG_FILE``, ``--logfile``; scrapyd gives every job one) when it cannot take a
line: a full disk, a read-only or failing one.

Scrapy writes it with a plain ``logging.FileHandler``. On a full disk that printed
"--- Logging error ---" and a traceback for every record from then on, and the crawl ended in an
``OSError`` traceback, exit 1, when Scrapy closed the handler to make the crawler's own; a disk full
from the start crawled nothing. The log is the operator's record of a run, not its data: the crawl
goes on and stores what it stores, one ERROR line says which file failed and why, and that record
and every later one go to standard error (a scrapyd job's standard error is in scrapyd's own log).
A log file that cannot even be opened (its folder missing, a folder in its place) is refused before
the crawl starts (:func:`log_file_problems`), as the project's own locations are.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from . import scrapy_internals
from .locations import not_a_folder

if TYPE_CHECKING:
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


def log_file_problems(settings: BaseSettings | Any) -> list[str]:
    """The line saying why ``LOG_FILE`` cannot be opened, if it cannot: before, Scrapy's handler met
    it as the crawl started and the command ended in a ``FileNotFoundError`` or
    ``IsADirectoryError`` traceback. A relative name is Scrapy's: under the working folder."""
    name = settings.get("LOG_FILE")
    if not name:
        return []
    path = Path(os.path.abspath(os.fspath(name)))
    if path.is_dir():
        return ["LOG_FILE names %s, which is a folder, not a file" % path]
    folder = path.parent
    blocked = not_a_folder(folder)
    if blocked is not None:
        where, what = blocked
        return ["LOG_FILE names %s, under %s, which is %s, not a folder" % (path, where, what)]
    if not folder.is_dir():
        return [
            "LOG_FILE names %s, whose folder %s does not exist: make it, or name another file"
            % (path, folder)
        ]
    if not os.access(path if path.exists() else folder, os.W_OK):
        return ["LOG_FILE names %s, which this user may not write (or its disk is read-only)" % path]
    return []


def guard_log_file() -> None:
    """Every log file Scrapy opens from now on in this process a :class:`GuardedLogFile`; called by
    the crawl commands before Scrapy builds its crawler process."""
    scrapy_internals.wrap_log_handler(GuardedLogFile.adopt)
