"""JavaScript rendering: real Chromium through scrapy-playwright, every request of its pages through
the crawl's address guard (votersdaily/rendering/gate.py); Splash's render.html API.

The pages are written here: they stand for no source's format, only for what a hostile page could
make a browser fetch."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.processes import start_crawl
from tests.support.services import ConnectionRecorder, LocalSite, free_port, wait_http
from votersdaily.rendering import CHROMIUM, CHROMIUM_ARGS, NO_NETWORK_ARGS, RENDER_SETTINGS
from votersdaily.store import open_store

pytestmark = pytest.mark.slow  # a Chromium browser and crawl subprocesses
needs_chromium = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (scripts/setup.sh)"
)

PAGE = """<!doctype html><html><head><title>t</title></head><body><p id="content"></p>
<script>document.getElementById("content").textContent = "written by " + "JavaScript";</script>
</body></html>"""


def _docs(uri):
    store = open_store(uri)
    try:
        return list(store.iter_docs("vd_fetch"))
    finally:
        store.close()


def allowed(site: LocalSite) -> str:
    """The setting that lets the guard fetch the test site's port of loopback, and nothing else there."""
    return "INGEST_PRIVATE_HOSTS=127.0.0.1:%d" % site.port


def render(site, sqlite_uri, tmp_path, url, *settings):
    """Crawl ``url`` with vd_rendered; (the stored contents, the crawl's log)."""
    log = tmp_path / "crawl.log"
    proc = start_crawl(
        "vd_rendered", sqlite_uri, "TEST_DB=vd_fetch", allowed(site), *settings, log=log, args={"url": url}
    )
    assert proc.wait(120) == 0, log.read_text()[-3000:]
    return [d["content"] for d in _docs(sqlite_uri)], log.read_text()


@pytest.fixture
def internal():
    """Another service on this machine, on a port the policy does not allow."""
    other = LocalSite().start()
    yield other
    other.stop()


@needs_chromium
def test_chromium_renders_a_page_written_by_javascript(site, sqlite_uri, tmp_path):
    url = site.route("/js.html", PAGE, content_type="text/html; charset=utf-8")
    proc = start_crawl(
        "vd_rendered",
        sqlite_uri,
        "TEST_DB=vd_fetch",
        allowed(site),
        log=tmp_path / "crawl.log",
        args={"url": url},
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
        "SPLASH_NETWORK_CONFINED=True",
        allowed(site),
        log=tmp_path / "crawl.log",
        args={"url": url},
    )
    assert proc.wait(120) == 0, (tmp_path / "crawl.log").read_text()[-3000:]
    assert [q["url"] for q in asked] == [[url]]
    assert float(asked[0]["wait"][0]) > 0 and float(asked[0]["timeout"][0]) > 0
    docs = _docs(sqlite_uri)
    assert [(d["url"], d["content"]) for d in docs] == [(url, "rendered by splash")]
    assert site.hits.get("/js.html", 0) == 0, "the page itself was fetched by Splash, not by Scrapy"


HOSTILE = """<!doctype html><html><head><title>t</title></head><body><p id="content"></p>
<script src="/allowed.js"></script><script src="/moved.js"></script>
<script src="{internal}/script.js"></script><script src="/to-internal.js"></script>
<img src="{internal}/image.png"><iframe src="{internal}/frame.html"></iframe><img src="/slow.png">
<script>
write(" by the page");
fetch("{internal}/api").catch(() => null);
try {{ new WebSocket("{ws}/socket"); }} catch (e) {{}}
</script></body></html>"""


@needs_chromium
def test_the_browser_reaches_only_what_the_address_policy_allows(site, internal, sqlite_uri, tmp_path):
    """A page on the allowed site names another service of this machine in a script, an image, a
    frame, a fetch, a redirect of its own site and a WebSocket. Before, Chromium fetched them all
    itself (the guard saw only the page); now the internal service sees no request at all, the page
    still renders with its allowed scripts (one of them behind a redirect), and the refusal is
    logged once for the address and counted for each request. The WebSocket, which no route sees,
    meets Chromium's proxy that leads nowhere (the slow image holds the page's load event until the
    socket has had its chance). Chromium's Local Network Access checks are off here: they would stop
    the socket to loopback themselves (a page the gate fulfilled has no address, so counts as
    public), but not one to a public address, nor one from a page on a private address."""
    site.route("/allowed.js", 'function write(s) { content.textContent += s; } write("allowed");')
    site.route("/moved.js", status=302, headers={"Location": "/second.js"})
    site.route("/second.js", 'write(" and redirected");')
    site.route("/slow.png", lambda handler: time.sleep(1.5) or b"", content_type="image/png")
    site.route("/to-internal.js", status=302, headers={"Location": internal.url + "/redirected.js"})
    page = HOSTILE.format(internal=internal.url, ws=internal.url.replace("http:", "ws:"))
    url = site.route("/hostile.html", page, content_type="text/html; charset=utf-8")
    args = [*CHROMIUM_ARGS, "--disable-features=LocalNetworkAccessChecks"]
    launch = {**RENDER_SETTINGS["PLAYWRIGHT_LAUNCH_OPTIONS"], "args": args}
    contents, log = render(site, sqlite_uri, tmp_path, url, "PLAYWRIGHT_LAUNCH_OPTIONS=" + json.dumps(launch))
    assert internal.hits == {}, log[-3000:]
    assert contents == ["allowed and redirected by the page"], log[-3000:]
    assert site.hits["/moved.js"] == site.hits["/second.js"] == 1
    assert log.count("the rendering browser was refused 127.0.0.1:%d" % internal.port) == 1, log[-3000:]
    assert "is a private/loopback/link-local address (INGEST_ALLOW_PRIVATE is off)" in log
    # /script.js, /to-internal.js's second hop, /image.png, /frame.html, the fetch of /api
    assert "'render/refused': 5" in log, log[-3000:]


@needs_chromium
def test_a_page_gets_at_most_its_requests_and_bytes(site, sqlite_uri, tmp_path):
    """VOTERSDAILY_BROWSER_MAX_REQUESTS: the page and two scripts, the third refused unfetched;
    VOTERSDAILY_BROWSER_MAX_BYTES: a script larger than the limit is cut, not run."""
    big = 'write(" and big");' + " " * 4000
    site.route("/allowed.js", 'function write(s) { content.textContent += s; } write("allowed");')
    site.route("/big.js", big)
    site.route("/third.js", 'write(" and third");')
    page = """<!doctype html><html><body><p id="content"></p><script src="/allowed.js"></script>
<script src="/big.js"></script><script src="/third.js"></script></body></html>"""
    url = site.route("/limits.html", page, content_type="text/html; charset=utf-8")
    contents, log = render(site, sqlite_uri, tmp_path, url, "VOTERSDAILY_BROWSER_MAX_REQUESTS=3")
    assert contents == ["allowed and big"], log[-3000:]
    assert "third.js" not in site.hits and "'render/over_limit': 1" in log, log[-3000:]
    assert log.count("asked for more than 3 requests for one page") == 1

    contents, log = render(site, sqlite_uri, tmp_path, url, "VOTERSDAILY_BROWSER_MAX_BYTES=2000")
    assert contents == ["allowed and third"], log[-3000:]
    assert "'render/too_large': 1" in log and "exceeds 2000 bytes" in log, log[-3000:]


def test_splash_is_not_asked_until_its_network_is_stated_confined(site, sqlite_uri, tmp_path):
    """Splash fetches a page's sub-resources on its own machine, where the address policy does not
    reach: before, SPLASH_URL alone sent every page there; now the render middleware stays off with
    one line saying why, and nothing goes to Splash."""
    url = site.route("/js.html", PAGE, content_type="text/html; charset=utf-8")
    site.route("/render.html", PAGE, content_type="text/html; charset=utf-8")
    log = tmp_path / "crawl.log"
    proc = start_crawl(
        "vd_rendered",
        sqlite_uri,
        "TEST_DB=vd_fetch",
        "SPLASH_URL=" + site.url,
        allowed(site),
        log=log,
        args={"url": url},
    )
    assert proc.wait(120) == 0, log.read_text()[-3000:]
    assert "render.html" not in str(site.hits)
    assert "SPLASH_NETWORK_CONFINED=True states that Splash's network reaches public addresses only" in (
        log.read_text()
    )


SOCKET_PAGE = """<!doctype html><html><body><p id="content"></p><img src="/slow.png">
<script>content.textContent = "written by JavaScript"; new WebSocket("{ws}/socket");</script>
</body></html>"""
REFUSED = "nothing is rendered until VOTERSDAILY_BROWSER_NETWORK_CONFINED=True states"


@pytest.fixture
def recorders():
    """(the operator's proxy, another service of this machine): ports that record any connection."""
    proxy, internal = ConnectionRecorder(), ConnectionRecorder()
    yield proxy, internal
    proxy.stop()
    internal.stop()


def socket_page(site, internal) -> str:
    """A page whose WebSocket reaches for ``internal``; its slow image holds the load event while
    the socket has its chance."""
    site.route("/slow.png", lambda handler: time.sleep(1.5) or b"", content_type="image/png")
    page = SOCKET_PAGE.format(ws=internal.url.replace("http:", "ws:"))
    return site.route("/socket.html", page, content_type="text/html; charset=utf-8")


def launch_options(**options) -> str:
    """PLAYWRIGHT_LAUNCH_OPTIONS: ours with the operator's ``options``; Local Network Access checks
    off (they would stop a socket to loopback themselves, not one to a public address)."""
    args = [*CHROMIUM_ARGS, "--disable-features=LocalNetworkAccessChecks", *options.pop("args", [])]
    launch = {**RENDER_SETTINGS["PLAYWRIGHT_LAUNCH_OPTIONS"], "args": args, **options}
    return "PLAYWRIGHT_LAUNCH_OPTIONS=" + json.dumps(launch)


@needs_chromium
@pytest.mark.parametrize(
    "operator",
    [
        pytest.param(lambda proxy: {"proxy": {"server": proxy.url}}, id="proxy"),
        pytest.param(
            lambda proxy: {"proxy": {"server": proxy.url}, "ignore_default_args": NO_NETWORK_ARGS},
            id="proxy-without-ours",
        ),
        pytest.param(
            lambda proxy: {"args": ["--no-proxy-server"], "ignore_default_args": NO_NETWORK_ARGS[2:]},
            id="no-proxy-server-without-our-resolver",
        ),
    ],
)
def test_an_operators_own_browser_network_is_refused(site, recorders, sqlite_uri, tmp_path, operator):
    """The operator's own proxy (or switches undoing ours) in PLAYWRIGHT_LAUNCH_OPTIONS. Before, ours
    were added last and won over their proxy (which then saw nothing, silently), but
    ``ignore_default_args`` dropped ours: the page's WebSocket reached the other service through
    their proxy, or directly. Now such options are refused with one line, nothing is rendered (the
    page is fetched as it is) and neither port sees a connection."""
    proxy, internal = recorders
    url = socket_page(site, internal)
    contents, log = render(site, sqlite_uri, tmp_path, url, launch_options(**operator(proxy)))
    assert proxy.seen == internal.seen == [], log[-3000:]
    assert contents == [None], log[-3000:]
    assert log.count(REFUSED) == 1, log[-3000:]


@needs_chromium
def test_an_operator_who_states_the_browser_confined_gets_their_proxy(site, recorders, sqlite_uri, tmp_path):
    """VOTERSDAILY_BROWSER_NETWORK_CONFINED=True: the operator's proxy is the browser's network, as
    written (the WebSocket goes to it); every routed request is still fetched through the gate."""
    proxy, internal = recorders
    url = socket_page(site, internal)
    launch = launch_options(proxy={"server": proxy.url})
    contents, log = render(
        site, sqlite_uri, tmp_path, url, launch, "VOTERSDAILY_BROWSER_NETWORK_CONFINED=True"
    )
    assert contents == ["written by JavaScript"], log[-3000:]
    assert any(b"CONNECT 127.0.0.1:%d " % internal.port in seen for seen in proxy.seen), proxy.seen
    assert REFUSED not in log and "'render/fetched'" in log


@pytest.fixture
def remote_chromium(tmp_path):
    """A browser of its own, as a remote one would be: Debian's Chromium with its DevTools port open
    and none of our launch flags; PLAYWRIGHT_CDP_URL's value."""
    port = free_port()
    browser = subprocess.Popen(
        [
            CHROMIUM,
            *CHROMIUM_ARGS,
            "--headless",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=%d" % port,
            "--user-data-dir=%s" % (tmp_path / "remote-profile"),
            "--disable-features=LocalNetworkAccessChecks",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = "http://127.0.0.1:%d" % port
    wait_http(url + "/json/version")
    yield url
    browser.terminate()
    browser.wait(30)


@needs_chromium
def test_a_remote_browser_is_used_only_when_stated_confined(
    site, recorders, remote_chromium, sqlite_uri, tmp_path
):
    """PLAYWRIGHT_CDP_URL: a remote browser gets none of our launch flags. Before, it rendered the
    page and the page's WebSocket reached the other service; now nothing is rendered, one line says
    why, and the service sees no connection. With VOTERSDAILY_BROWSER_NETWORK_CONFINED=True the
    remote browser renders (its routed requests still through the gate)."""
    _, internal = recorders
    url = socket_page(site, internal)
    cdp = "PLAYWRIGHT_CDP_URL=" + remote_chromium
    contents, log = render(site, sqlite_uri, tmp_path, url, cdp)
    assert internal.seen == [], log[-3000:]
    assert contents == [None], log[-3000:]
    assert log.count("PLAYWRIGHT_CDP_URL is set, but a remote browser gets none") == 1, log[-3000:]

    confined = "VOTERSDAILY_BROWSER_NETWORK_CONFINED=True"
    contents, log = render(site, sqlite_uri, tmp_path, url + "?again", cdp, confined)
    assert "written by JavaScript" in contents and REFUSED not in log, log[-3000:]


WORKER_PAGE = """<!doctype html><html><body><p id="content"></p><img src="/slow.png">
<script>content.textContent = "written by JavaScript";
navigator.serviceWorker && navigator.serviceWorker.register("/worker.js").catch(() => null);</script>
</body></html>"""


@needs_chromium
def test_service_workers_are_blocked_in_every_context(site, recorders, sqlite_uri, tmp_path):
    """A page registers a service worker that fetches another service of this machine; no page route
    sees a service worker's requests. With our network switches in force they lead nowhere anyway,
    so here the operator has stated the browser confined and dropped them (an open network): what
    remains is the block on service workers, in every context, a startup one of PLAYWRIGHT_CONTEXTS
    too (before, only contexts the render middleware's requests made were blocked). The service
    sees nothing; the worker's own script is never asked for."""
    _, internal = recorders
    site.route("/slow.png", lambda handler: time.sleep(1.5) or b"", content_type="image/png")
    worker = 'fetch("%s/from-worker").catch(() => null);' % internal.url
    site.route("/worker.js", worker, content_type="text/javascript")
    url = site.route("/worker.html", WORKER_PAGE, content_type="text/html; charset=utf-8")
    contents, log = render(
        site,
        sqlite_uri,
        tmp_path,
        url,
        launch_options(ignore_default_args=NO_NETWORK_ARGS),
        "VOTERSDAILY_BROWSER_NETWORK_CONFINED=True",
        'PLAYWRIGHT_CONTEXTS={"default": {}}',
    )
    assert contents == ["written by JavaScript"], log[-3000:]
    assert internal.seen == [] and "/worker.js" not in site.hits, (internal.seen, site.hits)
