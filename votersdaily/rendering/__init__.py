"""JavaScript rendering, opted into per spider (``render_js = True``) or per request
(``meta={"render_js": True}``): Splash's HTTP API when SPLASH_URL is set, else scrapy-playwright
driving the system Chromium (Debian's /usr/bin/chromium; no browser is ever downloaded).

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

RENDER_SETTINGS = {
    "DOWNLOAD_HANDLERS": {
        "http": "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler",
        "https": "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler",
    },
    "PLAYWRIGHT_BROWSER_TYPE": "chromium",
    "PLAYWRIGHT_LAUNCH_OPTIONS": {"executable_path": CHROMIUM, "args": CHROMIUM_ARGS, "headless": True},
    "DOWNLOADER_MIDDLEWARES": {"votersdaily.rendering.middleware.RenderMiddleware": 540},
}
