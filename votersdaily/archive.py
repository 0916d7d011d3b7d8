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
import functools
import json
import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.http import Request, Response

from . import locations
from . import signals as vd_signals
from .clock import now_iso, now_utc
from .locations import LocationUnset
from .plumbing.warc_reader import WarcDamage, iter_records, printable
from .plumbing.warc_writer import WarcFileWriter, decoded_headers, request_record, response_record
from .requestmeta import ACCESS_META, ARCHIVE_META, REPLAY_META, SPIDER_META_PREFIX
from .schema import NOT_ARCHIVED

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from warcio.recordbuilder import RecordBuilder

logger = logging.getLogger(__name__)

CALLBACK_HEADER = "VotersDaily-Callback"
META_HEADER = "VotersDaily-Meta"
#: File names: ``<spider>-<YYYYmmddHHMMSS>-<8 hex>.warc.gz``, so the start time orders them.
STAMP_FORMAT = "%Y%m%d%H%M%S"


def archive_dir(settings: BaseSettings) -> Path:
    """The archive folder: ``$VOTERSDAILY_ARCHIVE_DIR`` first (one shared path for every job of a
    node, and for test runs), then the setting; relative: under the data home (votersdaily/locations.py)."""
    return locations.archive_dir(settings)


def recorded_meta(meta: dict[str, Any]) -> dict[str, Any]:
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

    One :class:`~votersdaily.plumbing.warc_writer.WarcFileWriter` per run: records are built, gzipped
    and written by its thread, in the order responses arrive, so offsets stay exact and the reactor
    never compresses a body. A record that could not be written (the archive's disk is full) costs no
    event: the response goes on to the spider, and its events are marked ``archived: false`` instead
    of pointing at a record."""

    def __init__(self, crawler: Crawler, folder: Path) -> None:
        self.crawler = crawler
        name = crawler.spidercls.name
        self.writer = WarcFileWriter(
            folder,
            lambda serial: (
                "%s/%s-%s-%s.warc.gz" % (name, name, now_utc().strftime(STAMP_FORMAT), uuid.uuid4().hex[:8])
            ),
            {
                "software": "votersdaily",
                "format": "WARC/1.1",
                "parser_name": name,
                "parser_version": str(getattr(crawler.spidercls, "version", "0")),
            },
            what="the source archive",
            thread_name="archive-writer",
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        if not settings.getbool("VOTERSDAILY_ARCHIVE_ENABLED"):
            raise NotConfigured("the source archive is off (VOTERSDAILY_ARCHIVE_ENABLED=False)")
        try:
            folder = archive_dir(settings)
        except LocationUnset:
            raise NotConfigured(
                "VOTERSDAILY_ARCHIVE_DIR is empty: name the folder for the source archive"
            ) from None
        mw = cls(crawler, folder)
        crawler.signals.connect(mw.close, signal=signals.spider_closed)
        crawler.signals.connect(mw.run_log_fields, signal=vd_signals.run_log_building)
        return mw

    async def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response:
        if request.meta.get(REPLAY_META) or request.url.endswith("/robots.txt"):
            return response
        callback = getattr(request.callback, "__name__", None) or "parse"
        # One moment for the record's WARC-Date and the events' access_datetime: a reparse, which
        # takes the time from the record, gives the events the time the crawl gave them.
        fetched = now_iso()
        meta = recorded_meta(request.meta)
        location = await asyncio.wrap_future(
            self.writer.submit(lambda builder: _records(builder, request, response, callback, meta, fetched))
        )
        if location is None:
            request.meta[ARCHIVE_META] = {NOT_ARCHIVED: False}
            self.crawler.stats.inc_value("archive/not_archived")
        else:
            request.meta[ARCHIVE_META] = {
                "warc_file": location.path.name,
                "warc_record_id": location.record_id,
                "warc_offset": location.offset,
            }
        request.meta[ACCESS_META] = fetched
        return response

    def run_log_fields(self, doc: dict[str, Any], spider: Spider | None = None) -> None:
        if self.writer.path is not None:
            doc["warc_file"] = self.writer.path.name
            doc["warc_path"] = str(self.writer.path)
            doc["warc_records"] = self.writer.records
        if self.writer.records or self.writer.not_written:
            doc.update(self.writer.run_log_fields())

    def close(self, spider: Spider | None = None) -> None:
        """At spider close: every queued record written, the file closed, retention applied."""
        self.writer.close()
        stats = self.crawler.stats
        if self.writer.error:
            stats.set_value("archive/error", self.writer.error)
        path = self.writer.path
        if path is None:
            return  # nothing archived by this run (a reparse, a run that parsed nothing): nothing to retire
        stats.set_value("archive/warc_file", str(path))
        stats.set_value("archive/records", self.writer.records)
        stats.set_value("archive/bytes", path.stat().st_size)
        settings = self.crawler.settings
        removed = apply_retention(
            path.parent,
            max_age_days=settings.getfloat("VOTERSDAILY_ARCHIVE_RETENTION_DAYS"),
            max_bytes=settings.getint("VOTERSDAILY_ARCHIVE_MAX_BYTES"),
            keep=path,
        )
        if removed:
            logger.info("source archive: removed %d old WARC files of %s", len(removed), path.parent.name)


def _records(
    builder: RecordBuilder,
    request: Request,
    response: Response,
    callback: str,
    meta: dict[str, Any],
    fetched: str,
) -> list[Any]:
    """The response record (first: its offset is the event's ``warc_offset``) and its request's."""
    response_rec = response_record(
        builder,
        response.url,
        response.status,
        decoded_headers(response.headers),
        response.body,
        {"WARC-Date": fetched, CALLBACK_HEADER: callback, META_HEADER: json.dumps(meta, sort_keys=True)},
    )
    request_rec = request_record(
        builder,
        request.method,
        request.url,
        decoded_headers(request.headers),
        request.body or b"",
        {
            "WARC-Date": fetched,
            "WARC-Concurrent-To": response_rec.rec_headers.get_header("WARC-Record-ID"),
        },
    )
    return [response_rec, request_rec]


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
    return _run_started_of_name(path.name)


@functools.lru_cache(maxsize=4096)
def _run_started_of_name(name: str) -> datetime | None:
    """:func:`run_started` by file name: a reparse asks it for every stored event (200,000 events,
    a few hundred files), and ``strptime`` is slow."""
    parts = name.rsplit("-", 2)
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
        if started is not None and started_within(started, since, until):
            runs.append((started, path.name, path))
    return [path for _, _, path in sorted(runs)]


def started_within(started: datetime, since: datetime | None, until: datetime | None) -> bool:
    """Whether a run started in [since, until] (either end open when None)."""
    return (since is None or started >= since) and (until is None or started <= until)


def run_of(warc_file: object, since: datetime | None, until: datetime | None) -> bool:
    """Whether ``warc_file`` (an event's pointer) names an archive file of a run started in
    [since, until]."""
    started = _run_started_of_name(Path(str(warc_file or "")).name)
    return started is not None and started_within(started, since, until)


def read_responses(path: Path) -> Iterator[ArchivedResponse | WarcDamage]:
    """Every response record of one archive file, in the order they were written, and every stretch
    of damage between them (named by file and offset: see :mod:`votersdaily.plumbing.warc_reader`)."""
    for entry in iter_records(path):
        if isinstance(entry, WarcDamage):
            yield entry
            continue
        record = entry.record
        if record.rec_type != "response":
            continue
        try:
            yield _archived_response(path, entry.offset, record)
        except (ValueError, TypeError) as exc:  # a sound record this project did not write this way
            yield WarcDamage(
                path,
                entry.offset,
                entry.offset + entry.length,
                printable("not a replayable response: %s" % exc),
            )


def _archived_response(path: Path, offset: int, record: Any) -> ArchivedResponse:
    headers = record.rec_headers
    http = record.http_headers
    if http is None:
        raise ValueError("the record holds no HTTP response")
    meta = json.loads(headers.get_header(META_HEADER) or "{}")
    if not isinstance(meta, dict):
        raise TypeError("%s is not a JSON object" % META_HEADER)
    return ArchivedResponse(
        warc_file=path.name,
        warc_offset=offset,
        record_id=headers.get_header("WARC-Record-ID"),
        url=headers.get_header("WARC-Target-URI"),
        status=int(http.get_statuscode() or 200),
        headers=list(http.headers),
        body=record.content_stream().read(),
        callback=headers.get_header(CALLBACK_HEADER) or "parse",
        meta=meta,
        date=(headers.get_header("WARC-Date") or "")[:19] + "Z",
    )


#: Names of the WARC files retention removed, one a line, in each spider's folder: a reparse counts
#: the events that pointed into them as retired instead of failing on them.
RETIRED_LIST = "retired.txt"


def retired_files(folder: Path) -> set[str]:
    """The names of the WARC files retention removed from ``folder`` (a spider's archive folder)."""
    try:
        return set((folder / RETIRED_LIST).read_text(encoding="utf-8").split())
    except OSError:
        return set()


def apply_retention(folder: Path, *, max_age_days: float, max_bytes: int, keep: Path | None) -> list[Path]:
    """Delete WARC files older than ``max_age_days`` (0: keep all), then the oldest ones while the
    folder holds more than ``max_bytes`` (0: no limit). ``keep`` (the file just written) stays, and
    so does every file the archive did not write (not named ``<spider>-<start>-<id>.warc.gz``). The
    names removed are added to the folder's :data:`RETIRED_LIST`."""
    ours = [
        p for p in folder.glob("%s-*.warc.gz" % folder.name) if run_started(p) is not None and p.is_file()
    ]
    files = sorted(ours, key=lambda p: (run_started(p), p.name))
    removed: list[Path] = []
    if max_age_days > 0:
        cutoff = time.time() - max_age_days * 86400
        for path in files:
            if path != keep and path.stat().st_mtime < cutoff:
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
            removed.append(path)
    if removed:
        # The list first: a file is never gone without its name written down.
        try:
            with open(folder / RETIRED_LIST, "a", encoding="utf-8") as retired:
                retired.writelines("%s\n" % path.name for path in removed)
        except OSError as exc:
            logger.warning(
                "source archive: %d old WARC files kept: cannot list them in %s (%s)",
                len(removed),
                folder / RETIRED_LIST,
                exc,
            )
            return []
        for path in removed:
            path.unlink()
    return removed
