"""One writer of gzipped WARC files for every product that keeps what it fetched: the event spiders'
source archive (:mod:`votersdaily.archive`) and the ingest's WARC output (:mod:`votersdaily.ingest.warc`).

A writer owns one thread: records are built (their digests computed), gzipped and written there, in the
order they were submitted, so the reactor never compresses a body and offsets stay exact. A *unit* (a
response record and its request record, say) is gzipped into memory first and then written, so a unit
is in the file whole or not at all. Files are named by the caller, start with a ``warcinfo`` record,
rotate after ``max_size`` bytes (0: one file per run) and are fsynced, with their folder, when rotated
and when the writer closes.

A WARC file is a copy of what was fetched: failing to write it never costs what it copies. So:

* a write that fails (a full disk, a read-only or vanished folder: any ``OSError``) cuts the file back
  to the end of its last complete unit (a file this writer created that holds no unit is removed), so
  no reader ever meets half a record; the writer says once per folder and process what went wrong,
  naming the folder, and stops: every later unit of the run is answered ``None`` at once, and the
  caller keeps its data without a WARC location;
* a unit that cannot be built (anything but an ``OSError``) is left out on its own;
* :meth:`WarcFileWriter.run_log_fields` is what the run log says about it (``archived``, and when not,
  ``archive_error`` and ``not_archived_count``).
"""

from __future__ import annotations

import io
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any, ClassVar

from warcio.recordbuilder import RecordBuilder
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from .full_disk import FULL_DISK_ERRORS

logger = logging.getLogger(__name__)

#: HTTP headers as Scrapy's requests and responses give them, decoded (name, value) pairs.
HeaderPairs = Sequence[tuple[str, str]]
#: Builds the records of one unit with the writer's record builder (in the writer's thread).
BuildRecords = Callable[[RecordBuilder], Sequence[Any]]


def reason_phrase(status: int) -> str:
    """The reason phrase of an HTTP status ("" for a code HTTP does not name): a WARC response record's
    status line has one, and Scrapy keeps only the code."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def decoded_headers(headers: Any) -> list[tuple[str, str]]:
    """Scrapy's ``Headers`` (bytes names, lists of bytes values) as (name, value) text pairs."""
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, vs in headers.items() for v in vs]


def response_record(
    builder: RecordBuilder,
    url: str,
    status: int,
    headers: HeaderPairs,
    body: bytes,
    warc_headers: Mapping[str, str] | None = None,
) -> Any:
    """A WARC ``response`` record of an HTTP(-like) response (a ``file:`` replay too)."""
    status_line = "%d %s" % (status, reason_phrase(status))
    http = StatusAndHeaders(status_line, list(headers), protocol="HTTP/1.1")
    return _http_record(builder, url, "response", http, body, warc_headers)


def request_record(
    builder: RecordBuilder,
    method: str,
    url: str,
    headers: HeaderPairs,
    body: bytes,
    warc_headers: Mapping[str, str] | None = None,
) -> Any:
    """A WARC ``request`` record of the request that fetched a response."""
    http = StatusAndHeaders("%s %s HTTP/1.1" % (method, url), list(headers), is_http_request=True)
    return _http_record(builder, url, "request", http, body, warc_headers)


def _http_record(
    builder: RecordBuilder,
    url: str,
    record_type: str,
    http: StatusAndHeaders,
    body: bytes,
    warc_headers: Mapping[str, str] | None,
) -> Any:
    return builder.create_warc_record(
        url,
        record_type,
        payload=io.BytesIO(body),
        http_headers=http,
        warc_headers_dict=dict(warc_headers or {}),
    )


@dataclass(frozen=True)
class WarcLocation:
    """Where a unit went: its file, the offset of its first record, that record's compressed length
    and its ``WARC-Record-ID``."""

    path: Path
    offset: int
    length: int
    record_id: str


class WarcFileWriter:
    """Gzipped WARC files in ``folder``, written by one thread (see the module docstring).

    ``file_name(serial)`` names the next file (relative to ``folder``, sub-folders allowed; serial
    counts from 1), ``warcinfo`` is the ``warcinfo`` record's fields, ``what`` names the output in
    messages ("the source archive")."""

    #: Folders whose failure was already reported in this process (a crawl of twelve spiders on one
    #: full disk says it once).
    _reported: ClassVar[set[str]] = set()
    _reported_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        folder: Path,
        file_name: Callable[[int], str],
        warcinfo: Mapping[str, str],
        *,
        max_size: int = 0,
        what: str = "the WARC output",
        thread_name: str = "warc-writer",
    ) -> None:
        self.folder = Path(os.path.abspath(folder))
        self.file_name = file_name
        self.warcinfo = dict(warcinfo)
        self.max_size = max_size
        self.what = what
        self.builder = RecordBuilder()
        #: The file being written (or the last one kept), and every file this writer kept.
        self.path: Path | None = None
        self.files: list[Path] = []
        #: Units written, and units not written (after a failure, or that could not be built).
        self.records = 0
        self.not_written = 0
        #: Why a unit was not written (the first reason), and whether writing stopped for the run.
        self.error: str | None = None
        self.stopped = False
        self._fd: int | None = None
        #: End of the last complete unit of the current file, and how many units it holds.
        self._size = 0
        self._units_in_file = 0
        self._serial = 0
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread_name)

    # -- the caller's side ------------------------------------------------------------------------

    def submit(self, build: BuildRecords) -> Future[WarcLocation | None]:
        """Queue one unit; the future gives its location, or None when it was not written."""
        return self._thread.submit(self.write, build)

    def close(self) -> None:
        """Every queued unit written, then the file fsynced and closed."""
        self._thread.shutdown(wait=True)
        if self._fd is not None:
            try:
                self._close_file()
            except OSError as exc:
                self._failed(exc)

    def run_log_fields(self) -> dict[str, Any]:
        """``archived`` (every unit was written), and when not ``archive_error``, ``not_archived_count``."""
        if not self.not_written and not self.stopped:
            return {"archived": True}
        return {"archived": False, "archive_error": self.error, "not_archived_count": self.not_written}

    # -- the writer thread ----------------------------------------------------------------------

    def write(self, build: BuildRecords) -> WarcLocation | None:
        """Write one unit (in the writer thread); its location, or None when it was not written."""
        if self.stopped:
            self.not_written += 1
            return None
        try:
            records = list(build(self.builder))
            unit, first_length = self._gzipped(records)
            record_id = records[0].rec_headers.get_header("WARC-Record-ID")
        except Exception as exc:  # one unit that cannot be built costs only itself
            self.not_written += 1
            self.error = self.error or "a record could not be built (%s: %s)" % (type(exc).__name__, exc)
            logger.warning(
                "%s: a record could not be built, left out: %s: %s", self.what, type(exc).__name__, exc
            )
            return None
        try:
            if self._fd is None or (self.max_size and self._size > self.max_size):
                self._next_file()
            assert self._fd is not None and self.path is not None, "_next_file() opened one"  # noqa: S101 - invariant
            offset = self._size
            self._write_all(unit)
        except OSError as exc:
            self.not_written += 1
            self._failed(exc)
            return None
        self._size += len(unit)
        self._units_in_file += 1
        self.records += 1
        return WarcLocation(self.path, offset, first_length, record_id)

    @staticmethod
    def _gzipped(records: Sequence[Any]) -> tuple[bytes, int]:
        """The records as gzip members (one each), and the compressed length of the first."""
        buffer = io.BytesIO()
        out = WARCWriter(buffer, gzip=True)
        first_length = 0
        for record in records:
            out.write_record(record)
            first_length = first_length or buffer.tell()
        return buffer.getvalue(), first_length

    def _write_all(self, data: bytes) -> None:
        assert self._fd is not None  # noqa: S101 - invariant
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def _next_file(self) -> None:
        if self._fd is not None:
            self._close_file()
        self._serial += 1
        path = self.folder / self.file_name(self._serial)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        self.path, self._size, self._units_in_file = path, 0, 0
        self.files.append(path)
        info, _ = self._gzipped([self.builder.create_warcinfo_record(path.name, self.warcinfo)])
        self._write_all(info)
        self._size = len(info)

    def _close_file(self) -> None:
        """fsync and close the current file, and fsync its folder (the new name survives a crash)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        if self.path is not None:
            _fsync_folder(self.path.parent)
            logger.info("%s: closed %s (%d bytes)", self.what, self.path, self._size)

    def _failed(self, exc: OSError) -> None:
        """Stop writing: no partial unit stays behind, and the folder is named once."""
        self.stopped = True
        if exc.errno in FULL_DISK_ERRORS:
            self.error = "the folder %s is full (%s)" % (self.folder, exc.strerror)
        else:
            reason = exc.strerror or str(exc)
            if exc.filename and os.fspath(exc.filename) != str(self.folder):  # a file in its way, not itself
                reason = "%s: %s" % (os.fspath(exc.filename), reason)
            self.error = "cannot write to the folder %s (%s)" % (self.folder, reason)
        self._discard_partial()
        key = str(self.folder)
        with self._reported_lock:
            first = key not in self._reported
            self._reported.add(key)
        (logger.error if first else logger.info)(
            "%s: %s; from here on this run keeps its data without a WARC copy (run log: archived false)",
            self.what,
            self.error,
        )

    def _discard_partial(self) -> None:
        """Cut the current file back to its last complete unit, or remove it when it holds none."""
        fd, path = self._fd, self.path
        if fd is None or path is None:
            return
        self._fd = None
        try:
            if self._units_in_file:
                os.ftruncate(fd, self._size)
                os.fsync(fd)
        except OSError as exc:
            logger.error("%s: could not cut %s back to its last complete record: %s", self.what, path, exc)
        finally:
            os.close(fd)
        if not self._units_in_file:
            path.unlink(missing_ok=True)
            self.files.remove(path)
            self.path = self.files[-1] if self.files else None


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some filesystems cannot sync a folder; the file itself was synced
        pass
    finally:
        os.close(fd)
