"""The blocking, pinned fetch outside the reactor (votersdaily/plumbing/pinned_fetch.py), against a
local site and a second local server standing for an internal service (the laundromat's ``hostile``
fixture)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from votersdaily.plumbing.address_policy import AddressPolicy, HostNotAllowed, PrivateAddressRefused
from votersdaily.plumbing.hosts import HostList
from votersdaily.plumbing.pinned_fetch import DownloadTooLarge, fetch_limited


def test_fetch_limited_applies_the_policy_outside_the_reactor(site, hostile):
    """The blocking fetcher (JSON-LD contexts in worker processes): the allowed site is read, a
    redirect to the internal server is refused before any connection, sizes are bounded."""
    context = site.route("/context.jsonld", '{"@context": {"name": "http://schema.org/name"}}')
    to_internal = site.route("/ctx-redirect", status=302, headers={"Location": hostile.url + "/secret.nt"})
    policy = AddressPolicy(private_hosts=HostList.parse(["127.0.0.1:%d" % site.port], "test"))
    fetched = fetch_limited(context, policy, max_bytes=1000, timeout=10)
    assert fetched.body.startswith(b'{"@context"') and fetched.url == context
    with pytest.raises(PrivateAddressRefused):
        fetch_limited(to_internal, policy, max_bytes=1000, timeout=10)
    for url in (hostile.url + "/secret.nt", "file:///etc/passwd", "http://169.254.169.254/"):
        with pytest.raises(PrivateAddressRefused):
            fetch_limited(url, policy, max_bytes=1000, timeout=10)
    with pytest.raises(DownloadTooLarge):
        fetch_limited(context, policy, max_bytes=10, timeout=10)
    with pytest.raises(HostNotAllowed):
        fetch_limited(
            context,
            AddressPolicy(allowed_hosts=HostList.parse(["example.org"], "test")),
            max_bytes=10,
            timeout=10,
        )
    assert hostile.hits == {}


class _Trickle:
    """A local server that answers every connection with ``head`` and then one byte of ``drip``
    every 50 ms for as long as the client listens (a slow-loris source: every read gets a byte
    before the socket's timeout, so only a deadline on the whole fetch ends it)."""

    def __init__(self, head: bytes, drip: bytes) -> None:
        self.head, self.drip = head, drip
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.listener.settimeout(0.2)
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            try:
                conn.sendall(self.head)
                while not self.stopped.wait(0.05):
                    conn.sendall(self.drip)
            except OSError:  # the client hung up
                return

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()  # out of accept() within its 0.2 s first: a closed listener there raises EBADF
        self.listener.close()


@pytest.mark.parametrize(
    "head, drip",
    [
        pytest.param(b"HTTP/1.1 200 OK\r\nContent-Type: application/ld+json\r\n\r\n", b" ", id="body"),
        pytest.param(b"HTTP/1.1 200 OK\r\nX-Slow: ", b"a", id="headers"),
    ],
)
def test_fetch_limited_ends_a_trickling_answer_at_its_timeout(head, drip):
    """The timeout bounds the whole fetch, not each read: a server that sends a byte every 50 ms
    never lets a read time out, and a fetch of a JSON-LD context (in a cleaning worker) must still
    end after ``timeout`` seconds instead of reading for hours."""
    server = _Trickle(head, drip)
    policy = AddressPolicy(private_hosts=HostList.parse(["127.0.0.1:%d" % server.port], "test"))
    outcome: list[BaseException | object] = []

    def fetch() -> None:
        try:
            outcome.append(
                fetch_limited(
                    "http://127.0.0.1:%d/context.jsonld" % server.port, policy, max_bytes=10**6, timeout=1
                )
            )
        except BaseException as exc:  # the test reads what it was
            outcome.append(exc)

    started = time.monotonic()
    worker = threading.Thread(target=fetch, daemon=True)
    worker.start()
    worker.join(15)
    took = time.monotonic() - started
    server.stop()
    assert not worker.is_alive(), "fetch_limited(timeout=1) was still reading after 15 s"
    assert len(outcome) == 1 and isinstance(outcome[0], TimeoutError), outcome
    assert took < 5, took


def test_fetch_limited_gives_up_a_slow_dns_lookup_at_its_timeout(monkeypatch):
    """The timeout covers the lookups too: a resolver that takes its time (its own timeouts and
    retries run to tens of seconds a name) must not hold a cleaning worker past the fetch's timeout.
    A resolver that hangs cannot be set up for one test, so ``getaddrinfo`` stands in for it: it
    waits for the name ``slow.example`` until the test ends (any other name resolves as usual)."""
    released = threading.Event()
    real_getaddrinfo = socket.getaddrinfo

    def hanging_getaddrinfo(host, *args, **kwargs):
        if host == "slow.example":
            released.wait(60)
            raise socket.gaierror(socket.EAI_AGAIN, "released")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", hanging_getaddrinfo)
    started = time.monotonic()
    try:
        with pytest.raises(TimeoutError, match=r"DNS lookup of slow\.example took longer than"):
            fetch_limited("http://slow.example/context.jsonld", AddressPolicy(), max_bytes=1000, timeout=1)
        took = time.monotonic() - started
    finally:
        released.set()
    assert took < 3, took
