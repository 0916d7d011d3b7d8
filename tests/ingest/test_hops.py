"""The hop rules: redirects, block lists, landing pages, terminals, and the result an ingest ends with."""

from __future__ import annotations

from votersdaily.ingest import hops as H
from votersdaily.ingest.result import finished


def test_hop_rules():
    state = H.new_state({"base_url": "http://example.com/a", "ingest_type": "pdf"})
    target, status, _ = H.redirect_target(state, "http://example.com/a", 302, b"/b", 25)
    assert target == "http://example.com/b" and status is None
    _, status, _ = H.redirect_target(state, "http://example.com/b", 302, b"/a", 25)
    assert status == "redirect-loop"
    _, status, _ = H.redirect_target(state, "http://example.com/b", 302, None, 25)
    assert status == "bad-redirect"
    assert H.before_fetch("https://web.archive.org/web/2020/x") == "skip-url-blocklist"
    assert H.before_fetch("https://x.org/login?source=y") == "skip-wall"


def test_landing_page_rules():
    """What a landing page leads to, per ingest type, and the result of the ingest it ends."""
    pdf = H.new_state({"base_url": "http://example.com/a", "ingest_type": "pdf"})
    biblio = {"title": "A title"}
    assert H.landing_hop(pdf, "http://example.com/a", biblio, {"pdf_url": "/a.pdf"}, 8) == (
        "http://example.com/a.pdf",
        None,
        None,
    )
    assert pdf["partial"] == {"html_biblio": biblio, "extract_next_hop": {"pdf_url": "/a.pdf"}}
    assert H.landing_hop(pdf, "http://example.com/a.pdf", {}, {}, 8)[1] == "no-pdf-link"
    assert H.landing_hop(pdf, "https://x.org/login?source=y", {}, {}, 8)[1] == "blocked-wall"
    html = H.new_state({"base_url": "http://example.com/a", "ingest_type": "html"})
    assert H.landing_hop(html, "http://example.com/a", {}, {}, 8) is None  # the page is the document
    # a link back to a page already fetched: the html ingest stops hopping on this page
    assert H.landing_hop(html, "http://example.com/a", {}, {"next_url": "/a"}, 8) == (None, None, None)
    assert H.terminal_refusal("https://x.org/login?source=y", "application/pdf", "pdf")[0] == "blocked-wall"
    assert H.terminal_refusal("http://example.com/a", "text/html", "pdf")[0] == "wrong-mimetype"
    assert H.terminal_refusal("http://example.com/a.pdf", "application/pdf", "pdf") is None
    assert H.fetched_refusal("http://example.com/a", 404, 10, 100)[0] == "terminal-bad-status"
    assert H.fetched_refusal("https://web.archive.org/web/2020/x", 200, 10, 100)[0] == "skip-url-blocklist"
    assert H.fetched_refusal("http://example.com/a", 200, 0, 100)[0] == "empty-blob"
    assert H.fetched_refusal("http://example.com/a", 200, 101, 100)[0] == "body-too-large"
    assert H.fetched_refusal("http://example.com/a", 226, 100, 100) is None
    result = finished(pdf, "no-pdf-link", "x" * 2000, terminal=None, platform=None)
    assert len(result["error_message"]) == 1600 and not result["hit"]
    assert "terminal" not in result and result["platform"] is None
    assert result["html_biblio"] == biblio
    assert "error_message" not in finished(pdf, "success", "ignored")


def test_the_remembered_second_of_dt14_is_the_clock_formatted_afresh(monkeypatch):
    """``dt14()`` formats the current second once: under a frozen clock moved back and forth, and
    under the live clock, it is ``now_utc()`` formatted afresh; a given datetime is its own."""
    from datetime import UTC, datetime, timedelta, timezone

    from votersdaily.clock import FROZEN_NOW_ENV, now_utc
    from votersdaily.ingest.result import dt14

    for frozen in (
        "2026-10-02T18:00:00Z",
        "2026-10-02T18:00:01Z",
        "2026-10-02T18:00:00Z",
        "1999-12-31T23:59:59+01:00",
    ):
        monkeypatch.setenv(FROZEN_NOW_ENV, frozen)
        assert dt14() == dt14() == now_utc().strftime("%Y%m%d%H%M%S")
    monkeypatch.delenv(FROZEN_NOW_ENV)
    for _ in range(3):
        before = now_utc().strftime("%Y%m%d%H%M%S")
        stamp = dt14()
        after = now_utc().strftime("%Y%m%d%H%M%S")
        assert before <= stamp <= after and len(stamp) == 14
    given = datetime(2020, 10, 28, 23, 51, 3, tzinfo=UTC)
    assert dt14(given) == "20201028235103"
    assert dt14(given.astimezone(timezone(timedelta(hours=2)))) == "20201029015103"  # its own fields
