"""A local site for the ingest: the real scholarly pages (read in place from ../shared) plus small
plumbing pages for every status, and a runner that crawls a list of ingest requests in one
``scrapy crawl ingest`` subprocess and reads the results back from the store."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest

from tests.conftest import shared_file
from votersdaily.store import open_store

SCHOLARLY = "fixtures/inplace/scholarly"


def scholarly(name: str) -> Path:
    return shared_file("%s/%s" % (SCHOLARLY, name))


#: Real PDFs of pypdf's test resources (provenance: votersdaily/recordings/gov/FIXTURES.md).
PDFS = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "pdf").glob("*.pdf"))


def recorded_pdfs() -> list[tuple[str, bytes]]:
    """Every recorded PDF: the scholarly fixture and the sixteen of tests/fixtures/pdf."""
    return [("dummy.pdf", scholarly("dummy.pdf").read_bytes())] + [(p.name, p.read_bytes()) for p in PDFS]


def recorded_html_pages() -> list[Path]:
    """Every recorded HTML page: the scholarly and government fixtures and the project's own
    recordings (votersdaily/recordings)."""
    from tests.support.services import REPO, shared_dir

    return sorted((shared_dir() / "fixtures").rglob("*.htm*")) + sorted(
        (REPO / "votersdaily" / "recordings").rglob("*.htm*")
    )


def words(n: int, word: str = "lorem") -> str:
    return " ".join("%s%d" % (word, i % 50) for i in range(n))


def article(title: str, n_words: int, head: str = "", extra_body: str = "") -> str:
    """A plumbing page (our own, not a publisher's format) with ``n_words`` words of body text."""
    paragraphs = "".join("<p>%s.</p>" % words(100, "w%d_" % i) for i in range(n_words // 100))
    return (
        "<!DOCTYPE html><html><head><title>%s</title>%s</head><body><article><h1>%s</h1>%s%s</article>"
        "</body></html>" % (title, head, title, paragraphs, extra_body)
    )


RESOURCES_HEAD = (
    '<link rel="stylesheet" href="/res/style.css"><script src="/res/app.js"></script>'
    '<script src="https://www.google-analytics.com/ga.js"></script>'
)
RESOURCES_BODY = (
    '<img src="/res/fig1.png"><img src="res/fig1.png"><img src="/res/missing.png">'
    '<iframe src="/res/frame.html"></iframe><video src="/res/clip.mp4"></video>'
    '<img src="data:image/png;base64,AAAA"><a href="/not-a-resource.html">x</a>'
)
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d4944415478da63f8cfc0f01f0005000201c5b0d52a0000000049454e44ae426082"
)


#: The PLOS page's own charset declaration (line 20 of the recording, before its citation_* tags).
PLOS_CHARSET_META = b'<meta http-equiv="Content-Type" content="text/html; charset=utf-8"/>'
#: The first bytes of nature.com's news page in sandcrawler's test files (nature_article.html):
#: eight blank lines before the doctype. With them libmagic calls the eLife page JavaScript.
NATURE_LEADING_LINES = b"\n" * 8


def derived_pages() -> dict[str, tuple[bytes, str]]:
    """DERIVED variants of real pages (path → body, Content-Type): the PLOS article with its
    charset declaration moved to the end of the head (past w3lib's first 4 KiB), or removed and
    given only in the HTTP header, or removed altogether; the eLife article opening like the
    nature.com page. Every byte besides the noted change is the recording's."""
    plos = scholarly("plos_one_article.html").read_bytes()
    assert plos.count(PLOS_CHARSET_META) == 1
    without = plos.replace(PLOS_CHARSET_META, b"")
    late = without.replace(b"</head>", PLOS_CHARSET_META + b"</head>", 1)
    elife = scholarly("elife_article.html").read_bytes()
    return {
        "/derived/plos-charset-late.html": (late, "text/html"),
        "/derived/plos-charset-http.html": (without, "text/html; charset=utf-8"),
        "/derived/plos-charset-none.html": (without, "text/html"),
        "/derived/elife-blank-lines.html": (NATURE_LEADING_LINES + elife, "text/html"),
        "/derived/elife-blank-lines-as-js.html": (NATURE_LEADING_LINES + elife, "application/javascript"),
    }


def build_site(site) -> None:
    html = "text/html; charset=utf-8"
    site.mount("/scholarly/", scholarly("."))
    for path, (body, content_type) in derived_pages().items():
        site.route(path, body, content_type=content_type)
    # redirects
    site.route("/start", status=301, headers={"Location": "/hop1"})
    site.route("/hop1", status=302, headers={"Location": "/landing-pdf"})
    site.route(
        "/landing-pdf",
        article(
            "Landing",
            200,
            '<meta name="citation_title" content="A landing page">'
            '<meta name="citation_pdf_url" content="/scholarly/dummy.pdf">',
        ),
        content_type=html,
    )
    site.route("/loop/a", status=302, headers={"Location": "/loop/b"})
    site.route("/loop/b", status=302, headers={"Location": "/loop/a"})
    for i in range(30):
        site.route("/chain/%d" % i, status=302, headers={"Location": "/chain/%d" % (i + 1)})
    site.route("/noloc", status=302)
    # a redirect into the cloud metadata address: refused by the guard before any connection
    site.route("/to-metadata", status=302, headers={"Location": "http://169.254.169.254/latest/meta-data/"})
    site.route("/doctype-only", b"<!DOCTYPE html>\n", content_type="text/html")
    # landing pages
    site.route("/landing-nopdf", article("No PDF here", 300), content_type=html)
    site.route(
        "/landing-self",
        article("Self", 100, '<meta name="citation_pdf_url" content="/landing-self">'),
        content_type=html,
    )
    site.route(
        "/landing-zip",
        article("Zip", 100, '<meta name="citation_pdf_url" content="/scholarly/dummy_zip.zip">'),
        content_type=html,
    )
    for i in range(12):
        site.route(
            "/hops/%d" % i,
            article("Hop %d" % i, 100, '<meta name="citation_pdf_url" content="/hops/%d">' % (i + 1)),
            content_type=html,
        )
    # walls
    site.route("/secure", status=302, headers={"Location": "/login?TARGET=/paper"})
    site.route("/paper", status=302, headers={"Location": "/cookieAbsent"})
    site.route("/showcaptcha.asp", article("Captcha", 100), content_type=html)
    site.route(
        "/forbidden",
        "<html><head><title>403</title></head><body><center><h1>403 Forbidden</h1></center>"
        "<hr><center>nginx</center></body></html>",
        content_type=html,
    )
    # statuses and bodies
    site.route("/missing", "<html><body>Not here</body></html>", status=404, content_type=html)
    site.route("/error500", "<html><body>Oops</body></html>", status=500, content_type=html)
    site.route("/empty", b"", content_type="application/pdf")
    site.route("/gz-article", article("Gzipped article", 1500), content_type=html, gzip=True)
    site.route(
        "/raw-gzip.pdf", gzip.compress(scholarly("dummy.pdf").read_bytes()), content_type="application/pdf"
    )
    site.route("/bad-gzip.pdf", gzip.compress(b"x" * 5000)[:-6], content_type="application/pdf")
    site.route("/bomb", b"\0" * 200_000, content_type="text/html", gzip=True)
    # DERIVED: the dummy PDF gzipped, its last 6 bytes cut, sent as Content-Encoding: gzip
    site.route(
        "/bad-gzip-encoded.pdf",
        gzip.compress(scholarly("dummy.pdf").read_bytes())[:-6],
        headers={"Content-Encoding": "gzip"},
        content_type="application/pdf",
    )
    # HTML scopes and resources
    site.route("/article", article("Local article", 1500, RESOURCES_HEAD, RESOURCES_BODY), content_type=html)
    site.route(
        "/stub",
        "<html><head><title>Stub</title></head><body><p>Too short.</p></body></html>",
        content_type=html,
    )
    site.route("/middling", article("Middling", 300), content_type=html)
    site.route(
        "/many",
        article("Many", 1500, "", "".join('<img src="/img/%d.png">' % i for i in range(201))),
        content_type=html,
    )
    site.route("/res/style.css", "body { color: black }", content_type="text/css")
    site.route("/res/app.js", "console.log('ready');", content_type="application/javascript")
    site.route("/res/fig1.png", PNG, content_type="image/png")
    site.route("/res/frame.html", "<html><body>frame</body></html>", content_type=html)
    # malformed XML (our own plumbing document): an xml ingest ends xml-parse-error
    site.route(
        "/broken.xml",
        '<?xml version="1.0" encoding="utf-8"?>\n<article><title>Unclosed</article>\n',
        content_type="application/xml",
    )
    # servers that stall: before answering a hop, and on one sub-resource of a page (STALL seconds, well
    # past the INGEST_TIMEOUT test_timeouts sets, which leaves a healthy ingest room on a loaded machine)
    site.route("/slow-redirect", _slow(STALL), status=302, headers={"Location": "/landing-pdf"})
    site.route("/stall", _slow(4.0), content_type="application/pdf")
    site.route(
        "/slow-resources", article("Slow resources", 1500, "", '<img src="/res/slow.png">'), content_type=html
    )
    site.route("/res/slow.png", _slow(STALL, PNG), content_type="image/png")
    site.route("/res/clip.mp4", b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom", content_type="video/mp4")


#: How long the stalling routes take to answer (test_timeouts' INGEST_TIMEOUT is below, DOWNLOAD_TIMEOUT above).
STALL = 7.0


def _slow(seconds: float, body: bytes = b""):
    def answer(handler) -> bytes:
        time.sleep(seconds)
        return body

    return answer


def write_requests(path: Path, requests: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in requests), encoding="utf-8")
    return path


def local_ingest_args(requests_file: Path, tmp_path: Path) -> tuple[str, ...]:
    """``scrapy crawl ingest`` arguments for a requests file of the local site (a private address):
    blobs under ``tmp_path``, no WARC files."""
    return (
        "-a", "requests=%s" % requests_file,
        "-s", "INGEST_ALLOW_PRIVATE=True",
        "-s", "INGEST_ALLOWED_HOSTS=127.0.0.1",
        "-s", "INGEST_BLOB_DIR=%s" % (tmp_path / "blobs"),
        "-s", "INGEST_WARC_ENABLED=False",
    )  # fmt: skip


def stored(store_uri: str, db: str) -> list[dict]:
    """The documents of database ``db`` of the store."""
    store = open_store(store_uri)
    try:
        return list(store.iter_docs(db))
    finally:
        store.close()


def read_results(store_uri: str) -> dict[str, dict]:
    return {doc["_id"]: doc for doc in stored(store_uri, "ingest_file_result")}


@pytest.fixture
def ingest_site(site):
    build_site(site)
    return site


def run_ingest(
    crawl,
    store_uri: str,
    requests_file: Path,
    tmp_path: Path,
    *settings: str,
    private: bool = True,
    status: int = 0,
    within: list[str] | None = None,
    env: dict | None = None,
    subprocess: bool = False,
):
    extra = [
        "-a",
        "requests=%s" % requests_file,
        "-s",
        "INGEST_BLOB_DIR=%s" % (tmp_path / "blobs"),
        "-s",
        "INGEST_TEIXML_FEED=%s" % (tmp_path / "feed.jsonl"),
        "-s",
        "INGEST_ALLOWED_HOSTS=127.0.0.1",
    ]
    if private:
        extra += ["-s", "INGEST_ALLOW_PRIVATE=True"]
    for setting in settings:
        extra += ["-s", setting]
    options = {name: value for name, value in (("within", within), ("env", env)) if value is not None}
    if subprocess:  # a process of its own: what this one has cached (its temporary folder) is not its
        options["subprocess"] = True
    proc = crawl("ingest", None, store_uri, *extra, **options)
    assert proc.returncode == status, proc.stderr[-4000:]  # 1: the run failed (its run log says why)
    return proc
