"""Scrapy's log formatter, minus the per-item DEBUG record when DEBUG is off.

Scrapy builds a "Scraped from <response>" record for every item and lets the handler discard it; at
thousands of items a second that costs more than some pipelines. Dropped items stay logged.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Self

from scrapy import logformatter

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.logformatter import LogFormatterResult
    from twisted.python.failure import Failure


class LogFormatter(logformatter.LogFormatter):
    def __init__(self, level: int = logging.DEBUG) -> None:
        super().__init__()
        self.level = level

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        level = crawler.settings.get("LOG_LEVEL")
        return cls(level if isinstance(level, int) else logging.getLevelName(str(level).upper()))

    # Scrapy's LogFormatter documents None as "do not log" but types the result as always present.
    def scraped(  # type: ignore[override]
        self, item: Any, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult | None:
        if self.level > logging.DEBUG:
            return None
        return super().scraped(item, response, spider)
