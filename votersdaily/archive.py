"""The source archive: every response an event spider parses, kept as WARC records.

A parser fix only helps the documents it sees, so the documents themselves are kept: each run of an
event spider writes one gzipped WARC file (``VOTERSDAILY_ARCHIVE_DIR/<spider>/<spider>-<start>-<id>.warc.gz``)
with a request and a response record per parsed response, as it reached the spider (decompressed, after
redirects; replayed recordings too, under their ``file:`` URL). Each event records where its document is
(``warc_file``, ``warc_record_id``, ``warc_offset``) and the run log names the file, so any event can be
traced to the exact bytes it came from and ``python -m votersdaily reparse`` can run a fixed parser over
history (:mod:`votersdaily.reparse`).

Two WARC headers of the project's own make a record replayable: ``VotersDaily-Callback`` (the spider
method that parsed it) and ``VotersDaily-Meta`` (the request's ``vd_*`` meta as JSON, e.g. the upstream
URL of a replayed recording).
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.http import Request, Response
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParser
from warcio.warcwriter import WARCWriter

from . import signals as vd_signals
from .clock import now_iso, now_utc
from .ingest.warc import _reason
from .requestmeta import ACCESS_META, ARCHIVE_META, REPLAY_META, SPIDER_META_PREFIX

logger = logging.getLogger(__name__)

CALLBACK_HEADER = "VotersDaily-Callback"
META_HEADER = "VotersDaily-Meta"
#: File names: ``<spider>-<YYYYmmddHHMMSS>-<8 hex>.warc.gz``, so the start time orders them.
STAMP_FORMAT = "%Y%m%d%H%M%S"
_HTTP_PARSER = StatusAndHeadersParser(["HTTP/1.0", "HTTP/1.1"])


def archive_dir(settings) -> Path:
    """The archive folder: ``$VOTERSDAILY_ARCHIVE_DIR`` first (one shared path for every job of a
    node, and for test runs), then the setting."""
    return Path(os.environ.get("VOTERSDAILY_ARCHIVE_DIR") or settings.get("VOTERSDAILY_ARCHIVE_DIR"))


def recorded_meta(meta: dict) -> dict:
    """The request's own ``vd_*`` meta that survives JSON (what a replay needs to parse the same way)."""
    kept = {}
    for key, value in meta.items():
        if not key.startswith(SPIDER_META_PREFIX) or key in (ARCHIVE_META, REPLAY_META):
            continue
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            continue
        kept[key] = value
    return kept


class ArchiveMiddleware:
    """Downloader middleware of the event spiders (order 50: it sees what the spider will parse).

    Records are built, gzipped and written by one thread, in the order responses arrive, so offsets
    stay exact and the reactor never compresses a body."""

    def __init__(self, crawler, folder: Path):
        self.crawler = crawler
        self.folder = folder
        self.path: Path | None = None
        self.records = 0
        self._handle: BinaryIO | None = None
        self._writer: WARCWriter | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="archive-writer")

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        if not settings.getbool("VOTERSDAILY_ARCHIVE_ENABLED"):
            raise NotConfigured("the source archive is off (VOTERSDAILY_ARCHIVE_ENABLED=False)")
        if not str(archive_dir(settings)).strip(". "):
            raise NotConfigured("VOTERSDAILY_ARCHIVE_DIR is empty: name the folder for the source archive")
        mw = cls(crawler, archive_dir(settings))
        crawler.signals.connect(mw.close, signal=signals.spider_closed)
        crawler.signals.connect(mw.run_log_fields, signal=vd_signals.run_log_building)
        return mw

    async def process_response(self, request: Request, response: Response, spider=None):
        if request.meta.get(REPLAY_META) or request.url.endswith("/robots.txt"):
            return response
        callback = getattr(request.callback, "__name__", None) or "parse"
        # One moment for the record's WARC-Date and the events' access_datetime: a reparse, which
        # takes the time from the record, gives the events the time the crawl gave them.
        fetched = now_iso()
        location = await asyncio.wrap_future(
            self._thread.submit(
                self._write, request, response, callback, recorded_meta(request.meta), fetched
            )
        )
        request.meta[ARCHIVE_META] = location
        request.meta[ACCESS_META] = fetched
        return response

    def _open(self) -> None:
        name = self.crawler.spider.name
        folder = self.folder / name
        folder.mkdir(parents=True, exist_ok=True)
        filename = "%s-%s-%s.warc.gz" % (name, now_utc().strftime(STAMP_FORMAT), uuid.uuid4().hex[:8])
        self.path = folder / filename
        self._handle = open(self.path, "wb")
        self._writer = WARCWriter(self._handle, gzip=True)
        spider = self.crawler.spider
        info = {
            "software": "votersdaily",
            "format": "WARC/1.1",
            "parser_name": name,
            "parser_version": str(getattr(spider, "version", "0")),
        }
        self._writer.write_record(self._writer.create_warcinfo_record(filename, info))
        self.crawler.stats.set_value("archive/warc_file", str(self.path))

    def _write(self, request: Request, response: Response, callback: str, meta: dict, fetched: str) -> dict:
        if self._writer is None:
            self._open()
        assert self._writer is not None and self._handle is not None and self.path is not None
        request_headers = [
            (k.decode("latin-1"), v.decode("latin-1")) for k, vs in request.headers.items() for v in vs
        ]
        request_record = self._writer.create_warc_record(
            request.url,
            "request",
            payload=io.BytesIO(request.body or b""),
            http_headers=StatusAndHeaders(
                "%s %s HTTP/1.1" % (request.method, request.url), request_headers, is_http_request=True
            ),
            warc_headers_dict={"WARC-Date": fetched},
        )
        response_headers = [
            (k.decode("latin-1"), v.decode("latin-1")) for k, vs in response.headers.items() for v in vs
        ]
        extra = {
            "WARC-Date": fetched,
            CALLBACK_HEADER: callback,
            META_HEADER: json.dumps(meta, sort_keys=True),
        }
        response_record = self._writer.create_warc_record(
            response.url,
            "response",
            payload=io.BytesIO(response.body),
            http_headers=StatusAndHeaders(
                "%d %s" % (response.status, _reason(response.status)), response_headers, protocol="HTTP/1.1"
            ),
            warc_headers_dict=extra,
        )
        request_record.rec_headers.add_header(
            "WARC-Concurrent-To", response_record.rec_headers.get_header("WARC-Record-ID")
        )
        offset = self._handle.tell()
        self._writer.write_record(response_record)
        self._writer.write_record(request_record)
        self._handle.flush()
        self.records += 1
        return {
            "warc_file": self.path.name,
            "warc_record_id": response_record.rec_headers.get_header("WARC-Record-ID"),
            "warc_offset": offset,
        }

    def run_log_fields(self, doc: dict, spider=None) -> None:
        if self.path is not None:
            doc["warc_file"] = self.path.name
            doc["warc_records"] = self.records

    def close(self, spider=None) -> None:
        """At spider close: every queued record written, the file closed, retention applied."""
        self._thread.shutdown(wait=True)
        if self._handle is not None:
            self._handle.close()
            self._handle = None
            self.crawler.stats.set_value("archive/records", self.records)
            self.crawler.stats.set_value("archive/bytes", self.path.stat().st_size if self.path else 0)
        settings = self.crawler.settings
        removed = apply_retention(
            self.folder / self.crawler.spider.name,
            max_age_days=settings.getfloat("VOTERSDAILY_ARCHIVE_RETENTION_DAYS"),
            max_bytes=settings.getint("VOTERSDAILY_ARCHIVE_MAX_BYTES"),
            keep=self.path,
        )
        if removed:
            logger.info("source archive: removed %d old WARC files of %s", len(removed), spider.name)


# -- reading -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArchivedResponse:
    """One response record of the archive, with what a replay needs to parse it the same way."""

    warc_file: str
    warc_offset: int
    record_id: str
    url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    callback: str
    meta: dict[str, Any]
    #: When it was fetched (WARC-Date), ISO 8601 UTC to the second.
    date: str


def run_started(path: Path) -> datetime | None:
    """When the run that wrote ``path`` started (from its file name), or None for a foreign file."""
    parts = path.name.rsplit("-", 2)
    if len(parts) != 3:
        return None
    try:
        return datetime.strptime(parts[1], STAMP_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def archived_runs(
    folder: Path, spider: str, since: datetime | None = None, until: datetime | None = None
) -> list[Path]:
    """The WARC files of ``spider``'s runs started in [since, until], oldest first."""
    runs = []
    for path in (folder / spider).glob("%s-*.warc.gz" % spider):
        started = run_started(path)
        if started is None:
            continue
        if (since and started < since) or (until and started > until):
            continue
        runs.append((started, path.name, path))
    return [path for _, _, path in sorted(runs)]


def read_responses(path: Path) -> Iterator[ArchivedResponse]:
    """Every response record of one archive file, in the order they were written."""
    with open(path, "rb") as handle:
        iterator = ArchiveIterator(handle)
        for record in iterator:
            if record.rec_type != "response":
                continue
            headers = record.rec_headers
            http = record.http_headers
            if http is None:  # warcio parses the HTTP block of http(s) records only (not file:)
                http = _HTTP_PARSER.parse(record.raw_stream)
            body = record.content_stream().read()
            yield ArchivedResponse(
                warc_file=path.name,
                warc_offset=iterator.get_record_offset(),
                record_id=headers.get_header("WARC-Record-ID"),
                url=headers.get_header("WARC-Target-URI"),
                status=int(http.get_statuscode() or 200),
                headers=list(http.headers),
                body=body,
                callback=headers.get_header(CALLBACK_HEADER) or "parse",
                meta=json.loads(headers.get_header(META_HEADER) or "{}"),
                date=(headers.get_header("WARC-Date") or "")[:19] + "Z",
            )


def apply_retention(folder: Path, *, max_age_days: float, max_bytes: int, keep: Path | None) -> list[Path]:
    """Delete WARC files older than ``max_age_days`` (0: keep all), then the oldest ones while the
    folder holds more than ``max_bytes`` (0: no limit). ``keep`` (the file just written) stays, and
    so does every file the archive did not write (not named ``<spider>-<start>-<id>.warc.gz``)."""
    ours = [
        p for p in folder.glob("%s-*.warc.gz" % folder.name) if run_started(p) is not None and p.is_file()
    ]
    files = sorted(ours, key=lambda p: (run_started(p), p.name))
    removed: list[Path] = []
    if max_age_days > 0:
        cutoff = time.time() - max_age_days * 86400
        for path in files:
            if path != keep and path.stat().st_mtime < cutoff:
                path.unlink()
                removed.append(path)
    if max_bytes > 0:
        remaining = [p for p in files if p not in removed]
        total = sum(p.stat().st_size for p in remaining)
        for path in remaining:
            if total <= max_bytes:
                break
            if path == keep:
                continue
            total -= path.stat().st_size
            path.unlink()
            removed.append(path)
    return removed
