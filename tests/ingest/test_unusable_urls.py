"""A URL read from a response that no fetch can use (it does not parse: an unclosed IPv6 bracket, a
port out of range): a ``Location``, a landing page's fulltext link, a sub-resource. Before, each
raised ``ValueError`` out of the hop loop or the extraction process ("Spider error processing", a
traceback), its ingest had no result at all and the run's result was ``ValueError``. Now a bad
``Location`` ends its ingest ``bad-redirect``, a landing page whose only PDF link is such ends
``no-pdf-link`` naming it, a publisher rule's or a pattern's such link is skipped for the next one,
and such a sub-resource is skipped with the reason said; the rest of the run is untouched."""

from __future__ import annotations

import pytest

from votersdaily.ingest import hops as H
from votersdaily.ingest.htmldoc import parse_html

from .conftest import article, read_results, run_ingest, scholarly, stored, write_requests

#: The PLOS ONE page's own PDF link (its only citation_pdf_url) and its first image's source.
PLOS_PDF_URL = (
    b"https://journals.plos.org/plosone/article/file?id=10.1371/journal.pone.0213978&type=printable"
)
PLOS_FIRST_IMAGE = b'src="/plosone/resource/img/orcid_16x16.png"'
#: URLs Python's parser refuses, as pages and servers write them.
UNCLOSED_IPV6 = "http://[::1/p.pdf"
PORT_OUT_OF_RANGE = "http://127.0.0.1:99999/p.pdf"
#: What the ingest says of a page's citation_pdf_url of UNCLOSED_IPV6 that it skipped.
SKIPPED_CITATION = "its citation_pdf_url link 'http://[::1/p.pdf' cannot be fetched (Invalid IPv6 URL)"


def plos(old: bytes, new: bytes) -> bytes:
    """DERIVED from the recorded PLOS ONE article: ``old`` (once in the page) replaced by ``new``;
    every other byte is the recording's."""
    page = scholarly("plos_one_article.html").read_bytes()
    assert page.count(old) == 1
    return page.replace(old, new)


@pytest.mark.parametrize("location", [UNCLOSED_IPV6, PORT_OUT_OF_RANGE, "http://[zz]/p.pdf", "http://h:x/p"])
def test_a_location_no_fetch_can_use_is_a_bad_redirect(location):
    state = H.new_state({"base_url": "http://example.com/a", "ingest_type": "pdf"})
    target, status, message = H.redirect_target(state, "http://example.com/a", 302, location.encode(), 25)
    assert (target, status) == (None, "bad-redirect")
    assert message.startswith("HTTP 302 from http://example.com/a to an unusable location: %r" % location)


def test_a_landing_pages_link_no_fetch_can_use_counts_as_none():
    """The hop rule on its own: a PDF link that cannot be fetched is ``no-pdf-link`` naming it (or the
    link the extraction skipped), an html/xml one leaves the page the document."""
    pdf = H.new_state({"base_url": "http://example.com/a", "ingest_type": "pdf"})
    _, status, message = H.landing_hop(
        pdf, "http://example.com/a", {}, {"pdf_url": UNCLOSED_IPV6, "technique": "t"}, 8
    )
    assert status == "no-pdf-link"
    assert (
        message
        == "no PDF link on http://example.com/a: its t link %r cannot be fetched (Invalid IPv6 URL)"
        % (UNCLOSED_IPV6)
    )
    skipped = "its citation_pdf_url link 'x' cannot be fetched (why)"
    assert H.landing_hop(pdf, "http://example.com/a", {}, {}, 8, unusable=skipped)[2] == (
        "no PDF link on http://example.com/a: " + skipped
    )
    html = H.new_state({"base_url": "http://example.com/a", "ingest_type": "html"})
    assert H.landing_hop(html, "http://example.com/a", {}, {"next_url": PORT_OUT_OF_RANGE}, 8) is None


def test_links_no_fetch_can_use_are_skipped_by_the_extraction_with_the_reason():
    """The landing page's patterns, a publisher rule and the sub-resources each skip such a link for
    the next one and say why; a good link is unchanged."""
    from votersdaily.ingest.fulltext import PDF_PATTERNS, extract_publisher_fulltext_url, match_fulltext_url
    from votersdaily.ingest.process import analyse_landing
    from votersdaily.ingest.resources import extract_resources

    url = "https://journal.example/article/1"
    page = (
        b'<html><head><meta name="citation_pdf_url" content="http://[::1/p.pdf"></head><body>'
        b'<embed type="application/pdf" src="/files/1.pdf"><img src="http://h:99999/a.png">'
        b'<img src="/b.png"></body></html>'
    )
    doc = parse_html(page, url)
    skipped: list[str] = []
    assert match_fulltext_url(doc, PDF_PATTERNS, skipped) == (
        "https://journal.example/files/1.pdf",
        "PDF embed",
    )
    assert skipped == [SKIPPED_CITATION]
    skipped = []
    assert extract_resources(doc, unusable=skipped) == [
        {"url": "https://journal.example/files/1.pdf", "resource_type": "media"},
        {"url": "https://journal.example/b.png", "resource_type": "image"},
    ]
    assert skipped == ["'http://h:99999/a.png' cannot be fetched (Port out of range 0-65535)"]
    # an American Archivist abstract page (its anchors as sandcrawler's html.py quotes the publisher's
    # markup) whose first /doi/pdf/ anchor no fetch can use: the next anchor is taken
    archivist = "https://americanarchivist.org/doi/abs/10.17723/aarc.62.2.j475270470145630"
    anchors = (
        b'<html><body><a href="http://[::1/doi/pdf/10.17723/aarc.62.2" target="_blank">PDF</a>'
        b'<a href="/doi/pdf/10.17723/aarc.62.2.j475270470145630" target="_blank">PDF</a></body></html>'
    )
    skipped = []
    assert extract_publisher_fulltext_url(archivist, parse_html(anchors, archivist), skipped) == {
        "pdf_url": "https://americanarchivist.org/doi/pdf/10.17723/aarc.62.2.j475270470145630",
        "technique": "publisher-href",
    }
    assert skipped == [
        "its publisher-href link 'http://[::1/doi/pdf/10.17723/aarc.62.2' cannot be fetched (Invalid IPv6 URL)"
    ]
    landing, _ = analyse_landing(page.replace(b"/files/1.pdf", b"http://[::1/files/1.pdf"), url, "pdf")
    assert landing.next_hop == {} and landing.unusable_link == SKIPPED_CITATION


def test_resolved_url():
    from votersdaily.ingest.urls import UnusableUrl, resolved_url

    assert resolved_url("http://x.org/a/b", "../c.pdf") == "http://x.org/c.pdf"
    assert (
        resolved_url("http://x.org/a", "javascript:void(0)") == "javascript:void(0)"
    )  # the caller's to refuse
    for bad, why in [
        (UNCLOSED_IPV6, "Invalid IPv6 URL"),
        (PORT_OUT_OF_RANGE, "Port out of range 0-65535"),
        ("http://h:abc/x", "Port could not be cast to integer value as 'abc'"),
        ("ftp://[::1/x", "Invalid IPv6 URL"),
    ]:
        with pytest.raises(UnusableUrl) as raised:
            resolved_url("http://x.org/a", bad)
        assert str(raised.value) == "%r cannot be fetched (%s)" % (bad, why)


def test_urls_no_fetch_can_use_cost_only_their_own_ingest(crawl, sqlite_uri, ingest_site, tmp_path):
    """One crawl: redirects to such URLs, PLOS ONE's page with its PDF link made such (DERIVED, one
    attribute changed), the same page with one image made such (DERIVED), and a good PDF. Before:
    four tracebacks, only the PDF had a result, the run's result was ``ValueError``."""
    site = ingest_site
    site.route("/to-unclosed-ipv6", status=302, headers={"Location": UNCLOSED_IPV6})
    site.route("/to-port-out-of-range", status=302, headers={"Location": PORT_OUT_OF_RANGE})
    site.route(
        "/derived/plos-pdf-ipv6.html", plos(PLOS_PDF_URL, UNCLOSED_IPV6.encode()), content_type="text/html"
    )
    site.route(
        "/derived/plos-pdf-port.html",
        plos(PLOS_PDF_URL, PORT_OUT_OF_RANGE.encode()),
        content_type="text/html",
    )
    site.route(
        "/derived/plos-image-ipv6.html",
        plos(PLOS_FIRST_IMAGE, b'src="http://[::1/plosone/resource/img/orcid_16x16.png"'),
        content_type="text/html",
    )
    site.route(  # a plumbing page (ours): its citation_pdf_url is such, its PDF embed is not
        "/landing-ipv6-then-embed",
        article(
            "Landing",
            100,
            '<meta name="citation_pdf_url" content="%s">' % UNCLOSED_IPV6,
            '<embed type="application/pdf" src="/scholarly/dummy.pdf">',
        ),
        content_type="text/html",
    )
    cases = {
        "/to-unclosed-ipv6": ("pdf", "bad-redirect", "to an unusable location: %r" % UNCLOSED_IPV6),
        "/to-port-out-of-range": ("pdf", "bad-redirect", "(Port out of range 0-65535)"),
        "/derived/plos-pdf-ipv6.html": ("pdf", "no-pdf-link", "link %r cannot be fetched" % UNCLOSED_IPV6),
        "/derived/plos-pdf-port.html": (
            "pdf",
            "no-pdf-link",
            "link %r cannot be fetched" % PORT_OUT_OF_RANGE,
        ),
        "/derived/plos-image-ipv6.html": ("html", "success", None),
        "/landing-ipv6-then-embed": ("pdf", "success", None),
        "/scholarly/dummy.pdf": ("pdf", "success", None),
    }
    requests = write_requests(
        tmp_path / "r.jsonl",
        [{"base_url": site.url + path, "ingest_type": itype} for path, (itype, _, _) in cases.items()],
    )
    proc = run_ingest(crawl, sqlite_uri, requests, tmp_path)
    assert "Traceback" not in proc.stderr and "Spider error" not in proc.stderr, proc.stderr[-3000:]
    results = {d["request"]["base_url"][len(site.url) :]: d for d in read_results(sqlite_uri).values()}
    assert {path: r["status"] for path, r in results.items()} == {p: c[1] for p, c in cases.items()}
    for path, (_, _, says) in cases.items():
        assert says is None or says in results[path]["error_message"], results[path]
    assert results["/to-unclosed-ipv6"]["terminal"]["terminal_url"] == site.url + "/to-unclosed-ipv6"
    skipped = sorted(
        line.split("INFO: ", 1)[1] for line in proc.stderr.splitlines() if "that no fetch can use" in line
    )
    assert skipped == [
        f"ingest of {site.url}/derived/plos-image-ipv6.html: skipped 1 sub-resource(s) of "
        f"{site.url}/derived/plos-image-ipv6.html that no fetch can use: "
        "'http://[::1/plosone/resource/img/orcid_16x16.png' cannot be fetched (Invalid IPv6 URL)",
        f"ingest of {site.url}/landing-ipv6-then-embed: skipped 1 link(s) of {site.url}/landing-ipv6-then-embed that no "
        f"fetch can use: {SKIPPED_CITATION}",
    ]
    assert (
        results["/landing-ipv6-then-embed"]["terminal"]["terminal_url"] == site.url + "/scholarly/dummy.pdf"
    )
    resources = results["/derived/plos-image-ipv6.html"]["html_resources"]
    assert resources and not [r for r in resources if "orcid_16x16" in r["url"]]
    assert [log["result"] for log in stored(sqlite_uri, "vd_log")] == ["success"]
