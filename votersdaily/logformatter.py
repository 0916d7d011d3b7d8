"""Scrapy's log formatter, minus the per-item and per-response DEBUG records when DEBUG is off; and
network errors in one line above DEBUG.

Scrapy builds a "Scraped from <response>" record for every item and a "Crawled (200) <request>" record
for every response, and lets the handler discard them; at thousands of items a second that costs more
than some pipelines, and an ingest makes a record for each of its hops and sub-resources. Dropped
items stay logged.

Scrapy logs some download failures with their traceback (robots.txt: "Error downloading …"): for a
host that does not resolve, 70 lines of Twisted frames before the one line that says what happened.
Above DEBUG, a record of Scrapy's own about a network error (Scrapy's ``RETRY_EXCEPTIONS``: DNS,
refused, timeout, lost connection, …) keeps its message and loses the traceback; at DEBUG it is whole.
So does a source that answered with something its spider cannot read (a
:class:`~votersdaily.sources.errors.SourceError`: an empty or malformed document, an error page):
60 lines of Scrapy's frames said less than its one line, which names the exception and the document
(the run log keeps the traceback). So does a store that was unavailable to a callback (a
:class:`~votersdaily.store.base.StoreUnavailable`: down, refusing; a Redis-fed worker gives such a
request back and waits for the store, saying so). An event a rule refused is one line above DEBUG
too: its reason, which names the event, without the item's repr.

Any other spider error (a parser's bug) keeps its traceback the first time: that is where it helps.
Above DEBUG, the same error again (the same exception class raised at the same line: a reparse of
years of archives through a parser that fails on a kind of document) is one line naming the exception,
the error and the request, not the same 40 lines per document; the run log keeps the first's traceback and
lists the errors (``errors``, ``error_count``).
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any, Self

from scrapy import logformatter

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response
    from scrapy.logformatter import LogFormatterResult
    from twisted.python.failure import Failure


#: What a source did wrong (votersdaily/sources/errors.py), by name: this module imports no spider code.
SOURCE_ERROR = "votersdaily.sources.errors.SourceError"
#: An event a rule refused (votersdaily/pipelines.py), by name: its message names the event (source URL,
#: unique key) and the rule, so above DEBUG its drop is that one line, without the item's repr (a roll
#: call's is some 50 KB on one line).
INVALID_EVENT = "votersdaily.pipelines.InvalidEvent"
#: A store that could not be reached or refused (votersdaily/store/base.py), by name: its message names
#: the store and the request that failed; a traceback would show only the store's client.
STORE_UNAVAILABLE = "votersdaily.store.base.StoreUnavailable"
#: What a spider error is said as in one line, whatever its traceback.
ONE_LINE_ERRORS = frozenset({SOURCE_ERROR, STORE_UNAVAILABLE})


def is_one_of(exc: object, classes: AbstractSet[str]) -> bool:
    """Whether ``exc`` is an instance of a class named (dotted) in ``classes``, named so that this
    module imports none of them."""
    return any("%s.%s" % (cls.__module__, cls.__qualname__) in classes for cls in type(exc).__mro__)


class LogFormatter(logformatter.LogFormatter):
    def __init__(self, level: int = logging.DEBUG) -> None:
        super().__init__()
        self.level = level
        #: The spider errors whose traceback this crawl has printed: (exception class, file, line).
        self.tracebacks_shown: set[tuple[str, str, int]] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        level = crawler.settings.get("LOG_LEVEL")
        formatter = cls(level if isinstance(level, int) else logging.getLevelName(str(level).upper()))
        # By name, not imported: a file: crawl must not load the HTTP stack (tests/test_startup.py).
        errors = (
            frozenset(
                e if isinstance(e, str) else "%s.%s" % (e.__module__, e.__qualname__)
                for e in crawler.settings.getlist("RETRY_EXCEPTIONS")
            )
            | ONE_LINE_ERRORS
        )
        network_errors_in_one_line(errors, formatter.level > logging.DEBUG)
        return formatter

    def spider_error(
        self, failure: Failure, request: Request, response: Response | Failure, spider: Spider
    ) -> LogFormatterResult:
        """Scrapy's "Spider error processing <request>", with the error in the line when its
        traceback is left out (above DEBUG: a SourceError, a StoreUnavailable, or an error whose
        traceback was shown)."""
        result = super().spider_error(failure, request, response, spider)
        error = failure.value
        if self.level <= logging.DEBUG or error is None:
            return result
        if is_one_of(error, ONE_LINE_ERRORS):
            suffix = ""
        elif self._first_time(failure):
            return result
        else:
            suffix = " (traceback shown for the first)"
            _records_in_one_line().leave_out_traceback_of(error)
        result["msg"] = "%s: %%(exception)s: %%(error)s%s" % (result["msg"], suffix)
        result["args"] = dict(result.get("args") or {}, exception=type(error).__name__, error=error)
        return result

    def item_error(
        self, item: Any, exception: BaseException, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult:
        """Scrapy's "Error processing <item>", with the error in the line when its traceback is left
        out (above DEBUG: a SourceError, a StoreUnavailable)."""
        result = super().item_error(item, exception, response, spider)
        if self.level > logging.DEBUG and is_one_of(exception, ONE_LINE_ERRORS):
            result["msg"] = "%s: %%(exception)s: %%(error)s" % result["msg"]
            result["args"] = dict(
                result.get("args") or {}, exception=type(exception).__name__, error=exception
            )
        return result

    def _first_time(self, failure: Failure) -> bool:
        """Whether this crawl has not yet shown the traceback of this error: its exception class
        raised at this line."""
        frame = traceback.extract_tb(failure.getTracebackObject())[-1:] if failure.tb else []
        where = (frame[0].filename, frame[0].lineno or 0) if frame else ("", 0)
        key = (type(failure.value).__qualname__, *where)
        if key in self.tracebacks_shown:
            return False
        self.tracebacks_shown.add(key)
        return True

    def dropped(
        self, item: Any, exception: BaseException, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult:
        """Scrapy's "Dropped: <reason>" and the item's repr; for an invalid event above DEBUG, the
        reason alone (it names the event)."""
        result = super().dropped(item, exception, response, spider)
        if self.level > logging.DEBUG and is_one_of(exception, {INVALID_EVENT}):
            result["msg"] = "Dropped: %(exception)s"
        return result

    # Scrapy's LogFormatter documents None as "do not log" but types the result as always present.
    def crawled(  # type: ignore[override]
        self, request: Request, response: Response, spider: Spider
    ) -> LogFormatterResult | None:
        if self.level > logging.DEBUG:
            return None
        return super().crawled(request, response, spider)

    def scraped(  # type: ignore[override]
        self, item: Any, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult | None:
        if self.level > logging.DEBUG:
            return None
        return super().scraped(item, response, spider)


class _NetworkErrorsInOneLine:
    """A log record factory: Scrapy's records about network errors lose their traceback while
    ``quiet`` (the latest crawl's level is above DEBUG), and so does the next record of an error
    the log formatter names (a repeated spider error)."""

    def __init__(self, factory: Callable[..., logging.LogRecord]) -> None:
        self.factory = factory
        #: Dotted names of the network errors' classes.
        self.errors: frozenset[str] = frozenset()
        self.quiet = False
        #: The error whose record, logged next, goes without its traceback.
        self.one_line_error: BaseException | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.factory(*args, **kwargs)
        if not record.exc_info or not record.name.startswith("scrapy."):
            return record
        exc = record.exc_info[1]
        if exc is self.one_line_error:
            self.one_line_error = None
            record.exc_info, record.exc_text = None, None
        elif self.quiet and self.is_network_error(record):
            record.exc_info, record.exc_text = None, None
        if record.exc_info is None:
            setattr(record, _SHOWN_WITHOUT, exc)  # the run log still names it (record_exception)
        return record

    def leave_out_traceback_of(self, error: BaseException) -> None:
        """The next record of ``error`` (Scrapy logs it right after asking the formatter) is one line."""
        self.one_line_error = error

    def is_network_error(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return exc is not None and is_one_of(exc, self.errors)


#: The record attribute keeping an exception whose traceback the record factory left out.
_SHOWN_WITHOUT = "votersdaily_exception"


def record_exception(record: logging.LogRecord) -> BaseException | None:
    """The exception a log record was made with, even when it is shown in one line."""
    if record.exc_info:
        return record.exc_info[1]
    exc = getattr(record, _SHOWN_WITHOUT, None)
    return exc if isinstance(exc, BaseException) else None


def _records_in_one_line() -> _NetworkErrorsInOneLine:
    """The record factory above, installed once."""
    factory = logging.getLogRecordFactory()
    if not isinstance(factory, _NetworkErrorsInOneLine):
        factory = _NetworkErrorsInOneLine(factory)
        logging.setLogRecordFactory(factory)
    return factory


def network_errors_in_one_line(errors: frozenset[str], quiet: bool) -> None:
    """Install (once) or update the record factory above, for ``errors``."""
    factory = _records_in_one_line()
    factory.errors, factory.quiet = errors, quiet
