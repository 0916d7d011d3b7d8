"""house_floor_schedule: docs.house.gov "Bills this week" XML, one all-day event per floor item for
the week, and the HTTP 200 "File Not Found" page of a week without a file."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.conftest import recording
from tests.spiders.congress_support import (
    VARIANTS,
    by_key,
    check_bad_variant,
    check_spider_contract,
    crawl_twice,
    crawled,
    events_of,
    html_response,
    response,
    spider_for,
    stored,
)
from votersdaily.sources.errors import ErrorPage
from votersdaily.spiders.house_floor_schedule import HouseFloorScheduleSpider

WEEK = recording("gov/house_docs_floor/billsthisweek_20260914.xml")
NOT_FOUND = recording("gov/house_docs_floor/billsthisweek_20260928_NEGATIVE_file_not_found.html")
URL = "https://docs.house.gov/floor/Download.aspx?file=/billsthisweek/20260914/20260914.xml"
URL_MISSING = "https://docs.house.gov/floor/Download.aspx?file=/billsthisweek/20260928/20260928.xml"
SUSPENSION = "Items that may be considered under suspension of the rules"


@pytest.fixture
def spider():
    return spider_for(HouseFloorScheduleSpider)


@pytest.fixture
def week(spider):
    return by_key(events_of(spider, response(URL, WEEK)))


def test_contract():
    check_spider_contract(HouseFloorScheduleSpider)


def test_every_floor_item_is_an_all_day_event_for_the_week(week):
    assert len(week) == 78
    assert Counter(e["category"] for e in week.values()) == {
        SUSPENSION: 71,
        "Items that may be considered pursuant to a rule": 5,
        "Items that may be considered": 2,
    }
    for event in week.values():
        assert event["datetime"] == "2026-09-14T00:00:00Z" and event["all_day"] is True
        assert event["end_datetime"] == "2026-09-20T00:00:00Z"
        assert (event["branch"], event["entity"]) == ("Legislative", "House of Representatives")
        assert event["event_url"] is None  # no page per item; the week's page is week_url
        assert event["week_url"] == "https://docs.house.gov/floor/Default.aspx?date=2026-09-14"
        assert event["source_url"] == URL and event["congress"] == 119
    assert sum(len(e["files"]) + sum(len(s["files"]) for s in e["subitems"]) for e in week.values()) == 86


def test_first_item(week):
    first = week["409734"]
    assert first["_id"] == "2026-09-14T00:00:00Z-house_floor_schedule-409734"
    # Trailing space of "S. 283 " and the CRLF in mid-title are folded.
    assert first["title"] == "S. 283: Illegal Red Snapper and Tuna Enforcement Act, as amended"
    assert (first["legis_num"], first["floor_item_id"]) == ("S. 283", "409734")
    assert first["description"] == SUSPENSION and (first["category_sort_order"], first["sort_order"]) == (
        1,
        1,
    )
    assert first["add_datetime"] == "2026-09-08T17:06:15Z"  # 2026-09-08T13:06:15.623 EDT
    assert first["publish_datetime"] == "2026-09-08T23:08:32Z" and first["remove_datetime"] is None
    assert first["files"] == [
        {
            "url": "http://docs.house.gov/billsthisweek/20260914/S283_SUS_xml.pdf",
            "doc_type": "PDF",
            "add_date": "2026-09-08T17:06:15Z",
            "publish_date": "2026-09-08T23:08:32Z",
        }
    ]
    assert first["updates"] == [
        {
            "date": "2026-09-08T21:25:29Z",
            "publish_date": "2026-09-08T23:08:32Z",
            "doc_modified": False,
            "note": "",
        }
    ]
    # The XML parser normalises the CRLF of the text to LF (XML 1.0 §2.11); the markup is the source's.
    assert (
        "<floor-text>Illegal Red Snapper \nand Tuna Enforcement Act, as amended</floor-text>"
        in first["source_text"]
    )


def test_last_item_with_its_report(week):
    rule = week["409812"]
    assert rule["title"].startswith("H. Res. 1530: Providing for consideration of the bill (H.R. 9576)")
    assert rule["category"] == "Items that may be considered" and rule["sort_order"] == 2
    assert [u["note"] for u in rule["updates"]] == ["", "Res. number added", "GPO Version"]
    assert [u["doc_modified"] for u in rule["updates"]] == [False, True, True]
    (report,) = rule["subitems"]
    assert report["id"] == "503903" and report["legis_num"] == ""
    assert (
        report["floor_text"]
        == "H. Rept. 119-825 – Report from the Committee on Rules to accompany H. Res. 1530"
    )
    assert report["files"][0]["publish_date"] is None  # publish-date=""
    assert (
        report["files"][0]["url"]
        == "https://www.govinfo.gov/content/pkg/CRPT-119hrpt825/pdf/CRPT-119hrpt825.pdf"
    )


def test_quirky_items(week):
    assert week["409798"]["title"] == "H.R. 9576: National Fraud Enforcement Division Act of 2026"
    assert [s["id"] for s in week["409798"]["subitems"]] == ["503901", "503902"]
    assert week["409798"]["subitems"][1]["files"][0]["url"] == (
        "http://docs.house.gov/billsthisweek/20260914/BILL-TO-BILL_BILLS-119hr9576ih%20(1)_to_RCP_H9576_xml.pdf"
    )
    assert week["409810"]["legis_num"] == "Senate amendments to H.R. 5334"
    assert week["409796"]["sort_order"] == 63
    assert "S.790" in {e["legis_num"] for e in week.values()}
    urls = {f["url"] for e in week.values() for f in e["files"]}
    assert "http://docs.house.gov/billsthisweek/20260914/HR9382%20(KennedyNY)%20NEXUS.pdf" in urls
    assert (
        "http://docs.house.gov/billsthisweek/20260914/H9500_SUS_xml%5B14%5D%5B79%5D%5B53%5D%5B96%5D%5B92%5D.pdf"
        in urls
    )


def test_file_not_found_page_served_with_200_is_an_error_page(spider):
    with pytest.raises(ErrorPage, match="File Not Found"):
        list(spider.parse_listing(html_response(URL_MISSING, NOT_FOUND)))


@pytest.mark.parametrize("variant", VARIANTS)
def test_bad_documents_raise_the_matching_error(spider, variant):
    check_bad_variant(spider, URL, WEEK, b"floorschedule", variant)


def test_listing_url_is_this_weeks_file(monkeypatch):
    monkeypatch.setenv("VOTERSDAILY_FROZEN_NOW", "2026-09-20T23:00:00Z")  # Sunday 20 Sep, 19:00 EDT
    assert spider_for(HouseFloorScheduleSpider).listing_urls == (URL,)


def test_crawl_twice(crawl, sqlite_uri):
    events, (log, _) = crawl_twice(crawl, "house_floor_schedule", [WEEK], sqlite_uri)
    assert len(events) == 78
    doc = events["2026-09-14T00:00:00Z-house_floor_schedule-409734"]
    assert doc["all_day"] is True and doc["end_datetime"] == "2026-09-20T00:00:00Z"
    assert log["source_url"] == URL


def test_crawl_file_not_found_logs_an_error_page_and_stores_nothing(crawl, sqlite_uri, frozen_now):
    crawled(crawl("house_floor_schedule", [NOT_FOUND], sqlite_uri), status=1)
    events, (log,) = stored(sqlite_uri)
    assert events == {}
    assert log["result"] == "ErrorPage" and log["insert_count"] == 0 and log["empty"] is False
    assert "File Not Found" in log["error_message"]
    assert log["_id"] == "2026-10-02T18:00:00Z-house_floor_schedule-ErrorPage"


def test_a_floor_item_without_id_is_dropped_alone(spider):
    """Derived from the real week: the first floor-item's id blanked. That item is dropped with its
    reason; the other 77 are kept."""
    body = WEEK.read_bytes()
    first_id = body.split(b'<floor-item id="', 1)[1].split(b'"', 1)[0]
    events = events_of(spider, response(URL, body.replace(b'id="%s"' % first_id, b'id=""', 1)))
    assert len(events) == 77 and first_id.decode() not in by_key(events)
    assert spider.crawler.stats.get_value("events/dropped/record:MalformedDocument") == 1
