"""Scrapy's log formatter, minus the per-item DEBUG record when DEBUG is off.

Scrapy builds a "Scraped from <response>" record for every item and lets the handler discard it; at
thousands of items a second that costs more than some pipelines. Dropped items stay logged.
"""

from __future__ import annotations

import logging

from scrapy import logformatter


class LogFormatter(logformatter.LogFormatter):
    def __init__(self, level: int = logging.DEBUG):
        super().__init__()
        self.level = level

    @classmethod
    def from_crawler(cls, crawler):
        level = crawler.settings.get("LOG_LEVEL")
        return cls(level if isinstance(level, int) else logging.getLevelName(str(level).upper()))

    def scraped(self, item, response, spider):
        if self.level > logging.DEBUG:
            return None
        return super().scraped(item, response, spider)
