"""JavaScript rendering, opted into per spider (``render_js = True``) or per request
(``meta={"render_js": True}``): Splash's HTTP API when SPLASH_URL is set, else scrapy-playwright
driving the system Chromium (Debian's /usr/bin/chromium; no browser is ever downloaded), which
fetches nothing itself: every request it makes goes through the crawl's address guard (:mod:`.gate`).

A spider that renders sets ``custom_settings = {**RENDER_SETTINGS, ...}`` (the Playwright download
handlers only take requests marked for rendering; every other request keeps Scrapy's handler).
scrapy-splash is not used: it is broken on Scrapy ≥ 2.16 (scrapy-plugins/scrapy-splash#332); the
small middleware in :mod:`.splash` speaks Splash's ``render.html`` API directly.
"""

from __future__ import annotations

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]

#: Chromium's own network leads nowhere: every request it makes is fetched for it by the gate
#: (:mod:`.gate`); what no route sees (a WebSocket, a service worker, a redirect the browser follows)
#: goes to a proxy whose name never resolves, loopback included (Chromium exempts loopback from a
#: proxy unless ``<-loopback>`` says not to).
NO_NETWORK_ARGS = [
    "--proxy-server=http://nowhere.invalid:9",
    "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND",
]

RENDER_SETTINGS = {
    "DOWNLOAD_HANDLERS": {
        "http": "votersdaily.rendering.gate.GatedPlaywrightHandler",
        "https": "votersdaily.rendering.gate.GatedPlaywrightHandler",
    },
    "PLAYWRIGHT_BROWSER_TYPE": "chromium",
    "PLAYWRIGHT_LAUNCH_OPTIONS": {"executable_path": CHROMIUM, "args": CHROMIUM_ARGS, "headless": True},
    "DOWNLOADER_MIDDLEWARES": {"votersdaily.rendering.middleware.RenderMiddleware": 540},
}
