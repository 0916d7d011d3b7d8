"""A blocking HTTP(S) GET under an :class:`~votersdaily.plumbing.address_policy.AddressPolicy`, for code
outside the reactor (the laundromat's JSON-LD contexts, loaded in its cleaning workers): every
redirect hop checked, the connection made only to the addresses the check passed (no second DNS
answer), the body bounded in size and time. No Scrapy here: the workers start without it."""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from votersdaily.plumbing.address_policy import PrivateAddressRefused

if TYPE_CHECKING:
    from votersdaily.plumbing.address_policy import AddressPolicy


class DownloadTooLarge(Exception):
    """The body is (or announces itself) larger than the fetch's limit (``LAUNDROMAT_MAX_DOWNLOAD_BYTES``
    for the laundromat's downloads, ``LAUNDROMAT_CONTEXT_MAX_BYTES`` for its JSON-LD contexts)."""


@dataclass
class Fetched:
    url: str
    content_type: str | None
    body: bytes


def fetch_limited(
    url: str,
    policy: AddressPolicy,
    *,
    max_bytes: int,
    timeout: float,
    accept: str = "*/*",
    max_redirects: int = 5,
) -> Fetched:
    """GET ``url`` under ``policy`` (every redirect hop checked too), connecting only to the checked
    addresses, reading at most ``max_bytes`` within ``timeout`` seconds in all. Blocking: for
    worker processes (JSON-LD contexts). Raises PrivateAddressRefused, HostNotAllowed,
    DownloadTooLarge, OSError/TimeoutError, or http.client errors; a non-2xx answer is an OSError."""
    deadline = time.monotonic() + timeout
    for _ in range(max_redirects + 1):
        host, port, addresses = policy.resolve_sync(url)
        parts = urlsplit(url)
        conn = _pinned_connection(parts.scheme, host, port, addresses, max(0.1, deadline - time.monotonic()))
        try:
            path = (parts.path or "/") + ("?" + parts.query if parts.query else "")
            conn.request("GET", path, headers={"Accept": accept, "Accept-Encoding": "identity"})
            answer = conn.getresponse()
            location = answer.getheader("Location")
            if 300 <= answer.status < 400 and location:
                url = urljoin(url, location)
                continue
            if not 200 <= answer.status < 300:
                raise OSError("HTTP status %d for %s" % (answer.status, url))
            length = answer.getheader("Content-Length")
            if length and length.isdigit() and int(length) > max_bytes:
                raise DownloadTooLarge("%s: Content-Length %s exceeds %d bytes" % (url, length, max_bytes))
            chunks, total = [], 0
            while chunk := answer.read(65536):
                total += len(chunk)
                if total > max_bytes:
                    raise DownloadTooLarge("%s: body exceeds %d bytes" % (url, max_bytes))
                if time.monotonic() > deadline:
                    raise TimeoutError("fetching %s took longer than %s s" % (url, timeout))
                chunks.append(chunk)
            return Fetched(url, answer.getheader("Content-Type"), b"".join(chunks))
        finally:
            conn.close()
    raise PrivateAddressRefused("more than %d redirects from %s" % (max_redirects, url))


def _pinned_connection(
    scheme: str, host: str, port: int, addresses: list[str] | None, timeout: float
) -> http.client.HTTPConnection:
    """An HTTP(S) connection to ``host`` that connects to one of ``addresses`` (not a new DNS answer)."""
    if scheme == "https":
        return _PinnedHTTPSConnection(host, port, addresses or [host], timeout)
    return _PinnedHTTPConnection(host, port, addresses or [host], timeout)


def _connect_first(host: str, addresses: list[str], port: int, timeout: float | None) -> socket.socket:
    last: OSError | None = None
    for address in addresses:
        try:
            return socket.create_connection((address, port), timeout)
        except OSError as exc:
            last = exc
    raise last or OSError("no address for %s" % host)


class _PinnedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, host: str, port: int, addresses: list[str], timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.addresses = addresses

    def connect(self) -> None:
        self.sock = _connect_first(self.host, self.addresses, self.port, self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, addresses: list[str], timeout: float) -> None:
        self.tls = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self.tls)
        self.addresses = addresses

    def connect(self) -> None:
        sock = _connect_first(self.host, self.addresses, self.port, self.timeout)
        self.sock = self.tls.wrap_socket(sock, server_hostname=self.host)
