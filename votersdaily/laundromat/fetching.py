"""How the laundromat fetches: one address policy for every URL that crawled content names, and
downloads streamed to disk as they arrive (never a whole body in memory), bounded in size and time.

* :class:`AddressGuardMiddleware` checks every request against the ingest's :class:`AddressPolicy`
  (``LAUNDROMAT_ALLOW_PRIVATE``, ``LAUNDROMAT_PRIVATE_HOSTS``, ``LAUNDROMAT_ALLOWED_HOSTS``): sitemap
  ``loc``s, semantic-sitemap dump locations, ``void:dataDump`` links and every redirect hop. Only the
  operator's own seeds (``meta[OPERATOR_META]``, set for ``-a url=`` / ``-a seedlist=`` seeds) skip
  it, and only they may be ``file:``.
* :class:`StreamingDownloadHandler` writes the body of a request with ``meta[STREAM_META]`` into the
  laundromat's ``files/`` folder chunk by chunk, aborting past ``LAUNDROMAT_MAX_DOWNLOAD_BYTES`` or
  ``LAUNDROMAT_DOWNLOAD_TIMEOUT``; an operator's ``file:`` seed is copied the same way, and refused
  unless it is a regular file on a filesystem of data (no devices, FIFOs, sockets, ``/proc`` or
  ``/sys`` files).
* The same policy for code outside the reactor (JSON-LD contexts loaded in a worker process) is
  :func:`votersdaily.plumbing.pinned_fetch.fetch_limited`: blocking, pinned to the checked
  addresses, bounded.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Self
from urllib.parse import urlsplit

from scrapy.http import Headers, Response
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import defer, task
from twisted.internet.error import TimeoutError as DownloadTimeout
from twisted.internet.protocol import Protocol, connectionDone
from twisted.python.failure import Failure
from twisted.web.client import (
    Agent,
    HTTPConnectionPool,
    RequestTransmissionFailed,
    ResponseDone,
    ResponseFailed,
    ResponseNeverReceived,
)
from twisted.web.http import PotentialDataLoss
from twisted.web.http_headers import Headers as TxHeaders
from twisted.web.iweb import UNKNOWN_LENGTH
from w3lib.url import file_uri_to_path

from votersdaily import interrupts, locations, scrapy_internals
from votersdaily.blocking import run_in_thread
from votersdaily.plumbing.address_policy import AddressPolicy
from votersdaily.plumbing.pinned_fetch import DownloadTooLarge
from votersdaily.plumbing.ssrf import SsrfGuardMiddleware
from votersdaily.reactor import installed_reactor

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
    from scrapy.crawler import Crawler
    from scrapy.http import Request
    from scrapy.settings import BaseSettings

#: Request meta: the request is the operator's own seed (no address policy; ``file:`` allowed).
OPERATOR_META = "laundromat_operator_seed"
#: Request meta: stream the body to ``<LAUNDROMAT_OUTPUT_DIR>/files/<this name>``.
STREAM_META = "laundromat_stream"
#: Request meta set by the handler: bytes written to the file.
STREAMED_META = "laundromat_streamed_bytes"


class LocalFileRefused(Exception):
    """A ``file:`` seed that is not a regular file, or a ``file:`` URL that is not the operator's."""


def address_policy(settings: BaseSettings) -> AddressPolicy:
    """The laundromat's policy for URLs from crawled content, from its settings."""
    return AddressPolicy.from_settings(settings, "LAUNDROMAT")


class AddressGuardMiddleware(SsrfGuardMiddleware):
    """The ingest's guard with the laundromat's settings. The operator's seeds pass, and so does the
    robots.txt of a host an operator's seed named (RobotsTxtMiddleware asks for it without our meta)."""

    trusted_meta = OPERATOR_META

    def __init__(self, policy: AddressPolicy) -> None:
        super().__init__(policy=policy)
        self._operator_hosts: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        guard = cls(address_policy(crawler.settings))
        guard.install(crawler)
        return guard

    async def process_request(self, request: Request) -> None:
        parts = urlsplit(request.url)
        if request.meta.get(OPERATOR_META):
            self._operator_hosts.add(parts.netloc.lower())
            return None
        if (
            parts.path == "/robots.txt"
            and request.meta.get("dont_obey_robotstxt")
            and parts.netloc.lower() in self._operator_hosts
        ):
            return None
        await self.check(request.url)
        return None


# -- streaming downloads ------------------------------------------------------------------------------


class _FileSink(Protocol):
    """Writes a response body to ``out`` as it arrives; fails past ``limit`` bytes."""

    def __init__(
        self, out: BinaryIO, limit: int, expected: int | None, finished: defer.Deferred[int]
    ) -> None:
        self.out = out
        self.limit = limit
        self.expected = expected
        self.finished = finished
        self.received = 0

    def connectionMade(self) -> None:
        if self.expected is not None and self.expected > self.limit:
            self._fail(DownloadTooLarge("Content-Length %d exceeds %d bytes" % (self.expected, self.limit)))

    def stop(self) -> None:
        """Stop the body's delivery (``deliverBody`` makes the transport a push producer)."""
        # Protocol types its transport as ITransport | None, which has no stopProducing.
        self.transport.stopProducing()  # type: ignore[union-attr]

    def _fail(self, error: Exception) -> None:
        if not self.finished.called:
            self.stop()
            self.finished.errback(error)

    def dataReceived(self, data: bytes) -> None:
        if self.finished.called:
            return
        self.received += len(data)
        if self.received > self.limit:
            self._fail(DownloadTooLarge("body exceeds %d bytes" % self.limit))
            return
        try:
            self.out.write(data)
        except OSError as exc:  # a full disk: the download fails with it (not Twisted's "Unhandled Error")
            self._fail(exc)

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        if self.finished.called:
            return
        if reason.check(ResponseDone, PotentialDataLoss):
            self.finished.callback(self.received)
        else:
            self.finished.errback(reason)


#: Bytes per copy call: small enough to check the limits often, large enough to cost nothing.
_COPY_CHUNK = 64 << 20


def _copy_chunk(src: int, dst: int, room: int) -> int:
    """Copy the next chunk (in the kernel where it can: no Python buffers); bytes copied, 0 at EOF.
    A chunk read is written whole or not at all: a full disk takes part of a write without an error
    (the next write says ENOSPC), and the rest of the chunk, already read, would be lost silently."""
    size = min(_COPY_CHUNK, max(room, 1))
    try:
        return os.copy_file_range(src, dst, size)
    except (AttributeError, OSError):
        chunk = memoryview(os.read(src, min(size, 1 << 20)))
        written = 0
        while written < len(chunk):
            written += os.write(dst, chunk[written:])
        return written


#: Filesystems whose files are kernel state or devices, not data (their sizes say 0 and reading
#: them can block or never end): an operator's ``file:`` seed there is refused.
SPECIAL_FILESYSTEMS = frozenset(
    [
        "proc",
        "sysfs",
        "devtmpfs",
        "devpts",
        "debugfs",
        "tracefs",
        "securityfs",
        "cgroup",
        "cgroup2",
        "pstore",
        "bpf",
        "configfs",
        "fusectl",
        "mqueue",
        "efivarfs",
        "binfmt_misc",
        "autofs",
        "rpc_pipefs",
        "nsfs",
        "hugetlbfs",
        "selinuxfs",
    ]
)
_MOUNTINFO = "/proc/self/mountinfo"


def special_filesystem(device: int) -> str | None:
    """The type of the filesystem of ``device`` (an ``st_dev``) when it is one of
    SPECIAL_FILESYSTEMS, from the mount table (Linux); None otherwise, or without one."""
    wanted = "%d:%d" % (os.major(device), os.minor(device))
    try:
        with open(_MOUNTINFO, encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 2 and fields[2] == wanted and " - " in line:
                    fstype = line.split(" - ", 1)[1].split()[0]
                    return fstype if fstype in SPECIAL_FILESYSTEMS else None
    except OSError:
        return None
    return None


def _file_kind(mode: int) -> str:
    for test, kind in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return kind
    return "not a regular file"


def _refuse_special(source: str, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise LocalFileRefused("refusing %s: not a regular file (%s)" % (source, _file_kind(info.st_mode)))
    fstype = special_filesystem(info.st_dev)
    if fstype is not None:
        raise LocalFileRefused(
            "refusing %s: a file of the %s filesystem (kernel state, not data)" % (source, fstype)
        )


def copy_local_file(
    source: str, target: Path, limit: int, timeout: float, stop: threading.Event | None = None
) -> int:
    """Copy an operator's ``file:`` seed to ``target``; only a regular file of at most ``limit`` bytes
    on a filesystem of data (not ``/proc``, ``/sys``, ``/dev``: SPECIAL_FILESYSTEMS), checked before
    it is opened (a socket cannot be) and again on the open descriptor (opened non-blocking, so a
    FIFO cannot hang us). ``stop``: the crawl is shutting down.

    On the same filesystem the file is hard-linked instead (no second copy of a dump of gigabytes
    on disk, nothing read): the laundromat never writes to a file it was given, and removing its
    link when done leaves the operator's file as it was. A file that changes while a crawl reads
    it is no more a sound seed with a copy than with a link."""
    _refuse_special(source, Path(source).stat())
    fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        _refuse_special(source, info)
        if info.st_size > limit:
            raise DownloadTooLarge("%s is %d bytes, more than %d" % (source, info.st_size, limit))
        if _linked(source, info, target):
            return info.st_size
        os.set_blocking(fd, True)
        deadline = time.monotonic() + timeout
        copied = 0
        with open(target, "wb") as out:
            while n := _copy_chunk(fd, out.fileno(), limit + 1 - copied):
                copied += n
                if copied > limit:
                    raise DownloadTooLarge("%s grew past %d bytes" % (source, limit))
                if time.monotonic() > deadline:
                    raise DownloadTimeout("reading %s took longer than %s s" % (source, timeout))
                if stop is not None and stop.is_set():
                    raise defer.CancelledError("the crawl is shutting down")
        return copied
    finally:
        os.close(fd)


def _linked(source: str, info: os.stat_result, target: Path) -> bool:
    """Hard-link ``source`` (the open file checked: ``info``) at ``target``; False where that cannot
    be done (another filesystem, a filesystem without links, links to others' files not allowed)."""
    try:
        os.link(source, target)
    except OSError:
        return False
    linked = target.stat()
    if (linked.st_dev, linked.st_ino) != (info.st_dev, info.st_ino):  # not the file that was checked
        target.unlink()
        return False
    return True


def _cancelled(exc: BaseException) -> bool:
    """Whether ``exc`` is a download's cancellation: ``CancelledError`` itself, or Twisted's HTTP
    client's failure wrapping it (``ResponseNeverReceived`` while the answer's head had not come)."""
    if isinstance(exc, defer.CancelledError):
        return True
    wrapping = (ResponseNeverReceived, ResponseFailed, RequestTransmissionFailed)
    reasons = exc.reasons if isinstance(exc, wrapping) else []
    return any(isinstance(reason, Failure) and reason.check(defer.CancelledError) for reason in reasons)


class StreamingDownloadHandler:
    """``DOWNLOAD_HANDLERS`` for http, https and file in the laundromat. Requests without
    ``meta[STREAM_META]`` (robots.txt) go to Scrapy's own HTTP handler, in memory.

    Scrapy's shutdown (SIGINT) waits for the downloads in progress, which may take
    ``LAUNDROMAT_DOWNLOAD_TIMEOUT``: a watcher cancels them as soon as the engine stops, and each
    fails as :class:`~votersdaily.interrupts.CrawlInterrupted` (not fetched: the run was interrupted,
    its seed stays due)."""

    lazy = False

    def __init__(self, crawler: Crawler) -> None:
        from twisted.internet import reactor

        settings = crawler.settings
        self.files_dir = locations.laundromat_output_dir(settings).resolve() / "files"
        self.max_bytes = settings.getint("LAUNDROMAT_MAX_DOWNLOAD_BYTES")
        self.timeout = settings.getfloat("LAUNDROMAT_DOWNLOAD_TIMEOUT")
        self.connect_timeout = min(self.timeout, settings.getfloat("DOWNLOAD_TIMEOUT"))
        self.pool = HTTPConnectionPool(reactor, persistent=True)
        self.pool.maxPersistentPerHost = settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN")
        self.crawler = crawler
        self.stopping = threading.Event()
        self._in_flight: set[defer.Deferred[Any]] = set()
        self._watcher = task.LoopingCall(self._watch)

    # Built at their first HTTP request: Scrapy's HTTP handler and TLS context factory import its TLS
    # stack (0.1 s), which a crawl of file: seeds never needs.

    @cached_property
    def http(self) -> HTTP11DownloadHandler:
        """Scrapy's own handler, for requests not streamed (robots.txt)."""
        from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler

        return HTTP11DownloadHandler.from_crawler(self.crawler)

    @cached_property
    def agent(self) -> Agent:
        return Agent(
            installed_reactor(),
            contextFactory=scrapy_internals.tls_context_factory(self.crawler),
            connectTimeout=self.connect_timeout,
            pool=self.pool,
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _watch(self) -> None:
        engine = self.crawler.engine
        if (
            engine is not None
            and not scrapy_internals.engine_running(self.crawler)
            and not self.stopping.is_set()
        ):
            self.stopping.set()
            for pending in list(self._in_flight):
                pending.cancel()

    async def download_request(self, request: Request, spider: Spider | None = None) -> Response:
        if not self._watcher.running:
            self._watcher.start(0.5, now=False)
        name = request.meta.get(STREAM_META)
        scheme = urlsplit(request.url).scheme
        if scheme == "file" and (name is None or not request.meta.get(OPERATOR_META)):
            raise LocalFileRefused(
                "refusing %s: only the operator's own seeds may be file: URLs" % request.url
            )
        if name is None:
            return await self.http.download_request(request)
        self.files_dir.mkdir(parents=True, exist_ok=True)
        target = self.files_dir / Path(name).name
        try:
            if scheme == "file":
                size = await run_in_thread(
                    copy_local_file,
                    file_uri_to_path(request.url),
                    target,
                    self.max_bytes,
                    self.timeout,
                    self.stopping,
                )
                response = Response(request.url, status=200, body=b"", flags=["streamed"])
            else:
                response, size = await self._http(request, target)
        except BaseException as exc:
            target.unlink(missing_ok=True)
            if self.stopping.is_set() and _cancelled(exc):
                # Cut short because the crawl stops (Ctrl-C): not fetched, no failure of its seed.
                raise interrupts.not_fetched(self.crawler, request) from None
            raise
        request.meta[STREAMED_META] = size
        return response

    async def _http(self, request: Request, target: Path) -> tuple[Response, int]:
        reactor = installed_reactor()

        timeout = self.timeout
        headers = TxHeaders()
        for key, values in request.headers.items():
            headers.setRawHeaders(key, list(values))
        started = time.monotonic()
        pending = self.agent.request(request.method.encode(), request.url.encode("ascii"), headers, None)
        current: list[defer.Deferred[Any]] = [pending]
        timer = reactor.callLater(timeout, lambda: current[0].cancel())  # noqa: PLW0108 - the Deferred in flight then
        self._in_flight.add(pending)
        try:
            txresponse = await maybe_deferred_to_future(pending)
            request.meta["download_latency"] = time.monotonic() - started
            expected = None if txresponse.length == UNKNOWN_LENGTH else int(txresponse.length)
            with open(target, "wb") as out:
                if expected == 0:
                    size = 0
                else:
                    done: defer.Deferred[int] = defer.Deferred(lambda _: sink.stop())
                    sink = _FileSink(out, self.max_bytes, expected, done)
                    current[0] = done
                    self._in_flight.discard(pending)
                    self._in_flight.add(done)
                    # IResponse is a zope interface: mypy reads deliverBody without self
                    txresponse.deliverBody(sink)  # type: ignore[call-arg, misc]
                    size = await maybe_deferred_to_future(done)
        except defer.CancelledError:
            if self.stopping.is_set() or timer.active():
                raise
            raise DownloadTimeout("getting %s took longer than %s s" % (request.url, timeout)) from None
        finally:
            self._in_flight.difference_update((pending, current[0]))
            if timer.active():
                timer.cancel()
        response_headers = Headers()
        if expected is not None:
            response_headers[b"Content-Length"] = str(expected).encode()
        for key, values in txresponse.headers.getAllRawHeaders():
            response_headers.setlist(key, values)
        version = txresponse.version
        response = Response(
            request.url,
            status=int(txresponse.code),
            headers=response_headers,
            body=b"",
            flags=["streamed"],
            protocol="%s/%d.%d" % (version[0].decode(), version[1], version[2]),
        )
        return response, size

    async def close(self) -> None:
        if self._watcher.running:
            self._watcher.stop()
        closing = self.http.close() if "http" in vars(self) else None
        if isinstance(closing, defer.Deferred):
            await maybe_deferred_to_future(closing)
        elif closing is not None:
            await closing
        reactor = installed_reactor()

        done = self.pool.closeCachedConnections()
        call = reactor.callLater(1, done.callback, None)  # it can hang on a dead peer
        await maybe_deferred_to_future(done)
        if call.active():
            call.cancel()
