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
    crawled,
    events_of,
    html_response,
    response,
    spider_for,
    stored,
)
from votersdaily.feeds.query import EventFilter
from votersdaily.sources.errors import ErrorPage, MalformedDocument
from votersdaily.spiders.house_floor import HouseFloorSpider

PRO_FORMA = recording("gov/house_floor_summary/20261001.xml")
SESSION = recording("gov/house_floor_summary/20260902.xml")
NEW_CONGRESS = recording("gov/house_floor_summary/20250103.xml")
URL_NEW_CONGRESS = "https://clerk.house.gov/floor/20250103.xml"
SINE_DIE = b"The Speaker announced that the House do now adjourn Sine Die."
URL_PRO_FORMA = "https://clerk.house.gov/floor/20261001.xml"
URL_SESSION = "https://clerk.house.gov/floor/20260902.xml"


@pytest.fixture
def spider():
    return spider_for(HouseFloorSpider)


def test_contract():
    check_spider_contract(HouseFloorSpider)


def test_pro_forma_day(spider):
    events = by_key(events_of(spider, response(URL_PRO_FORMA, PRO_FORMA)))
    assert list(events) == [
        "119-%s" % n for n in ("45150", "45148", "45147", "45146", "45145", "45144", "44997")
    ]  # newest first
    adjourn = events["119-45150"]
    assert adjourn["_id"] == "2026-10-01T15:33:10Z-house_floor-119-45150"  # 20261001T11:33:10 EDT
    assert adjourn["act_id"] == "H61000" and adjourn["action_item"] == ""
    assert adjourn["update_datetime"] == "2026-10-01T15:54:00Z"
    assert adjourn["action_time_text"] == "11:33:10 A.M. -"
    assert (adjourn["branch"], adjourn["entity"]) == ("Legislative", "House of Representatives")
    assert adjourn["event_url"] == "https://clerk.house.gov/floorsummary/floor.aspx?day=20261001#45150"
    assert (adjourn["legislative_day"], adjourn["congress"], adjourn["session"]) == ("2026-10-01", 119, 2)
    message = events["119-45148"]
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
    convened = events["119-44997"]
    assert convened["datetime"] == "2026-10-01T15:30:00Z" and convened["act_id"] == "H20100"
    assert convened["title"] == "The House convened, starting a new legislative day."
    assert convened["source_text"].startswith('<floor_action act-id="H20100"')
    assert convened["source_text"].endswith("</floor_action>")


def test_session_day(spider):
    events = by_key(events_of(spider, response(URL_SESSION, SESSION)))
    assert len(events) == 41
    passage = events["119-42549"]
    assert passage["_id"] == "2026-09-02T20:50:15Z-house_floor-119-42549"  # 4:50:15 P.M. EDT
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
    sponsorship = events["119-42557"]  # nested duplicate <a rel="bill"> tags
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
    assert '— "To amend the FAST Act' in events["119-42546"]["description"]
    assert events["119-42514"]["datetime"] == "2026-09-02T14:00:00Z"
    assert events["119-42563"]["datetime"] == "2026-09-02T23:14:35Z"


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
        ("Pursuant to clause 12 of rule I. The House met.", "Pursuant to clause 12 of rule I."),
        ("Amends title V. Then.", "Amends title V."),
        (
            "Pursuant to H. Res. 5, the Journal was approved. Next.",
            "Pursuant to H. Res. 5, the Journal was approved.",
        ),
        ("Mr. John F. Kennedy spoke. Then.", "Mr. John F. Kennedy spoke."),
    ],
)
def test_title_is_the_first_sentence_not_cut_at_abbreviations(description, title):
    assert HouseFloorSpider._parse_title("", description) == title
    assert HouseFloorSpider._parse_title("H.R. 7", description) == "H.R. 7: " + title


def test_sentence_ends_at_rule_i_in_the_real_summary(spider):
    events = by_key(events_of(spider, response(URL_PRO_FORMA, PRO_FORMA)))
    assert events["119-45150"]["title"] == (
        "The Speaker announced that the House do now adjourn pursuant to clause 13 of Rule I."
    )


def sittings(events) -> dict[tuple[int, int], list[str]]:
    """(congress, session) → the unique-ids of its actions, oldest first."""
    out: dict[tuple[int, int], list[str]] = {}
    for event in sorted(events, key=lambda e: e["datetime"]):
        out.setdefault((event["congress"], event["session"]), []).append(event["unique_id"])
    return out


OLD_CONGRESS_IDS = ["51304"] + [str(n) for n in range(51330, 51339)]  # 11:00:00 … the sine die 11:57:08


def check_new_congress_day(events) -> None:
    by_sitting = sittings(events)
    assert set(by_sitting) == {(118, 2), (119, 1)}
    assert by_sitting[(118, 2)] == OLD_CONGRESS_IDS
    assert len(by_sitting[(119, 1)]) == 75 and by_sitting[(119, 1)][0] == "4"
    keyed = by_key(events)
    assert keyed["118-51338"]["datetime"] == "2025-01-03T16:57:08Z"  # the sine die adjournment
    assert keyed["119-4"]["datetime"] == "2025-01-03T17:00:00Z"  # noon: the 119th convenes
    assert keyed["119-4"]["_id"] == "2025-01-03T17:00:00Z-house_floor-119-4"
    assert keyed["119-4"]["replaces_key"] == "4"


def test_the_day_a_new_congress_convenes(spider):
    """20250103.xml says congress="119:118" session="2:1": each action gets its own."""
    events = events_of(spider, response(URL_NEW_CONGRESS, NEW_CONGRESS))
    assert len(events) == 85
    check_new_congress_day(events)


@pytest.mark.parametrize(
    "old, new",
    [
        (b'congress="119:118" session="2:1"', b'congress="119" session="1"'),
        (b'congress="119:118" session="2:1"', b'congress="118:119" session="1:2"'),
        (SINE_DIE, b"The Speaker announced that the House do now recess."),
    ],
    ids=["only_the_new_congress_named", "pairs_in_other_orders", "no_sine_die_noon_decides"],
)
def test_new_congress_day_variants(spider, old, new):
    """Derived from the real 20250103.xml: the file names only the Congress that convenes, or names
    the pairs in other orders, or has no sine die adjournment (then noon is the boundary)."""
    body = NEW_CONGRESS.read_bytes()
    assert body.count(old) == 1
    check_new_congress_day(events_of(spider, response(URL_NEW_CONGRESS, body.replace(old, new))))


def test_actions_before_a_sine_die_adjournment_belong_to_the_ending_session(spider):
    """Derived from the real 20261001.xml (119th Congress, 2nd session): its adjournment made a sine
    die one. Whether the file names the ending session or already the next one (the 120th's first),
    every action up to the sine die adjournment is the 2nd session's."""
    body = PRO_FORMA.read_bytes()
    rule_i = b"adjourn pursuant to clause 13 of Rule I."
    named = b'congress="119" session="2"'
    assert body.count(rule_i) == 1 and body.count(named) == 1
    sine_die = body.replace(rule_i, b"adjourn sine die.")
    for attributes in (named, b'congress="120" session="1"'):
        events = events_of(spider, response(URL_PRO_FORMA, sine_die.replace(named, attributes)))
        assert set(sittings(events)) == {(119, 2)}, attributes
        assert {e["unique_key"] for e in events} >= {"119-45150", "119-44997"}


def test_an_unreadable_sine_die_adjournment_fails_the_page(spider):
    """Derived from the real 20261001.xml: its adjournment made a sine die one, with its time
    unreadable. Which session every action belongs to hangs on that time, so the page fails."""
    body = PRO_FORMA.read_bytes().replace(b"adjourn pursuant to clause 13 of Rule I.", b"adjourn sine die.")
    stamp = b'for-search="20261001T11:33:10"'
    assert body.count(stamp) == 1
    with pytest.raises(MalformedDocument, match="sine die adjournment's time"):
        events_of(spider, response(URL_PRO_FORMA, body.replace(stamp, b'for-search="20261001T11:3E:10"')))


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
    assert events["2026-09-02T20:50:15Z-house_floor-119-42549"]["votes"][0]["roll_call"] == 294
    assert log["source_url"] == URL_PRO_FORMA


def test_crawl_invalid_bytes_logs_the_failure(crawl, sqlite_uri, tmp_path):
    crawl_bad_variant(
        crawl, "house_floor", SESSION, b"legislative_activity", "invalid_bytes", sqlite_uri, tmp_path
    )


#: The passage of H.R. 1501 in the real 20260902.xml (41 floor actions), and derived copies of the
#: file with that one action broken: its ``unique-id`` removed, or its time unreadable.
PASSAGE = b' unique-id="42549">\n<action_time for-search="20260902T16:50:15">'
NO_UNIQUE_ID = SESSION.read_bytes().replace(PASSAGE, PASSAGE.replace(b' unique-id="42549"', b""), 1)
BAD_TIME = SESSION.read_bytes().replace(PASSAGE, PASSAGE.replace(b"T16:50:15", b"T16:5O:15"), 1)


@pytest.mark.parametrize(
    "body, reason",
    [(NO_UNIQUE_ID, "record:MalformedDocument"), (BAD_TIME, "record:ValueError")],
    ids=["no_unique_id", "time_unreadable"],
)
def test_one_bad_floor_action_is_dropped_the_rest_kept(spider, body, reason):
    """Derived from the real 20260902.xml: one floor action broken. It is dropped with its reason;
    the other 40 actions of the day are kept, as the real file gives them."""
    assert body != SESSION.read_bytes()
    kept = by_key(events_of(spider, response(URL_SESSION, body)))
    assert len(kept) == 40 and "119-42549" not in kept
    whole = by_key(events_of(spider_for(HouseFloorSpider), response(URL_SESSION, SESSION)))
    for key, event in kept.items():  # each kept action as the unbroken file gives it
        assert {**event, "access_datetime": None} == {**whole[key], "access_datetime": None}
    assert spider.crawler.stats.get_value("events/dropped/%s" % reason) == 1
    assert spider.crawler.stats.get_value("events/dropped") == 1


def test_crawl_stores_the_other_floor_actions_and_logs_the_dropped_one(crawl, sqlite_uri, tmp_path):
    page = tmp_path / "20260902.xml"
    page.write_bytes(NO_UNIQUE_ID)  # derived: see NO_UNIQUE_ID
    crawled(crawl("house_floor", [page], sqlite_uri, env={"VOTERSDAILY_FROZEN_NOW": "2026-10-02T18:00:00Z"}))
    events, (log,) = stored(sqlite_uri)
    assert len(events) == 40 and not [k for k in events if k.endswith("-119-42549")]
    assert (log["result"], log["insert_count"], log["dropped"]) == (
        "success",
        40,
        {"record:MalformedDocument": 1},
    )
    (record,) = log["dropped_records"]
    assert record["reason"] == "record:MalformedDocument"
    assert record["message"] == "%s: the floor_action on line 87 has no unique-id" % page.resolve().as_uri()


def test_events_stored_under_the_old_key_are_replaced_not_duplicated(crawl, store_uri):
    """house_floor 1.0 (tests/legacy_spiders.py) stored these actions under the bare unique-id. The
    current spider stores each under ``<congress>-<unique-id>`` and the store marks the old document
    ``replaced_by`` it: one live document per action, no reschedule; a further run changes nothing."""
    paths = [PRO_FORMA, NEW_CONGRESS]
    legacy = ("-s", "SPIDER_MODULES=tests.legacy_spiders")
    crawled(
        crawl(
            "house_floor", paths, store_uri, *legacy, env={"VOTERSDAILY_FROZEN_NOW": "2026-10-02T18:00:00Z"}
        )
    )
    old, _ = stored(store_uri)
    assert len(old) == 92 and "2025-01-03T17:00:00Z-house_floor-4" in old
    for hour in ("19", "20"):
        crawled(
            crawl(
                "house_floor", paths, store_uri, env={"VOTERSDAILY_FROZEN_NOW": "2026-10-02T%s:00:00Z" % hour}
            )
        )
    events, (_, migrating, again) = stored(store_uri)
    live = {i: d for i, d in events.items() if not (d.get("replaced_by") or d.get("superseded_by"))}
    assert len(events) == 2 * 92 and len(live) == 92
    assert all(d["unique_key"].startswith(("118-", "119-")) for d in live.values())
    assert not any("superseded_by" in d for d in events.values())  # no false reschedule
    for old_id, doc in old.items():
        new = live[events[old_id]["replaced_by"]]
        assert (new["unique_id"], new["datetime"]) == (doc["unique_key"], doc["datetime"])
        assert events[old_id]["replaced_at"] == "2026-10-02T19:00:00Z"
    feed = EventFilter(parser="house_floor")
    assert {i for i, d in events.items() if feed.matches(d)} == set(live)  # feeds skip replaced documents
    assert (
        events["2025-01-03T16:57:08Z-house_floor-51338"]["replaced_by"]
        == "2025-01-03T16:57:08Z-house_floor-118-51338"
    )
    assert (migrating["insert_count"], migrating["replaced_count"], migrating["superseded_count"]) == (
        92,
        92,
        0,
    )
    assert (again["insert_count"], again["updated_count"], again["unchanged_count"]) == (0, 0, 92)
    assert (again["replaced_count"], again["superseded_count"]) == (0, 0)
