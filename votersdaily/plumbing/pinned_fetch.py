"""A blocking HTTP(S) GET under an :class:`~votersdaily.plumbing.address_policy.AddressPolicy`, for code
outside the reactor (the laundromat's JSON-LD contexts, loaded in its cleaning workers): every
redirect hop checked, the connection made only to the addresses the check passed (no second DNS
answer), the body bounded in size and time. No Scrapy here: the workers start without it."""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
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
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("fetching %s took longer than %s s" % (url, timeout))
        conn = _pinned_connection(parts.scheme, host, port, addresses, remaining)
        # A socket timeout bounds each read, not the fetch: a server sending a byte just before
        # every timeout would keep a read of 64 KiB (or a header line) going for hours. At the
        # deadline the connection is shut, whatever read waits on it then.
        watchdog = threading.Timer(remaining, conn.expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            path = (parts.path or "/") + ("?" + parts.query if parts.query else "")
            conn.request("GET", path, headers={"Accept": accept, "Accept-Encoding": "identity"})
            answer = conn.getresponse()
            location = answer.getheader("Location")
            if 300 <= answer.status < 400 and location:
                conn.check_deadline(url, timeout)
                url = urljoin(url, location)
                continue
            if not 200 <= answer.status < 300:
                conn.check_deadline(url, timeout)
                raise OSError("HTTP status %d for %s" % (answer.status, url))
            length = answer.getheader("Content-Length")
            if length and length.isdigit() and int(length) > max_bytes:
                raise DownloadTooLarge("%s: Content-Length %s exceeds %d bytes" % (url, length, max_bytes))
            chunks, total = [], 0
            while chunk := answer.read(65536):
                total += len(chunk)
                if total > max_bytes:
                    raise DownloadTooLarge("%s: body exceeds %d bytes" % (url, max_bytes))
                conn.check_deadline(url, timeout)
                chunks.append(chunk)
            conn.check_deadline(url, timeout)  # the end of the body, or the deadline's shutdown?
            return Fetched(url, answer.getheader("Content-Type"), b"".join(chunks))
        except (OSError, http.client.HTTPException) as exc:
            if conn.expired.is_set() and not isinstance(exc, TimeoutError):
                raise TimeoutError("fetching %s took longer than %s s" % (url, timeout)) from None
            raise
        finally:
            watchdog.cancel()
            conn.close()
    raise PrivateAddressRefused("more than %d redirects from %s" % (max_redirects, url))


def _pinned_connection(
    scheme: str, host: str, port: int, addresses: list[str] | None, timeout: float
) -> _PinnedHTTPConnection | _PinnedHTTPSConnection:
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


class _Deadline:
    """What both pinned connections share: the TCP socket under them, shut by :meth:`expire` (the
    fetch's watchdog, another thread) so that a read blocked on it ends at once."""

    host: str
    raw: socket.socket | None = None
    expired: threading.Event

    def _connected(self, sock: socket.socket) -> socket.socket:
        self.raw = sock
        if self.expired.is_set():  # the deadline passed while connecting
            sock.close()
            raise TimeoutError("the fetch's time ran out while connecting to %s" % self.host)
        return sock

    def expire(self) -> None:
        self.expired.set()
        if self.raw is not None:
            with contextlib.suppress(OSError):
                self.raw.shutdown(socket.SHUT_RDWR)

    def check_deadline(self, url: str, timeout: float) -> None:
        if self.expired.is_set():
            raise TimeoutError("fetching %s took longer than %s s" % (url, timeout))


class _PinnedHTTPConnection(_Deadline, http.client.HTTPConnection):
    def __init__(self, host: str, port: int, addresses: list[str], timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.addresses = addresses
        self.expired = threading.Event()

    def connect(self) -> None:
        self.sock = self._connected(_connect_first(self.host, self.addresses, self.port, self.timeout))


class _PinnedHTTPSConnection(_Deadline, http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, addresses: list[str], timeout: float) -> None:
        self.tls = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self.tls)
        self.addresses = addresses
        self.expired = threading.Event()

    def connect(self) -> None:
        sock = self._connected(_connect_first(self.host, self.addresses, self.port, self.timeout))
        self.sock = self.tls.wrap_socket(sock, server_hostname=self.host)
