"""``export ics|json``: read back with an independent parser (the ``ics`` package), on both backends."""

from __future__ import annotations

import io
import json
from datetime import UTC, date, datetime

import ics
import pytest

from tests.feeds.events import (
    CANCELLED,
    HEARING_ALL_DAY,
    LIVE,
    MOVED_NEW,
    MOVED_OLD,
    ORDER,
    VOTE,
    WHITE_HOUSE,
    load_events,
)
from votersdaily.feeds.export import export
from votersdaily.feeds.query import EventFilter, iter_rows


def uid(doc: dict) -> str:
    return "%s/%s@votersdaily" % (doc["parser_name"], doc["unique_key"])


def vevent_blocks(text: str) -> dict[str, str]:
    """UID → the unfolded text of its VEVENT (for properties the ics package does not expose)."""
    unfolded = text.replace("\r\n", "\n").replace("\n ", "").replace("\n\t", "")
    blocks = {}
    for chunk in unfolded.split("BEGIN:VEVENT")[1:]:
        body = chunk.split("END:VEVENT")[0]
        line = next(ln for ln in body.split("\n") if ln.startswith("UID:"))
        blocks[line[4:]] = body
    return blocks


def run_export(store, fmt: str, **filters) -> str:
    out = io.BytesIO()
    export(store, fmt, EventFilter(**filters), out)
    return out.getvalue().decode("utf-8")


def parse_ics(text: str) -> dict[str, ics.Event]:
    calendar = ics.Calendar(text)
    events = {e.uid: e for e in calendar.events}
    assert len(events) == len(calendar.events), "duplicate UIDs"
    return events


@pytest.fixture
def loaded(store):
    load_events(store)
    return store


def test_ics_round_trip(loaded, cli, store_uri):
    result = cli("export", "ics", store_uri=store_uri)
    assert result.returncode == 0, result.stderr
    text = result.stdout  # the fixture reads it in text mode: CRLF became LF
    assert text.startswith("BEGIN:VCALENDAR\n") and text.endswith("END:VCALENDAR\n")
    raw = run_export(loaded, "ics")
    assert raw.replace("\r\n", "\n") == text
    assert all(line.endswith("\r") for line in raw.split("\n")[:-1]), "RFC 5545 lines end in CRLF"
    assert all(len(line.encode()) <= 76 for line in raw.split("\r\n")), "lines are folded at 75 octets"
    events = parse_ics(text)
    assert set(events) == {uid(d) for d in LIVE}

    vote = events[uid(VOTE)]
    assert vote.name == "Roll Call 314: On Passage"
    assert vote.begin.datetime == datetime(2026, 9, 16, 23, 5, tzinfo=UTC)
    assert not vote.all_day
    assert vote.url == "https://clerk.example.gov/Votes/2026314"
    assert vote.categories == {"Legislative", "House of Representatives"}
    assert vote.description.startswith("Retire, through; Ownership Act")
    assert "https://example.gov/t_votes/119-2-314.xml" in vote.description
    assert vote.status == "CONFIRMED"

    hearing = events[uid(HEARING_ALL_DAY)]
    assert hearing.all_day
    assert hearing.begin.date() == date(2026, 9, 17)
    assert hearing.end.date() == date(2026, 9, 20)  # DTEND of DATE events is exclusive
    blocks = vevent_blocks(text)
    assert "DTSTART;VALUE=DATE:20260917" in blocks[uid(HEARING_ALL_DAY)]
    # No URL of its own: the source document is the URL.
    assert hearing.url == HEARING_ALL_DAY["source_url"]

    assert events[uid(CANCELLED)].status == "CANCELLED"
    assert events[uid(WHITE_HOUSE)].categories == {"Executive", "White House"}
    assert events[uid(ORDER)].all_day

    # Every time is UTC (or a DATE): no TZID anywhere, every DTSTART/DTEND with a time ends in Z.
    assert "TZID" not in text
    for line in text.split("\n"):
        if line.startswith(("DTSTART:", "DTEND:", "DTSTAMP:")):
            assert line.endswith("Z"), line


def test_reschedule_keeps_uid_and_raises_sequence(loaded):
    text = run_export(loaded, "ics")
    events = parse_ics(text)
    moved = events[uid(MOVED_NEW)]
    assert moved.begin.datetime == datetime(2026, 9, 22, 15, 0, tzinfo=UTC)
    assert MOVED_OLD["datetime"].replace("-", "").replace(":", "") not in text
    blocks = vevent_blocks(text)
    assert "SEQUENCE:1" in blocks[uid(MOVED_NEW)].split("\n")
    assert "SEQUENCE:0" in blocks[uid(VOTE)].split("\n")


def test_json_feed(loaded, cli, store_uri):
    result = cli("export", "json", "--committee", "SSFR00", store_uri=store_uri)
    assert result.returncode == 0, result.stderr
    feed = json.loads(result.stdout)
    assert feed["filters"] == {"committee": "SSFR00"}
    assert feed["count"] == 2
    assert [e["_id"] for e in feed["events"]] == [HEARING_ALL_DAY["_id"], MOVED_NEW["_id"]]
    for event in feed["events"]:
        assert "source_text" not in event and "_rev" not in event
        assert "superseded_by" not in event
    expected = {k: v for k, v in HEARING_ALL_DAY.items() if k != "source_text"}
    assert feed["events"][0] == expected
    assert "SECRET-SOURCE-TEXT" not in result.stdout


@pytest.mark.parametrize(
    "filters, expected",
    [
        ({}, LIVE),
        ({"branch": "Executive"}, [WHITE_HOUSE]),
        ({"branch": "Legislative"}, [VOTE, HEARING_ALL_DAY, CANCELLED, MOVED_NEW]),
        ({"entity": "Senate"}, [HEARING_ALL_DAY, CANCELLED, MOVED_NEW]),
        ({"parser": "t_hearings"}, [HEARING_ALL_DAY, CANCELLED, MOVED_NEW]),
        ({"committee": "SSJU00"}, [CANCELLED]),
        ({"committee": "NOPE00"}, []),
        ({"since": "2026-09-17", "until": "2026-09-20"}, [HEARING_ALL_DAY, CANCELLED]),
        ({"until": "2026-09-16"}, [WHITE_HOUSE, VOTE]),
        ({"since": "2026-09-22T15:00:00Z"}, [MOVED_NEW, ORDER]),
        ({"branch": "Legislative", "entity": "Senate", "since": "2026-09-18"}, [CANCELLED, MOVED_NEW]),
        ({"parser": "t_hearings", "committee": "SSFR00", "until": "2026-09-21"}, [HEARING_ALL_DAY]),
    ],
)
def test_filters(loaded, filters, expected):
    ordered = sorted(expected, key=lambda d: d["datetime"])
    feed = json.loads(run_export(loaded, "json", **filters))
    assert [e["_id"] for e in feed["events"]] == [d["_id"] for d in ordered]
    assert set(parse_ics(run_export(loaded, "ics", **filters))) == {uid(d) for d in expected}


def test_pagination_matches_one_query(loaded):
    for view, low, high in (
        ("by_datetime", None, None),
        ("by_branch_datetime", ["Legislative", ""], ["Legislative", {}]),
    ):
        whole = [r.id for r in loaded.query("vd_events", view, startkey=low, endkey=high, include_docs=False)]
        for page in (1, 2, 3):
            assert [
                r.id for r in iter_rows(loaded, "vd_events", view, low, high, page=page, include_docs=False)
            ] == whole


def test_bad_filter_is_a_clear_error(loaded, cli, store_uri):
    result = cli("export", "ics", "--since", "not a date", store_uri=store_uri)
    assert result.returncode == 2
    assert "not a date or datetime" in result.stderr
    result = cli("export", "json", "--since", "2026-09-20", "--until", "2026-09-01", store_uri=store_uri)
    assert result.returncode == 2 and "before --since" in result.stderr


def test_empty_store_gives_an_empty_feed(sqlite_uri, cli):
    assert cli("views", "push", store_uri=sqlite_uri).returncode == 0  # export never creates a store
    result = cli("export", "ics", store_uri=sqlite_uri)
    assert result.returncode == 0, result.stderr
    assert ics.Calendar(result.stdout).events == set()
    result = cli("export", "json", store_uri=sqlite_uri)
    assert json.loads(result.stdout)["count"] == 0
