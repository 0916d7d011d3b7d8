"""Every status of the hop loop, end to end: one ``scrapy crawl ingest`` over a JSON-lines file of
requests against the local site, results read back from a real embedded store."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from datetime import datetime

import pytest

from votersdaily.ingest.filemeta import sha1_b32
from votersdaily.store import open_store

from .conftest import read_results, run_ingest, scholarly, write_requests

CASES = {
    # path, ingest_type → expected status
    "/start": ("pdf", "success"),
    "/loop/a": ("pdf", "redirect-loop"),
    "/chain/0": ("pdf", "redirects-exceeded"),
    "/noloc": ("pdf", "bad-redirect"),
    "/to-metadata": ("pdf", "skip-host-not-allowed"),
    "/doctype-only": ("html", "html-selectolax-error"),
    "/landing-nopdf": ("pdf", "no-pdf-link"),
    "/landing-self": ("pdf", "link-loop"),
    "/landing-zip": ("pdf", "wrong-mimetype"),
    "/hops/0": ("pdf", "max-hops-exceeded"),
    "/account/password-login": ("pdf", "skip-wall"),
    "/secure": ("pdf", "blocked-wall"),
    "/paper": ("pdf", "blocked-cookie"),
    "/missing": ("pdf", "terminal-bad-status"),
    "/error500": ("html", "terminal-bad-status"),
    "/empty": ("pdf", "empty-blob"),
    "/gz-article": ("html", "success"),
    "/raw-gzip.pdf": ("pdf", "success"),
    "/bad-gzip.pdf": ("pdf", "bad-gzip-encoding"),
    "/bad-gzip-encoded.pdf": ("pdf", "bad-gzip-encoding"),
    "/article": ("html", "success"),
    "/stub": ("html", "wrong-scope"),
    "/middling": ("html", "unknown-scope"),
    "/showcaptcha.asp": ("html", "blocked-captcha"),
    "/forbidden": ("html", "blocked-forbidden"),
    "/many": ("html", "too-many-resources"),
    "/scholarly/dummy.pdf": ("html", "wrong-mimetype"),
    "/scholarly/plos_one_article.html": ("html", "success"),
    "/scholarly/elife_article.html": ("html", "success"),
    "/scholarly/23b29ea36382680716be08fc71aa81bd226e8a85.xml": ("xml", "success"),
    "/broken.xml": ("xml", "xml-parse-error"),
    "/scholarly/genders_g58_fairlie.html": ("pdf", "no-pdf-link"),
    "/derived/plos-charset-late.html": ("html", "success"),
    "/derived/plos-charset-http.html": ("html", "success"),
    "/derived/plos-charset-none.html": ("html", "success"),
    "/derived/elife-blank-lines.html": ("html", "success"),
    "/derived/elife-blank-lines-as-js.html": ("html", "wrong-mimetype"),
}


@pytest.fixture(scope="module")
def crawled(tmp_path_factory, request):
    """Run the crawl once for the module (the site lives as long as the module's tests)."""
    from tests.support.services import LocalSite

    from .conftest import build_site

    site = LocalSite().start()
    build_site(site)
    tmp = tmp_path_factory.mktemp("ingest")
    store_uri = "sqlite:///%s" % (tmp / "store.db")
    requests = [
        {
            "base_url": site.url + path,
            "ingest_type": itype,
            "link_source": "test",
            "link_source_id": path,
            "ingest_request_source": "pytest",
            "ext_ids": {"doi": None},
        }
        for path, (itype, _) in CASES.items()
    ]
    requests.append({"base_url": "https://archive.org/details/thing", "ingest_type": "pdf"})
    requests.append({"base_url": site.url + "/scholarly/plos_one_article.html", "ingest_type": "pdf"})
    path = write_requests(tmp / "requests.jsonl", requests)
    import sys

    from tests.conftest import crawl as crawl_fixture  # noqa: F401 - same runner as the fixture
    from tests.support.services import run_cli

    args = [sys.executable, "-m", "scrapy", "crawl", "ingest", "-s", "LOG_LEVEL=INFO"]
    crawl = lambda spider, urls, uri, *extra: run_cli(args + list(extra), uri)  # noqa: E731
    proc = run_ingest(crawl, store_uri, path, tmp)
    yield {"site": site, "results": read_results(store_uri), "tmp": tmp, "store_uri": store_uri, "proc": proc}
    site.stop()


def _result(crawled, path: str, itype: str | None = None) -> dict:
    url = crawled["site"].url + path
    for doc in crawled["results"].values():
        if doc["request"]["base_url"] == url and (itype is None or doc["request"]["ingest_type"] == itype):
            return doc
    raise AssertionError("no result for %s" % url)


@pytest.mark.parametrize("path", list(CASES))
def test_status(crawled, path):
    itype, expected = CASES[path]
    result = _result(crawled, path, itype)
    assert result["status"] == expected, result.get("error_message")
    assert result["hit"] is (expected == "success")
    assert result["request"]["base_url"] == crawled["site"].url + path
    assert result["request"]["link_source_id"] == path  # echoed verbatim
    assert result["request"]["ext_ids"] == {"doi": None}
    if expected != "skip-wall":
        assert result["hops"][0] == crawled["site"].url + path


def test_blocklisted_base_url_is_never_fetched(crawled):
    doc = crawled["results"]["pdf:https://archive.org/details/thing"]
    assert doc["status"] == "skip-url-blocklist" and doc["hit"] is False and "hops" not in doc


def test_landing_page_to_pdf_result_shape(crawled):
    base = crawled["site"].url
    r = _result(crawled, "/start")
    assert r["hops"] == [base + "/start", base + "/landing-pdf", base + "/scholarly/dummy.pdf"]
    assert [h["url"] for h in r["redirect_chain"]] == [base + "/start", base + "/hop1"]
    assert r["extract_next_hop"] == {"pdf_url": base + "/scholarly/dummy.pdf", "technique": "html_biblio"}
    assert r["html_biblio"]["title"] == "A landing page"
    t = r["terminal"]
    assert t["terminal_url"] == base + "/scholarly/dummy.pdf" and t["terminal_status_code"] == 200
    assert re.fullmatch(r"\d{14}", t["terminal_dt"])
    # the fixture's documented size and sha1 (FIXTURES.md)
    assert t["terminal_sha1hex"] == "90ffd2359008d82298821d16b21778c5c39aec36"
    fm = r["file_meta"]
    assert fm == {
        "size_bytes": 13264,
        "sha1hex": "90ffd2359008d82298821d16b21778c5c39aec36",
        "sha256hex": fm["sha256hex"],
        "md5hex": fm["md5hex"],
        "mimetype": "application/pdf",
    }
    import hashlib

    data = scholarly("dummy.pdf").read_bytes()
    assert (
        fm["sha256hex"] == hashlib.sha256(data).hexdigest() and fm["md5hex"] == hashlib.md5(data).hexdigest()
    )
    cdx = r["cdx"]
    assert cdx["sha1hex"] == fm["sha1hex"] and cdx["datetime"] == t["terminal_dt"]
    assert cdx["sha1b32"] == sha1_b32(fm["sha1hex"]) and cdx["status_code"] == 200
    assert cdx["surt"] == "127.0.0.1:%d)/scholarly/dummy.pdf" % crawled["site"].port
    assert "warc_path" not in cdx  # WARC output is off
    # pdf_meta read by pypdf, in sandcrawler's shape; the fixture's info dictionary says Author
    # "Evangelos Vlachogiannis", CreationDate D:20070223175637+02'00', its trailer /ID f7d77b3d...
    pm = r["pdf_meta"]
    assert pm["status"] == "success" and pm["sha1hex"] == fm["sha1hex"] and pm["error_msg"] is None
    assert (pm["text"], pm["file_meta"], pm["source"]) == (None, None, None)  # as sandcrawler stores it
    assert pm["pdf_info"]["Author"] == "Evangelos Vlachogiannis" and pm["has_text"] is True
    assert pm["pdf_info"]["CreationDate"] == "2007-02-23T15:56:37Z" and pm["pdf_info"]["Creator"] == "Writer"
    assert pm["pdf_extra"] == {
        "page0_height": 842.0,
        "page0_width": 595.0,
        "page_count": 1,
        "permanent_id": "f7d77b3d22b9f92829d49ff5d78b8f28",
        "update_id": "f7d77b3d22b9f92829d49ff5d78b8f28",
        "pdf_version": "1.4",
    }
    # a page-0 thumbnail when poppler's pdftoppm is installed (scripts/setup.sh installs it)
    thumb = crawled["tmp"] / "blobs" / "thumbnail" / ("%s.jpg" % fm["sha1hex"])
    if shutil.which("pdftoppm"):
        assert pm["has_page0_thumbnail"] is True and thumb.read_bytes()[:3] == b"\xff\xd8\xff"  # JPEG
        # rendered by the extraction process's warm renderer (or the spider): pdftoppm's bytes all the same
        from votersdaily.ingest.thumbnail import render_page0

        assert thumb.read_bytes() == render_page0(scholarly("dummy.pdf").read_bytes()).jpeg
    else:
        assert pm["has_page0_thumbnail"] is False and not thumb.exists()


def test_failure_shapes(crawled):
    base = crawled["site"].url
    loop = _result(crawled, "/loop/a")
    assert "redirect loop" in loop["error_message"]
    # a failed chain ends at the last URL fetched, with its status and date (as sandcrawler's CDX row)
    assert _terminal_fetched(loop) == (base + "/loop/b", 302)
    assert loop["hops"] == [base + "/loop/a", base + "/loop/b"]
    chain = _result(crawled, "/chain/0")
    assert _terminal_fetched(chain) == (base + "/chain/25", 302)
    assert crawled["site"].hits.get("/chain/25") == 1 and crawled["site"].hits.get("/chain/26") is None
    assert _terminal_fetched(_result(crawled, "/noloc")) == (base + "/noloc", 302)
    missing = _result(crawled, "/missing")
    assert (
        missing["terminal"]["terminal_status_code"] == 404 and "terminal_sha1hex" not in missing["terminal"]
    )
    assert _result(crawled, "/error500", "html")["terminal"]["terminal_status_code"] == 500
    assert _result(crawled, "/landing-self")["error_message"] == "repeated: %s/landing-self" % base
    assert _result(crawled, "/landing-nopdf")["extract_next_hop"] == {}
    # sandcrawler's loop fetches while the hops number at most 8: /hops/7 is fetched, /hops/8 recorded
    hopped = _result(crawled, "/hops/0")
    assert hopped["hops"] == [base + "/hops/%d" % i for i in range(9)]
    assert _terminal_fetched(hopped) == (base + "/hops/7", 200)
    assert crawled["site"].hits.get("/hops/7") == 1 and crawled["site"].hits.get("/hops/8") is None
    assert _result(crawled, "/secure")["terminal"]["terminal_url"] == base + "/login?TARGET=/paper"
    assert _result(crawled, "/paper")["terminal"]["terminal_url"] == base + "/cookieAbsent"
    assert crawled["site"].hits.get("/cookieAbsent") is None  # never fetched
    assert crawled["site"].hits.get("/account/password-login") is None
    wrong = _result(crawled, "/landing-zip")
    assert wrong["file_meta"]["mimetype"] == "application/zip"
    assert (
        "bad gzip" in _result(crawled, "/bad-gzip.pdf")["error_message"]
        or "gzip" in _result(crawled, "/bad-gzip.pdf")["error_message"]
    )
    # a PDF link to a host outside INGEST_ALLOWED_HOSTS is refused, not fetched
    plos_pdf = [
        d
        for d in crawled["results"].values()
        if d["request"]["ingest_type"] == "pdf" and d["request"]["base_url"].endswith("plos_one_article.html")
    ]
    assert plos_pdf and plos_pdf[0]["status"] == "skip-host-not-allowed"
    # so is a redirect to the metadata address; the hop that led there is recorded
    metadata = _result(crawled, "/to-metadata")
    assert metadata["redirect_chain"][-1]["location"] == "http://169.254.169.254/latest/meta-data/"
    assert metadata["terminal"]["terminal_status_code"] is None  # refused before any connection
    assert metadata["error_message"].startswith("refusing http://169.254.169.254/")
    assert plos_pdf[0]["hops"][-1].startswith("https://journals.plos.org/plosone/article/file?id=10.1371/")


def _terminal_fetched(result: dict) -> tuple[str, int]:
    term = result["terminal"]
    assert re.fullmatch(r"\d{14}", term["terminal_dt"]), term
    return term["terminal_url"], term["terminal_status_code"]


def test_gzip_bodies(crawled):
    raw = _result(crawled, "/raw-gzip.pdf")
    assert raw["file_meta"]["sha1hex"] == "90ffd2359008d82298821d16b21778c5c39aec36"  # hashed after gunzip
    assert _result(crawled, "/gz-article", "html")["file_meta"]["mimetype"] == "text/html"


def test_html_result_and_resources(crawled):
    base = crawled["site"].url
    r = _result(crawled, "/article", "html")
    assert r["scope"] == "article-fulltext" and r["platform"] is None
    assert r["html_body"]["status"] == "success" and r["html_body"]["agent"].startswith("trafilatura/")
    assert r["html_body"]["word_count"] > 1200 and "tei_xml" not in r["html_body"]
    got = {(x["url"], x["resource_type"]) for x in r["html_resources"]}
    assert got == {
        (base + "/res/style.css", "stylesheet"),
        (base + "/res/app.js", "script"),
        (base + "/res/fig1.png", "image"),
        (base + "/res/missing.png", "image"),
        (base + "/res/frame.html", "subdocument"),
        (base + "/res/clip.mp4", "media"),
    }
    by_url = {x["url"]: x for x in r["html_resources"]}
    import hashlib

    from .conftest import PNG

    png = by_url[base + "/res/fig1.png"]
    assert png["status_code"] == 200 and png["size"] == len(PNG) and png["mimetype"] == "image/png"
    assert (
        png["sha1hex"] == hashlib.sha1(PNG).hexdigest()
        and png["sha256hex"] == hashlib.sha256(PNG).hexdigest()
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", png["timestamp"]) and png["surt"].endswith(
        "/res/fig1.png"
    )
    assert by_url[base + "/res/missing.png"]["status_code"] == 404  # recorded, not fatal
    assert r["html_resources_failed"] == 1
    assert crawled["site"].hits.get("/res/fig1.png") == 1  # deduplicated


def test_too_many_resources(crawled):
    r = _result(crawled, "/many", "html")
    assert "201 sub-resources" in r["error_message"] and "html_resources" not in r
    assert crawled["site"].hits.get("/img/0.png") is None


def test_real_pages_biblio_and_external_resources(crawled):
    plos = _result(crawled, "/scholarly/plos_one_article.html", "html")
    biblio = plos["html_biblio"]
    # values read from the page's meta tags
    assert biblio["title"] == (
        "Assessment on reticuloendotheliosis virus infection in specific-pathogen-free "
        "chickens based on detection of yolk antibody"
    )
    assert biblio["doi"] == "10.1371/journal.pone.0213978"
    assert biblio["release_date"] == "2019-04-22"  # citation_date "Apr 22, 2019"
    assert biblio["container_name"] == "PLOS ONE" and biblio["volume"] == "14" and biblio["issue"] == "4"
    assert len(biblio["contrib_names"]) == 11 and biblio["contrib_names"][0] == "Yang Li"
    assert (biblio["first_page"], biblio["container_issn"], biblio["publisher"]) == (
        "e0213978",
        "1932-6203",
        "Public Library of Science",
    )
    assert len(biblio["raw_references"]) == 23  # 23 citation_reference tags
    assert biblio["pdf_fulltext_url"] == (
        "https://journals.plos.org/plosone/article/file?id=10.1371/journal.pone.0213978&type=printable"
    )
    # external sub-resources are refused (INGEST_ALLOWED_HOSTS), recorded on the resource
    base = crawled["site"].url
    external = [x for x in plos["html_resources"] if not x["url"].startswith(base)]
    assert external and all(x["status_code"] is None and "HostNotAllowed" in x["error"] for x in external)
    assert all(isinstance(x["status_code"], int) for x in plos["html_resources"] if x["url"].startswith(base))
    assert plos["status"] == "success"
    elife = _result(crawled, "/scholarly/elife_article.html", "html")
    assert elife["html_biblio"]["doi"] == "10.7554/eLife.44753"
    assert elife["html_biblio"]["title"] == "Parallel visual circuitry in a basal chordate"
    # dc.* tags of the page: seven dc.contributor, dc.date, dc.publisher, dc.language; og:site_name
    eb = elife["html_biblio"]
    assert eb["contrib_names"][0] == "Matthew J Kourakis" and len(eb["contrib_names"]) == 7
    assert (eb["release_date"], eb["publisher"], eb["container_name"], eb["lang"]) == (
        "2019-04-18",
        "eLife Sciences Publications Limited",
        "eLife",
        "en",
    )


def test_tei_blob_feed_and_html_meta(crawled):
    tmp = crawled["tmp"]
    r = _result(crawled, "/article", "html")
    sha1 = r["file_meta"]["sha1hex"]
    blob = tmp / "blobs" / "html" / ("%s.tei.xml" % sha1)
    assert blob.exists() and b"<TEI" in blob.read_bytes() and b"w3_1" in blob.read_bytes()
    messages = [json.loads(line) for line in (tmp / "feed.jsonl").read_text().splitlines()]
    mine = [m for m in messages if m["key"] == sha1]
    assert mine and mine[0]["sha1hex"] == sha1 and mine[0]["status"] == "success"
    assert mine[0]["tei_xml"] == blob.read_text() and mine[0]["word_count"] == r["html_body"]["word_count"]
    store = open_store(crawled["store_uri"])
    try:
        meta = store.get("html_meta", sha1)
        assert (
            meta["scope"] == "article-fulltext"
            and meta["has_teixml"] is True
            and meta["has_thumbnail"] is False
        )
        assert meta["word_count"] == r["html_body"]["word_count"] and len(meta["resources"]) == 6
        assert store.get("html_meta", _result(crawled, "/middling", "html")["file_meta"]["sha1hex"]) is None
    finally:
        store.close()


def test_file_table_rows(crawled):
    store = open_store(crawled["store_uri"])
    try:
        table = "wbgrp-journal-extract-0-dev"
        key = sha1_b32("90ffd2359008d82298821d16b21778c5c39aec36")
        row = store.get(table, key)
        assert row is not None and len(key) == 32
        # One version per SHA-1 is kept (the seed design): of the URLs that delivered these exact bytes,
        # the row holds whichever ingest wrote last (they run concurrently).
        served_from = {
            doc["terminal"]["terminal_url"]
            for doc in crawled["results"].values()
            if doc.get("hit") and doc["file_meta"]["sha1hex"] == "90ffd2359008d82298821d16b21778c5c39aec36"
        }
        assert crawled["site"].url + "/scholarly/dummy.pdf" in served_from and len(served_from) > 1
        assert json.loads(row["f"]["c"])["u"] in served_from
        assert row["file"]["size"] == 13264 and row["file"]["mime"] == "application/pdf"
        meta = json.loads(row["file"]["meta"])
        assert meta["sha1"] == "90ffd2359008d82298821d16b21778c5c39aec36" and meta["magic"].startswith(
            "PDF document"
        )
        assert row["pdf0"]["page_count"] == 1 and row["pdf0"]["has_text"] is True
        text = gzip.decompress(store.get_attachment(table, key, row["pdf0"]["pdf_text"]))
        assert b"Dummy PDF file" in text  # the fixture's only line of text
        assert row["match0"]["mstatus"] == "not-matched"
        columns = [c for fam in ("f", "file", "grobid0", "pdf0", "match0") for c in (row.get(fam) or {})]
        assert len(columns) == len(set(columns))
        # When each family was made: the newest of each wins over a late spooled copy (store/families.py).
        carried = {fam for fam in ("f", "file", "grobid0", "pdf0", "match0") if fam in row}
        assert set(row["updated"]) == carried, row["updated"]
        assert all(datetime.fromisoformat(when).tzinfo is not None for when in row["updated"].values())
        # failed ingests leave no row
        zip_sha = _result(crawled, "/landing-zip")["file_meta"]["sha1hex"]
        assert store.get(table, sha1_b32(zip_sha)) is None
    finally:
        store.close()


def test_run_log(crawled):
    store = open_store(crawled["store_uri"])
    try:
        logs = list(store.iter_docs("vd_log"))
        assert len(logs) == 1 and logs[0]["parser_name"] == "ingest" and logs[0]["result"] == "success"
        assert logs[0]["store"]["ingest_file_result"]["inserted"] == len(crawled["results"])
    finally:
        store.close()


@pytest.mark.parametrize(
    "path",
    ["/derived/plos-charset-late.html", "/derived/plos-charset-http.html", "/derived/plos-charset-none.html"],
)
def test_utf8_page_biblio_whatever_the_charset_declaration(crawled, path):
    """DERIVED variants of the PLOS page (conftest.derived_pages): the same html_biblio as the
    recording itself, curly apostrophes intact (bytes handed to lxml gave ``Marekâ\x80\x99s``)."""
    original = _result(crawled, "/scholarly/plos_one_article.html", "html")["html_biblio"]
    biblio = _result(crawled, path, "html")["html_biblio"]
    assert biblio == original
    references = " ".join(biblio["raw_references"])
    assert "Marek\u2019s disease" in references and "\u00e2" not in references


def test_html_that_libmagic_calls_javascript(crawled):
    """DERIVED: the eLife page opening with the blank lines of nature.com's page; libmagic says
    application/javascript, the server says text/html and the body starts like HTML."""
    r = _result(crawled, "/derived/elife-blank-lines.html", "html")
    assert r["file_meta"]["mimetype"] == "text/html"
    assert (r["mimetype_sniffed"], r["mimetype_declared"]) == ("application/javascript", "text/html")
    assert r["html_biblio"] == _result(crawled, "/scholarly/elife_article.html", "html")["html_biblio"]
    # declared as JavaScript too: libmagic's word stands, as in sandcrawler
    as_js = _result(crawled, "/derived/elife-blank-lines-as-js.html", "html")
    assert as_js["file_meta"]["mimetype"] == "application/javascript" and "mimetype_sniffed" not in as_js


def test_a_plain_run_is_quiet(crawled):
    """No deprecation warnings from the project's code, no "Disabled WarcWriterMiddleware" warning
    when WARC output is simply off (the middleware only joins with INGEST_WARC_ENABLED)."""
    stderr = crawled["proc"].stderr
    assert "DeprecationWarning" not in stderr and "deprecated" not in stderr
    assert "WarcWriterMiddleware" not in stderr
