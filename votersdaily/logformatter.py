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
(the run log keeps the traceback). An event a rule refused is one line above DEBUG too: its reason,
which names the event, without the item's repr.
"""

from __future__ import annotations

import logging
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


def is_one_of(exc: object, classes: AbstractSet[str]) -> bool:
    """Whether ``exc`` is an instance of a class named (dotted) in ``classes``, named so that this
    module imports none of them."""
    return any("%s.%s" % (cls.__module__, cls.__qualname__) in classes for cls in type(exc).__mro__)


class LogFormatter(logformatter.LogFormatter):
    def __init__(self, level: int = logging.DEBUG) -> None:
        super().__init__()
        self.level = level

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        level = crawler.settings.get("LOG_LEVEL")
        formatter = cls(level if isinstance(level, int) else logging.getLevelName(str(level).upper()))
        # By name, not imported: a file: crawl must not load the HTTP stack (tests/test_startup.py).
        errors = frozenset(
            e if isinstance(e, str) else "%s.%s" % (e.__module__, e.__qualname__)
            for e in crawler.settings.getlist("RETRY_EXCEPTIONS")
        ) | {SOURCE_ERROR}
        network_errors_in_one_line(errors, formatter.level > logging.DEBUG)
        return formatter

    def spider_error(
        self, failure: Failure, request: Request, response: Response | Failure, spider: Spider
    ) -> LogFormatterResult:
        """Scrapy's "Spider error processing <request>", with the source's error in the line when its
        traceback is left out (above DEBUG, for a SourceError)."""
        result = super().spider_error(failure, request, response, spider)
        error = failure.value
        if self.level > logging.DEBUG and is_one_of(error, {SOURCE_ERROR}):
            result["msg"] = "%s: %%(exception)s: %%(error)s" % result["msg"]
            result["args"] = dict(result.get("args") or {}, exception=type(error).__name__, error=error)
        return result

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
    ``quiet`` (the latest crawl's level is above DEBUG); ``marks`` it installed."""

    def __init__(self, factory: Callable[..., logging.LogRecord]) -> None:
        self.factory = factory
        #: Dotted names of the network errors' classes.
        self.errors: frozenset[str] = frozenset()
        self.quiet = False

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.factory(*args, **kwargs)
        if (
            self.quiet
            and record.exc_info
            and record.name.startswith("scrapy.")
            and self.is_network_error(record)
        ):
            record.exc_info, record.exc_text = None, None
        return record

    def is_network_error(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return exc is not None and is_one_of(exc, self.errors)


def network_errors_in_one_line(errors: frozenset[str], quiet: bool) -> None:
    """Install (once) or update the record factory above, for ``errors``."""
    factory = logging.getLogRecordFactory()
    if not isinstance(factory, _NetworkErrorsInOneLine):
        factory = _NetworkErrorsInOneLine(factory)
        logging.setLogRecordFactory(factory)
    factory.errors, factory.quiet = errors, quiet
