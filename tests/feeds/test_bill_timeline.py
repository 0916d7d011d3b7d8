"""One bill followed across sources, end to end from the recordings the project ships.

The spiders crawl their recordings into a real store (embedded SQLite, and PouchDB Server); grouping
the stored events by id finds the bills that two sources name: S. 2403 of the 119th Congress is on
the House's schedule for the week of 14 September 2026 (billsthisweek_20260914.xml, item 409799) and
passed by roll call 314 on 16 September (roll314.xml, legis-num "S 2403"); S. 240 and S. 283 are on
that schedule and in the Clerk's message of 1 October (floor summary 20261001.xml). The timeline of
S. 2403 is then read through the ``by_bill`` view on both stores, ``export json|ics --bill``, and
the site's bill page in headless Chromium (screenshots under test-artifacts/feeds/).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict

import ics
import lxml.html
import pytest

from tests.spiders.congress_support import crawled as crawl_ok
from tests.spiders.congress_support import stored
from tests.support.cli_main import run_main
from tests.support.inprocess import crawl_in_process
from tests.support.services import REPO, cli_environment
from votersdaily.recordings import recording_path
from votersdaily.spiders.house_floor import HouseFloorSpider
from votersdaily.spiders.house_floor_schedule import HouseFloorScheduleSpider
from votersdaily.spiders.house_votes import HouseVotesSpider
from votersdaily.spiders.supreme_court_orders import SupremeCourtOrdersSpider
from votersdaily.store import open_store

SPIDERS = (HouseFloorSpider, HouseFloorScheduleSpider, HouseVotesSpider, SupremeCourtOrdersSpider)
BILL = "s2403-119"
SCHEDULED = "2026-09-14T00:00:00Z-house_floor_schedule-409799"
PASSED = "2026-09-16T23:05:00Z-house_votes-119-2-314"
ARTIFACTS = REPO / "test-artifacts" / "feeds"


def crawl_recordings(store_uri: str) -> str:
    """The store after each spider crawled its recordings (given as files, as ``-a url=``), in this
    process as the ``crawl`` fixture runs a crawl."""
    for cls in SPIDERS:
        urls = ",".join(recording_path(name).resolve().as_uri() for name in cls.recordings)
        argv = [cls.name, "-s", "LOG_LEVEL=INFO", "-a", "url=" + urls]
        crawl_ok(crawl_in_process(argv, cli_environment(store_uri, None)))
    return store_uri


@pytest.fixture(scope="module")
def embedded(tmp_path_factory):
    return crawl_recordings("sqlite:///%s" % (tmp_path_factory.mktemp("bill") / "store.db"))


@pytest.fixture(scope="module", params=["embedded", pytest.param("couchdb", marks=pytest.mark.couchdb)])
def crawled(request):
    """The crawled store of each backend, crawled once for the module's tests."""
    if request.param == "embedded":
        return request.getfixturevalue("embedded")
    server = request.getfixturevalue("couchdb")
    server.reset()
    return crawl_recordings(server.url)


def test_the_cross_source_bills_are_found_by_grouping_the_stored_events_by_id(crawled):
    events, _ = stored(crawled)
    sources: dict[str, set[str]] = defaultdict(set)
    for doc in events.values():
        for bill in doc.get("bill_ids") or ():
            sources[bill].add(doc["parser_name"])
    shared = {bill: names for bill, names in sources.items() if len(names) > 1}
    assert shared == {
        "s2403-119": {"house_floor_schedule", "house_votes"},
        "s240-119": {"house_floor_schedule", "house_floor"},
        "s283-119": {"house_floor_schedule", "house_floor"},
    }


def test_the_views_on_both_stores(crawled):
    store = open_store(crawled)
    try:
        rows = store.query("vd_events", "by_bill", startkey=[BILL], endkey=[BILL, {}])
        assert [(r.id, r.key) for r in rows] == [
            (SCHEDULED, [BILL, "2026-09-14T00:00:00Z"]),
            (PASSED, [BILL, "2026-09-16T23:05:00Z"]),
        ]
        rows = store.query("vd_events", "by_bill", startkey=["hres5-119"], endkey=["hres5-119", {}])
        assert len(rows) == 11 and all(r.doc["parser_name"] == "house_floor" for r in rows)
        assert [r.key[1] for r in rows] == sorted(r.key[1] for r in rows)
        (roll,) = store.query("vd_events", "by_vote", key=["h314-119.2026", "2026-09-16T23:05:00Z"])
        assert roll.id == PASSED
        cited = store.query("vd_events", "by_vote", startkey=["h5-119.2025"], endkey=["h5-119.2025", {}])
        assert [r.doc["unique_key"] for r in cited] == ["119-60"]  # "(Roll no. 5)" on 3 January 2025
        (case,) = store.query("vd_events", "by_docket", startkey=["25A319"], endkey=["25A319", {}])
        assert case.doc["case_name"] == "Trump v. Orr"
    finally:
        store.close()


def test_export_by_bill_and_by_docket(crawled):
    result = run_main("export", "json", "--bill", "S2403-119", store_uri=crawled)
    assert result.returncode == 0, result.stderr
    feed = json.loads(result.stdout)
    assert feed["filters"] == {"bill": BILL} and feed["count"] == 2
    steps = [(e["parser_name"], e["datetime"], e["bill_ids"]) for e in feed["events"]]
    assert steps == [
        ("house_floor_schedule", "2026-09-14T00:00:00Z", [BILL]),
        ("house_votes", "2026-09-16T23:05:00Z", [BILL]),
    ]
    assert feed["events"][1]["vote_id"] == "h314-119.2026"
    assert [e["id_evidence"] for e in feed["events"]] == [
        [{"key": "bill_ids", "id": BILL, "field": "legis-num", "text": "S. 2403"}],
        [{"key": "bill_ids", "id": BILL, "field": "legis-num", "text": "S 2403"}],
    ]
    result = run_main("export", "ics", "--bill", BILL, store_uri=crawled)
    calendar = ics.Calendar(result.stdout)
    assert {e.uid for e in calendar.events} == {
        "house_floor_schedule/409799@votersdaily",
        "house_votes/119-2-314@votersdaily",
    }
    assert "S. 2403 (119th Congress)" in result.stdout  # the calendar's name
    result = run_main("export", "json", "--docket", "25a319", store_uri=crawled)
    feed = json.loads(result.stdout)
    assert feed["filters"] == {"docket": "25A319"} and [e["case_name"] for e in feed["events"]] == [
        "Trump v. Orr"
    ]


@pytest.mark.parametrize(
    "option, value, expected",
    [
        ("--bill", "H.R. 1234", "expected <type><number>-<congress>, e.g. hr1234-119"),
        ("--bill", "hr1234", "expected <type><number>-<congress>"),
        ("--bill", "hamdt5-119", "types: hr, hres, hjres, hconres, s, sres, sjres, sconres"),
        ("--docket", "24-123-5", "expected e.g. 24-123, an application 23A456 or an original action 22O141"),
        ("--docket", "hr1-119", "not a Supreme Court docket"),
    ],
)
def test_a_malformed_id_is_a_usage_error_with_the_expected_form(crawled, option, value, expected):
    result = run_main("export", "json", option, value, store_uri=crawled)
    assert result.returncode == 2 and result.stdout == ""
    assert expected in result.stderr and len(result.stderr.strip().splitlines()) <= 2


def test_a_well_formed_id_without_events_is_an_empty_feed_and_a_note(crawled):
    for option, value in (("--bill", "hr99999-119"), ("--docket", "141-Orig")):
        result = run_main("export", "json", option, value, store_uri=crawled)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["count"] == 0
        named = "hr99999-119" if option == "--bill" else "22O141"
        assert (
            result.stderr.strip() == "votersdaily export: no stored event names %s: the feed is empty" % named
        )


CHROMIUM = "/usr/bin/chromium"


@pytest.mark.slow  # Chromium over a bill's timeline page
def test_the_bill_page_in_chromium(embedded, site, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip("Debian's chromium is not installed")
    out = tmp_path / "site"
    built = run_main("site", "build", str(out), store_uri=embedded)
    assert built.returncode == 0, built.stderr
    pages = len(list((out / "bills").glob("*.html"))) + len(list((out / "cases").glob("*.html")))
    events, _ = stored(embedded)
    named = {i for doc in events.values() for i in (doc.get("bill_ids") or []) + (doc.get("dockets") or [])}
    assert pages == len(named) and " %d bill and case pages, " % pages in built.stderr

    # The day page of the vote links the bill's page; the bills index lists it with its sources.
    day = lxml.html.parse(str(out / "days" / "2026-09-16.html")).getroot()
    (link,) = day.cssselect('li[data-id="%s"] a.timeline-link' % PASSED)
    assert (link.get("href"), link.text_content()) == ("../bills/s2403-119.html", "S. 2403 (119th Congress)")
    index = lxml.html.parse(str(out / "bills.html")).getroot()
    assert "(2 events: house_floor_schedule, house_votes)" in index.text_content()
    base = site.mount("/site/", out)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(base + "days/2026-09-16.html")
            page.locator('li[data-id="%s"] a.timeline-link' % PASSED).click()
            page.wait_for_url("**/bills/s2403-119.html")
            assert page.locator("h1").inner_text() == "S. 2403 (119th Congress)"
            steps = page.locator("ol.timeline li.step")
            assert [steps.nth(i).get_attribute("data-id") for i in range(steps.count())] == [
                SCHEDULED,
                PASSED,
            ]
            first, second = steps.nth(0), steps.nth(1)
            assert first.locator("time").first.get_attribute("datetime") == "2026-09-14"
            assert "until Sunday, September 20, 2026" in first.locator(".meta").inner_text()
            assert second.locator("time").first.inner_text() == "Wednesday, September 16, 2026, 7:05 PM EDT"
            assert second.locator(".entity").inner_text() == "House of Representatives"
            assert second.locator("h2").inner_text().startswith("Roll Call 314: On Motion to Suspend")
            assert second.locator(".tally").inner_text().startswith("Passed · Yeas 401 · Nays 14")
            assert (
                second.locator(".evidence").inner_text() == "Named in legis-num: S 2403"
            )  # <q>: quotes by CSS
            assert (
                second.locator("a.source").get_attribute("href")
                == "https://clerk.house.gov/evs/2026/roll314.xml"
            )
            assert first.locator("a.source").get_attribute("href").startswith("https://docs.house.gov/floor/")
            assert page.get_by_role("link", name="Congress.gov").get_attribute("href") == (
                "https://www.congress.gov/bill/119th-congress/senate-bill/2403"
            )
            feed = json.loads(page.request.get(base + "feeds/bill/s2403-119.json").text())
            assert [e["_id"] for e in feed["events"]] == [SCHEDULED, PASSED]
            page.screenshot(path=str(ARTIFACTS / "bill-s2403-119-desktop.png"), full_page=True)
            first.locator("a.day").click()
            page.wait_for_url("**/days/2026-09-14.html")
            assert page.locator('li[data-id="%s"]' % SCHEDULED).count() == 1
            # A case page: the docket's listing row, on the Court's own docket site.
            page.goto(base + "cases/25A319.html")
            assert page.locator("h1").inner_text() == "Supreme Court, No. 25A319: Trump v. Orr"
            phone = browser.new_page(viewport={"width": 390, "height": 844})
            phone.goto(base + "bills/s2403-119.html")
            assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
            phone.screenshot(path=str(ARTIFACTS / "bill-s2403-119-phone.png"), full_page=True)
        finally:
            browser.close()
