"""WARC output: every response as it came off the wire (before decompression and redirect
handling) written by the shared WARC writer (:mod:`votersdaily.plumbing.warc_writer`), and its
location put in ``request.meta`` for ``cdx`` and the file table. A response whose record could not be
written (the folder's disk is full) keeps its result, without ``warc_*`` keys; the run log says why
(``archived: false``)."""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from scrapy import signals
from scrapy.exceptions import NotConfigured

from votersdaily import locations
from votersdaily import signals as vd_signals
from votersdaily.plumbing.ssrf import TRUSTED_META
from votersdaily.plumbing.warc_reader import read_record_at
from votersdaily.plumbing.warc_writer import WarcFileWriter, decoded_headers, response_record

from .result import dt14

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

logger = logging.getLogger(__name__)
WARC_META = "ingest_warc"


class WarcWriterMiddleware:
    """Downloader middleware (order 650: above redirects and decompression), a thin user of
    :class:`~votersdaily.plumbing.warc_writer.WarcFileWriter` (one thread, rotation at
    ``INGEST_WARC_MAX_SIZE``, what a full disk does)."""

    def __init__(self, folder: Path, max_size: int, prefix: str) -> None:
        self.writer = WarcFileWriter(
            folder,
            lambda serial: "%s-%s-%05d-%s.warc.gz" % (prefix, dt14(), serial, uuid.uuid4().hex[:8]),
            {"software": "votersdaily ingest", "format": "WARC/1.1"},
            max_size=max_size,
            what="the ingest's WARC output",
            thread_name="warc-writer",
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        if not settings.getbool("INGEST_WARC_ENABLED"):
            raise NotConfigured("WARC output is off (INGEST_WARC_ENABLED=False)")
        mw = cls(
            locations.ingest_warc_dir(settings),
            settings.getint("INGEST_WARC_MAX_SIZE"),
            settings.get("INGEST_WARC_PREFIX"),
        )
        crawler.signals.connect(mw.close, signal=signals.spider_closed)
        crawler.signals.connect(mw.run_log_fields, signal=vd_signals.run_log_building)
        return mw

    async def process_response(self, request: Request, response: Response) -> Response:
        if request.meta.get(TRUSTED_META):  # the project's own services (GROBID), not the crawled web
            return response
        headers = decoded_headers(response.headers)
        warc_headers = {"WARC-IP-Address": str(response.ip_address)} if response.ip_address else None
        url, status, body = response.url, response.status, response.body
        location = await asyncio.wrap_future(
            self.writer.submit(
                lambda builder: [response_record(builder, url, status, headers, body, warc_headers)]
            )
        )
        if location is not None:
            request.meta[WARC_META] = {
                "warc_path": location.path.name,
                "warc_offset": location.offset,
                "warc_csize": location.length,
                "warc_record_id": location.record_id,
            }
        return response

    def run_log_fields(self, doc: dict[str, Any], spider: Spider | None = None) -> None:
        if self.writer.records or self.writer.not_written:
            doc.update(self.writer.run_log_fields())

    def close(self, spider: Spider | None = None) -> None:
        """At spider close: every queued record written, then the file closed."""
        self.writer.close()


def read_record(folder: str | os.PathLike[str], warc_path: str, offset: int) -> tuple[str, str, bytes]:
    """The (url, http status, payload bytes) of the record at ``offset`` (for checks and tools);
    raises :class:`~votersdaily.plumbing.warc_reader.DamagedWarc` naming the file and offset when it
    does not read back whole."""
    record = read_record_at(Path(folder) / warc_path, offset)
    return (
        record.rec_headers.get_header("WARC-Target-URI"),
        record.http_headers.get_statuscode(),
        record.content_stream().read(),
    )
