"""house_committee_meetings: docs.house.gov meeting XML (a subcommittee hearing and a
full-committee meeting), discovery through a committee RSS feed, reschedules, bad documents."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.conftest import recording
from tests.spiders.congress_support import (
    VARIANTS,
    check_bad_variant,
    check_spider_contract,
    crawl_bad_variant,
    crawl_twice,
    crawled,
    events_of,
    html_response,
    response,
    spider_for,
    stored,
)
from votersdaily.sources.errors import ErrorPage
from votersdaily.spiders.house_committee_meetings import HouseCommitteeMeetingsSpider

MEETING = recording("gov/house_committee_meeting/meeting-115955.xml")
FEED = recording("gov/house_committee_rss/docshouse_sy00_live.xml")
URL = "https://docs.house.gov/meetings/II/II10/20230523/115955/HHRG-118-II10-20230523.xml"
ID = "2023-05-23T18:00:00Z-house_committee_meetings-115955"


@pytest.fixture
def spider():
    return spider_for(HouseCommitteeMeetingsSpider)


@pytest.fixture
def sample_hearing():
    return recording("gov/house_committee_meeting/sample_hearing.xml")


def test_contract():
    check_spider_contract(HouseCommitteeMeetingsSpider)


def test_subcommittee_hearing(spider):
    (event,) = events_of(spider, response(URL, MEETING))
    assert event["_id"] == ID  # 2023-05-23 14:00 EDT
    assert event["end_datetime"] == "2023-05-23T20:30:00Z"  # 16:30 EDT
    assert event["unique_key"] == "115955" and event["event_id"] == "115955"
    assert event["title"].startswith(
        "Legislative hearing on: • H.R. 188 (Rep. McClintock), “Proven Forest Management"
    )
    assert event["title"].endswith("“Forest Service Flexible Housing Partnerships Act of 2023”")
    assert (event["branch"], event["entity"]) == ("Legislative", "House of Representatives")
    assert event["event_url"] == "https://docs.house.gov/Committee/Calendar/ByEvent.aspx?EventID=115955"
    assert event["description"] == "Subcommittee on Federal Lands (Committee on Natural Resources), 1324 LHOB"
    assert (event["committee_code"], event["committee_name"]) == ("II00", "Committee on Natural Resources")
    assert (event["subcommittee_code"], event["subcommittee_name"]) == (
        "II10",
        "Subcommittee on Federal Lands",
    )
    assert (event["room"], event["building"], event["location"]) == ("1324", "LHOB", "1324 LHOB")
    assert (event["meeting_type"], event["meeting_type_name"], event["meeting_id"]) == (
        "HHRG",
        "Hearing",
        "HHRG115955",
    )
    assert (event["congress"], event["session"], event["meeting_status"]) == (118, 1, "S")
    assert event["rescheduled_dates"] == [
        {"datetime": "2023-05-23T18:00:00Z", "end_datetime": "2023-05-23T20:30:00Z"}
    ]
    assert event["update_datetime"] == "2024-10-08T16:14:32Z"  # 2024-10-08T12:14:32.360 EDT
    docs = event["documents"]
    assert len(docs) == 12 and Counter(d["type"] for d in docs) == {"BR": 9, "SD": 2, "HT": 1}
    assert docs[0]["legis_num"] == "HR 188" and docs[0]["legis_stage"] == "ih"
    assert docs[0]["files"] == [
        {
            "url": "http://docs.house.gov/meetings/II/II10/20230523/115955/BILLS-118HR188ih.pdf",
            "doc_type": "PDF",
            "add_date": "2024-10-08T16:08:47Z",
            "publish_date": "2023-05-16T21:40:01Z",
        }
    ]
    neguse = [d for d in docs if "Neguse" in d["description"]]
    assert len(neguse) == 1 and neguse[0]["legis_num"] == "" and neguse[0]["legis_stage"] == "pih"
    assert docs[-1]["description"] == "Official Transcript 118-30" and docs[-1]["type"] == "HT"
    assert docs[4]["short_desc"] == "“FIRESHEDS Act”"
    assert event["witnesses"] == []  # the meeting XML itself lists none
    assert event["source_text"].startswith('<committee-meeting congress-num="118"')


def test_full_committee_meeting_without_end_time(spider, sample_hearing):
    url = "https://docs.house.gov/meetings/RU/RU00/20140519/102252/HMTG-113-RU00-20140519.xml"
    (event,) = events_of(spider, response(url, sample_hearing))
    assert event["_id"] == "2014-05-19T21:00:00Z-house_committee_meetings-102252"  # 17:00 EDT
    assert event["end_datetime"] is None
    assert event["title"].startswith("H.R. 4435—National Defense Authorization Act for Fiscal Year 2015")
    assert (event["committee_code"], event["committee_name"]) == ("RU00", "Committee on Rules")
    assert (event["subcommittee_code"], event["subcommittee_name"]) == ("", "")
    assert (event["room"], event["building"]) == ("H-313", "CAPITOL")
    assert (event["meeting_type"], event["meeting_type_name"]) == ("HMTG", "Meeting")
    assert event["rescheduled_dates"] == []
    (doc,) = event["documents"]
    assert doc["legis_num"] == "H.R. 4435" and [f["doc_type"] for f in doc["files"]] == ["PDF", "XML"]
    assert doc["files"][1]["url"] == "http://beta.congress.gov/113/bills/hr4435/BILLS-113hr4435ih.xml"


@pytest.mark.parametrize("variant", VARIANTS)
def test_bad_documents_raise_the_matching_error(spider, variant):
    check_bad_variant(spider, URL, MEETING, b"committee-meeting", variant)


def test_html_answer_is_an_error_page(spider):
    body = recording("gov/house_docs_floor/billsthisweek_20260928_NEGATIVE_file_not_found.html").read_bytes()
    with pytest.raises(ErrorPage, match="File Not Found"):
        events_of(spider, html_response(URL, body))


# -- discovery -----------------------------------------------------------------------------------------


def test_feed_items_lead_to_their_meeting_xml_and_the_stub_is_skipped(spider):
    feed_url = "https://docs.house.gov/Committee/RSS.ashx?Code=SY00"
    requests = list(spider.parse_listing(response(feed_url, FEED)))
    assert [(r.url, r.meta["vd_event_id"]) for r in requests] == [
        ("http://docs.house.gov/Meetings/SY/SY00/20260722/119484/HHRG-119-SY00-20260722.xml", "119484"),
        ("http://docs.house.gov/Meetings/SY/SY00/20260721/119493/HMKP-119-SY00-20260721.xml", "119493"),
    ]
    assert all(r.callback == spider.parse_document for r in requests)


def test_feed_that_is_an_error_page_is_reported(spider):
    with pytest.raises(ErrorPage):
        list(
            spider.parse_listing(
                html_response(
                    "https://docs.house.gov/Committee/RSS.ashx?Code=SY00",
                    b"<html><head><title>Error</title></head></html>",
                )
            )
        )


def test_listing_urls_are_the_committee_feeds():
    assert (
        "https://docs.house.gov/Committee/RSS.ashx?Code=SY00"
        in spider_for(HouseCommitteeMeetingsSpider).listing_urls
    )
    assert spider_for(HouseCommitteeMeetingsSpider, committees="RU00, SY00").listing_urls == (
        "https://docs.house.gov/Committee/RSS.ashx?Code=RU00",
        "https://docs.house.gov/Committee/RSS.ashx?Code=SY00",
    )


# -- real crawls into a real store ----------------------------------------------------------------------


def test_crawl_twice(crawl, sqlite_uri, sample_hearing):
    events, (log, _) = crawl_twice(crawl, "house_committee_meetings", [MEETING, sample_hearing], sqlite_uri)
    assert set(events) == {ID, "2014-05-19T21:00:00Z-house_committee_meetings-102252"}
    assert events[ID]["committee_code"] == "II00" and events[ID]["source_url"] == URL
    assert log["source_url"] == URL


def test_moved_meeting_supersedes_its_old_date(crawl, sqlite_uri, tmp_path):
    """The same EventID at a new time: stored under the new datetime, the old one marked superseded."""
    moved = tmp_path / "meeting-115955.xml"
    moved.write_bytes(
        MEETING.read_bytes().replace(
            b"<calendar-date>2023-05-23</calendar-date>\r\n      <start-time>14:00:00</start-time>",
            b"<calendar-date>2023-05-25</calendar-date>\r\n      <start-time>10:00:00</start-time>",
            1,
        )
    )
    assert moved.read_bytes() != MEETING.read_bytes()
    crawled(
        crawl(
            "house_committee_meetings",
            [MEETING],
            sqlite_uri,
            env={"VOTERSDAILY_FROZEN_NOW": "2026-10-02T18:00:00Z"},
        )
    )
    crawled(
        crawl(
            "house_committee_meetings",
            [moved],
            sqlite_uri,
            env={"VOTERSDAILY_FROZEN_NOW": "2026-10-03T18:00:00Z"},
        )
    )
    events, logs = stored(sqlite_uri)
    new_id = "2023-05-25T14:00:00Z-house_committee_meetings-115955"
    assert set(events) == {ID, new_id}
    assert events[ID]["superseded_by"] == new_id and "superseded_by" not in events[new_id]
    assert [log["result"] for log in logs] == ["success", "success"]


def test_crawl_root_swapped_logs_the_failure(crawl, sqlite_uri, tmp_path):
    crawl_bad_variant(
        crawl, "house_committee_meetings", MEETING, b"committee-meeting", "root_swapped", sqlite_uri, tmp_path
    )


#: Derived from the real meeting-115955.xml (no field hearing is recorded): its Capitol-complex room
#: replaced by the field-hearing form of meeting-location, field/{building-name, city, state/@postal-code}.
FIELD_LOCATION = (
    b"<field>\n        <building-name>Tuolumne County Board of Supervisors Chambers</building-name>\n"
    b'        <city>Sonora</city>\n        <state postal-code="CA">California</state>\n      </field>'
)


def test_field_hearing_keeps_its_place(spider):
    body = MEETING.read_bytes()
    start, end = (
        body.index(b"<capitol-complex>"),
        body.index(b"</capitol-complex>") + len(b"</capitol-complex>"),
    )
    (event,) = events_of(spider, response(URL, body[:start] + FIELD_LOCATION + body[end:]))
    assert event["field_hearing"] is True and event["room"] == ""
    assert (event["building"], event["city"], event["state"]) == (
        "Tuolumne County Board of Supervisors Chambers",
        "Sonora",
        "CA",
    )
    assert event["location"] == "Tuolumne County Board of Supervisors Chambers, Sonora, CA"
    assert event["description"].endswith("(Committee on Natural Resources), " + event["location"])
    assert event["_id"] == ID  # the place changes nothing else


def test_capitol_meeting_is_no_field_hearing(spider):
    (event,) = events_of(spider, response(URL, MEETING))
    assert event["field_hearing"] is False and "city" not in event
