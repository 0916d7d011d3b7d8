"""JavaScript rendering: real Chromium through scrapy-playwright; Splash's render.html API."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.processes import start_crawl
from votersdaily.rendering import CHROMIUM
from votersdaily.store import open_store

pytestmark = pytest.mark.slow  # a Chromium browser and crawl subprocesses

PAGE = """<!doctype html><html><head><title>t</title></head><body><p id="content"></p>
<script>document.getElementById("content").textContent = "written by " + "JavaScript";</script>
</body></html>"""


def _docs(uri):
    store = open_store(uri)
    try:
        return list(store.iter_docs("vd_fetch"))
    finally:
        store.close()


@pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (scripts/setup.sh)"
)
def test_chromium_renders_a_page_written_by_javascript(site, sqlite_uri, tmp_path):
    url = site.route("/js.html", PAGE, content_type="text/html; charset=utf-8")
    proc = start_crawl(
        "vd_rendered", sqlite_uri, "TEST_DB=vd_fetch", log=tmp_path / "crawl.log", args={"url": url}
    )
    assert proc.wait(120) == 0, (tmp_path / "crawl.log").read_text()[-3000:]
    docs = _docs(sqlite_uri)
    assert [d["content"] for d in docs] == ["written by JavaScript"], (tmp_path / "crawl.log").read_text()[
        -3000:
    ]
    assert "'render/playwright': 1" in (tmp_path / "crawl.log").read_text()


def test_splash_render_html_api(site, sqlite_uri, tmp_path):
    """A Splash server cannot run here: a local stand-in endpoint speaks Splash's render.html API
    (GET /render.html?url=…&wait=…&timeout=… → the rendered HTML) and records what it was asked."""
    url = site.route("/js.html", PAGE, content_type="text/html; charset=utf-8")
    asked = []

    def render(handler):
        query = parse_qs(urlsplit(handler.path).query)
        asked.append(query)
        return PAGE.replace('<p id="content"></p>', '<p id="content">rendered by splash</p>').encode()

    site.route("/render.html", render, content_type="text/html; charset=utf-8")
    proc = start_crawl(
        "vd_rendered",
        sqlite_uri,
        "TEST_DB=vd_fetch",
        "SPLASH_URL=" + site.url,
        log=tmp_path / "crawl.log",
        args={"url": url},
    )
    assert proc.wait(120) == 0, (tmp_path / "crawl.log").read_text()[-3000:]
    assert [q["url"] for q in asked] == [[url]]
    assert float(asked[0]["wait"][0]) > 0 and float(asked[0]["timeout"][0]) > 0
    docs = _docs(sqlite_uri)
    assert [(d["url"], d["content"]) for d in docs] == [(url, "rendered by splash")]
    assert site.hits.get("/js.html", 0) == 0, "the page itself was fetched by Splash, not by Scrapy"
