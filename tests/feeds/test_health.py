"""The spider health analysis and page: statuses from run logs written to either backend."""

from __future__ import annotations

import lxml.html
import pytest

from tests.feeds.events import load_events, load_logs, run_log
from votersdaily.feeds.health import BROKEN, DROP, EMPTY, NEVER, OK, health_report, spider_health
from votersdaily.feeds.site import SiteConfig, build_site


def at(day: int) -> str:
    return "2026-09-%02dT06:00:00Z" % day


STEADY = [40, 42, 41, 39, 40]

LOGS = (
    # A steady spider whose last run fell to 5 items: a sharp drop against a median of 40.
    [run_log("steady", at(i + 1), n) for i, n in enumerate(STEADY)]
    + [run_log("steady", at(6), 5)]
    # A quiet source that legitimately had nothing on its last run.
    + [run_log("quiet", at(1), 3), run_log("quiet", at(2), 0)]
    # A spider that worked, then failed with an exception.
    + [
        run_log("failing", at(1), 10),
        run_log("failing", at(2), 0, result="UnexpectedDocument", error_message="no <vote-metadata>"),
    ]
    # Everything it found was invalid: zero items, not "empty".
    + [run_log("invalid", at(3), 0, dropped_count=7, empty=False)]
    # Old run logs without items_scraped: the item count is inserted + updated + unchanged.
    + [
        {
            k: v
            for k, v in run_log(
                "legacy", at(4), 0, insert_count=2, updated_count=1, unchanged_count=4, empty=False
            ).items()
            if k != "items_scraped"
        }
    ]
)


@pytest.fixture
def logged(store):
    load_logs(store, LOGS)
    return store


def test_statuses(logged):
    report = {h.name: h for h in health_report(logged, ["fresh", "steady"])}
    assert set(report) == {"steady", "quiet", "failing", "invalid", "legacy", "fresh"}
    assert report["steady"].status == DROP
    assert [r.items for r in report["steady"].runs] == [5, 40, 39, 41, 42, 40]  # newest first
    assert report["steady"].runs[0].baseline == 40
    assert "median of 40" in report["steady"].runs[0].note
    assert [r.status for r in report["steady"].runs[1:]] == [OK] * 5
    assert report["quiet"].status == EMPTY
    assert report["failing"].status == BROKEN
    assert report["failing"].runs[0].note == "UnexpectedDocument: no <vote-metadata>"
    assert report["invalid"].status == DROP
    assert report["legacy"].status == OK and report["legacy"].last.items == 7
    assert report["fresh"].status == NEVER and report["fresh"].runs == []
    # Worst first: broken, then drops, never run, empty, ok.
    assert [h.name for h in health_report(logged, ["fresh"])] == [
        "failing",
        "invalid",
        "steady",
        "fresh",
        "quiet",
        "legacy",
    ]


def test_run_window_keeps_history_for_the_baseline(logged):
    health = spider_health(logged, "steady", runs=2, history=3)
    assert [r.access_datetime for r in health.runs] == [at(6), at(5)]
    assert health.runs[0].status == DROP and health.runs[0].baseline == 40  # median of 41, 39, 40


def test_health_page(logged, tmp_path):
    load_events(logged)
    build_site(logged, tmp_path, SiteConfig(), spiders=["fresh"])
    page = lxml.html.parse(str(tmp_path / "health.html")).getroot()
    rows = {tr.get("data-spider"): tr.get("data-status") for tr in page.cssselect("tr.spider-row")}
    assert rows == {
        "steady": DROP,
        "quiet": EMPTY,
        "failing": BROKEN,
        "invalid": DROP,
        "legacy": OK,
        "fresh": NEVER,
    }
    steady = page.get_element_by_id("spider-steady")
    chart = steady.cssselect("svg.chart")[0]
    assert chart.get("role") == "img" and "40, 42, 41, 39, 40, 5 (Sharp drop)" in chart.get("aria-label")
    assert len(chart.cssselect("rect.run")) == 6
    runs = steady.cssselect("table.runs tbody tr")
    assert [tr.get("data-status") for tr in runs] == [DROP] + [OK] * 5
    assert [td.text_content() for td in runs[0].cssselect("td")][1:9] == [
        "success",
        "Sharp drop",
        "5",
        "5",
        "0",
        "0",
        "0",
        "1.5 s",
    ]
    failing = page.get_element_by_id("spider-failing")
    assert len(failing.cssselect("svg.chart g.broken")) == 1
    assert "UnexpectedDocument" in failing.cssselect("table.runs tbody tr")[0].text_content()
    assert page.get_element_by_id("spider-fresh").cssselect("svg") == []


def test_day_page_links_only_web_urls(tmp_path):
    """A source_url or event_url of another scheme (javascript:, data:) is never a link (the feeds
    leave such a URL out; the template would show it as text)."""
    from tests.feeds.events import event, write_events
    from votersdaily import schema
    from votersdaily.store import open_store

    store = open_store("sqlite:///%s" % (tmp_path / "links.db"))
    try:
        for db in (schema.EVENTS_DB, schema.LOG_DB):
            store.ensure_db(db)
            store.install_views(db)
        write_events(
            store,
            [
                event("2026-09-16T23:05:00Z", "t_links", "web", event_url="https://example.gov/e/1"),
                dict(  # written past validation, which refuses such URLs
                    event("2026-09-16T23:06:00Z", "t_links", "script"),
                    source_url="javascript://example.gov/%0Aalert(1)",
                    event_url="javascript://example.gov/%0Aalert(2)",
                ),
            ],
        )
        build_site(store, tmp_path / "site", SiteConfig(timezone="UTC"), spiders=["t_links"])
    finally:
        store.close()
    page = lxml.html.parse(str(tmp_path / "site" / "days" / "2026-09-16.html")).getroot()
    hrefs = [a.get("href") for a in page.cssselect("a")]
    assert "https://example.gov/t_links/web.xml" in hrefs and "https://example.gov/e/1" in hrefs
    assert not [h for h in hrefs if h.lower().startswith("javascript")]
    assert "javascript" not in page.text_content()
    assert "t_links script" in page.text_content()  # the event itself is shown
