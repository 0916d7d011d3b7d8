"""The SSRF guard: no fetch to private, loopback, link-local or reserved addresses unless
``INGEST_ALLOW_PRIVATE`` is on. Every request is checked, including each redirect step (each one
passes through the downloader middlewares again) and after DNS resolution."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from urllib.parse import urlsplit

from scrapy.exceptions import IgnoreRequest

#: Meta key for requests to operator-configured services (GROBID), exempt from the guard.
TRUSTED_META = "ingest_trusted"
_TTL = 60.0


class PrivateAddressRefused(IgnoreRequest):
    """The URL's host is (or resolves to) an address the ingest must not fetch."""


def is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip.is_global and not (ip.is_multicast or ip.is_reserved or ip.is_private or ip.is_loopback
                                 or ip.is_link_local or ip.is_unspecified)


class HostNotAllowed(IgnoreRequest):
    """``INGEST_ALLOWED_HOSTS`` is set and the URL's host is not on it."""


class SsrfGuardMiddleware:
    def __init__(self, allow_private: bool, allowed_hosts: list[str] | None = None):
        self.allow_private = allow_private
        self.allowed_hosts = {h.lower() for h in allowed_hosts or ()}
        self._cache: dict[str, tuple[float, list[str]]] = {}

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        return cls(settings.getbool("INGEST_ALLOW_PRIVATE", False), settings.getlist("INGEST_ALLOWED_HOSTS"))

    async def _addresses(self, host: str, port: int) -> list[str]:
        cached = self._cache.get(host)
        if cached and cached[0] > time.monotonic():
            return cached[1]
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror:
            return []  # let the download fail with Scrapy's own DNS error
        addresses = sorted({info[4][0] for info in infos})
        self._cache[host] = (time.monotonic() + _TTL, addresses)
        return addresses

    async def process_request(self, request):
        if request.meta.get(TRUSTED_META):
            return None
        parts = urlsplit(request.url)
        if self.allowed_hosts and (parts.hostname or "").lower() not in self.allowed_hosts:
            raise HostNotAllowed("refusing %s: host not in INGEST_ALLOWED_HOSTS" % request.url)
        if self.allow_private:
            return None
        if parts.scheme not in ("http", "https"):
            raise PrivateAddressRefused("refusing non-http(s) URL %s" % request.url)
        host = (parts.hostname or "").strip("[]")
        if not host:
            raise PrivateAddressRefused("refusing URL without a host: %s" % request.url)
        try:
            addresses = [str(ipaddress.ip_address(host))]
        except ValueError:
            if host == "localhost" or host.endswith((".localhost", ".local", ".internal")):
                raise PrivateAddressRefused("refusing private host %s (INGEST_ALLOW_PRIVATE is off)" % host)
            addresses = await self._addresses(host, parts.port or (443 if parts.scheme == "https" else 80))
        for address in addresses:
            if not is_public(address):
                raise PrivateAddressRefused(
                    "refusing %s: %s is a private/loopback/link-local address (INGEST_ALLOW_PRIVATE is off)"
                    % (request.url, address))
        return None
