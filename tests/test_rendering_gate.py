"""The rendering gate's fetches (votersdaily/rendering/gate.py) beside the rest of the crawl's thread
work, with a real site and real threads; the download handler's refusals, made before any browser
is launched."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import scrapy
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from votersdaily.crawlcontext import crawl_context
from votersdaily.plumbing.address_policy import AddressPolicy
from votersdaily.plumbing.ssrf import SsrfGuardMiddleware
from votersdaily.rendering import RENDER_SETTINGS
from votersdaily.rendering.gate import BrowserGate, BrowserNotConfined, GatedPlaywrightHandler

SLOW = 0.6


def gate_for(site, **settings) -> BrowserGate:
    """A gate of a crawl whose address guard lets it fetch the test site's port of loopback."""
    project = Settings()
    project.setmodule("votersdaily.settings")
    overrides = {"TWISTED_REACTOR": None, "INGEST_PRIVATE_HOSTS": "127.0.0.1:%d" % site.port, **settings}
    crawler = get_crawler(scrapy.Spider, {**project.copy_to_dict(), **overrides})
    policy = AddressPolicy.from_settings(crawler.settings, "INGEST")
    crawl_context(crawler).address_guard = SsrfGuardMiddleware(policy=policy)
    return BrowserGate.from_crawler(crawler)


def test_a_pages_many_slow_requests_leave_the_crawls_thread_work_alone(site):
    """A page asks for many slow sub-resources at once (up to VOTERSDAILY_BROWSER_MAX_REQUESTS, 200 by
    default). Before, each fetch took a thread of asyncio's default executor, where the crawl's
    address guard resolves every host (``loop.getaddrinfo``) and other work runs (asyncio.to_thread,
    Scrapy's run_in_thread): the crawl's next lookup waited for the page's slow fetches. Now the
    gate's fetches wait for each other on their own VOTERSDAILY_BROWSER_FETCH_THREADS threads. The
    default executor is sized here as asyncio sizes it on a 2-core machine (6 threads)."""
    site.route("/slow.js", lambda handler: time.sleep(SLOW) or b"", content_type="text/javascript")
    gate = gate_for(site, VOTERSDAILY_BROWSER_FETCH_THREADS=2)
    requests = 8

    async def crawl() -> tuple[float, list[int]]:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(max_workers=6))
        page = [
            asyncio.ensure_future(gate._fetch(site.url + "/slow.js?%d" % n, "GET", {}, None))
            for n in range(requests)
        ]
        await asyncio.sleep(SLOW / 3)  # the page's fetches have started
        started = time.monotonic()
        await loop.getaddrinfo("localhost", 80)  # the crawl's next lookup
        waited = time.monotonic() - started
        answers = await asyncio.gather(*page)
        return waited, [answer.status for answer in answers]

    try:
        waited, statuses = asyncio.run(crawl())
    finally:
        gate.close()
    assert statuses == [200] * requests
    assert waited < SLOW / 2, "the crawl's lookup waited %.2f s for the page's fetches" % waited
    assert site.hits["/slow.js?0"] == 1


def handler_for(**settings) -> GatedPlaywrightHandler:
    project = Settings()
    project.setmodule("votersdaily.settings")
    return GatedPlaywrightHandler(
        get_crawler(scrapy.Spider, {**project.copy_to_dict(), **RENDER_SETTINGS, **settings})
    )


@pytest.mark.parametrize(
    "context_kwargs",
    [{"proxy": {"server": "http://proxy.example:3128"}}, {"user_data_dir": "profile"}],
    ids=["proxy", "persistent"],
)
def test_a_request_cannot_give_its_context_a_network_of_its_own(context_kwargs):
    """A request's ``playwright_context_kwargs`` (spider code) with a proxy of its own, or a persistent
    context, which Playwright launches from the context's options only, without our switches: the
    context is not made (before any browser is launched) unless the operator stated confinement."""
    handler = handler_for()
    with pytest.raises(BrowserNotConfined, match="would have a network of its own"):
        asyncio.run(handler._create_browser_context("c", context_kwargs))
    assert handler_for(VOTERSDAILY_BROWSER_NETWORK_CONFINED=True).refusal is None


def test_a_refused_browser_launches_nothing():
    """The render middleware says why once (NotConfigured); the handler fails closed on its own."""
    handler = handler_for(PLAYWRIGHT_CDP_URL="http://browser.example:9222")
    asyncio.run(handler._launch())
    assert not hasattr(handler, "browser_provider")
    with pytest.raises(BrowserNotConfined, match="PLAYWRIGHT_CDP_URL is set"):
        asyncio.run(handler._create_browser_context("default", {}))
