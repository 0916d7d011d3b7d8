"""Marks requests for rendering and routes them to Splash (SPLASH_URL set) or Playwright.

Splash fetches a page's sub-resources on its own machine, where no address policy of ours applies:
with SPLASH_URL set the middleware stays off (NotConfigured, one line saying why) unless
SPLASH_NETWORK_CONFINED states that Splash's network reaches public addresses only. Playwright's
browser fetches through the gate (:mod:`.gate`), its own network confined by our launch flags: settings
that would undo them (:mod:`.confinement`) keep the middleware off the same way."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Self
from urllib.parse import urlencode

from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse

from votersdaily.rendering.confinement import unconfined_reason

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

logger = logging.getLogger(__name__)

META = "render_js"
SPLASH_META = "_vd_splash_of"


def wants_rendering(request: Request, spider: Spider | None) -> bool:
    if request.meta.get("dont_obey_robotstxt") and request.url.endswith("/robots.txt"):
        return False  # robots.txt is read as text, never rendered
    value = request.meta.get(META)
    return bool(getattr(spider, "render_js", False) if value is None else value)


class RenderMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        s = crawler.settings
        self.splash_url = (s.get("SPLASH_URL") or "").rstrip("/")
        self.splash_wait = s.getfloat("SPLASH_WAIT")
        self.splash_timeout = s.getfloat("SPLASH_TIMEOUT")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if crawler.settings.get("SPLASH_URL") and not crawler.settings.getbool("SPLASH_NETWORK_CONFINED"):
            raise NotConfigured(
                "SPLASH_URL is set, but Splash fetches a page's scripts, images and frames from its "
                "own machine, outside the crawl's address policy: nothing is rendered until "
                "SPLASH_NETWORK_CONFINED=True states that Splash's network reaches public addresses only"
            )
        refusal = None if crawler.settings.get("SPLASH_URL") else unconfined_reason(crawler.settings)
        if refusal is not None:
            raise NotConfigured(refusal)
        return cls(crawler)

    def process_request(self, request: Request, spider: Spider | None = None) -> Request | None:
        spider = self.crawler.spider
        if request.meta.get(SPLASH_META) or not wants_rendering(request, spider):
            return None
        if not self.splash_url:
            if not request.meta.get("playwright"):
                request.meta["playwright"] = True
            return None
        # Splash's render.html GET API: the rendered DOM as HTML.
        query = urlencode({"url": request.url, "wait": self.splash_wait, "timeout": self.splash_timeout})
        self.crawler.stats.inc_value("render/splash")
        return request.replace(
            url="%s/render.html?%s" % (self.splash_url, query),
            method="GET",
            body=b"",
            meta={**request.meta, SPLASH_META: request.url},
            dont_filter=True,
        )

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response:
        original = request.meta.get(SPLASH_META)
        if original:
            # The spider sees the page at its own URL, rendered.
            return HtmlResponse(
                original,
                status=response.status,
                headers=response.headers,
                body=response.body,
                encoding="utf-8",
                request=request.replace(url=original),
            )
        if request.meta.get("playwright"):
            self.crawler.stats.inc_value("render/playwright")
        return response
