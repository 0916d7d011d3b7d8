"""The health page tells manual runs from real ones, notes wrap, roll calls show their tally, and
look-alike events are told apart, through the CLI as a user builds the site."""

from __future__ import annotations

import datetime
import json
import os
import sys

import lxml.html
import pytest

from tests.conftest import recording
from tests.spiders.supreme_court_pages import EARLIER_TERMS
from tests.support.cli_main import run_main
from tests.support.inprocess import crawl_in_process
from tests.support.services import cli_environment, run_cli

pytestmark = pytest.mark.slow  # `crawl --all --offline` and `site build` as CLI subprocesses

ROLL314 = recording("gov/house_roll_call/roll314.xml")
CHROMIUM = "/usr/bin/chromium"


def minutes_ago(n: int) -> dict[str, str]:
    """The framework clock ``n`` minutes before now: runs in a known order whatever they take."""
    at = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=n)
    return {"VOTERSDAILY_FROZEN_NOW": at.strftime("%Y-%m-%dT%H:%M:%SZ")}


def by_hand(spider: str, url: str, uri: str, minutes: int, status: int = 0) -> None:
    """``scrapy crawl <spider> -a url=<url>``, run by hand (in the test process); ``status``: the
    exit status expected (1: the run failed)."""
    proc = crawl_in_process([spider, "-a", "url=" + url], cli_environment(uri, minutes_ago(minutes)))
    assert proc.returncode == status, proc.stderr[-2000:]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The CLI's offline crawl of three spiders (a subprocess, as a user runs it), crawls by hand,
    then ``site build`` and ``dump`` (in the test process: they run no crawl)."""
    tmp = tmp_path_factory.mktemp("health")
    uri = "sqlite:///%s" % (tmp / "store.db")
    spiders = ("house_votes", "senate_votes", "supreme_court_orders")
    proc = run_cli(
        [sys.executable, "-m", "votersdaily", "crawl", "--offline", *spiders], uri, env=minutes_ago(4)
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    # By hand: one replayed recording, then a file that is not there (a failed run).
    by_hand("house_votes", ROLL314.resolve().as_uri(), uri, 3)
    by_hand("house_votes", (tmp / "no-such-roll" / ("x" * 120 + ".xml")).as_uri(), uri, 2, status=1)
    # The 2015 "opinions relating to orders" page (a test recording: the shipped 2025 page has no case
    # with two justices' opinions on one day), replayed by hand.
    by_hand("supreme_court_orders", (EARLIER_TERMS / "relating_2015.html").resolve().as_uri(), uri, 1)
    proc = run_main("site", "build", str(tmp / "site"), store_uri=uri)
    assert proc.returncode == 0, proc.stderr
    logs = [json.loads(line) for line in run_main("dump", "vd_log", store_uri=uri).stdout.splitlines()]
    return tmp / "site", logs


def test_run_log_says_where_the_documents_came_from(built):
    _, logs = built
    house = sorted(
        (d["access_datetime"], d["input"], d["result"]) for d in logs if d["parser_name"] == "house_votes"
    )
    assert [i for _, i, _ in house] == ["offline", "replay", "replay"]
    assert [r == "success" for _, _, r in house] == [True, True, False]


def test_manual_runs_are_marked_and_kept_out_of_the_verdict(built):
    site, _ = built
    page = lxml.html.parse(str(site / "health.html")).getroot()
    (row,) = page.cssselect('tr.spider-row[data-spider="house_votes"]')
    assert row.get("data-status") == "ok"  # not "broken": the failed run was a manual one
    runs = page.cssselect("section#spider-house_votes table.runs tbody tr")
    assert [r.get("data-status") for r in runs] == ["manual", "manual", "ok"]
    notes = [r.cssselect("td.note")[0].text_content() for r in runs]
    assert notes[0].startswith("run by hand on a replayed recording (") and notes[0].endswith(": not counted")
    assert notes[2] == "offline replay of the shipped recordings"


def test_roll_calls_show_result_and_tally(built):
    site, _ = built
    day = lxml.html.parse(str(site / "days" / "2026-09-16.html")).getroot()
    (tally,) = day.cssselect('li[data-parser="house_votes"] p.tally')
    # The Clerk's own labels (roll314.xml: 401 Yeas, 14 Nays, 18 not voting).
    assert tally.text_content() == "Passed · Yeas 401 · Nays 14 · Answered “Present” 0 · Not Voting 18"
    senate = lxml.html.parse(str(site / "days" / "2004-11-17.html")).getroot()
    (tally,) = senate.cssselect('li[data-parser="senate_votes"] p.tally')
    assert tally.text_content() == "Bill Passed · Yea 52 · Nay 44 · Present 1 · Not voting 3"


def test_events_differing_only_by_justice_are_told_apart(built):
    site, _ = built
    day = lxml.html.parse(str(site / "days" / "2015-10-29.html")).getroot()
    titles = sorted(h.text_content() for h in day.cssselect("h3.title") if "Correll" in h.text_content())
    assert titles == [
        "Correll v. Florida (No. 15-6551): opinion relating to orders (justice Sonia Sotomayor)",
        "Correll v. Florida (No. 15-6551): opinion relating to orders (justice Stephen G. Breyer)",
    ]


@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason="Debian's chromium is not installed")
def test_error_notes_wrap_on_a_phone(built, site):
    sync_api = pytest.importorskip("playwright.sync_api")
    out, _ = built
    base = site.mount("/site/", out)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 390, "height": 844})
            page.goto(base + "health.html")
            note = page.locator("section#spider-house_votes table.runs tbody tr td.note").first
            box = note.bounding_box()
            assert box["height"] > 40  # the long message runs over several lines
            wrap = page.locator("section#spider-house_votes .table-wrap")
            widths = wrap.evaluate("e => [e.scrollWidth, e.clientWidth]")
            assert widths[0] <= widths[1] * 2.5, widths  # the table does not grow with the message
        finally:
            browser.close()
