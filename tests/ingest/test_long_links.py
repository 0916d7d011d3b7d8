"""A hop link longer than Scrapy's ``URLLENGTH_LIMIT`` (2083): a ``Location``, a landing page's
``citation_pdf_url``. Before, Scrapy's UrlLengthMiddleware dropped the hop request without a word to
the spider ("Ignoring link (url length > 2083)" at INFO) and that ingest had no result at all, no
status; a ``base_url`` as long was dropped the same way as a start request. Now such a link is one no
fetch can use, measured as the hop requests it, against the crawl's own ``URLLENGTH_LIMIT``: a
``Location`` ends ``bad-redirect`` naming it, a landing page's link is skipped for the next one (none
left: ``no-pdf-link`` naming it), and such a ``base_url`` is a bad request, said and listed; the
middleware never has to drop one."""

from __future__ import annotations

import pytest

from tests.support.cli_main import run_main
from votersdaily.ingest import hops as H

from .conftest import article, read_results, run_ingest, stored, write_requests
from .test_unusable_urls import PLOS_PDF_URL, plos

#: Scrapy's default URLLENGTH_LIMIT.
LIMIT = 2083
#: A query as long as a signed download link's token can be, taking a link past LIMIT.
TOKEN = "token=" + "x" * LIMIT


def long_link(site_url: str, path: str) -> str:
    return "%s%s?%s" % (site_url, path, TOKEN)


def test_a_location_over_the_limit_is_a_bad_redirect():
    state = H.new_state({"base_url": "http://example.com/a", "ingest_type": "pdf"})
    location = "/p.pdf?" + TOKEN
    target, status, message = H.redirect_target(
        state, "http://example.com/a", 302, location.encode(), 25, url_length_limit=LIMIT
    )
    assert (target, status) == (None, "bad-redirect")
    assert message.endswith(
        "cannot be fetched (%d characters as fetched, over URLLENGTH_LIMIT %d)"
        % (len("http://example.com" + location), LIMIT)
    )
    # the same Location without a limit (URLLENGTH_LIMIT=0: Scrapy's middleware is off) is followed
    assert (
        H.redirect_target(H.new_state(state["request"]), "http://example.com/a", 302, location, 25)[1] is None
    )


def test_the_length_is_the_requested_urls():
    """Measured as the hop requests the URL: percent-encoded (a non-ASCII character is up to twelve),
    and cleaned where the hop cleans it (an empty path is ``/``); the limit itself is allowed."""
    from votersdaily.ingest.urls import UnusableUrl, resolved_url

    base = "http://example.com/"
    at_limit = base + "a" * (LIMIT - len(base))
    assert resolved_url(base, at_limit, LIMIT) == at_limit
    with pytest.raises(UnusableUrl):
        resolved_url(base, at_limit + "b", LIMIT)
    accented = base + "é" * 400  # 400 characters written, 2400 requested
    assert len(accented) < LIMIT
    with pytest.raises(UnusableUrl, match="2419 characters as fetched"):
        resolved_url(base, accented, LIMIT)
    no_path = "http://example.com?" + "q" * (LIMIT - len("http://example.com?"))
    assert len(no_path) == LIMIT
    with pytest.raises(UnusableUrl, match="%d characters as fetched" % (LIMIT + 1)):
        resolved_url(base, no_path, LIMIT)


def test_hop_links_over_the_limit_end_their_ingest_with_a_status(crawl, sqlite_uri, ingest_site, tmp_path):
    """One crawl at Scrapy's default limit: a redirect to a long URL, PLOS ONE's page with its PDF
    link made long (DERIVED: a query added to its citation_pdf_url), a plumbing landing page whose
    long citation_pdf_url is passed over for its PDF embed, a base_url that long, and a good PDF.
    Before: the first two had no result (and the third none either: its long link was taken), the
    long base_url neither."""
    site = ingest_site
    site.route("/to-long", status=302, headers={"Location": "/scholarly/dummy.pdf?" + TOKEN})
    long_pdf = PLOS_PDF_URL + b"&" + TOKEN.encode()
    site.route("/derived/plos-pdf-long.html", plos(PLOS_PDF_URL, long_pdf), content_type="text/html")
    site.route(
        "/landing-long-then-embed",
        article(
            "Landing",
            100,
            '<meta name="citation_pdf_url" content="%s">' % long_link(site.url, "/scholarly/dummy.pdf"),
            '<embed type="application/pdf" src="/scholarly/dummy.pdf">',
        ),
        content_type="text/html",
    )
    cases = {
        "/to-long": ("bad-redirect", "over URLLENGTH_LIMIT %d" % LIMIT),
        "/derived/plos-pdf-long.html": (
            "no-pdf-link",
            "its citation_pdf_url link %r... (%d characters) cannot be fetched"
            % (long_pdf[:80].decode(), len(long_pdf)),
        ),
        "/landing-long-then-embed": ("success", None),
        "/scholarly/dummy.pdf": ("success", None),
    }
    long_base = long_link(site.url, "/scholarly/dummy.pdf")
    requests = write_requests(
        tmp_path / "r.jsonl",
        [{"base_url": site.url + path, "ingest_type": "pdf"} for path in cases]
        + [{"base_url": long_base, "ingest_type": "pdf"}],
    )
    proc = run_ingest(crawl, sqlite_uri, requests, tmp_path)
    results = {d["request"]["base_url"][len(site.url) :]: d for d in read_results(sqlite_uri).values()}
    assert {path: r["status"] for path, r in results.items()} == {p: c[0] for p, c in cases.items()}
    for path, (_, says) in cases.items():
        assert says is None or says in results[path]["error_message"], results[path]
    assert results["/to-long"]["terminal"]["terminal_url"] == site.url + "/to-long"
    assert (
        results["/landing-long-then-embed"]["terminal"]["terminal_url"] == site.url + "/scholarly/dummy.pdf"
    )
    assert "Ignoring link (url length" not in proc.stderr  # Scrapy's middleware never had to drop one
    assert not [path for path in site.hits if "token=" in path]
    [log] = stored(sqlite_uri, "vd_log")
    assert log["result"] == "success"
    [rejected] = log["rejected"]
    assert rejected["where"] == "%s:5" % requests
    assert rejected["message"] == (
        "base_url %r... (%d characters) cannot be fetched (%d characters as fetched, over URLLENGTH_LIMIT %d)"
        % (long_base[:80], len(long_base), len(long_base), LIMIT)
    )


def test_ingest_enqueue_refuses_a_base_url_no_crawl_fetches(sqlite_uri, tmp_path):
    """Before: ``ingest enqueue`` queued a base_url over the project's URLLENGTH_LIMIT, which every
    crawl of the queue then rejected (the check was the crawl's alone). Now the queue refuses it with
    the crawl's own words, queues the rest, and exits 1 (a bad input line)."""
    good = "https://journals.plos.org/plosone/article?id=10.1371/journal.pone.0000001"
    long_base = good + "&token=" + "t" * LIMIT
    requests = write_requests(
        tmp_path / "requests.jsonl",
        [{"base_url": good, "ingest_type": "html"}, {"base_url": long_base, "ingest_type": "pdf"}],
    )

    proc = run_main("ingest", "enqueue", str(requests), store_uri=sqlite_uri)

    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [
        "votersdaily ingest: %s:2: base_url %r... (%d characters) cannot be fetched (%d characters as "
        "fetched, over URLLENGTH_LIMIT %d)"
        % (requests, long_base[:80], len(long_base), len(long_base), LIMIT)
    ]
    assert "queued 1 ingest requests" in proc.stdout
    assert [doc["base_url"] for doc in stored(sqlite_uri, "ingest_requests")] == [good]
