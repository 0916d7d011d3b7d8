"""The per-item "Scraped from" record exists at DEBUG only; drops are always logged."""

import logging

from scrapy.exceptions import DropItem
from scrapy.http import Response
from scrapy.spiders import Spider
from scrapy.utils.test import get_crawler

from votersdaily.logformatter import LogFormatter


def test_scraped_record_only_at_debug():
    response = Response("https://clerk.house.gov/evs/2026/roll314.xml")
    spider = get_crawler(Spider)._create_spider("s")
    assert LogFormatter(logging.DEBUG).scraped({"a": 1}, response, spider)["level"] == logging.DEBUG
    assert LogFormatter(logging.INFO).scraped({"a": 1}, response, spider) is None
    dropped = LogFormatter(logging.WARNING).dropped(
        {"a": 1}, DropItem("invalid event (branch)"), response, spider
    )
    assert "invalid event (branch)" in dropped["msg"] % dropped["args"]
