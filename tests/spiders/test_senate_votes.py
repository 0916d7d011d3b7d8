"""senate_votes: the LIS vote XML, discovery through the session's vote menu, bad documents."""

from __future__ import annotations

import pytest

from tests.conftest import recording
from tests.spiders.congress_support import (
    VARIANTS,
    check_bad_variant,
    check_spider_contract,
    crawl_bad_variant,
    crawl_twice,
    events_of,
    response,
    spider_for,
)
from votersdaily.sources.errors import ErrorPage, UnexpectedDocument
from votersdaily.spiders.senate_votes import SenateVotesSpider, position_of

VOTE = recording("gov/senate_vote/senate-vote-108-2-00213.xml")
MENU = recording("gov/senate_vote_menu/senate-vote-menu-119-1.xml")
URL = "https://www.senate.gov/legislative/LIS/roll_call_votes/vote1082/vote_108_2_00213.xml"
ID = "2004-11-17T22:48:00Z-senate_votes-108-2-213"


@pytest.fixture
def spider():
    return spider_for(SenateVotesSpider)


def test_contract():
    check_spider_contract(SenateVotesSpider)


def test_vote_213(spider):
    (event,) = events_of(spider, response(URL, VOTE))
    # "November 17, 2004,  05:48 PM" (double space), Eastern standard time.
    assert event["_id"] == ID and event["datetime"] == "2004-11-17T22:48:00Z"
    assert event["unique_key"] == "108-2-213"
    assert event["title"] == "On Passage of the Bill S. 2986"
    assert (
        event["description"]
        == "A bill to amend title 31 of the United States Code to increase the public debt limit."
    )
    assert (event["branch"], event["entity"]) == ("Legislative", "Senate")
    assert (
        event["event_url"]
        == "https://www.senate.gov/legislative/LIS/roll_call_votes/vote1082/vote_108_2_00213.htm"
    )
    assert event["xml_url"] == URL and event["source_url"] == URL
    assert event["end_datetime"] is None and event["source_timezone"] == "America/New_York"
    assert (event["congress"], event["session"], event["vote_number"]) == (108, 2, 213)
    assert event["question"] == "On Passage of the Bill"
    assert event["vote_result"] == "Bill Passed" and event["vote_result_text"] == "Bill Passed (52-44)"
    assert event["vote_title"] == "S. 2986" and event["majority_requirement"] == "1/2"
    assert event["modify_datetime"] == "2010-01-08T13:39:00Z"  # January 8, 2010, 08:39 AM EST
    assert event["counts"] == {"yeas": 52, "nays": 44, "present": 1, "absent": 3}
    assert event["counts_by_party"] == {
        "D": {"yeas": 2, "nays": 42, "present": 1, "absent": 3},
        "I": {"yeas": 0, "nays": 1, "present": 0, "absent": 0},
        "R": {"yeas": 50, "nays": 1, "present": 0, "absent": 0},
    }
    assert event["document"] == {
        "congress": "108",
        "type": "S.",
        "number": "2986",
        "name": "S. 2986",
        "title": "A bill to amend title 31 of the United States Code to increase the public debt limit.",
        "short_title": "",
    }
    assert (
        event["amendment"]["number"] == ""
        and event["amendment"]["purpose"] == "No Statement of Purpose on File."
    )
    assert len(event["member_votes"]) == 100
    assert event["member_votes"][0] == {
        "lis_member_id": "S213",
        "name": "Akaka (D-HI)",
        "first_name": "Daniel",
        "last_name": "Akaka",
        "party": "D",
        "state": "HI",
        "vote": "Nay",
        "pair": None,
    }
    assert [m["vote"] for m in event["member_votes"]].count("Present, Giving Live Pair") == 1
    assert event["source_text"].startswith("<roll_call_vote>") and event["source_text"].endswith(
        "</roll_call_vote>"
    )


def test_empty_count_element_is_zero_and_a_missing_one_unknown(spider):
    """Derived from the real vote 213: its ``<present>1</present>`` emptied to ``<present/>`` (the
    form the LIS writes for a position nobody took), then the ``<absent>`` element removed."""
    body = VOTE.read_bytes()
    assert body.count(b"<present>1</present>") == 1
    emptied = body.replace(b"<present>1</present>", b"<present/>")
    (event,) = events_of(spider, response(URL, emptied))
    assert event["counts"] == {"yeas": 52, "nays": 44, "present": 0, "absent": 3}
    missing = emptied.replace(b"<absent>3</absent>", b"")
    (event,) = events_of(spider, response(URL, missing))
    assert event["counts"] == {"yeas": 52, "nays": 44, "present": 0, "absent": None}


def test_live_pair_keeps_the_partner(spider):
    """Derived from the real vote 213: Reid's "Present, Giving Live Pair" given the ``pair`` (and
    ``crp``) attributes that newer LIS files put on ``vote_cast`` (as vote_115_2_00223 has them);
    the partner's id here is another senator of this very vote."""
    body = VOTE.read_bytes()
    live = b"<vote_cast>Present, Giving Live Pair</vote_cast>"
    assert body.count(live) == 1
    paired = body.replace(live, b'<vote_cast crp=" " pair="S259">Present, Giving Live Pair</vote_cast>')
    (event,) = events_of(spider, response(URL, paired))
    members = {m["last_name"]: m for m in event["member_votes"]}
    assert members["Reid"]["pair"] == "S259" and members["Reid"]["vote"] == "Present, Giving Live Pair"
    assert [m["lis_member_id"] for m in event["member_votes"] if m["pair"]] == ["S198"]
    assert event["counts_by_party"]["D"]["present"] == 1


def test_positions():
    assert [
        position_of(v) for v in ("Yea", "Nay", "Not Voting", "Present", "Present, Giving Live Pair", "Guilty")
    ] == ["yeas", "nays", "absent", "present", "present", "yeas"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_bad_documents_raise_the_matching_error(spider, variant):
    check_bad_variant(spider, URL, VOTE, b"roll_call_vote", variant)


def test_vote_not_available_page_is_an_error_page(spider):
    """A missing vote redirects to an HTML page; whatever HTML arrives is no vote XML."""
    body = b"<!DOCTYPE html><html><head><title>Vote Not Available</title></head><body></body></html>"
    with pytest.raises(ErrorPage, match="Vote Not Available"):
        events_of(spider, response(URL, body))


def test_menu_lists_every_vote_xml(spider):
    menu_url = "https://www.senate.gov/legislative/LIS/roll_call_lists/vote_menu_119_1.xml"
    requests = list(spider.parse_listing(response(menu_url, MENU)))
    numbers = ["00659", "00658", "00657", "00656", "00655", "00654", "00004", "00003", "00002", "00001"]
    assert [r.url for r in requests] == [
        "https://www.senate.gov/legislative/LIS/roll_call_votes/vote1191/vote_119_1_%s.xml" % n
        for n in numbers
    ]
    assert all(r.callback == spider.parse_document for r in requests)


def test_menu_that_is_no_menu_is_reported(spider):
    with pytest.raises(UnexpectedDocument):
        list(spider.parse_listing(response("https://www.senate.gov/x.xml", VOTE)))


def test_listing_url_is_the_current_sessions_menu(monkeypatch):
    monkeypatch.setenv("VOTERSDAILY_FROZEN_NOW", "2026-10-02T18:00:00Z")
    assert spider_for(SenateVotesSpider).listing_urls == (
        "https://www.senate.gov/legislative/LIS/roll_call_lists/vote_menu_119_2.xml",
    )
    assert spider_for(SenateVotesSpider, congress="118", session="1").listing_urls == (
        "https://www.senate.gov/legislative/LIS/roll_call_lists/vote_menu_118_1.xml",
    )


def test_crawl_twice_on_both_backends(crawl, store_uri):
    events, (log, _) = crawl_twice(crawl, "senate_votes", [VOTE], store_uri)
    assert set(events) == {ID}
    doc = events[ID]
    assert doc["counts"] == {"yeas": 52, "nays": 44, "present": 1, "absent": 3}
    assert doc["parser_name"] == "senate_votes" and doc["source_url"] == URL
    assert doc["replayed_from"] == VOTE.resolve().as_uri()
    assert log["source_url"] == URL and log["insert_count"] == 1


def test_crawl_truncated_vote_logs_the_failure(crawl, sqlite_uri, tmp_path):
    crawl_bad_variant(crawl, "senate_votes", VOTE, b"roll_call_vote", "truncated", sqlite_uri, tmp_path)
