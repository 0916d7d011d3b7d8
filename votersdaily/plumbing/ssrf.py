"""The SSRF guard: no fetch to private, loopback, link-local or reserved addresses unless
``INGEST_ALLOW_PRIVATE`` is on. Every request is checked, including each redirect step (each one
passes through the downloader middlewares again) and after DNS resolution. The rules are one
:class:`AddressPolicy`, which the laundromat applies too (its own settings, see
:mod:`votersdaily.laundromat.fetching`), in the reactor and in worker processes.

DNS rebinding: the middleware resolves a host name and checks every address, but the connection
is made later by Twisted, which would resolve the name again, and a hostile DNS server can answer
a public address to the check and a private one to the connection. So the guard *pins* what it
checked: :class:`PinnedNameResolver` (installed on the reactor while the guard is on) answers the
connection's lookup of a checked name with exactly the addresses that passed the check, without
asking DNS again. Names the guard never checked (requests marked trusted, e.g. GROBID) resolve as
before. Residual risk: a name evicted from the pin table (more than ``_MAX_PINS`` distinct hosts
since it was checked) resolves normally until the guard checks it again; proxies (``meta["proxy"]``)
resolve the target on the proxy, outside this process."""

from __future__ import annotations

import asyncio
import socket
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Protocol, Self

from scrapy.exceptions import CannotResolveHostError, IgnoreRequest, UsageError
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.interfaces import IHostnameResolver, IHostResolution
from zope.interface import implementer

from votersdaily.plumbing import address_policy as policy_refusals
from votersdaily.plumbing.address_policy import AddressPolicy, literal_address
from votersdaily.plumbing.hosts import BadHostEntry

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from scrapy.crawler import Crawler
    from scrapy.http import Request
    from scrapy.settings import BaseSettings

#: Meta key for requests to operator-configured services (GROBID), exempt from the guard.
TRUSTED_META = "ingest_trusted"
_TTL = 60.0


class PrivateAddressRefused(IgnoreRequest, policy_refusals.PrivateAddressRefused):
    """The policy's refusal as Scrapy's IgnoreRequest: the request is dropped, not a download error."""


class HostNotAllowed(IgnoreRequest, policy_refusals.HostNotAllowed):
    """The policy's refusal as Scrapy's IgnoreRequest (``<PREFIX>_ALLOWED_HOSTS`` leaves the host out)."""


def check_policy_settings(settings: BaseSettings, prefix: str) -> None:
    """Refuse before any work a host list entry that can never match (``scrapy crawl`` then exits 2
    with one line naming the setting): kept, it would refuse everything, or let through more than
    the operator meant (see :mod:`votersdaily.plumbing.hosts`)."""
    try:
        AddressPolicy.from_settings(settings, prefix)
    except BadHostEntry as exc:
        raise UsageError(str(exc), print_help=False) from None


def keep_downloader_middlewares(settings: BaseSettings, components: Mapping[str, Any]) -> None:
    """Put ``components`` (the address guard and what a spider cannot work without) into
    ``DOWNLOADER_MIDDLEWARES`` whatever replaced the spider's own value: a dict setting is replaced
    whole, so an operator's ``-s DOWNLOADER_MIDDLEWARES=…`` (or a scrapyd job's ``setting=``, or a
    spider's ``custom_settings = {**RENDER_SETTINGS, …}``) that adds a middleware would drop the
    guard with the spider's value, and every URL from crawled content would be fetched unchecked."""
    keep_components(settings, "DOWNLOADER_MIDDLEWARES", components)


def keep_components(settings: BaseSettings, name: str, components: Mapping[str, Any]) -> None:
    """Put ``components`` into the dict setting ``name`` (``DOWNLOADER_MIDDLEWARES``, or the
    laundromat's ``DOWNLOAD_HANDLERS``, whose streaming handler holds its size and time limits)
    where a value that replaced the spider's own does not name them. A component the value names
    already (``None``: switched off on purpose) is left as it is.

    Above the operator's priority: Scrapy's crawler process applies its own settings to the crawler
    again before the crawl (``CrawlerRunner.create_crawler``), and the operator's value would win a
    tie."""
    from scrapy.settings import SETTINGS_PRIORITIES

    current = dict(settings.getdict(name))
    missing = {key: value for key, value in components.items() if key not in current}
    if missing:
        given = settings.getpriority(name) or 0
        spider = SETTINGS_PRIORITIES["spider"]
        settings.set(name, {**current, **missing}, priority=given + 1 if given > spider else spider)


#: host name → the addresses the guard checked (most recent last); shared by the middleware and
#: the reactor's name resolver, both on the reactor thread.
_PINS: OrderedDict[str, list[str]] = OrderedDict()
_MAX_PINS = 65536


def pin(host: str, addresses: list[str]) -> None:
    host = host.lower().rstrip(".")
    _PINS[host] = list(addresses)
    _PINS.move_to_end(host)
    while len(_PINS) > _MAX_PINS:
        _PINS.popitem(last=False)


def pinned(host: str) -> list[str] | None:
    return _PINS.get(host.lower().rstrip("."))


@implementer(IHostResolution)
class _Resolution:
    def __init__(self, name: str) -> None:
        self.name = name

    def cancel(self) -> None:
        pass


@implementer(IHostnameResolver)
class PinnedNameResolver:
    """The reactor's name resolver while the guard is on: checked names get their checked addresses,
    every other name goes to the resolver that was installed before (Scrapy's DNS cache)."""

    # zope interfaces do not type their methods for mypy: the resolver's parts are Any.
    def __init__(self, fallback: Any) -> None:
        self.fallback = fallback

    def resolveHostName(
        self,
        resolutionReceiver: Any,
        hostName: str | bytes,
        portNumber: int = 0,
        addressTypes: Sequence[type[Any]] | None = None,
        transportSemantics: str = "TCP",
    ) -> Any:
        name = hostName.decode("idna") if isinstance(hostName, bytes) else hostName
        addresses = pinned(name)
        if addresses is None:
            return self.fallback.resolveHostName(
                resolutionReceiver, hostName, portNumber, addressTypes, transportSemantics
            )
        resolution = _Resolution(name)
        resolutionReceiver.resolutionBegan(resolution)
        for address in addresses:
            kind = IPv6Address if ":" in address else IPv4Address
            if addressTypes is None or kind in addressTypes:
                resolutionReceiver.addressResolved(kind("TCP", address, portNumber))
        resolutionReceiver.resolutionComplete()
        return resolution


def install_pinning(reactor: Any) -> None:
    """Put :class:`PinnedNameResolver` in front of the reactor's resolver (once per process)."""
    if not isinstance(reactor.nameResolver, PinnedNameResolver):
        reactor.installNameResolver(PinnedNameResolver(reactor.nameResolver))


class CrawledUrlCheck(Protocol):
    """What a fetch made outside the downloader asks the crawl's address guard (the rendering
    browser's gate, votersdaily/rendering/gate.py): one rule for a URL whoever fetches it."""

    async def check_crawled(self, url: str) -> list[str] | None:
        """Raise the policy's refusal unless ``url``, named by crawled content, may be fetched; the
        addresses the connection must use (None: its name resolves as usual, the operator's choice)."""
        ...


class SsrfGuardMiddleware:
    """Checks every request (each redirect step passes through the downloader middlewares again)
    against an :class:`AddressPolicy`; requests with ``meta[trusted_meta]`` are the operator's own."""

    trusted_meta = TRUSTED_META

    def __init__(self, allow_private: bool = False, policy: AddressPolicy | None = None) -> None:
        self.policy = policy or AddressPolicy(allow_private=allow_private)
        self.allow_private = self.policy.allow_private
        self._cache: dict[str, tuple[float, list[str]]] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        guard = cls(policy=AddressPolicy.from_settings(crawler.settings, "INGEST"))
        guard.install(crawler)
        return guard

    def install(self, crawler: Crawler) -> None:
        """Pin checked names on the reactor, and be the crawl's guard for fetches made outside the
        downloader (``crawl_context(crawler).address_guard``)."""
        from votersdaily.crawlcontext import crawl_context

        crawl_context(crawler).address_guard = self
        if not self.allow_private:
            from twisted.internet import reactor

            install_pinning(reactor)

    async def _addresses(self, host: str, port: int) -> list[str]:
        cached = self._cache.get(host)
        if cached and cached[0] > time.monotonic():
            return cached[1]
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            # Refused here, not left to the connection's own lookup, which a rebinding DNS server
            # could answer differently.
            raise CannotResolveHostError("DNS lookup failed for %s: %s" % (host, exc)) from None
        addresses = sorted({str(info[4][0]) for info in infos})
        self._cache[host] = (time.monotonic() + _TTL, addresses)
        return addresses

    async def process_request(self, request: Request) -> None:
        if request.meta.get(self.trusted_meta):
            return None
        await self.check(request.url)
        return None

    async def check_crawled(self, url: str) -> list[str] | None:
        return await self.check(url)

    async def check(self, url: str) -> list[str] | None:
        """Raise unless ``url`` may be fetched; a checked name is pinned to its checked addresses,
        which are returned (None: no address check applies). Private addresses allowed, the
        scheme is still checked: ``file:`` or ``ftp:`` from crawled content is never fetched."""
        try:
            target = self.policy.refusal(url)
            if target is None:
                return None
            host, port = target
            addresses = literal_address(host) or await self._addresses(host, port)
            self.policy.check_addresses(url, addresses)
        except policy_refusals.HostNotAllowed as exc:
            raise HostNotAllowed(*exc.args) from None
        except policy_refusals.PrivateAddressRefused as exc:
            raise PrivateAddressRefused(*exc.args) from None
        if addresses and addresses[0] != host:
            pin(host, addresses)  # the connection uses these, not a second DNS answer
        return addresses
