"""white_house: the real presidential-actions RSS feed (30 items), its failure modes, a real crawl."""

from __future__ import annotations

from collections import Counter

import pytest
from scrapy.http import XmlResponse

from tests.conftest import recording
from tests.spiders.gov_support import crawl_bad, crawl_twice, parse, truncate
from votersdaily.sources.errors import ErrorPage, MalformedDocument, UnexpectedDocument
from votersdaily.spiders.white_house import WhiteHouseSpider

FEED = recording("gov/white_house/presidential-actions_feed.xml")
NOT_FOUND = recording("gov/house_docs_floor/billsthisweek_20260928_NEGATIVE_file_not_found.html")
URL = "https://www.whitehouse.gov/presidential-actions/feed/"


@pytest.fixture(scope="module")
def parsed():
    return parse(WhiteHouseSpider, FEED, URL, XmlResponse)


def test_every_item_is_one_event(parsed):
    assert len(parsed.events) == 30
    assert len({e["_id"] for e in parsed.events}) == 30


def test_newest_item(parsed):
    e = parsed.by_key()["51617"]
    # <pubDate>Tue, 29 Sep 2026 21:23:48 +0000</pubDate>
    assert e["datetime"] == "2026-09-29T21:23:48Z"
    assert e["_id"] == "2026-09-29T21:23:48Z-white_house-51617"
    assert e["title"] == "Eliminating Disease-Carrying Pests And Restoring Enjoyment Of The Great Outdoors"
    assert (e["branch"], e["entity"]) == ("Executive", "White House")
    assert e["event_url"] == (
        "https://www.whitehouse.gov/presidential-actions/2026/09/"
        "eliminating-disease-carrying-pests-and-restoring-enjoyment-of-the-great-outdoors/"
    )
    assert e["guid"] == "https://www.whitehouse.gov/?p=51617" and e["post_id"] == "51617"
    assert e["categories"] == ["Presidential Actions", "Executive Orders"]
    assert e["action_types"] == ["Executive Orders"]
    assert e["creator"] == "The White House"
    assert e["published"] == "Tue, 29 Sep 2026 21:23:48 +0000"
    assert e["end_datetime"] is None and "all_day" not in e


def test_description_is_clean_text_without_the_feed_footer(parsed):
    for e in parsed.events:
        assert "appeared first on" not in e["description"]
        assert "<" not in e["description"] and "\xa0" not in e["description"]
    d = parsed.by_key()["51617"]["description"]
    assert d.startswith("By the authority vested in me as President by the Constitution")
    assert "Section 1. Background and Purpose." in d  # "&#160;" runs folded to single spaces
    assert d.endswith("Foreign, invasive mosquitoes, […]")


def test_oldest_items_and_timezones(parsed):
    keys = parsed.by_key()
    # <pubDate>Wed, 26 Aug 2026 19:59:10 +0000</pubDate>, guid ?p=49152
    assert keys["49152"]["datetime"] == "2026-08-26T19:59:10Z"
    assert (
        keys["49152"]["title"]
        == "Declaring a National Emergency to Secure the United States Bulk-Power System"
    )
    # Posts keep their own offset; the locale only names the zone of the day.
    assert keys["49151"]["datetime"] == "2026-08-26T21:18:42Z"
    assert all(e["source_timezone"] == "America/New_York" for e in parsed.events)


def test_categories_as_in_the_feed(parsed):
    kinds = Counter(k for e in parsed.events for k in e["action_types"])
    assert kinds == {
        "Executive Orders": 13,
        "Proclamations": 13,
        "Nominations & Appointments": 3,
        "Presidential Memoranda": 1,
    }


def test_linked_pdfs(parsed):
    keys = parsed.by_key()
    assert keys["50434"]["pdf_urls"] == ["https://www.whitehouse.gov/wp-content/uploads/2026/09/eo-14430.pdf"]
    assert keys["49892"]["pdf_urls"] == [
        "https://www.whitehouse.gov/wp-content/uploads/2026/09/Alcohol-Scope-Modification-Annex-I.pdf",
        "https://www.whitehouse.gov/wp-content/uploads/2026/09/Alcohol-Scope-Modification-Annex-II.pdf",
    ]
    assert keys["51617"]["pdf_urls"] == []
    assert sum(1 for e in parsed.events if e["pdf_urls"]) == 14


def test_source_text_is_the_item_as_published(parsed):
    text = FEED.read_text("utf-8")
    for e in parsed.events:
        assert e["source_text"].startswith("<item>") and e["source_text"].endswith("</item>")
        assert e["source_text"] in text
    assert (
        '<guid isPermaLink="false">https://www.whitehouse.gov/?p=51617</guid>'
        in parsed.by_key()["51617"]["source_text"]
    )


@pytest.mark.parametrize(
    "body, exception",
    [
        (truncate(FEED.read_bytes()), MalformedDocument),
        (
            FEED.read_bytes().replace(b"<rss version", b"<feed version").replace(b"</rss>", b"</feed>"),
            UnexpectedDocument,
        ),
        (
            FEED.read_bytes().replace(b"<channel>", b"<chanel>").replace(b"</channel>", b"</chanel>"),
            UnexpectedDocument,
        ),
        (NOT_FOUND.read_bytes(), ErrorPage),
    ],
    ids=["truncated", "wrong_root", "no_channel", "html_error_page"],
)
def test_bad_feeds_raise(body, exception):
    with pytest.raises(exception):
        parse(WhiteHouseSpider, body, URL, XmlResponse)


def test_crawl_stores_events_and_logs_the_run(crawl, sqlite_uri, frozen_now):
    runs = crawl_twice(crawl, "white_house", [FEED], sqlite_uri, 30)
    doc = runs.docs["2026-09-29T21:23:48Z-white_house-51617"]
    assert doc["source_url"] == URL and doc["replayed_from"] == FEED.resolve().as_uri()
    assert doc["access_datetime"] == frozen_now and doc["parser_version"] == WhiteHouseSpider.version
    assert runs.first["source_url"] == URL


def test_crawl_of_a_truncated_feed_is_a_logged_failure_storing_nothing(crawl, tmp_path, sqlite_uri):
    crawl_bad(
        crawl,
        "white_house",
        tmp_path / "feed.xml",
        truncate(FEED.read_bytes()),
        sqlite_uri,
        "MalformedDocument",
    )


def test_smoke():
    spider = WhiteHouseSpider()
    assert spider.frequency_hours == 1.0
    assert all(url.startswith("https://www.whitehouse.gov/") for url in spider.listing_urls)
    assert WhiteHouseSpider.recording_urls() == [FEED.resolve().as_uri()]
    assert WhiteHouseSpider.custom_settings["HTTPCACHE_ENABLED"] is True  # conditional GETs
    assert WhiteHouseSpider.custom_settings["CONCURRENT_REQUESTS_PER_DOMAIN"] == 1
