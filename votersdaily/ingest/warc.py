"""WARC output: every response as it came off the wire (before decompression and redirect
handling) written with warcio, and its location put in ``request.meta`` for ``cdx`` and the file
table."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Self

from scrapy import signals
from scrapy.exceptions import NotConfigured
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from .result import dt14
from .ssrf import TRUSTED_META

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

logger = logging.getLogger(__name__)
WARC_META = "ingest_warc"


class WarcWriterMiddleware:
    """Downloader middleware (order 650: above redirects and decompression).

    Records are built, gzipped and written by one dedicated thread, in the order responses arrive:
    the reactor never compresses a body, and offsets stay exact because only that thread touches
    the file."""

    def __init__(self, folder: Path, max_size: int, prefix: str) -> None:
        self.folder = folder
        self.max_size = max_size
        self.prefix = prefix
        self._handle: IO[bytes] | None = None
        self._path: Path | None = None
        self._serial = 0
        self.records = 0
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="warc-writer")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        if not settings.getbool("INGEST_WARC_ENABLED"):
            raise NotConfigured("WARC output is off (INGEST_WARC_ENABLED=False)")
        mw = cls(
            Path(settings.get("INGEST_WARC_DIR")),
            settings.getint("INGEST_WARC_MAX_SIZE"),
            settings.get("INGEST_WARC_PREFIX"),
        )
        crawler.signals.connect(mw.close, signal=signals.spider_closed)
        return mw

    def _open(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._serial += 1
        name = "%s-%s-%05d-%s.warc.gz" % (self.prefix, dt14(), self._serial, uuid.uuid4().hex[:8])
        self._path = self.folder / name
        self._handle = open(self._path, "wb")
        self._writer = WARCWriter(self._handle, gzip=True)
        warcinfo = self._writer.create_warcinfo_record(
            name, {"software": "votersdaily ingest", "format": "WARC/1.1"}
        )
        self._writer.write_record(warcinfo)

    async def process_response(self, request: Request, response: Response) -> Response:
        if request.meta.get(TRUSTED_META):  # the project's own services (GROBID), not the crawled web
            return response
        headers = [
            (k.decode("latin-1"), v.decode("latin-1")) for k, vs in response.headers.items() for v in vs
        ]
        ip = str(response.ip_address) if response.ip_address else None
        request.meta[WARC_META] = await asyncio.wrap_future(
            self._thread.submit(self.write, response.url, response.status, headers, response.body, ip)
        )
        return response

    def write(
        self, url: str, status: int, headers: list[tuple[str, str]], body: bytes, ip: str | None
    ) -> dict[str, Any]:
        """Append one response record (in the writer thread); its ``warc_path/offset/csize``."""
        if self._handle is None or self._handle.tell() > self.max_size:
            self._close_file()
            self._open()
        handle, path = self._handle, self._path
        assert handle is not None and path is not None, "_open() made the file"  # noqa: S101 - invariant
        http_headers = StatusAndHeaders("%d %s" % (status, _reason(status)), headers, protocol="HTTP/1.1")
        record = self._writer.create_warc_record(
            url,
            "response",
            payload=io.BytesIO(body),
            http_headers=http_headers,
            warc_headers_dict={"WARC-IP-Address": ip} if ip else None,
        )
        offset = handle.tell()
        self._writer.write_record(record)
        handle.flush()
        self.records += 1
        return {
            "warc_path": path.name,
            "warc_offset": offset,
            "warc_csize": handle.tell() - offset,
            "warc_record_id": record.rec_headers.get_header("WARC-Record-ID"),
        }

    def _close_file(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
            logger.info("closed WARC file %s", self._path)

    def close(self, spider: Spider | None = None) -> None:
        """At spider close: every queued record written, then the file closed."""
        self._thread.shutdown(wait=True)
        self._close_file()


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def read_record(folder: str | os.PathLike[str], warc_path: str, offset: int) -> tuple[str, str, bytes] | None:
    """The (url, http status, payload bytes) of the record at ``offset`` (for checks and tools)."""
    from warcio.archiveiterator import ArchiveIterator

    with open(Path(folder) / warc_path, "rb") as handle:
        handle.seek(offset)
        for record in ArchiveIterator(handle):
            return (
                record.rec_headers.get_header("WARC-Target-URI"),
                record.http_headers.get_statuscode(),
                record.content_stream().read(),
            )
    return None
