"""senate_floor_schedule: the two real floor_schedule.json snapshots, failure modes, a real crawl."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime

import pytest

from tests.conftest import recording
from tests.spiders.gov_support import crawl_bad, crawl_twice, parse, truncate
from votersdaily.sources.errors import ErrorPage, MalformedDocument, UnexpectedDocument
from votersdaily.spiders.senate_floor_schedule import SenateFloorScheduleSpider as Spider

START = recording("gov/senate_floor_schedule/floor_schedule_start.json")
END = recording("gov/senate_floor_schedule/floor_schedule_end.json")
SESSION_DAY = recording("gov/senate_floor_schedule/floor_schedule_session_day_2026-09-30_wayback.json")
SESSION_DAY_META = recording(
    "gov/senate_floor_schedule/floor_schedule_session_day_2026-09-30_wayback.json.meta.json"
)
NOT_FOUND = recording("gov/house_docs_floor/billsthisweek_20260928_NEGATIVE_file_not_found.html")
URL = "https://www.senate.gov/legislative/schedule/floor_schedule.json"


def test_start_snapshot():
    (e,) = parse(Spider, START, URL).events
    # conveneYear/Month/Day/Hour/Minutes "2026" "10" "05" "16" "00": 4:00 PM EDT
    assert e["datetime"] == "2026-10-05T20:00:00Z"
    assert e["unique_key"] == e["convene_date"] == "2026-10-05"
    assert e["_id"] == "2026-10-05T20:00:00Z-senate_floor_schedule-2026-10-05"
    assert e["title"] == "Senate convenes" and e["description"] is None
    assert (e["branch"], e["entity"]) == ("Legislative", "Senate")
    assert (
        e["event_url"]
        == e["stream_url"]
        == "https://www.senate.gov/isvp/stv.html?type=live&comm=stv&filename=stv100526"
    )
    assert (
        e["convene_time"] == "16:00" and e["convene_offset_minutes"] == 15
    )  # key spelled "coveneOffsetMinutes"
    assert e["session_link"] == "https://www.senate.gov/legislative/floor_activity_pail.htm"
    assert (
        e["out_of_session_link"]
        == "https://www.senate.gov/legislative/LIS/floor_activity/all-floor-activity-files.htm"
    )
    # "2026-10-01T09:34-05:00": the offset is true (see test_last_updated_offset_is_the_true_one).
    assert e["last_updated_published"] == "2026-10-01T09:34-05:00"
    assert e["last_updated"] == "2026-10-01T14:34:00Z"


def test_end_snapshot_gives_the_next_convening():
    (e,) = parse(Spider, END, URL).events
    assert e["datetime"] == "2026-10-06T17:30:00Z"  # 13:30 EDT
    assert e["unique_key"] == "2026-10-06"
    assert e["event_url"].endswith("filename=stv100626")
    assert e["last_updated"] == "2026-10-05T20:02:00Z"  # "2026-10-05T15:02-05:00"


def test_last_updated_offset_is_the_true_one():
    """The Wayback capture's sidecar keeps senate.gov's own ``Last-Modified``: the file changed a
    minute after ``lastUpdated`` read at its -05:00 offset, an hour after it read as EDT."""
    (e,) = parse(Spider, SESSION_DAY, URL).events
    assert e["datetime"] == "2026-09-30T14:15:00Z" and e["unique_key"] == "2026-09-30"  # 10:15 EDT
    assert e["last_updated_published"] == "2026-09-29T19:17-05:00"
    assert e["last_updated"] == "2026-09-30T00:17:00Z"
    headers = json.loads(SESSION_DAY_META.read_text("utf-8"))["response_headers"]
    modified = parsedate_to_datetime(headers["x-archive-orig-last-modified"])
    updated = datetime.fromisoformat(e["last_updated"])
    assert timedelta(0) <= modified - updated < timedelta(minutes=5), (modified, updated)


@pytest.mark.parametrize(
    "stamp, utc",
    [("2026-09-29T19:17-04:00", "2026-09-29T23:17:00Z"), ("2026-09-29T19:17", "2026-09-29T23:17:00Z")],
    ids=["other_offset", "no_offset_is_eastern"],
)
def test_last_updated_variants(stamp, utc):
    """Derived from the real session-day snapshot: its ``lastUpdated`` rewritten."""
    body = SESSION_DAY.read_bytes().replace(b"2026-09-29T19:17-05:00", stamp.encode())
    (e,) = parse(Spider, body, URL).events
    assert e["last_updated"] == utc


def test_source_text_is_the_json_object_as_published():
    for path in (START, END):
        (e,) = parse(Spider, path, URL).events
        text = path.read_text("utf-8")
        assert e["source_text"] in text  # tabs, spaces and the trailing blanks kept
        assert e["source_text"].startswith('{ "coveneOffsetMinutes"') and e["source_text"].endswith("}")
        assert json.loads(e["source_text"]) == json.loads(text)["floorProceedings"][0]


def test_winter_convening_uses_standard_time():
    body = START.read_bytes().replace(b'"conveneMonth": "10"', b'"conveneMonth": "01"')
    (e,) = parse(Spider, body, URL).events
    assert e["datetime"] == "2026-01-05T21:00:00Z"  # 16:00 EST


def test_no_convening_listed_is_empty():
    text = START.read_text("utf-8")
    start = text.index("[") + 1
    body = (text[:start] + " " + text[text.rindex("]") :]).encode()
    assert json.loads(body)["floorProceedings"] == []
    assert parse(Spider, body, URL).events == []


@pytest.mark.parametrize(
    "body, exception",
    [
        (truncate(START.read_bytes()), MalformedDocument),
        (START.read_bytes().replace(b'"floorProceedings"', b'"proceedings"'), UnexpectedDocument),
        (START.read_bytes().replace(b'"conveneHour": "16",', b""), UnexpectedDocument),
        (b"[" + START.read_bytes() + b"]", UnexpectedDocument),
        (NOT_FOUND.read_bytes(), ErrorPage),
    ],
    ids=["truncated", "wrong_key", "missing_hour", "array_root", "html_error_page"],
)
def test_bad_documents_raise(body, exception):
    with pytest.raises(exception):
        parse(Spider, body, URL)


def test_crawl_both_snapshots_twice(crawl, sqlite_uri, frozen_now):
    runs = crawl_twice(crawl, "senate_floor_schedule", [START, END], sqlite_uri, 2)
    assert set(runs.docs) == {
        "2026-10-05T20:00:00Z-senate_floor_schedule-2026-10-05",
        "2026-10-06T17:30:00Z-senate_floor_schedule-2026-10-06",
    }
    assert all(d["source_url"] == URL for d in runs.docs.values())
    assert runs.first["source_text"] == START.read_text("utf-8")


def test_crawl_of_a_truncated_snapshot_is_a_logged_failure(crawl, tmp_path, sqlite_uri):
    crawl_bad(
        crawl,
        "senate_floor_schedule",
        tmp_path / "floor_schedule.json",
        truncate(START.read_bytes()),
        sqlite_uri,
        "MalformedDocument",
    )


def test_smoke():
    assert Spider.frequency_hours == 1.0 and Spider.listing_urls == (URL,)
    assert sorted(Spider.recording_urls()) == sorted(p.resolve().as_uri() for p in (START, END, SESSION_DAY))
