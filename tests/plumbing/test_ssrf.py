"""The SSRF guard as Scrapy sees it: the address policy's refusals are plain exceptions (the
laundromat's cleaning workers apply the policy without Scrapy); the middleware raises them as
Scrapy's IgnoreRequest, so Scrapy drops the request instead of logging a download error, under the
policy's class names, which are the run log's vocabulary."""

from __future__ import annotations

import asyncio

import pytest
import scrapy
from scrapy.exceptions import IgnoreRequest

from votersdaily.plumbing import address_policy
from votersdaily.plumbing.address_policy import AddressPolicy
from votersdaily.plumbing.hosts import HostList
from votersdaily.plumbing.ssrf import PrivateAddressRefused, SsrfGuardMiddleware


def test_the_guard_raises_the_policys_refusals_as_ignore_request_under_their_names():
    only_example = AddressPolicy(allowed_hosts=HostList.parse(["example.org"], "test"))
    cases = (
        (AddressPolicy(), "http://127.0.0.1/admin", address_policy.PrivateAddressRefused),
        (AddressPolicy(), "file:///etc/passwd", address_policy.PrivateAddressRefused),
        (only_example, "http://example.com/", address_policy.HostNotAllowed),
    )
    for policy, url, refusal in cases:
        with pytest.raises(refusal) as plain:
            if policy.refusal(url):  # a host to check: its address is loopback
                policy.check_addresses(url, ["127.0.0.1"])
        assert not isinstance(plain.value, IgnoreRequest), url
        with pytest.raises(IgnoreRequest) as dropped:
            asyncio.run(SsrfGuardMiddleware(policy=policy).process_request(scrapy.Request(url)))
        assert isinstance(dropped.value, refusal), url  # code catching the policy's class catches it
        assert type(dropped.value).__name__ == refusal.__name__, url
        assert str(dropped.value) == str(plain.value), url


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


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://127.0.0.1/x", "data:text/plain,x", "s3://bucket/x"]
)
def test_allowing_private_addresses_never_allows_another_scheme(url):
    """``INGEST_ALLOW_PRIVATE`` allows private addresses, not local files: a landing page's
    ``citation_pdf_url`` of ``file:///…`` was fetched and stored with it on (the guard returned
    before the policy's scheme rule), while ``INGEST_PRIVATE_HOSTS`` refused it."""
    with pytest.raises(PrivateAddressRefused, match="refusing non-http"):
        asyncio.run(SsrfGuardMiddleware(allow_private=True).process_request(scrapy.Request(url)))


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
    "spider, guard",
    [
        ("house_committee_meetings", "votersdaily.spiders.address_guard.EventAddressGuard"),
        ("ingest", "votersdaily.plumbing.ssrf.SsrfGuardMiddleware"),
        ("ingest_worker", "votersdaily.plumbing.ssrf.SsrfGuardMiddleware"),
        ("laundromat", "votersdaily.laundromat.fetching.AddressGuardMiddleware"),
        ("laundromat_worker", "votersdaily.laundromat.fetching.AddressGuardMiddleware"),
    ],
)
def test_the_guard_stays_in_every_spider_whatever_downloader_middlewares_the_operator_gives(
    spider, guard, monkeypatch
):
    """``-s DOWNLOADER_MIDDLEWARES=…`` replaced the spider's value, guard included; the crawler as
    ``scrapy crawl`` builds it (a crawler, then the process's settings applied to it once more)
    keeps the guard, and the operator's middleware."""
    from scrapy.crawler import CrawlerRunner
    from scrapy.utils.project import get_project_settings

    monkeypatch.setenv("SCRAPY_SETTINGS_MODULE", "votersdaily.settings")
    settings = get_project_settings()
    own = "scrapy.downloadermiddlewares.stats.DownloaderStats"
    settings.set("DOWNLOADER_MIDDLEWARES", '{"%s": 851}' % own, priority="cmdline")
    runner = CrawlerRunner(settings)
    crawler = runner.create_crawler(runner.create_crawler(spider))
    middlewares = crawler.settings.getwithbase("DOWNLOADER_MIDDLEWARES")
    assert middlewares.get(guard) is not None and middlewares.get(own) == 851


@pytest.mark.parametrize("spider", ["laundromat", "laundromat_worker"])
def test_the_laundromats_streaming_handler_stays_whatever_download_handlers_the_operator_gives(
    spider, monkeypatch
):
    """``-s DOWNLOAD_HANDLERS=…`` replaced the laundromat's, and with its streaming handler the
    downloads' size and time limits (LAUNDROMAT_MAX_DOWNLOAD_BYTES, LAUNDROMAT_DOWNLOAD_TIMEOUT) and
    their place on disk; the crawler as ``scrapy crawl`` builds it keeps the handler for every
    scheme the operator's value does not name, and the operator's own."""
    from scrapy.crawler import CrawlerRunner
    from scrapy.utils.project import get_project_settings

    monkeypatch.setenv("SCRAPY_SETTINGS_MODULE", "votersdaily.settings")
    settings = get_project_settings()
    settings.set("DOWNLOAD_HANDLERS", '{"s3": null}', priority="cmdline")
    runner = CrawlerRunner(settings)
    crawler = runner.create_crawler(runner.create_crawler(spider))
    handlers = crawler.settings.getwithbase("DOWNLOAD_HANDLERS")
    streaming = "votersdaily.laundromat.fetching.StreamingDownloadHandler"
    assert {scheme: handlers.get(scheme) for scheme in ("http", "https", "file")} == dict.fromkeys(
        ("http", "https", "file"), streaming
    )
    assert handlers.get("s3") is None
