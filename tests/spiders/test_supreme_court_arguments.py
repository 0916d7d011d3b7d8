"""supreme_court_arguments: the real "Argument Audio" listing (October 2017) checked against
juriscraper's parse of it, bad rows, a real crawl."""

from __future__ import annotations

import json

import pytest
from scrapy.http import HtmlResponse

from tests.conftest import recording
from tests.spiders.gov_support import crawl_twice, parse
from votersdaily.spiders.supreme_court_arguments import SupremeCourtArgumentsSpider as Spider

AUDIO = recording("gov/supreme_court/scotus_oral_args_example.html")
AUDIO_URL = Spider.recordings["gov/supreme_court/scotus_oral_args_example.html"]


@pytest.fixture(scope="module")
def arguments():
    return parse(Spider, AUDIO, AUDIO_URL, HtmlResponse)


def test_arguments(arguments):
    assert [e["unique_key"] for e in arguments.events] == [
        "16-285",
        "15-1498rearg",
        "16-1161",
        "15-1204rearg",  # Jennings v. Rodriguez, reargued too
        "15-1485",
        "16-424",
    ]
    epic = arguments.events[0]
    assert epic["_id"] == "2017-10-02T00:00:00Z-supreme_court_arguments-16-285" and epic["all_day"] is True
    assert epic["title"] == "Epic Systems Corp. v. Lewis (No. 16-285): oral argument"
    assert epic["event_url"] == "https://www.supremecourt.gov/oral_arguments/audio/2017/16-285"
    assert (epic["docket"], epic["reargument"], epic["branch"]) == ("16-285", False, "Judicial")
    dimaya = arguments.by_key()["15-1498rearg"]
    assert dimaya["reargument"] is True and dimaya["docket"] == "15-1498"
    text = AUDIO.read_text("utf-8")
    assert all(e["source_text"].startswith("<tr>") and e["source_text"] in text for e in arguments.events)


def test_arguments_match_juriscrapers_parse(arguments):
    oracle = json.loads(
        recording("gov/supreme_court/scotus_oral_args_example.compare.json").read_text("utf-8")
    )
    mine = {(e["docket"], e["datetime"][:10]): e for e in arguments.events}
    assert len(oracle) == len(mine) == 6
    for expected in oracle:
        assert (
            mine[(expected["docket_numbers"], expected["case_dates"])]["case_name"] == expected["case_names"]
        )


def test_a_row_with_a_bad_date_is_dropped_alone():
    """Derived: the first row's date replaced by words."""
    body = AUDIO.read_bytes().replace(b">10/02/17</td>", b">October 2</td>", 1)
    parsed = parse(Spider, body, AUDIO_URL, HtmlResponse)
    assert len(parsed.events) == 5 and "16-285" not in parsed.by_key()
    assert parsed.spider.crawler.stats.get_value("events/dropped/record:UnexpectedDocument") == 1


def test_crawl_twice(crawl, sqlite_uri, frozen_now):
    runs = crawl_twice(crawl, "supreme_court_arguments", [AUDIO], sqlite_uri, 6)
    assert runs.docs["2017-10-04T00:00:00Z-supreme_court_arguments-15-1485"]["source_url"] == AUDIO_URL


def test_smoke():
    (listing,) = Spider().listing_urls
    assert listing.startswith("https://www.supremecourt.gov/oral_arguments/argument_audio/20")
    assert Spider.recording_urls() == [AUDIO.resolve().as_uri()]
