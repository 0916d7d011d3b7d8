"""Which addresses untrusted data may make us fetch (:class:`AddressPolicy`), apart from the SSRF
guard's Scrapy middleware (:mod:`.ssrf`): the laundromat's cleaning workers unpickle a policy with
their options and must not import Scrapy for it (0.2 s of a worker's start). So its refusals are plain
exceptions here; the middleware raises them as Scrapy's IgnoreRequest under the same class names
(the run log's vocabulary), and catching these catches both.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, urlsplit

from votersdaily.plumbing.hosts import NO_HOSTS, HostList

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


class PrivateAddressRefused(Exception):
    """The URL's host is (or resolves to) an address we must not fetch, or its scheme is not http(s)."""


class HostNotAllowed(Exception):
    """The policy has allowed hosts (``<PREFIX>_ALLOWED_HOSTS``) and the URL's host is not one of them."""


#: Addresses whose judgement is remembered: a crawl asks about the same few hosts' addresses for
#: every request (each judgement parses the address and tests it against a dozen networks).
_REMEMBERED_ADDRESSES = 4096


#: NAT64's well-known prefix (RFC 6052): its gateway fetches from the IPv4 address in the last 32 bits.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _carried_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 host an IPv6 address reaches through a translator or relay on the way: mapped
    (``::ffff:a.b.c.d``), compatible (``::a.b.c.d``, deprecated), 6to4 (``2002:aabb:ccdd::/48``) and
    NAT64 (``64:ff9b::a.b.c.d``). Python calls ``2002:7f00:1::`` global; through a 6to4 relay it
    reaches 127.0.0.1."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or (ip.packed[:12] == bytes(12) and int(ip) > 1):  # ::1 and :: are IPv6's own
        return ipaddress.IPv4Address(ip.packed[12:])
    return None


@functools.lru_cache(maxsize=_REMEMBERED_ADDRESSES)
def is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        carried = _carried_ipv4(ip)
        if carried is not None:
            if not is_public(str(carried)):
                return False
            if ip.ipv4_mapped is not None or ip in _NAT64:
                # the IPv4 host is all that is reached (Python calls all of 64:ff9b::/96 reserved,
                # so an IPv6-only host behind DNS64 could fetch nothing)
                return True
    return ip.is_global and not (
        ip.is_multicast
        or ip.is_reserved
        or ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_unspecified
    )


def _is_local_name(host: str) -> bool:
    return host == "localhost" or host.endswith((".localhost", ".local", ".internal"))


def host_port(url: str) -> tuple[str, int]:
    """The host (lower case, no brackets) and port (the scheme's default when none) a URL connects to."""
    return _host_port(urlsplit(url))


def _host_port(parts: SplitResult) -> tuple[str, int]:
    try:
        port = parts.port
    except ValueError:
        port = None
    return (parts.hostname or "").strip("[]").lower(), port or (443 if parts.scheme == "https" else 80)


@dataclass(frozen=True)
class AddressPolicy:
    """Which URLs untrusted data may make us fetch: http(s) only, to public addresses only, unless
    ``allow_private`` or the host (every port of a ``host`` entry, or that ``host:port``) is in
    ``private_hosts``; with ``allowed_hosts`` set (same entries), nothing else at all. Picklable, so
    worker processes apply the same policy.

    :meth:`refusal` judges what the URL alone shows, :meth:`check_addresses` what its name resolved
    to; :meth:`resolve_sync` does both for code outside the reactor (the connection must then use
    exactly the returned addresses)."""

    allow_private: bool = False
    allowed_hosts: HostList = NO_HOSTS
    private_hosts: HostList = NO_HOSTS
    setting: str = "INGEST_ALLOW_PRIVATE"

    @classmethod
    def from_settings(cls, settings: BaseSettings, prefix: str) -> AddressPolicy:
        """The policy of ``<prefix>_ALLOW_PRIVATE``, ``<prefix>_ALLOWED_HOSTS`` and
        ``<prefix>_PRIVATE_HOSTS`` (the ingest's and the laundromat's settings have one shape);
        :class:`~votersdaily.plumbing.hosts.BadHostEntry` for an entry that can never match."""
        return cls(
            allow_private=settings.getbool(prefix + "_ALLOW_PRIVATE"),
            allowed_hosts=HostList.parse(
                settings.getlist(prefix + "_ALLOWED_HOSTS"), prefix + "_ALLOWED_HOSTS"
            ),
            private_hosts=HostList.parse(
                settings.getlist(prefix + "_PRIVATE_HOSTS"), prefix + "_PRIVATE_HOSTS"
            ),
            setting=prefix + "_ALLOW_PRIVATE",
        )

    def refusal(self, url: str) -> tuple[str, int] | None:
        """Raise for a URL refused outright; ``(host, port)`` still to resolve and check, or None
        when its addresses need no check (private addresses allowed for it)."""
        parts = urlsplit(url)
        host, port = _host_port(parts)
        if self.allowed_hosts and not self.allowed_hosts.matches(host, port):
            raise HostNotAllowed("refusing %s: %s:%d is not in the allowed hosts" % (url, host, port))
        if parts.scheme not in ("http", "https"):
            raise PrivateAddressRefused("refusing non-http(s) URL %s" % url)
        if not host:
            raise PrivateAddressRefused("refusing URL without a host: %s" % url)
        if self.allow_private or self.private_hosts.matches(host, port):
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
        """``(host, port, addresses)`` to connect to for ``url`` (blocking DNS, within ``timeout``
        seconds when given: TimeoutError after); addresses None: any."""
        target = self.refusal(url)
        if target is None:
            return (*_host_port(urlsplit(url)), None)
        host, port = target
        addresses = literal_address(host)
        if addresses is None:
            try:
                infos = _getaddrinfo_within(host, port, timeout)
            except socket.gaierror as exc:
                from scrapy.exceptions import CannotResolveHostError

                raise CannotResolveHostError("DNS lookup failed for %s: %s" % (host, exc)) from None
            addresses = sorted({str(info[4][0]) for info in infos})
        self.check_addresses(url, addresses)
        return host, port, addresses


def _getaddrinfo_within(host: str, port: int, timeout: float | None) -> list[Any]:
    """``getaddrinfo`` that gives up after ``timeout`` seconds (TimeoutError). The resolver's own
    timeouts and retries can take tens of seconds a name; a fetch's deadline covers its lookups too.
    A lookup given up on ends in its daemon thread when the resolver does."""
    if timeout is None:
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    outcome: list[Any] = []

    def look_up() -> None:
        try:
            outcome.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except Exception as exc:  # handed to the caller below
            outcome.append(exc)

    lookup = threading.Thread(target=look_up, name="dns %s" % host, daemon=True)
    lookup.start()
    lookup.join(max(timeout, 0.0))
    if not outcome:
        raise TimeoutError("DNS lookup of %s took longer than %.1f s" % (host, timeout))
    if isinstance(outcome[0], Exception):
        raise outcome[0]
    return outcome[0]


def literal_address(host: str) -> list[str] | None:
    """``[host]`` normalised when it is an IP address literal, else None (a name to resolve)."""
    address = _normal_address(host)
    return None if address is None else [address]


@functools.lru_cache(maxsize=_REMEMBERED_ADDRESSES)
def _normal_address(host: str) -> str | None:
    """An IP address literal in its canonical form, or None (a host name: parsing it raised)."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None
