"""``-a url=`` on a listing: a recorded Clerk index, Senate vote menu or committee
feed is followed like the live listing, and what it lists is read from the files beside it."""

from __future__ import annotations

import json
import shutil

from tests.conftest import recording
from tests.support.cli_main import run_main

FEED = recording("gov/house_committee_rss/docshouse_sy00_live.xml")
MEETING = recording("gov/house_committee_meeting/meeting-115955.xml")
FIRST_ENCLOSURE = "http://docs.house.gov/Meetings/SY/SY00/20260722/119484/HHRG-119-SY00-20260722.xml"


def dump(db: str, uri: str) -> list[dict]:
    proc = run_main("dump", db, store_uri=uri)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_a_recorded_feed_is_followed_to_the_documents_beside_it(crawl, tmp_path, sqlite_uri):
    shutil.copy(FEED, tmp_path / FEED.name)
    # Derived: a real recorded meeting document, saved under the file name the feed's first item
    # encloses (the recordings hold no meeting that this feed lists); the second item is not there.
    shutil.copy(MEETING, tmp_path / FIRST_ENCLOSURE.rsplit("/", 1)[1])
    proc = crawl("house_committee_meetings", (tmp_path / FEED.name).as_uri(), sqlite_uri)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (
        "WARNING: 1 documents listed by %s are not beside it (skipped): HMKP-119-SY00-20260721.xml"
        % (tmp_path / FEED.name).as_uri()
    ) in proc.stderr
    (event,) = dump("vd_events", sqlite_uri)
    assert event["source_url"] == FIRST_ENCLOSURE  # provenance: the upstream URL the feed gave
    assert event["replayed_from"] == (tmp_path / "HHRG-119-SY00-20260722.xml").as_uri()
    (log,) = dump("vd_log", sqlite_uri)
    assert log["result"] == "success" and log["input"] == "replay" and log["responses"] == 2
    assert log["source_url"] == (tmp_path / FEED.name).as_uri() and log["not_beside_count"] == 1


def test_the_clerk_index_follows_its_pages_beside_it(crawl, sqlite_uri):
    index = recording("gov/house_clerk_index/index.asp")
    proc = crawl("house_votes", index.as_uri(), sqlite_uri)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (log,) = dump("vd_log", sqlite_uri)
    # index.asp and its ROLL_000.asp page (beside it) were read; no roll XML of 2020 is recorded.
    assert log["result"] == "success" and log["responses"] == 2
    assert log["empty"] is False and log["not_beside_count"] > 100
    assert "roll253.xml" in proc.stderr and "ErrorPage" not in proc.stderr


def test_the_senate_vote_menu_is_read_as_a_listing(crawl, sqlite_uri):
    menu = recording("gov/senate_vote_menu/senate-vote-menu-119-1.xml")
    proc = crawl("senate_votes", menu.as_uri(), sqlite_uri)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (
        "10 documents listed by %s are not beside it (skipped): vote_119_1_00659.xml" % menu.as_uri()
        in proc.stderr
    )
    (log,) = dump("vd_log", sqlite_uri)
    assert log["result"] == "success" and log["not_beside_count"] == 10


def test_a_page_that_is_neither_fails_with_the_documents_error(crawl, sqlite_uri, tmp_path):
    page = tmp_path / "page.html"
    page.write_text("<html><head><title>Not here</title></head><body>gone</body></html>")
    proc = crawl("house_votes", page.as_uri(), sqlite_uri)
    assert proc.returncode == 1  # the run failed; the run log says why
    (log,) = dump("vd_log", sqlite_uri)
    assert log["result"] == "ErrorPage" and "is an HTML page, not rollcall-vote XML" in log["error_message"]


def test_a_listed_link_no_request_can_be_made_of_is_dropped_and_the_listing_read_on(
    crawl, tmp_path, sqlite_uri
):
    """Derived from the recorded feed: its second item's enclosure replaced by ``http://[::1/x.xml``
    (an unclosed IPv6 literal), placed first. The join raised in the listing's callback, so the
    listing stopped there: no meeting after it was requested, and the run failed with ValueError.
    Now that item is dropped with its reason (BadLink) and the feed's other meeting is stored."""
    second = "http://docs.house.gov/Meetings/SY/SY00/20260721/119493/HMKP-119-SY00-20260721.xml"
    feed = FEED.read_text()
    first_item = feed[feed.index("<item>") : feed.index("</item>") + len("</item>")]
    second_item = feed[
        feed.index("<item>", feed.index("</item>")) : feed.index("</item>", feed.index(second))
    ]
    bad_item = second_item.replace(second, "http://[::1/x.xml") + "</item>"
    variant = feed.replace(first_item, bad_item + first_item, 1)
    (tmp_path / FEED.name).write_text(variant)
    shutil.copy(MEETING, tmp_path / FIRST_ENCLOSURE.rsplit("/", 1)[1])  # as in the test above
    proc = crawl("house_committee_meetings", (tmp_path / FEED.name).as_uri(), sqlite_uri)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert (
        "record dropped (record:BadLink) from %s: the meeting XML of feed item 119493 is not a URL"
        % (tmp_path / FEED.name).as_uri()
    ) in proc.stderr
    (event,) = dump("vd_events", sqlite_uri)
    assert event["source_url"] == FIRST_ENCLOSURE
    (log,) = dump("vd_log", sqlite_uri)
    assert log["result"] == "success", log
    assert log["dropped"] == {"record:BadLink": 1}, log
