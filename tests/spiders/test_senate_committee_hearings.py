"""senate_committee_hearings: the real hearings.xml (17 meetings) and its empty case, failure modes, crawls."""

from __future__ import annotations

import pytest
from scrapy.http import XmlResponse

from tests.conftest import recording
from tests.spiders.gov_support import crawl_bad, crawl_twice, parse, truncate
from votersdaily.sources.errors import ErrorPage, MalformedDocument, UnexpectedDocument
from votersdaily.spiders.senate_committee_hearings import SenateCommitteeHearingsSpider as Spider

FULL = recording("gov/senate_hearings/hearings_2026-07-30_wayback.xml")
EMPTY = recording("gov/senate_hearings/hearings.xml")
NOT_FOUND = recording("gov/house_docs_floor/billsthisweek_20260928_NEGATIVE_file_not_found.html")
URL = "https://www.senate.gov/general/committee_schedules/hearings.xml"


@pytest.fixture(scope="module")
def meetings():
    return parse(Spider, FULL, URL, XmlResponse).by_key()


def test_every_meeting_is_one_event(meetings):
    assert len(meetings) == 17
    assert sorted(meetings) == sorted(
        str(n) for n in range(338684, 338706) if n not in (338685, 338686, 338687, 338690, 338691)
    )


def test_full_committee_business_meeting(meetings):
    e = meetings["338684"]
    # <date_iso_8601>2026-07-30</date_iso_8601><time_iso_8601>09:45:00</time_iso_8601>, EDT (UTC-4)
    assert e["datetime"] == "2026-07-30T13:45:00Z"
    assert e["_id"] == "2026-07-30T13:45:00Z-senate_committee_hearings-338684"
    assert (e["branch"], e["entity"]) == ("Legislative", "Senate")
    # The matter has a U+00A0 after "consider": folded to a plain space.
    assert e["title"].startswith(
        "Business meeting to consider S.5038, to prohibit the transfer of the functions"
    )
    assert "\xa0" not in e["title"] and e["matter"] == e["title"]
    assert e["cmte_code"] == e["committee_code"] == "SSHR00"
    assert e["committee"] == "Health, Education, Labor, and Pensions"
    assert e["sub_cmte"] is None  # a full-committee meeting has no subcommittee
    assert e["meeting_type"] == "Open Business Meeting" and e["room"] == "SD-430"
    # The stream's file name carries 29 July, the day before this meeting: not its event_url.
    assert e["video_url"] == "https://www.senate.gov/isvp/?comm=help&filename=help072926"
    assert e["video_file_date"] == "2026-07-29" and e["event_url"] == ""
    assert e["senate_cable_channel"] == "18.1"
    # <last_update_iso_8601>2026-07-29T16:36:25.000000Z-04:00 (a stray "Z" before the real offset)
    assert e["last_update"] == "2026-07-29T20:36:25Z"
    assert len(e["documents"]) == 13
    assert e["documents"][0] == {
        "congress": "119",
        "document_prefix": "PN",
        "document_num": "1129",
        "partition": "0",
        "document_description": "Keith Sonderling, of Florida, to be Secretary of Labor, vice Lori Chavez-DeRemer, resigned.",
    }
    assert e["description"] == "Health, Education, Labor, and Pensions; Open Business Meeting; Room SD-430"


def test_subcommittee_hearing(meetings):
    e = meetings["338689"]
    assert e["datetime"] == "2026-07-30T14:00:00Z"  # 10:00 AM EDT
    assert e["title"] == (
        "Hearings to examine intelligent networks, focusing on powering artificial intelligence "
        "and transforming communications."
    )
    assert e["committee_code"] == "SSCM34" and e["sub_cmte"] == "Telecommunications and Media Subcommittee"
    assert e["committee"] == "Commerce, Science, and Transportation" and e["room"] == "SR-253"
    assert e["documents"] == []


def test_joint_commission_in_a_house_room(meetings):
    e = meetings["338692"]
    assert e["datetime"] == "2026-07-30T18:00:00Z"  # 02:00 PM EDT
    assert e["committee_code"] == "JCSE00" and e["room"] == "CHOB-210"
    assert e["senate_cable_channel"] == ""  # element present but blank: missing for this item
    assert e["last_update"] == "2026-07-27T20:55:55Z"


def test_video_placeholders_and_closed_hearings(meetings):
    placeholder = meetings["338700"]  # <video_url>…?comm=xxxx&filename=xxxx080526</video_url>
    assert placeholder["video_url"] == "" and placeholder["event_url"] == ""
    assert placeholder["datetime"] == "2026-08-05T14:15:00Z"
    closed = meetings["338703"]  # Closed Hearing, empty <video_url>
    assert closed["meeting_type"] == "Closed Hearing" and closed["event_url"] == ""
    assert closed["datetime"] == "2026-08-05T19:00:00Z" and closed["room"] == "SVC-217"


def test_source_text_is_the_meeting_as_published(meetings):
    text = FULL.read_text("utf-8")
    for e in meetings.values():
        assert e["source_text"].startswith("<meeting>") and e["source_text"].endswith("</meeting>")
        assert e["source_text"] in text
        assert "<identifier>%s</identifier>" % e["identifier"] in e["source_text"]


def test_winter_meeting_is_converted_with_standard_time():
    # The same real meeting moved into January (EST, UTC-5): 09:45 local is 14:45Z.
    body = FULL.read_bytes().replace(
        b"<date_iso_8601>2026-07-30</date_iso_8601>", b"<date_iso_8601>2026-01-29</date_iso_8601>", 1
    )
    e = parse(Spider, body, URL, XmlResponse).by_key()["338684"]
    assert e["datetime"] == "2026-01-29T14:45:00Z"


def test_no_hearings_scheduled_is_empty_not_a_failure():
    assert parse(Spider, EMPTY, URL, XmlResponse).events == []


@pytest.mark.parametrize(
    "body, exception",
    [
        (truncate(FULL.read_bytes()), MalformedDocument),
        (FULL.read_bytes().replace(b"css_meetings_scheduled>", b"css_meetings>"), UnexpectedDocument),
        (NOT_FOUND.read_bytes(), ErrorPage),
        (b"", MalformedDocument),
    ],
    ids=["truncated", "wrong_root", "html_error_page", "empty_body"],
)
def test_bad_documents_raise(body, exception):
    with pytest.raises(exception):
        parse(Spider, body, URL, XmlResponse)


def test_crawl_twice(crawl, couch_uri, frozen_now):
    runs = crawl_twice(crawl, "senate_committee_hearings", [FULL], couch_uri, 17)
    doc = runs.docs["2026-07-30T13:45:00Z-senate_committee_hearings-338684"]
    assert doc["source_url"] == URL and doc["committee_code"] == "SSHR00"
    rows = runs.store.query("vd_events", "by_committee_datetime", startkey=["SSFR00"], endkey=["SSFR00", {}])
    assert [r.id.split("-")[-1] for r in rows] == ["338688", "338702", "338703"]


def test_crawl_of_the_empty_schedule_is_a_success_with_no_events(crawl, sqlite_uri):
    runs = crawl_twice(crawl, "senate_committee_hearings", [EMPTY], sqlite_uri, 0)
    assert runs.first["empty"] is True and "No committee hearings scheduled" in runs.first["source_text"]


def test_crawl_of_a_wrong_document_is_a_logged_failure(crawl, tmp_path, sqlite_uri):
    body = FULL.read_bytes().replace(b"css_meetings_scheduled>", b"css_meetings>")
    crawl_bad(
        crawl, "senate_committee_hearings", tmp_path / "hearings.xml", body, sqlite_uri, "UnexpectedDocument"
    )


def test_smoke():
    assert Spider.frequency_hours == 2.0 and Spider.listing_urls == (URL,)
    assert sorted(Spider.recording_urls()) == sorted([FULL.resolve().as_uri(), EMPTY.resolve().as_uri()])
    assert Spider.custom_settings["DOWNLOAD_DELAY"] >= 1


def test_a_stream_named_for_another_day_is_not_the_meetings_event_url(meetings):
    """Real recording: of 17 meetings, the HELP meeting of 30 July links help072926 and the Foreign
    Relations one foreign073036 (a typo); every other stream's file name carries its meeting's date."""
    other_day = {k for k, e in meetings.items() if e["video_url"] and e["event_url"] == ""}
    assert {meetings[k]["video_file_date"] for k in other_day} == {"2026-07-29", "2036-07-30"}
    assert len(other_day) == 2
    for e in meetings.values():
        if e["event_url"]:
            assert e["event_url"] == e["video_url"] and e["video_file_date"] == e["datetime"][:10]
