"""house_floor: the Clerk's daily floor summary XML, one event per floor action."""

from __future__ import annotations

import pytest

from tests.conftest import recording
from tests.spiders.congress_support import (
    VARIANTS,
    by_key,
    check_bad_variant,
    check_spider_contract,
    crawl_bad_variant,
    crawl_twice,
    events_of,
    html_response,
    response,
    spider_for,
)
from votersdaily.sources.errors import ErrorPage
from votersdaily.spiders.house_floor import HouseFloorSpider

PRO_FORMA = recording("gov/house_floor_summary/20261001.xml")
SESSION = recording("gov/house_floor_summary/20260902.xml")
URL_PRO_FORMA = "https://clerk.house.gov/floor/20261001.xml"
URL_SESSION = "https://clerk.house.gov/floor/20260902.xml"


@pytest.fixture
def spider():
    return spider_for(HouseFloorSpider)


def test_contract():
    check_spider_contract(HouseFloorSpider)


def test_pro_forma_day(spider):
    events = by_key(events_of(spider, response(URL_PRO_FORMA, PRO_FORMA)))
    assert list(events) == ["45150", "45148", "45147", "45146", "45145", "45144", "44997"]  # newest first
    adjourn = events["45150"]
    assert adjourn["_id"] == "2026-10-01T15:33:10Z-house_floor-45150"  # 20261001T11:33:10 EDT
    assert adjourn["act_id"] == "H61000" and adjourn["action_item"] == ""
    assert adjourn["update_datetime"] == "2026-10-01T15:54:00Z"
    assert adjourn["action_time_text"] == "11:33:10 A.M. -"
    assert (adjourn["branch"], adjourn["entity"]) == ("Legislative", "House of Representatives")
    assert adjourn["event_url"] == "https://clerk.house.gov/floorsummary/floor.aspx?day=20261001#45150"
    assert (adjourn["legislative_day"], adjourn["congress"], adjourn["session"]) == ("2026-10-01", 119, 2)
    message = events["45148"]
    assert message["datetime"] == "2026-10-01T15:32:30Z"
    assert message["title"] == "The House received a message from the Clerk."
    assert message["description"].startswith(
        "The House received a message from the Clerk. Pursuant to the permission"
    )
    assert [b["legis_num"] for b in message["bills"]] == [
        "S. 3257",
        "S. 3258",
        "S. 240",
        "S. 283",
        "H.R. 2388",
    ]
    assert message["bills"][4]["url"] == "https://www.congress.gov/bill/119th-congress/house-bill/2388"
    convened = events["44997"]
    assert convened["datetime"] == "2026-10-01T15:30:00Z" and convened["act_id"] == "H20100"
    assert convened["title"] == "The House convened, starting a new legislative day."
    assert convened["source_text"].startswith('<floor_action act-id="H20100"')
    assert convened["source_text"].endswith("</floor_action>")


def test_session_day(spider):
    events = by_key(events_of(spider, response(URL_SESSION, SESSION)))
    assert len(events) == 41
    passage = events["42549"]
    assert passage["_id"] == "2026-09-02T20:50:15Z-house_floor-42549"  # 4:50:15 P.M. EDT
    assert passage["title"] == "H.R. 1501: On passage Passed by the Yeas and Nays: 218 - 201 (Roll no. 294)."
    assert passage["act_id"] == "H37100" and passage["update_datetime"] == "2026-09-02T21:02:00Z"
    assert passage["votes"] == [
        {
            "roll_call": 294,
            "year": 2026,
            "text": "(Roll no. 294)",
            "url": "http://clerk.house.gov/cgi-bin/vote.asp?year=2026&rollnumber=294",
        }
    ]
    sponsorship = events["42557"]  # nested duplicate <a rel="bill"> tags
    assert sponsorship["action_item"] == "H. Res. 179"
    assert sponsorship["bills"] == [
        {
            "legis_num": "H. Res. 179",
            "url": "https://www.congress.gov/bill/119th-congress/house-resolution/179",
        }
    ]
    assert sponsorship["title"].startswith("H. Res. 179: ASSUMING FIRST SPONSORSHIP - Mr. Jackson (IL) asked")
    unfinished = [e for e in events.values() if "&#8212;" in e["source_text"] or "\u2014" in e["description"]]
    assert unfinished and all("<b>" not in e["description"] for e in unfinished)
    assert '— "To amend the FAST Act' in events["42546"]["description"]
    assert events["42514"]["datetime"] == "2026-09-02T14:00:00Z"
    assert events["42563"]["datetime"] == "2026-09-02T23:14:35Z"


@pytest.mark.parametrize(
    "description, title",
    [
        ("Mr. Smith of Texas moved to adjourn. The motion passed.", "Mr. Smith of Texas moved to adjourn."),
        (
            "Considered H. Res. 5 and H.R. 21 under the rule. Debate followed.",
            "Considered H. Res. 5 and H.R. 21 under the rule.",
        ),
        (
            "The House recessed at 2:05 p.m. and reconvened later. Then",
            "The House recessed at 2:05 p.m. and reconvened later.",
        ),
        ("Ordered: Rept. No. 119-3 to be printed.\nNext.", "Ordered: Rept. No. 119-3 to be printed."),
        ("St. Louis delegation.Seated. Done.", "St. Louis delegation.Seated."),
        ("No full stop at all", "No full stop at all"),
    ],
)
def test_title_is_the_first_sentence_not_cut_at_abbreviations(description, title):
    assert HouseFloorSpider._parse_title("", description) == title
    assert HouseFloorSpider._parse_title("H.R. 7", description) == "H.R. 7: " + title


@pytest.mark.parametrize("variant", VARIANTS)
def test_bad_documents_raise_the_matching_error(spider, variant):
    check_bad_variant(spider, URL_SESSION, SESSION, b"legislative_activity", variant)


def test_html_error_page_with_200(spider):
    body = recording("gov/house_docs_floor/billsthisweek_20260928_NEGATIVE_file_not_found.html").read_bytes()
    with pytest.raises(ErrorPage):
        list(spider.parse_listing(html_response(URL_SESSION, body)))


def test_day_without_a_file_is_legitimately_empty(spider):
    answer = html_response(
        "https://clerk.house.gov/floor/20261004.xml", b"<html><body>Not Found</body></html>"
    )
    answer.status = 404
    assert list(spider.parse_listing(answer)) == []


def test_listing_urls_are_yesterday_and_today_in_washington(monkeypatch):
    monkeypatch.setenv("VOTERSDAILY_FROZEN_NOW", "2026-10-02T02:30:00Z")  # 1 October, 22:30 EDT
    assert spider_for(HouseFloorSpider).listing_urls == (
        "https://clerk.house.gov/floor/20260930.xml",
        "https://clerk.house.gov/floor/20261001.xml",
    )


def test_crawl_twice(crawl, sqlite_uri):
    events, (log, _) = crawl_twice(crawl, "house_floor", [PRO_FORMA, SESSION], sqlite_uri)
    assert len(events) == 48
    assert events["2026-09-02T20:50:15Z-house_floor-42549"]["votes"][0]["roll_call"] == 294
    assert log["source_url"] == URL_PRO_FORMA


def test_crawl_invalid_bytes_logs_the_failure(crawl, sqlite_uri, tmp_path):
    crawl_bad_variant(
        crawl, "house_floor", SESSION, b"legislative_activity", "invalid_bytes", sqlite_uri, tmp_path
    )
