"""The built site in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright).

The site is built from the shipped recordings (``crawl --all --offline`` into a fresh embedded store)
and served by the real local HTTP server of the ``site`` fixture. Expected house_votes events are read
from the recordings here; every other spider's events get the generic checks (right day, right column,
sorted, linked feeds). Screenshots of each page at desktop and phone widths go to test-artifacts/feeds/.
"""

from __future__ import annotations

import itertools
import json
import os
import xml.etree.ElementTree as ET
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import ics
import lxml.html
import pytest

from tests.support.services import REPO

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ARTIFACTS = REPO / "test-artifacts" / "feeds"
ZONE = ZoneInfo("America/New_York")  # the default VOTERSDAILY_SITE_TIMEZONE
VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")
pytestmark = [
    pytest.mark.slow,  # Chromium over a site built from `crawl --all --offline`
    pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason="Debian's chromium is not installed"),
]


def css(value: str) -> str:
    """A CSS string literal."""
    return '"%s"' % value.replace("\\", "\\\\").replace('"', '\\"')


def house_vote_expectations() -> list[dict]:
    """What each recorded roll call should look like on the site, read from the XML itself."""
    from votersdaily.recordings import recording_path
    from votersdaily.spiders.house_votes import HouseVotesSpider

    expected = []
    for name in HouseVotesSpider.recordings:
        meta = ET.parse(recording_path(name)).getroot().find("vote-metadata")
        day = datetime.strptime(meta.findtext("action-date"), "%d-%b-%Y")
        etz = meta.find("action-time").get("time-etz")
        local = datetime.combine(day.date(), datetime.strptime(etz, "%H:%M").time(), tzinfo=ZONE)
        expected.append(
            {
                "day": day.date(),
                "roll": "Roll Call %s" % meta.findtext("rollcall-num").strip(),
                "question": meta.findtext("vote-question").strip(),
                "time": "%s %s" % (meta.findtext("action-time").strip(), local.tzname()),
            }
        )
    return expected


def event_day(doc: dict) -> date:
    if doc.get("all_day"):
        return date.fromisoformat(doc["datetime"][:10])
    instant = datetime.strptime(doc["datetime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return instant.astimezone(ZONE).date()


def read_store(uri: str) -> tuple[list[dict], list[dict]]:
    from votersdaily.store import open_store

    store = open_store(uri)
    try:
        events = [d for d in store.iter_docs("vd_events") if not d.get("superseded_by")]
        logs = list(store.iter_docs("vd_log"))
    finally:
        store.close()
    return events, logs


def health_spider_names() -> list[str]:
    """Every event spider, plus the scheduled ingest and laundromat spiders."""
    from scrapy.utils.project import get_project_settings

    from votersdaily.cli.crawl import event_spiders

    os.environ.setdefault("SCRAPY_SETTINGS_MODULE", "votersdaily.settings")
    return [*sorted(event_spiders(get_project_settings())), "ingest", "laundromat"]


def check_placement(out: Path, events: list[dict]) -> dict[date, list[dict]]:
    """Every live event is on its day's page, in its branch's column, sorted by entity then time."""
    by_day: dict[date, list[dict]] = defaultdict(list)
    for doc in events:
        by_day[event_day(doc)].append(doc)
    assert sorted(p.stem for p in (out / "days").glob("*.html")) == sorted(d.isoformat() for d in by_day)
    for day, docs in by_day.items():
        page = lxml.html.parse(str(out / "days" / ("%s.html" % day.isoformat()))).getroot()
        for doc in docs:
            found = page.cssselect(
                "section[data-branch=%s] li[data-id=%s]" % (css(doc["branch"]), css(doc["_id"]))
            )
            assert len(found) == 1, "%s not in the %s column of %s" % (doc["_id"], doc["branch"], day)
            assert (
                found[0].cssselect("h3.title")[0].text_content().startswith(doc["title"])
            )  # + "(justice B)"
            assert bool(found[0].cssselect("time.time")) == (not doc.get("all_day"))
        for section in page.cssselect("section.column"):
            ids = [li.get("data-id") for li in section.cssselect("li.event")]
            docs_here = {d["_id"]: d for d in docs if d["branch"] == section.get("data-branch")}
            assert ids == sorted(
                ids, key=lambda i: (docs_here[i]["entity"], docs_here[i]["datetime"], docs_here[i]["title"])
            )
        assert [s.get("data-branch") for s in page.cssselect("section.column")][:3] == [
            "Executive",
            "Judicial",
            "Legislative",
        ]
    return by_day


def assert_accessible_basics(page) -> None:
    assert page.evaluate("document.documentElement.lang") == "en"
    assert page.locator("h1").count() == 1
    assert page.locator("main#main").count() == 1
    assert page.get_by_role("navigation", name="Site").count() == 1
    assert page.locator("header").count() == 1 and page.locator("footer").count() == 1
    unlabelled = page.evaluate(
        "[...document.querySelectorAll('input')].filter(i => !i.labels || !i.labels.length).length"
    )
    assert unlabelled == 0


def no_horizontal_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


def test_site_in_chromium(cli, site, sqlite_uri, tmp_path, frozen_now):
    crawled = cli("crawl", "--all", "--offline", store_uri=sqlite_uri, timeout=240)
    assert "house_votes" in crawled.stdout, crawled.stderr[-3000:]
    events, logs = read_store(sqlite_uri)
    assert {d["parser_name"] for d in events} >= {"house_votes"}
    out = tmp_path / "site"
    built = cli("site", "build", str(out), store_uri=sqlite_uri)
    assert built.returncode == 0, built.stderr

    by_day = check_placement(out, events)
    days = sorted(by_day)
    today = date.fromisoformat(frozen_now[:10])
    landing = max([d for d in days if d <= today] or days[:1])
    base = site.mount("/site/", out)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORTS["desktop"])
            check_house_votes(page, base)
            check_every_parser(page, base, events)
            check_navigation(page, base, days, landing)
            check_feeds(page, base, events, landing, by_day)
            check_health(page, base, logs)
            screenshots(browser, base, max(by_day, key=lambda d: len(by_day[d])))
        finally:
            browser.close()


def check_house_votes(page, base: str) -> None:
    for vote in house_vote_expectations():
        page.goto("%sdays/%s.html" % (base, vote["day"].isoformat()))
        assert page.locator("h1").get_attribute("data-date") == vote["day"].isoformat()
        assert_accessible_basics(page)
        column = page.locator("section[data-branch=Legislative]")
        item = column.locator("li.event", has_text=vote["roll"] + ":")
        assert item.count() == 1
        assert vote["question"] in item.locator("h3").inner_text()
        assert item.locator(".entity").inner_text() == "House of Representatives"
        assert item.locator("time.time").inner_text() == vote["time"]
        for other in ("Executive", "Judicial"):
            assert (
                page.locator("section[data-branch=%s]" % other).get_by_text(vote["roll"] + ":").count() == 0
            )
        source = item.locator("a.source")
        assert not source.is_visible()
        item.locator("summary").click()
        assert source.is_visible()
        assert source.get_attribute("href").startswith("https://clerk.house.gov/evs/")


def check_every_parser(page, base: str, events: list[dict]) -> None:
    """One event of each spider, found in the browser where it belongs, with its details expandable."""
    first = {}
    for doc in sorted(events, key=lambda d: d["datetime"]):
        first.setdefault(doc["parser_name"], doc)
    for doc in first.values():
        page.goto("%sdays/%s.html" % (base, event_day(doc).isoformat()))
        item = page.locator("section[data-branch=%s] li[data-id=%s]" % (css(doc["branch"]), css(doc["_id"])))
        assert item.count() == 1, doc["_id"]
        # Same-title events of a day carry what tells them apart: "… (justice B)".
        assert item.locator("h3").inner_text().startswith(" ".join(doc["title"].split()))
        assert item.locator("time.time").count() == (0 if doc.get("all_day") else 1)
        item.locator("summary").click()
        assert item.locator("a.source").get_attribute("href") == doc["source_url"]
        assert item.locator("a.source").is_visible()


def check_navigation(page, base: str, days: list[date], landing: date) -> None:
    page.goto(base + "index.html")
    assert page.locator("h1").get_attribute("data-date") == landing.isoformat()
    i = days.index(landing)
    if i > 0:
        page.locator("a[rel=prev]").click()
        page.wait_for_url("**/days/%s.html" % days[i - 1].isoformat())
        assert page.locator("h1").get_attribute("data-date") == days[i - 1].isoformat()
        page.locator("a[rel=next]").click()
        page.wait_for_url("**/days/%s.html" % landing.isoformat())
    if i + 1 < len(days):
        page.locator("a[rel=next]").click()
        page.wait_for_url("**/days/%s.html" % days[i + 1].isoformat())
        assert page.locator("h1").get_attribute("data-date") == days[i + 1].isoformat()
    # The date picker: an exact day, then a day without events (→ the next day with events).
    page.get_by_label("Go to date").fill(days[0].isoformat())
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**/days/%s.html" % days[0].isoformat())
    assert page.locator("#picker-notice").is_hidden()
    gaps = [(a, b) for a, b in itertools.pairwise(days) if (b - a).days > 1]
    if gaps:
        empty_day, after = gaps[0][0] + timedelta(days=1), gaps[0][1]
        page.get_by_label("Go to date").fill(empty_day.isoformat())
        page.get_by_role("button", name="Show").click()
        page.wait_for_url("**/days/%s.html?requested=%s" % (after.isoformat(), empty_day.isoformat()))
        assert empty_day.isoformat() in page.locator("#picker-notice").inner_text()
    # The dates page lists every day.
    page.get_by_role("navigation", name="Site").get_by_role("link", name="All dates").click()
    assert_accessible_basics(page)
    assert page.locator("ul.date-list a").count() == len(days)


def check_feeds(page, base: str, events: list[dict], landing: date, by_day) -> None:
    """The feed links of the landing page's columns serve calendars with that branch's events."""
    page.goto(base + "index.html")
    for branch in sorted({d["branch"] for d in by_day[landing]}):
        href = page.locator(
            "section[data-branch=%s] p.feeds a[type='text/calendar']" % css(branch)
        ).first.get_attribute("href")
        answer = page.request.get(base + href)
        assert answer.ok
        calendar = ics.Calendar(answer.text())
        assert {e.uid for e in calendar.events} == {
            "%s/%s@votersdaily" % (d["parser_name"], d["unique_key"]) for d in events if d["branch"] == branch
        }
        entity_links = page.locator(
            "section[data-branch=%s] .entity-feed a[type='application/json']" % css(branch)
        )
        for n in range(entity_links.count()):
            feed = json.loads(page.request.get(base + entity_links.nth(n).get_attribute("href")).text())
            assert feed["count"] == len(feed["events"]) > 0
            assert all("source_text" not in e for e in feed["events"])
    page.goto(base + "feeds.html")
    assert_accessible_basics(page)
    for parser in {d["parser_name"] for d in events}:
        assert page.locator("ul.feed-list .feed-name", has_text=parser).count() >= 1


def check_health(page, base: str, logs: list[dict]) -> None:
    page.goto(base + "health.html")
    assert_accessible_basics(page)
    latest: dict[str, dict] = {}
    for log in sorted(logs, key=lambda d: d["access_datetime"]):
        latest[log["parser_name"]] = log
    for name in health_spider_names():
        row = page.locator("tr.spider-row[data-spider=%s]" % css(name))
        assert row.count() == 1, "%s missing from the health page" % name
        assert row.is_visible()
        section = page.locator("section#spider-%s" % name)
        log = latest.get(name)
        if log is None:
            assert row.get_attribute("data-status") == "never run"
            continue
        expected = (
            "broken"
            if log["result"] != "success"
            else "empty"
            if log.get("empty")
            else "drop"
            if not log.get("items_scraped")
            else "ok"
        )
        assert row.get_attribute("data-status") == expected, name
        assert section.locator("svg.chart[role=img]").count() == 1
        first_run = section.locator("table.runs tbody tr").first.locator("td")
        assert first_run.nth(1).inner_text() == log["result"]
        assert first_run.nth(4).inner_text() == str(log["insert_count"])


def screenshots(browser, base: str, busiest: date) -> None:
    pages = {
        "index": "index.html",
        "day": "days/%s.html" % busiest.isoformat(),
        "dates": "dates.html",
        "feeds": "feeds.html",
        "health": "health.html",
    }
    for label, viewport in VIEWPORTS.items():
        page = browser.new_page(viewport=viewport)
        for name, path in pages.items():
            page.goto(base + path)
            if label == "phone":
                assert no_horizontal_scroll(page), "%s scrolls sideways on a phone" % path
            page.screenshot(path=str(ARTIFACTS / ("%s-%s.png" % (name, label))), full_page=True)
        page.close()
