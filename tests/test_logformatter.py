"""The per-item "Scraped from" and per-response "Crawled" records exist at DEBUG only; drops are always
logged."""

import logging

from scrapy.exceptions import DropItem
from scrapy.http import Request, Response
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


def test_crawled_record_only_at_debug():
    request = Request("https://clerk.house.gov/evs/2026/roll314.xml")
    response = Response(request.url, status=200, request=request)
    spider = get_crawler(Spider)._create_spider("s")
    record = LogFormatter(logging.DEBUG).crawled(request, response, spider)
    assert record["level"] == logging.DEBUG
    assert record["msg"] % record["args"] == "Crawled (200) <GET %s> (referer: None)" % request.url
    assert LogFormatter(logging.INFO).crawled(request, response, spider) is None
