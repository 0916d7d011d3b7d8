"""house_votes: Clerk roll-call XML (both serialisations), discovery through the year's EVS index,
and the Clerk's error bodies."""

from __future__ import annotations

import pytest

from tests.conftest import recording
from tests.spiders.congress_support import (
    VARIANTS,
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
from votersdaily.sources.errors import ErrorPage, UnexpectedDocument
from votersdaily.spiders.house_votes import HouseVotesSpider

ROLL314 = recording("gov/house_roll_call/roll314.xml")
ROLL037 = recording("gov/house_roll_call/clerk-2023-roll037-committee.excerpt.xml")
SPEAKER = recording("gov/house_roll_call/roll2023_002.xml")
URL_SPEAKER = "https://clerk.house.gov/evs/2023/roll002.xml"
ERROR_BODY = recording("gov/house_clerk_votes/roll315_NEGATIVE_error_body.xml")
INDEX = recording("gov/house_clerk_index/index.asp")
ROLL_000 = recording("gov/house_clerk_index/ROLL_000.asp")
URL314 = "https://clerk.house.gov/evs/2026/roll314.xml"
URL037 = "https://clerk.house.gov/evs/2023/roll037.xml"


@pytest.fixture
def spider():
    return spider_for(HouseVotesSpider)


def test_contract():
    check_spider_contract(HouseVotesSpider)


def test_roll314_current_serialisation(spider):
    (event,) = events_of(spider, response(URL314, ROLL314))
    assert event["_id"] == "2026-09-16T23:05:00Z-house_votes-119-2-314"  # 16-Sep-2026 7:05 PM EDT
    assert event["unique_key"] == "119-2-314"
    assert (
        event["title"]
        == "Roll Call 314: On Motion to Suspend the Rules and Pass — S 2403: Retire through Ownership Act"
    )
    assert (event["branch"], event["entity"]) == ("Legislative", "House of Representatives")
    assert event["event_url"] == "https://clerk.house.gov/Votes/2026314"
    assert event["source_url"] == URL314
    assert (event["congress"], event["session"], event["roll_call"]) == (119, 2, 314)
    assert event["legis_num"] == "S 2403" and event["vote_type"] == "2/3 YEA-AND-NAY"
    assert event["vote_result"] == "Passed" and event["majority"] == "R"
    assert event["vote_totals"] == {"yea": 401, "nay": 14, "present": 0, "not_voting": 18}
    assert event["vote_totals_by_party"]["Republican"] == {
        "yea": 191,
        "nay": 14,
        "present": 0,
        "not_voting": 13,
    }
    assert event["vote_totals_by_party"]["Independent"] == {"yea": 1, "nay": 0, "present": 0, "not_voting": 0}
    assert event["vote_labels"]["present"] == "Answered “Present”"
    assert len(event["member_votes"]) == 433
    assert event["member_votes"][0] == {
        "name_id": "A000370",
        "name": "Adams",
        "unaccented_name": "Adams",
        "party": "D",
        "state": "NC",
        "role": "legislator",
        "vote": "Yea",
    }
    assert [m["role"] for m in event["member_votes"]].count("speaker") == 1
    # Per-member votes add up to the file's party totals.
    assert sum(m["vote"] == "Yea" and m["party"] == "R" for m in event["member_votes"]) == 191
    assert event["amendment_num"] is None and event["committee_of_the_whole"] is False
    assert event["source_text"].startswith("<rollcall-vote>") and event["source_text"].endswith(
        "</rollcall-vote>"
    )


def test_a_roll_call_of_2_january_links_its_sessions_page(spider, frozen_now):
    """Derived from roll314.xml, only its date changed: cast on 2 January 2027, still the 119th
    Congress's 2nd session (the file says so, and the Clerk files it under evs/2026/). The Clerk's
    page is keyed like the file, by the year the session began: Votes/2026314. The date's year gave
    Votes/2027314, the page of roll call 314 of the session that begins in 2027, another vote."""
    body = ROLL314.read_bytes().replace(b"<action-date>16-Sep-2026<", b"<action-date>2-Jan-2027<")
    (event,) = events_of(spider, response(URL314, body))
    assert event["datetime"] == "2027-01-03T00:05:00Z"  # 2 Jan 2027 7:05 PM EST
    assert event["vote_id"] == "h314-119.2026"
    assert event["event_url"] == "https://clerk.house.gov/Votes/2026314"
    # Every recording: the page's year is the session's, as in the file's own evs/<year>/ address.
    for url, path in ((URL314, ROLL314), (URL037, ROLL037), (URL_SPEAKER, SPEAKER)):
        (event,) = events_of(spider, response(url, path))
        assert event["event_url"] == "https://clerk.house.gov/Votes/%s%d" % (
            url.split("/")[4],
            event["roll_call"],
        )


def test_roll037_compact_serialisation_with_external_doctype(spider):
    (event,) = events_of(spider, response(URL037, ROLL037))
    assert event["datetime"] == "2023-01-26T22:23:00Z"  # 26-Jan-2023 17:23 EST
    assert event["unique_key"] == "118-1-37"
    assert event["title"] == "Roll Call 37: On Agreeing to the Amendment — H R 21"
    assert event["description"] == ""  # <vote-desc></vote-desc>: normally given, empty here
    assert (
        event["amendment_num"] == "18" and event["amendment_author"] == "Tlaib of Michigan Amendment No. 11"
    )
    assert event["committee_of_the_whole"] is True and event["vote_type"] == "RECORDED VOTE"
    assert event["vote_labels"]["yea"] == "Ayes" and event["vote_labels"]["nay"] == "Noes"
    assert event["vote_totals"] == {"yea": 205, "nay": 220, "present": 0, "not_voting": 15}
    assert len(event["member_votes"]) == 8
    assert event["member_votes"][2]["name"] == "González-Colón (PR)"
    assert event["member_votes"][2]["unaccented_name"] == "Gonzalez-Colon"


def test_speaker_election_without_a_majority(spider):
    """The 2023 first ballot: seven candidates, the Clerk's result names the leader, nobody elected."""
    (event,) = events_of(spider, response(URL_SPEAKER, SPEAKER))
    assert event["_id"] == "2023-01-03T18:39:00Z-house_votes-118-1-2"  # 3-Jan-2023 13:39 EST
    assert event["vote_question"] == "Election of the Speaker" and event["vote_result"] == "Jeffries"
    assert event["candidate_totals"] == [
        {"candidate": name, "total": total}
        for name, total in [
            ("Jeffries", 212),
            ("McCarthy", 203),
            ("Biggs", 10),
            ("Jordan", 6),
            ("Banks", 1),
            ("Zeldin", 1),
            ("Donalds", 1),
        ]
    ]
    assert event["vote_totals"] == {"present": 0, "not_voting": 0}
    assert event["vote_labels"] == {"present": "Present", "not_voting": "Not Voting"}
    assert event["vote_totals_by_party"] == {}  # the Clerk gives no party totals for an election
    assert event["elected"] is None  # 212 of 434 is no majority
    assert event["title"] == (
        "Roll Call 2: Election of the Speaker — no majority: Jeffries 212, McCarthy 203, Biggs 10, "
        "Jordan 6, Banks 1, Zeldin 1, Donalds 1"
    )
    assert "elected" not in event["title"]
    votes = [m["vote"] for m in event["member_votes"]]
    assert len(votes) == 434
    assert {c["candidate"]: votes.count(c["candidate"]) for c in event["candidate_totals"]} == {
        c["candidate"]: c["total"] for c in event["candidate_totals"]
    }


def test_speaker_elected_by_a_majority_of_votes_for_a_person(spider):
    """Derived from the real first ballot: the five minor candidates' 19 votes moved to Present (the
    shape of a deciding ballot). Present does not count, so 212 of 415 is a majority."""
    body = SPEAKER.read_bytes()
    for name, total in [("Biggs", 10), ("Jordan", 6), ("Banks", 1), ("Zeldin", 1), ("Donalds", 1)]:
        row = b"<candidate>%s</candidate>\r\n        <candidate-total>%d</candidate-total>" % (
            name.encode(),
            total,
        )
        assert body.count(row) == 1
        body = body.replace(row, row.replace(b">%d<" % total, b">0<"))
    present = b"<candidate>Present</candidate>\r\n        <candidate-total>0</candidate-total>"
    assert body.count(present) == 1
    body = body.replace(present, present.replace(b">0<", b">19<"))
    (event,) = events_of(spider, response(URL_SPEAKER, body))
    assert event["elected"] == {"candidate": "Jeffries", "total": 212, "votes_cast": 415}
    assert event["vote_totals"] == {"present": 19, "not_voting": 0}
    assert event["title"] == "Roll Call 2: Election of the Speaker — Jeffries elected with 212 of 415 votes"


@pytest.mark.parametrize("path", sorted(recording("gov/house_roll_call").glob("*.xml")), ids=lambda p: p.name)
def test_every_roll_call_recording_parses_with_its_totals(spider, path):
    (event,) = events_of(spider, response("https://clerk.house.gov/evs/%s" % path.name, path))
    assert event["member_votes"] and event["vote_totals"] and event["vote_labels"]
    assert all(isinstance(n, int) for n in event["vote_totals"].values())
    assert (event["candidate_totals"] is None) == ("yea" in event["vote_totals"])


def test_error_body_served_with_200_is_an_error_page(spider):
    with pytest.raises(ErrorPage, match="Error sanitizing"):
        events_of(spider, response("https://clerk.house.gov/evs/2026/roll315.xml", ERROR_BODY))


@pytest.mark.parametrize("variant", VARIANTS)
def test_bad_documents_raise_the_matching_error(spider, variant):
    check_bad_variant(spider, URL314, ROLL314, b"rollcall-vote", variant)


# -- discovery -----------------------------------------------------------------------------------------


def test_index_follows_every_roll_page_and_lists_its_rolls(spider):
    requests = list(spider.parse_listing(html_response("https://clerk.house.gov/evs/2020/index.asp", INDEX)))
    assert [r.url for r in requests] == [
        "https://clerk.house.gov/evs/2020/ROLL_200.asp",
        "https://clerk.house.gov/evs/2020/ROLL_100.asp",
        "https://clerk.house.gov/evs/2020/ROLL_000.asp",
    ] + ["https://clerk.house.gov/evs/2020/roll%d.xml" % n for n in (253, 252, 251, 250, 249)]
    assert all(r.callback == spider.parse_listing for r in requests[:3])
    assert all(r.callback == spider.parse_document for r in requests[3:])


def test_roll_page_yields_every_roll_xml_of_the_year_from_the_heading(spider, site):
    """Served by a real local web server at a path without the year: the year comes from the
    heading "(2020)", and the roll XML URLs are the Clerk's, zero-padded."""
    site.route("/clerk/ROLL_000.asp", ROLL_000.read_bytes(), content_type="text/html")
    import urllib.request

    with urllib.request.urlopen(site.url + "/clerk/ROLL_000.asp") as answer:
        body = answer.read()
    requests = list(spider.parse_listing(html_response(site.url + "/clerk/ROLL_000.asp", body)))
    assert [r.url for r in requests] == [
        "https://clerk.house.gov/evs/2020/roll%03d.xml" % n for n in range(99, 0, -1)
    ]


def test_listing_that_is_no_index_is_reported(spider):
    with pytest.raises(UnexpectedDocument):
        list(
            spider.parse_listing(
                html_response("https://clerk.house.gov/evs/x.asp", b"<html><body>Hi</body></html>")
            )
        )


def test_listing_url_is_the_current_years_index(monkeypatch):
    monkeypatch.setenv("VOTERSDAILY_FROZEN_NOW", "2027-01-01T03:00:00Z")  # still 2026 in Washington
    assert spider_for(HouseVotesSpider).listing_urls == ("https://clerk.house.gov/evs/2026/index.asp",)
    assert spider_for(HouseVotesSpider, year="2020").listing_urls == (
        "https://clerk.house.gov/evs/2020/index.asp",
    )


# -- real crawls into a real store ----------------------------------------------------------------------


def test_crawl_error_body_logs_the_failure_and_stores_nothing(crawl, sqlite_uri, frozen_now):
    crawled(crawl("house_votes", [ERROR_BODY], sqlite_uri), status=1)
    events, logs = stored(sqlite_uri)
    assert events == {}
    (log,) = logs
    assert log["result"] == "ErrorPage" and log["insert_count"] == 0
    assert log["_id"] == "2026-10-02T18:00:00Z-house_votes-ErrorPage"
    assert "Error sanitizing" in log["error_message"] and log["traceback"]


def test_crawl_recordings_twice(crawl, sqlite_uri):
    events, (log, _) = crawl_twice(crawl, "house_votes", [ROLL314, ROLL037], sqlite_uri)
    assert set(events) == {
        "2026-09-16T23:05:00Z-house_votes-119-2-314",
        "2023-01-26T22:23:00Z-house_votes-118-1-37",
    }
    doc = events["2026-09-16T23:05:00Z-house_votes-119-2-314"]
    assert doc["vote_totals"]["yea"] == 401 and doc["source_url"] == URL314
    assert log["source_url"] == URL314 and log["source_text"] == ROLL314.read_bytes().decode("utf-8")
