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
import ipaddress
import socket
import time
from collections import OrderedDict
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from scrapy.exceptions import CannotResolveHostError, IgnoreRequest
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.interfaces import IHostnameResolver, IHostResolution
from zope.interface import implementer

#: Meta key for requests to operator-configured services (GROBID), exempt from the guard.
TRUSTED_META = "ingest_trusted"
_TTL = 60.0


class PrivateAddressRefused(IgnoreRequest):
    """The URL's host is (or resolves to) an address we must not fetch, or its scheme is not http(s)."""


def is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip.is_global and not (
        ip.is_multicast
        or ip.is_reserved
        or ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_unspecified
    )


class HostNotAllowed(IgnoreRequest):
    """``INGEST_ALLOWED_HOSTS`` is set and the URL's host is not on it."""


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
    def __init__(self, name: str):
        self.name = name

    def cancel(self) -> None:
        pass


@implementer(IHostnameResolver)
class PinnedNameResolver:
    """The reactor's name resolver while the guard is on: checked names get their checked addresses,
    every other name goes to the resolver that was installed before (Scrapy's DNS cache)."""

    def __init__(self, fallback):
        self.fallback = fallback

    def resolveHostName(
        self, resolutionReceiver, hostName, portNumber=0, addressTypes=None, transportSemantics="TCP"
    ):
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


def install_pinning(reactor) -> None:
    """Put :class:`PinnedNameResolver` in front of the reactor's resolver (once per process)."""
    if not isinstance(reactor.nameResolver, PinnedNameResolver):
        reactor.installNameResolver(PinnedNameResolver(reactor.nameResolver))


def _is_local_name(host: str) -> bool:
    return host == "localhost" or host.endswith((".localhost", ".local", ".internal"))


def _host_port(parts: SplitResult) -> tuple[str, int]:
    try:
        port = parts.port
    except ValueError:
        port = None
    return (parts.hostname or "").strip("[]").lower(), port or (443 if parts.scheme == "https" else 80)


@dataclass(frozen=True)
class AddressPolicy:
    """Which URLs untrusted data may make us fetch: http(s) only, to public addresses only, unless
    ``allow_private`` or the host (``host`` or ``host:port``) is in ``private_hosts``; with
    ``allowed_hosts`` set, nothing else at all. Picklable, so worker processes apply the same policy.

    :meth:`refusal` judges what the URL alone shows, :meth:`check_addresses` what its name resolved
    to; :meth:`resolve_sync` does both for code outside the reactor (the connection must then use
    exactly the returned addresses)."""

    allow_private: bool = False
    allowed_hosts: frozenset[str] = frozenset()
    private_hosts: frozenset[str] = frozenset()
    setting: str = "INGEST_ALLOW_PRIVATE"

    def refusal(self, url: str) -> tuple[str, int] | None:
        """Raise for a URL refused outright; ``(host, port)`` still to resolve and check, or None
        when its addresses need no check (private addresses allowed for it)."""
        parts = urlsplit(url)
        host, port = _host_port(parts)
        if self.allowed_hosts and host not in self.allowed_hosts:
            raise HostNotAllowed("refusing %s: host not in the allowed hosts" % url)
        if parts.scheme not in ("http", "https"):
            raise PrivateAddressRefused("refusing non-http(s) URL %s" % url)
        if not host:
            raise PrivateAddressRefused("refusing URL without a host: %s" % url)
        if self.allow_private or host in self.private_hosts or "%s:%d" % (host, port) in self.private_hosts:
            return None
        if _is_local_name(host):
            raise PrivateAddressRefused("refusing private host %s (%s is off)" % (host, self.setting))
        return host, port

    def check_addresses(self, url: str, addresses: list[str]) -> None:
        for address in addresses:
            if not is_public(address):
                raise PrivateAddressRefused(
                    "refusing %s: %s is a private/loopback/link-local address (%s is off)"
                    % (url, address, self.setting)
                )

    def resolve_sync(self, url: str, timeout: float | None = None) -> tuple[str, int, list[str] | None]:
        """``(host, port, addresses)`` to connect to for ``url`` (blocking DNS); addresses None: any."""
        target = self.refusal(url)
        if target is None:
            return (*_host_port(urlsplit(url)), None)
        host, port = target
        addresses = literal_address(host)
        if addresses is None:
            try:
                infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except socket.gaierror as exc:
                raise CannotResolveHostError("DNS lookup failed for %s: %s" % (host, exc)) from None
            addresses = sorted({info[4][0] for info in infos})
        self.check_addresses(url, addresses)
        return host, port, addresses


def literal_address(host: str) -> list[str] | None:
    """``[host]`` normalised when it is an IP address literal, else None (a name to resolve)."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        return None


class SsrfGuardMiddleware:
    """Checks every request (each redirect step passes through the downloader middlewares again)
    against an :class:`AddressPolicy`; requests with ``meta[trusted_meta]`` are the operator's own."""

    trusted_meta = TRUSTED_META

    def __init__(self, allow_private: bool, allowed_hosts: list[str] | None = None, policy=None):
        self.allow_private = allow_private
        self.policy = policy or AddressPolicy(
            allow_private=allow_private, allowed_hosts=frozenset(h.lower() for h in allowed_hosts or ())
        )
        self._cache: dict[str, tuple[float, list[str]]] = {}

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        guard = cls(settings.getbool("INGEST_ALLOW_PRIVATE"), settings.getlist("INGEST_ALLOWED_HOSTS"))
        guard.install()
        return guard

    def install(self) -> None:
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
        addresses = sorted({info[4][0] for info in infos})
        self._cache[host] = (time.monotonic() + _TTL, addresses)
        return addresses

    async def process_request(self, request):
        if request.meta.get(self.trusted_meta):
            return None
        await self.check(request.url)
        return None

    async def check(self, url: str) -> None:
        """Raise unless ``url`` may be fetched; a checked name is pinned to its checked addresses."""
        if self.allow_private and not self.policy.allowed_hosts:
            return
        target = self.policy.refusal(url)
        if target is None:
            return
        host, port = target
        addresses = literal_address(host) or await self._addresses(host, port)
        self.policy.check_addresses(url, addresses)
        if addresses and addresses[0] != host:
            pin(host, addresses)  # the connection uses these, not a second DNS answer
