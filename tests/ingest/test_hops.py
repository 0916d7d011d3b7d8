"""Pure helpers: URL cleaning (docs/ingest.md §12 examples), fuzzy equality, meta matching case,
SSRF address rules, file metadata, hop rules, scope thresholds, file table names."""

from __future__ import annotations

import asyncio

import pytest
import scrapy
from scrapy.exceptions import IgnoreRequest
from twisted.internet.error import ConnectionRefusedError, DNSLookupError, TimeoutError

from votersdaily.ingest import hops as H
from votersdaily.ingest.biblio import extract_biblio
from votersdaily.ingest.fetch_failures import failure_status
from votersdaily.ingest.filemeta import b32_hex, gen_file_metadata, sha1_b32
from votersdaily.ingest.filetable import table_name
from votersdaily.ingest.htmldoc import parse_html
from votersdaily.ingest.result import finished
from votersdaily.ingest.scope import guess_scope
from votersdaily.ingest.urls import clean_url, url_fuzzy_equal
from votersdaily.plumbing.address_policy import is_public
from votersdaily.plumbing.ssrf import PrivateAddressRefused, SsrfGuardMiddleware

from .conftest import scholarly


@pytest.mark.parametrize(
    "raw,clean",
    [
        ("http://BLAH.COM/file.pdf", "http://blah.com/file.pdf"),
        ("https://opensky.ucar.edu:/islandora/x", "https://opensky.ucar.edu/islandora/x"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com:80/a/./b/../c", "http://example.com/a/c"),
        ("https://example.com/\u00fc", "https://example.com/%C3%BC"),
        ("https://example.com/a#frag", "https://example.com/a#frag"),
        ("no-scheme.example.com/x", "no-scheme.example.com/x"),
    ],
)
def test_clean_url(raw, clean):
    assert clean_url(raw) == clean


def test_url_fuzzy_equal():
    a = "http://www.annalsofian.org/article.asp?issn=0972-2327;year=2017"
    assert url_fuzzy_equal(a, a.replace("www.", "").replace("http:", "https:"))
    assert url_fuzzy_equal("http://thing.com", "https://thing.com/")
    assert not url_fuzzy_equal("http://thing.com", "http://thing.com/blue")


def test_meta_matching_is_case_insensitive():
    doc = parse_html(
        b'<html><head><meta name="DC.Citation.Issue" content="7"><meta name="DC.Title" content="T">'
        b'<meta name="citation_doi" content="doi:10.123/ABC"><meta name="citation_title" content="">'
        b"</head><body></body></html>",
        "http://example.com/a",
    )
    biblio = extract_biblio(doc)
    assert biblio == {"issue": "7", "title": "T", "doi": "10.123/ABC"}


def test_first_monday_has_only_a_title_element():
    doc = parse_html(scholarly("first_monday_ojs3_fulltext.html").read_bytes(), "http://example.com/a/b")
    assert extract_biblio(doc) == {}  # the head has a <title> and no meta biblio (FIXTURES.md)


def test_scope_rules():
    doc = parse_html(b"<html><head></head><body>x</body></html>", "http://example.com/a/b")
    assert guess_scope("http://example.com/", doc, {}, 5000, None) == "homepage-domain"
    assert guess_scope("http://example.com/a/b", doc, {}, 19, None) == "stub"
    assert guess_scope("http://example.com/a/b", doc, {}, 501, "wordpress") == "article-fulltext"
    assert guess_scope("http://example.com/a/b", doc, {}, 501, None) == "unknown"
    assert guess_scope("http://example.com/a/b", doc, {"title": "x"}, 1201, "ojs3") == "article-fulltext"
    assert (
        guess_scope("http://example.com/a/b", doc, {"title": "x"}, 1201, "ojs3", ojs_fulltext_fix=False)
        == "fulltext"
    )
    assert (
        guess_scope("http://example.com/a/b", doc, {"html_fulltext_url": "https://example.com/c"}, 9, None)
        == "landingpage"
    )


def test_file_metadata_and_keys():
    meta = gen_file_metadata(scholarly("dummy.pdf").read_bytes())
    assert (
        meta["sha1hex"] == "90ffd2359008d82298821d16b21778c5c39aec36"
        and meta["mimetype"] == "application/pdf"
    )
    assert b32_hex("sha1:" + sha1_b32(meta["sha1hex"])) == meta["sha1hex"]
    assert gen_file_metadata(b"<html><body>hi</body></html>")["mimetype"] == "text/html"
    with pytest.raises(ValueError):
        gen_file_metadata(b"")


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


@pytest.mark.parametrize(
    "exc, status",
    [
        (PrivateAddressRefused("10.0.0.1 is private"), "blocked-private-address"),
        (DNSLookupError("no.such.host"), "invalid-host-resolution"),
        (TimeoutError(), "read-timeout"),
        (ConnectionRefusedError(), "connection-refused"),
        (IgnoreRequest("Forbidden by robots.txt"), "blocked-robots"),
        (ValueError("anything else"), "fetch-error"),
    ],
)
def test_fetch_failure_statuses(exc, status):
    assert failure_status(exc)[0] == status


def test_table_name_must_be_a_couchdb_name():
    assert table_name(0, "prod") == "wbgrp-journal-extract-0-prod"
    with pytest.raises(ValueError):
        table_name(0, "Prod")


@pytest.mark.parametrize(
    "address,public",
    [
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("169.254.169.254", False),
        ("::1", False),
        ("::ffff:192.168.0.1", False),
        ("8.8.8.8", True),
    ],
)
def test_is_public(address, public):
    assert is_public(address) is public


def test_guard_checks_every_request_including_redirect_targets():
    guard = SsrfGuardMiddleware(allow_private=False)
    for url in (
        "http://169.254.169.254/latest/meta-data/",
        "http://localhost:8080/",
        "http://[::1]/",
        "ftp://example.com/x",
    ):
        with pytest.raises(PrivateAddressRefused):
            asyncio.run(guard.process_request(scrapy.Request(url)))
    assert (
        asyncio.run(
            SsrfGuardMiddleware(allow_private=True).process_request(scrapy.Request("http://127.0.0.1/"))
        )
        is None
    )


def test_tei_that_does_not_parse_is_a_teixml_error():
    """``html-teixml-error`` guards trafilatura's output. No page produces it with trafilatura 2.x:
    the TEI is serialised by lxml (always well-formed) and never nests deeper than the page, which
    trafilatura parses under the same libxml2 limits (a page nested past 256 levels already fails
    inside trafilatura: ``trafilatura-parse-error``, checked below on a real extraction). So the
    guard is checked on TEI text directly."""
    from votersdaily.ingest.htmlbody import TeiXmlError, extract_body, word_count

    assert (
        word_count(
            '<TEI xmlns="http://www.tei-c.org/ns/1.0"><text><body><p>two words</p></body></text></TEI>'
        )
        == 2
    )
    with pytest.raises(TeiXmlError):
        word_count('<TEI xmlns="http://www.tei-c.org/ns/1.0"><text><body><p>unclosed</body></TEI>')
    deep = (
        "<html><body><article><p>%s</p><p>%s deep %s</p></article></body></html>"
        % (" ".join("w%d" % i for i in range(300)), "<b>x " * 300, "</b>" * 300)
    ).encode()
    assert extract_body(deep)["status"] == "trafilatura-parse-error"


def test_checked_addresses_are_pinned_for_the_connection():
    """DNS rebinding: the connection's lookup of a checked name gets the checked addresses, never a
    second DNS answer. No DNS server runs here, so the guard's own cache holds the first answer and
    a recording resolver stands in for the second (a rebinding one, answering a private address)."""
    import time

    from twisted.internet.address import IPv4Address

    from votersdaily.plumbing.ssrf import PinnedNameResolver, pinned

    guard = SsrfGuardMiddleware(allow_private=False)
    guard._cache["paper.example.org"] = (time.monotonic() + 60, ["93.184.216.34"])
    assert asyncio.run(guard.process_request(scrapy.Request("https://paper.example.org/x.pdf"))) is None
    assert pinned("PAPER.example.org.") == ["93.184.216.34"]

    class Rebinding:
        asked: list = []

        def resolveHostName(self, receiver, name, port=0, types=None, semantics="TCP"):
            self.asked.append(name)
            receiver.resolutionBegan(None)
            receiver.addressResolved(IPv4Address("TCP", "10.0.0.1", port))
            receiver.resolutionComplete()

    class Receiver:
        def __init__(self):
            self.addresses, self.done = [], False

        def resolutionBegan(self, resolution):
            pass

        def addressResolved(self, address):
            self.addresses.append((address.host, address.port))

        def resolutionComplete(self):
            self.done = True

    resolver = PinnedNameResolver(Rebinding())
    checked, other = Receiver(), Receiver()
    resolver.resolveHostName(checked, "paper.example.org", 443)
    resolver.resolveHostName(other, "unchecked.example.org", 80)
    assert checked.done and checked.addresses == [("93.184.216.34", 443)]
    assert Rebinding.asked == ["unchecked.example.org"] and other.addresses == [("10.0.0.1", 80)]
    # a private answer to the check itself is refused and pins nothing
    guard._cache["rebound.example.org"] = (time.monotonic() + 60, ["10.0.0.1"])
    with pytest.raises(PrivateAddressRefused):
        asyncio.run(guard.process_request(scrapy.Request("http://rebound.example.org/")))
    assert pinned("rebound.example.org") is None


@pytest.mark.parametrize(
    "footer, platform",
    [
        (b'<p>Powered by <a href="http://pkp.sfu.ca/ojs/" target="_blank">PKP OJS</a></p>', "ojs"),
        (b'<p>powered by <a href="https://pkp.sfu.ca/ojs/">pkp ojs</a></p>', "ojs"),
        (b"<p>Powered by a PKP-free CMS</p>", None),
    ],
)
def test_ojs_footer_is_recognised_in_any_case(footer, platform):
    from votersdaily.ingest.scope import guess_platform

    doc = parse_html(
        b"<html><head><title>t</title></head><body>%s</body></html>" % footer, "http://example.com/"
    )
    assert guess_platform(doc) == platform


def test_html_fulltext_url_and_its_self_link_rule():
    """HTML → ``html_fulltext_url``: the declared fulltext page wins; a link back to the page itself
    is kept only as a last resort (so the hop loop stops instead of following it)."""
    from votersdaily.ingest.fulltext import HTML_PATTERNS, match_fulltext_url

    page = (
        b'<html><head><meta name="citation_fulltext_html_url" content="/full/1">'
        b'<link rel="alternate" type="text/html" href="/abs/1"></head><body></body></html>'
    )
    assert match_fulltext_url(parse_html(page, "https://journal.example/abs/1"), HTML_PATTERNS) == (
        "https://journal.example/full/1",
        "citation_fulltext_html_url",
    )
    only_self = b'<html><head><meta name="citation_fulltext_html_url" content="/abs/1"></head></html>'
    assert match_fulltext_url(parse_html(only_self, "https://journal.example/abs/1"), HTML_PATTERNS) == (
        "https://journal.example/abs/1",
        "citation_fulltext_html_url",
    )


@pytest.mark.parametrize(
    "url, expected",
    [
        (
            "https://arxiv.org/abs/2101.00001",
            {"pdf_url": "https://arxiv.org/pdf/2101.00001", "technique": "arxiv-url"},
        ),
        (
            "https://www.protocols.io/view/some-protocol-abc1",
            {
                "pdf_url": "https://www.protocols.io/view/some-protocol-abc1.pdf",
                "technique": "protocolsio-url",
            },
        ),
        ("https://osf.io/abc12", {"next_url": "https://osf.io/abc12/download", "technique": "osf-by-url"}),
        ("https://journal.example/article/1", {}),
    ],
)
def test_publisher_rules_by_url(url, expected):
    from votersdaily.ingest.fulltext import extract_publisher_fulltext_url

    assert (
        extract_publisher_fulltext_url(url, parse_html(b"<html><body><p>x</p></body></html>", url))
        == expected
    )


def test_decoding_order_bom_http_meta_in_head_detection():
    """DERIVED from the PLOS recording (its charset meta removed, conftest.PLOS_CHARSET_META)."""
    from votersdaily.ingest.htmldoc import decode_html

    from .conftest import PLOS_CHARSET_META

    plos = scholarly("plos_one_article.html").read_bytes().replace(PLOS_CHARSET_META, b"")
    assert decode_html(plos)[0] == "utf-8"  # valid UTF-8, nothing declared
    assert decode_html(b"\xef\xbb\xbf" + plos, "text/html; charset=iso-8859-1")[0] == "utf-8"  # BOM first
    assert decode_html(plos, "text/html; charset=iso-8859-1")[0] == "cp1252"  # then HTTP (as browsers)
    late = plos.replace(b"</head>", b'<meta charset="windows-1252"></head>', 1)
    assert late.index(b'<meta charset="windows-1252">') > 4096
    assert decode_html(late)[0] == "cp1252"  # then a meta anywhere in the head
    utf16 = plos.replace(b"</head>", b'<meta charset="utf-16"></head>', 1)
    assert decode_html(utf16)[0] == "utf-8"  # a meta readable as ASCII cannot mean UTF-16
    after_head = plos.replace(b"</body>", b'<meta charset="windows-1252"></body>', 1)
    assert decode_html(after_head)[0] == "utf-8"  # not one in the body
    # bytes that are not UTF-8 and declare nothing: Windows-1252, as browsers
    encoding, text = decode_html(scholarly("genders_g58_fairlie.html").read_bytes())
    assert encoding == "cp1252" and "Hitchcock\u2019s Rope" in text


def test_starts_like_html():
    from votersdaily.ingest.filemeta import html_by_declaration, starts_like_html

    elife = scholarly("elife_article.html").read_bytes()
    assert starts_like_html(b"\n\n" + elife) and starts_like_html(b"\xef\xbb\xbf<!-- a -->\n <HTML lang=en>")
    assert not starts_like_html(b"var html = '<html>';") and not starts_like_html(b"<htmlx>")
    assert html_by_declaration("application/javascript", "text/html", b"\n" * 8 + elife)
    assert not html_by_declaration("application/javascript", "application/javascript", elife)
    assert not html_by_declaration("application/pdf", "text/html", scholarly("dummy.pdf").read_bytes())
    # INGEST_HTML_BY_DECLARED_TYPE=False: libmagic's word only, as sandcrawler
    from votersdaily.ingest.process import describe_body

    opening = b"\n" * 8 + elife  # DERIVED: the eLife page opening like nature.com's (conftest)
    assert describe_body(opening, "text/html", 10**8).file_meta["mimetype"] == "text/html"
    as_sandcrawler = describe_body(opening, "text/html", 10**8, html_by_header=False)
    assert as_sandcrawler.file_meta["mimetype"] == "application/javascript"


def test_publisher_rule_yielding_the_page_falls_through():
    """An American Archivist ``/doi/abs/`` page: the ``/doi/10.`` rewrite gives the page itself;
    the ``/doi/pdf/`` anchor is followed instead (the anchor as sandcrawler's html.py quotes the
    publisher's markup; the rest of this page is plumbing), so a pdf ingest hops on, no link-loop."""
    from votersdaily.ingest.process import analyse_landing

    url = "https://americanarchivist.org/doi/abs/10.17723/aarc.62.2.j475270470145630"
    page = (
        b"<html><head><title>Abstract</title></head><body><p>Abstract.</p>"
        b'<a href="/doi/pdf/10.17723/aarc.62.2.j475270470145630" target="_blank">PDF</a></body></html>'
    )
    landing, _ = analyse_landing(page, url, "pdf")
    assert landing.next_hop == {
        "pdf_url": "https://americanarchivist.org/doi/pdf/10.17723/aarc.62.2.j475270470145630",
        "technique": "publisher-href",
    }
    state = H.new_state({"base_url": url, "ingest_type": "pdf"})
    assert H.next_hop(state, landing.next_hop["pdf_url"], 8)[1] is None
    # no anchor: the generic rules after it (here the "<url>.pdf" guess), never the page itself
    guess = b'<html><body><a href="%s.pdf">PDF</a></body></html>' % url.encode()
    assert analyse_landing(guess, url, "pdf")[0].next_hop["technique"] == "guess-url-plus-pdf"
    assert analyse_landing(b"<html><body><p>x</p></body></html>", url, "pdf")[0].next_hop == {}
    # a /doi/10. page keeps the direct rewrite
    direct = "https://americanarchivist.org/doi/10.17723/aarc.62.2.j475270470145630"
    assert analyse_landing(page, direct, "pdf")[0].next_hop["technique"] == "archivist-url"


def test_hop_body_growing_past_the_limit_is_stopped_with_its_response():
    """A body without Content-Length: counted as it arrives, stopped (response kept, so the
    terminal has its status) once past INGEST_MAX_BODY_BYTES; sub-resources are left to their own
    limit."""
    from scrapy.exceptions import StopDownload

    from votersdaily.ingest.config import IngestConfig
    from votersdaily.ingest.spider import IngestSpider

    spider = IngestSpider()
    spider.config = IngestConfig(max_body=10)
    hop = scrapy.Request("http://example.com/a", meta={H.STATE_META: {}})
    spider._count_bytes(b"x" * 6, hop)
    spider._stop_if_too_large({}, 10, hop)
    with pytest.raises(StopDownload) as stopped:
        spider._count_bytes(b"x" * 6, hop)
    assert stopped.value.fail is False and "more than 10 bytes" in hop.meta["ingest_body_too_large"]
    resource = scrapy.Request("http://example.com/r.png")
    spider._count_bytes(b"x" * 60, resource)
    spider._stop_if_too_large({}, 60, resource)


def test_block_lists_replaced_or_extended_from_settings():
    from scrapy.settings import Settings

    from votersdaily import settings as defaults
    from votersdaily.ingest.config import IngestConfig

    config = IngestConfig.from_settings(Settings(defaults.__dict__))
    assert H.before_fetch("https://archive.org/details/x", config.blocklists) == "skip-url-blocklist"
    assert "google-analytics.com" in config.resource_domain_blocklist
    replaced = IngestConfig.from_settings(
        Settings(
            dict(
                defaults.__dict__,
                INGEST_URL_BLOCKLIST=["://blocked.example/"],
                INGEST_WALL_BLOCKLIST_EXTRA="/members-only,/sso/",
                INGEST_RESOURCE_DOMAIN_BLOCKLIST=["Tracker.Example"],
            )
        )
    )
    assert H.before_fetch("https://archive.org/details/x", replaced.blocklists) is None  # replaced
    assert H.before_fetch("https://blocked.example/a", replaced.blocklists) == "skip-url-blocklist"
    assert H.before_fetch("https://j.example/sso/login", replaced.blocklists) == "skip-wall"  # added
    assert H.before_fetch("https://j.example/password-login", replaced.blocklists) == "skip-wall"  # kept
    assert replaced.resource_domain_blocklist == ("tracker.example",)
    from votersdaily.ingest.resources import is_blocked

    assert is_blocked("https://cdn.tracker.example/t.js", replaced.resource_domain_blocklist)
    assert not is_blocked("https://www.google-analytics.com/x.js", replaced.resource_domain_blocklist)


def test_grobid_result_shape():
    """The real GROBID TEI in sandcrawler's result shape; a DERIVED copy with a biblio-glutton
    ``<idno type="fatcat">`` added to its header biblStruct gives ``fatcat_release``."""
    from votersdaily.ingest.grobid import grobid_result, quality

    tei = scholarly("23b29ea36382680716be08fc71aa81bd226e8a85.xml").read_bytes()
    result, kept = grobid_result(200, tei)
    assert kept == tei and result["status"] == "success" and result["fatcat_release"] is None
    assert result["grobid_version"] == "0.5.1-SNAPSHOT" and "grobid_version" not in result["metadata"]
    assert set(result["metadata"]["biblio"]) <= {"title", "authors", "journal", "date", "doi"}
    assert result["metadata"]["biblio"]["title"] == "DYNAMICS OF RAILWAY FREIGHT VEHICLES"
    assert quality(result) == "good"
    glutton = tei.replace(b"<biblStruct>", b'<biblStruct><idno type="fatcat">release_test</idno>', 1)
    assert glutton != tei
    assert grobid_result(200, glutton)[0]["fatcat_release"] == "release_test"


def test_pdf_thumbnail_only_when_wanted_and_renderable():
    from votersdaily.ingest import pdf as P
    from votersdaily.ingest.config import IngestConfig
    from votersdaily.ingest.process import process_pdf

    blob = scholarly("dummy.pdf").read_bytes()
    meta, _, thumbnail = process_pdf(blob, IngestConfig(pdf_thumbnails=False))  # INGEST_PDF_THUMBNAILS
    assert thumbnail is None and meta["has_page0_thumbnail"] is False and meta["status"] == "success"
    if P.PDFTOPPM:
        meta, _, thumbnail = process_pdf(blob, IngestConfig())
        assert meta["has_page0_thumbnail"] is True and thumbnail[:3] == b"\xff\xd8\xff"
    assert P.render_page0(b"%PDF-1.4 not really") is None  # a failed render is no thumbnail
