"""The rendering browser's gate: Chromium fetches nothing itself. Every request a rendered page makes
(the page, its scripts, images, frames, XHR/fetch, and each redirect hop of each) is checked by the
crawl's address guard (``crawl_context(crawler).address_guard``, the ingest's, the event spiders' or
the laundromat's :class:`~votersdaily.plumbing.ssrf.SsrfGuardMiddleware`) and fetched by us with
:func:`~votersdaily.plumbing.pinned_fetch.fetch_hop`, connected only to the addresses the check
passed, within ``VOTERSDAILY_BROWSER_MAX_BYTES`` and ``VOTERSDAILY_BROWSER_TIMEOUT``, at most
``VOTERSDAILY_BROWSER_MAX_REQUESTS`` per page; the answer is handed to the browser with
``route.fulfill``. A refused request is aborted, logged once per host and port, and counted
(``render/refused``).

Why a subclass of scrapy-playwright's handler: it routes every page (``page.route("**")``) to a
handler that sends requests to the network (``route.continue_``), and a page's route wins over any
context's. Its handler stays (PLAYWRIGHT_ABORT_REQUEST, its header processing, the Scrapy request's
method and body for the page itself); it is given a route whose ``continue_`` is the gate's fetch.

Why the gate follows redirects itself: a redirect the browser follows, fulfilled by a route or not,
is not routed again but goes to the network (Chromium 156, Playwright 1.65). So a redirected page
renders at the URL Scrapy asked for. What no route sees (WebSockets, service workers) meets
Chromium's network settings (:data:`votersdaily.rendering.NO_NETWORK_ARGS`: a proxy that leads
nowhere, no loopback exception) and contexts that block service workers (every context the
handler makes, startup contexts of PLAYWRIGHT_CONTEXTS too).
"""

from __future__ import annotations

import asyncio
import functools
import http.client
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from scrapy.exceptions import CannotResolveHostError
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from votersdaily.crawlcontext import crawl_context
from votersdaily.plumbing.address_policy import HostNotAllowed, PrivateAddressRefused, host_port
from votersdaily.plumbing.pinned_fetch import DownloadTooLarge, fetch_hop
from votersdaily.rendering import NO_NETWORK_ARGS
from votersdaily.rendering.confinement import (
    STATEMENT,
    network_context_options,
    network_launch_options,
    unconfined_reason,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from playwright.async_api import Request as BrowserRequest
    from playwright.async_api import Route
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

    from votersdaily.plumbing.pinned_fetch import Answer

logger = logging.getLogger(__name__)

#: Request headers the browser's stack would set for its own connection; ours sets its own.
_CONNECTION_HEADERS = frozenset(
    {"host", "connection", "content-length", "accept-encoding", "keep-alive", "proxy-connection"}
)
#: Answer headers that describe our connection's framing, not the body handed to the browser.
_FRAMING_HEADERS = frozenset({"connection", "content-length", "transfer-encoding", "keep-alive"})


class BrowserNotConfined(RuntimeError):
    """The rendering browser's own network would not be confined: nothing is rendered."""


class Refused(Exception):
    """The crawl's address policy refused one hop (``url``) of a browser's request: ``reason`` says why."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(reason)
        self.url = url
        self.reason = reason


@dataclass(frozen=True)
class ResourceLimits:
    max_requests: int
    max_bytes: int
    timeout: float
    #: Scrapy's REDIRECT_MAX_TIMES: the crawl's own limit, for the browser's redirects too.
    max_redirects: int
    fetch_threads: int

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        return cls(
            max_requests=settings.getint("VOTERSDAILY_BROWSER_MAX_REQUESTS"),
            max_bytes=settings.getint("VOTERSDAILY_BROWSER_MAX_BYTES"),
            timeout=settings.getfloat("VOTERSDAILY_BROWSER_TIMEOUT"),
            max_redirects=settings.getint("REDIRECT_MAX_TIMES"),
            fetch_threads=settings.getint("VOTERSDAILY_BROWSER_FETCH_THREADS"),
        )


class PageBudget:
    """The requests one rendered page may still make (``VOTERSDAILY_BROWSER_MAX_REQUESTS``)."""

    def __init__(self, max_requests: int) -> None:
        self.left = max_requests
        self.over = False

    def take(self) -> bool:
        self.left -= 1
        return self.left >= 0


class BrowserGate:
    def __init__(self, crawler: Crawler, limits: ResourceLimits) -> None:
        self.crawler = crawler
        self.limits = limits
        self._refused_logged: set[tuple[str, int]] = set()
        # Threads of its own (fetch_hop blocks): a page's many slow requests wait for each other,
        # not for asyncio's default executor, where the address guard resolves every host.
        self._threads = ThreadPoolExecutor(limits.fetch_threads, thread_name_prefix="browser-gate")

    def close(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler, ResourceLimits.from_settings(crawler.settings))

    def page_budget(self) -> PageBudget:
        return PageBudget(self.limits.max_requests)

    def _count(self, what: str) -> None:
        self.crawler.stats.inc_value("render/" + what)

    async def answer(
        self,
        route: Route,
        url: str,
        page: PageBudget,
        *,
        method: str,
        headers: dict[str, str],
        body: bytes | None,
    ) -> None:
        """Fetch what the browser asked for, checked and bounded, and fulfil its route; else abort it."""
        if not page.take():
            self._count("over_limit")
            if not page.over:
                page.over = True
                logger.warning(
                    "the rendering browser asked for more than %d requests for one page "
                    "(VOTERSDAILY_BROWSER_MAX_REQUESTS); refused from %s on",
                    self.limits.max_requests,
                    url,
                )
            await route.abort("blockedbyclient")
            return
        try:
            answer = await self._fetch(url, method, headers, body)
        except Refused as exc:
            self._count("refused")
            where = host_port(exc.url)
            if where not in self._refused_logged:
                self._refused_logged.add(where)
                logger.warning("the rendering browser was refused %s:%d: %s", *where, exc.reason)
            await route.abort("blockedbyclient")
            return
        except DownloadTooLarge as exc:
            self._count("too_large")
            logger.warning("the rendering browser's request was cut: %s", exc)
            await route.abort("failed")
            return
        except TimeoutError as exc:
            self._count("timed_out")
            logger.info("the rendering browser's request failed: %s", exc)
            await route.abort("timedout")
            return
        except (OSError, http.client.HTTPException, CannotResolveHostError) as exc:
            self._count("failed")
            logger.info("the rendering browser's request for %s failed: %s", url, exc)
            await route.abort("failed")
            return
        self._count("fetched")
        await route.fulfill(status=answer.status, headers=_answer_headers(answer), body=answer.body)

    async def _fetch(self, url: str, method: str, headers: dict[str, str], body: bytes | None) -> Answer:
        """Each hop checked by the crawl's guard, then fetched pinned (on the gate's threads: it blocks)."""
        guard = crawl_context(self.crawler).address_guard
        deadline = time.monotonic() + self.limits.timeout
        sent = {name: value for name, value in headers.items() if name.lower() not in _CONNECTION_HEADERS}
        sent = {name: value for name, value in sent.items() if not name.startswith(":")}
        for _ in range(self.limits.max_redirects + 1):
            if guard is None:
                raise Refused(url, "the crawl has no address guard to check the browser's requests")
            if not url.startswith(("http://", "https://")):
                raise Refused(url, "refusing non-http(s) URL %s" % url)
            try:
                addresses = await guard.check_crawled(url)
            except (PrivateAddressRefused, HostNotAllowed) as exc:
                raise Refused(url, str(exc)) from None
            host, port = host_port(url)
            fetch = functools.partial(
                fetch_hop,
                url,
                host,
                port,
                addresses,
                method=method,
                headers=sent,
                body=body,
                max_bytes=self.limits.max_bytes,
                deadline=deadline,
                timeout=self.limits.timeout,
                error_bodies=True,
            )
            answer = await asyncio.get_running_loop().run_in_executor(self._threads, fetch)
            if answer.location is None:
                return answer
            url = answer.location
            if answer.status == 303 or (answer.status in (301, 302) and method == "POST"):
                method, body = "GET", None
        raise OSError("more than %d redirects from %s" % (self.limits.max_redirects, url))


def _answer_headers(answer: Answer) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in answer.headers:
        key = name.lower()
        if key in _FRAMING_HEADERS:
            continue
        # Playwright takes one value per name; several Set-Cookie values go on separate lines.
        separator = "\n" if key == "set-cookie" else ", "
        headers[key] = headers[key] + separator + value if key in headers else value
    return headers


class GatedRoute:
    """The route scrapy-playwright's page handler is given: ``continue_`` (with its overrides of the
    page's own request) is the gate's checked fetch, ``abort`` (PLAYWRIGHT_ABORT_REQUEST) aborts."""

    def __init__(self, route: Route, request: BrowserRequest, gate: BrowserGate, page: PageBudget) -> None:
        self.route = route
        self.request = request
        self.gate = gate
        self.page = page

    async def abort(self, error_code: str | None = None) -> None:
        await self.route.abort(error_code)

    async def continue_(
        self,
        *,
        method: str | None = None,
        headers: dict[str, str] | None = None,
        post_data: str | bytes | None = None,
    ) -> None:
        body = post_data.encode() if isinstance(post_data, str) else post_data
        await self.gate.answer(
            self.route,
            self.request.url,
            self.page,
            method=method or self.request.method,
            headers=headers if headers is not None else await self.request.all_headers(),
            body=body if body is not None else self.request.post_data_buffer,
        )


class GatedPlaywrightHandler(ScrapyPlaywrightDownloadHandler):
    """scrapy-playwright's download handler with every browser request through :class:`BrowserGate`,
    and Chromium started with :data:`NO_NETWORK_ARGS` last (Chromium takes the last of two equal
    switches). Settings that would give the browser a network of its own
    (:func:`~votersdaily.rendering.confinement.unconfined_reason`) launch nothing unless the operator
    states that it is confined; then their network options are used as written."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.gate = BrowserGate.from_crawler(crawler)
        #: Said once by the render middleware (NotConfigured); here the handler fails closed.
        self.refusal = unconfined_reason(crawler.settings)
        self.stated_confined = crawler.settings.getbool(STATEMENT)
        options = self.config.launch_options
        if not (self.stated_confined and network_launch_options(options)):
            args = [arg for arg in options.get("args", []) if arg not in NO_NETWORK_ARGS]
            self.config.launch_options = {**options, "args": [*args, *NO_NETWORK_ARGS]}

    async def _close(self) -> None:
        await super()._close()
        self.gate.close()

    async def _launch(self) -> None:
        if self.refusal is None:
            await super()._launch()

    async def _create_browser_context(
        self, name: str, context_kwargs: dict[str, Any] | None, spider: Any = None
    ) -> Any:
        if self.refusal is not None:
            raise BrowserNotConfined(self.refusal)
        named = network_context_options(context_kwargs)
        if named and not self.stated_confined:
            raise BrowserNotConfined(
                "browser context %r would have a network of its own (%s): not created until %s=True"
                % (name, ", ".join(named), STATEMENT)
            )
        # Requests of service workers are seen by no page route: every context blocks them.
        blocked = {**(context_kwargs or {}), "service_workers": "block"}
        return await super()._create_browser_context(name, blocked, spider)

    def _make_request_handler(
        self, *args: Any, **kwargs: Any
    ) -> Callable[[Route, BrowserRequest], Awaitable[None]]:
        # scrapy-playwright's own (checked on 0.0.48): every request of the page goes through it. A
        # release that renamed it would fail closed: its handler's continue_ meets NO_NETWORK_ARGS.
        handler = super()._make_request_handler(*args, **kwargs)
        page = self.gate.page_budget()

        async def gated(route: Route, request: BrowserRequest) -> None:
            await handler(GatedRoute(route, request, self.gate, page), request)

        return gated
