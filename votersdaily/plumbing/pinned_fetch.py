"""A blocking HTTP(S) GET under an :class:`~votersdaily.plumbing.address_policy.AddressPolicy`, for code
outside the reactor (the laundromat's JSON-LD contexts, loaded in its cleaning workers): every
redirect hop checked, the connection made only to the addresses the check passed (no second DNS
answer), the body bounded in size and time. No Scrapy here: the workers start without it. The
rendering browser's gate (votersdaily/rendering/gate.py) fetches each hop with :func:`fetch_hop`
once the crawl's address guard has checked it."""

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


@dataclass
class Answer:
    """One hop's answer: a redirect (``location`` set, no body read) or the final status and body."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    location: str | None = None


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
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("fetching %s took longer than %s s" % (url, timeout))
        host, port, addresses = policy.resolve_sync(url, timeout=remaining)
        answer = fetch_hop(
            url,
            host,
            port,
            addresses,
            headers={"Accept": accept},
            max_bytes=max_bytes,
            deadline=deadline,
            timeout=timeout,
        )
        if answer.location is not None:
            url = answer.location
            continue
        return Fetched(url, _header(answer.headers, "Content-Type"), answer.body)
    raise PrivateAddressRefused("more than %d redirects from %s" % (max_redirects, url))


def fetch_hop(
    url: str,
    host: str,
    port: int,
    addresses: list[str] | None,
    *,
    method: str = "GET",
    headers: dict[str, str],
    body: bytes | None = None,
    max_bytes: int,
    deadline: float,
    timeout: float,
    error_bodies: bool = False,
) -> Answer:
    """One request of a fetch whose caller checked ``url`` and resolved it to ``addresses`` (None:
    any): connected only to those, no redirect followed (its absolute ``location`` is returned for
    the caller to check), the body bounded by ``max_bytes`` and the fetch's ``deadline``. A non-2xx
    answer is an OSError unless ``error_bodies`` (a browser shows a 404 page too)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("fetching %s took longer than %s s" % (url, timeout))
    parts = urlsplit(url)
    conn = _pinned_connection(parts.scheme, host, port, addresses, remaining)
    # A socket timeout bounds each read, not the fetch: a server sending a byte just before
    # every timeout would keep a read of 64 KiB (or a header line) going for hours. At the
    # deadline the connection is shut, whatever read waits on it then.
    watchdog = threading.Timer(remaining, conn.expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        path = (parts.path or "/") + ("?" + parts.query if parts.query else "")
        conn.request(method, path, body=body, headers={**headers, "Accept-Encoding": "identity"})
        answer = conn.getresponse()
        location = answer.getheader("Location")
        if 300 <= answer.status < 400 and location:
            conn.check_deadline(url, timeout)
            return Answer(answer.status, answer.getheaders(), location=urljoin(url, location))
        if not 200 <= answer.status < 300 and not error_bodies:
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
        return Answer(answer.status, answer.getheaders(), b"".join(chunks))
    except (OSError, http.client.HTTPException) as exc:
        if conn.expired.is_set() and not isinstance(exc, TimeoutError):
            raise TimeoutError("fetching %s took longer than %s s" % (url, timeout)) from None
        raise
    finally:
        watchdog.cancel()
        conn.close()


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    return next((value for key, value in headers if key.lower() == name.lower()), None)


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
