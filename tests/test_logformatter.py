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


def test_an_invalid_event_is_dropped_in_one_line_above_debug():
    """The drop's reason names the event and the rule: above DEBUG that line alone, not the item's repr
    (a roll call's is some 50 KB); at DEBUG, and for other drops, Scrapy's record with the item."""
    from votersdaily.pipelines import InvalidEvent

    response = Response("https://clerk.house.gov/evs/2023/roll037.xml")
    spider = get_crawler(Spider)._create_spider("s")
    item = {"unique_key": "118-1-37", "member_votes": [{"name": "Adams", "vote": "Aye"}] * 400}
    reason = InvalidEvent(
        "invalid event (datetime:datetime) from %s [unique_key='118-1-37']" % response.url, "x"
    )
    quiet = LogFormatter(logging.INFO).dropped(item, reason, response, spider)
    assert quiet["msg"] % quiet["args"] == "Dropped: " + str(reason)
    loud = LogFormatter(logging.DEBUG).dropped(item, reason, response, spider)
    assert repr(item) in loud["msg"] % loud["args"]
    other = LogFormatter(logging.INFO).dropped(item, DropItem("a pipeline of yours"), response, spider)
    assert repr(item) in other["msg"] % other["args"]


def _parser_bug(unique_key: str) -> None:
    raise KeyError("roll call %s has no 'legis-num'" % unique_key)


def _failure_of(unique_key: str):
    from twisted.python.failure import Failure

    try:
        _parser_bug(unique_key)
    except KeyError:
        return Failure()


def test_a_repeated_spider_error_is_one_line_above_debug_and_whole_at_debug():
    """The same exception raised at the same line: its first record keeps the traceback, each repeat
    names the error in its line and its record loses the traceback; at DEBUG every one is whole."""
    from scrapy.utils.log import failure_to_exc_info

    request = Request("https://clerk.house.gov/evs/2023/roll037.xml")
    response = Response(request.url, request=request)
    spider = get_crawler(Spider)._create_spider("s")
    logger = logging.getLogger("scrapy.core.scraper")

    def logged(formatter: LogFormatter, key: str) -> tuple[str, bool]:
        failure = _failure_of(key)
        result = formatter.spider_error(failure, request, response, spider)
        record = logger.makeRecord(
            logger.name, result["level"], "x", 0, result["msg"], result["args"], failure_to_exc_info(failure)
        )
        return record.getMessage(), record.exc_info is not None

    quiet = LogFormatter(logging.INFO)
    first, second, third = (logged(quiet, key) for key in ("118-1-1", "118-1-2", "118-1-3"))
    assert first == ("Spider error processing <GET %s> (referer: None)" % request.url, True)
    assert second == (
        'Spider error processing <GET %s> (referer: None): KeyError: "roll call 118-1-2 has no '
        "'legis-num'\" (traceback shown for the first)" % request.url,
        False,
    )
    assert third[1] is False
    assert logged(LogFormatter(logging.INFO), "118-1-4")[1] is True  # each crawl shows its first
    loud = LogFormatter(logging.DEBUG)
    assert [logged(loud, key)[1] for key in ("118-1-1", "118-1-2")] == [True, True]
