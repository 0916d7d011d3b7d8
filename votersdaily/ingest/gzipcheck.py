"""Content-Encoding: gzip of a hop, decoded strictly before Scrapy's HttpCompressionMiddleware.

Scrapy decodes a truncated or corrupt gzip body leniently (the bytes that came through, no error),
so a damaged PDF could be ingested as ``success``. Sandcrawler gunzips strictly and reports
``bad-gzip-encoding``. This middleware (between the WARC writer, which records the wire bytes, and
HttpCompressionMiddleware) decodes a hop's gzip body itself, within INGEST_MAX_BODY_BYTES, and hands
it on without the header; a bad or oversized body is flagged in the request meta for the spider.
Sub-resources are left to Scrapy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from scrapy.http import Response

from .hops import BAD_GZIP_META, STATE_META, TOO_LARGE_META
from .process import BadGzip, GzipTooLarge, gunzip_limited

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Request

_GZIP = (b"gzip", b"x-gzip")


class HopGzipMiddleware:
    def __init__(self, max_body: int) -> None:
        self.max_body = max_body

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler.settings.getint("INGEST_MAX_BODY_BYTES"))

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response:
        if STATE_META not in request.meta or request.method == "HEAD":
            return response
        encoding = (response.headers.get("Content-Encoding") or b"").strip().lower()
        if encoding not in _GZIP or not response.body:
            return response
        try:
            body = gunzip_limited(response.body, self.max_body)
        except GzipTooLarge as exc:
            request.meta[TOO_LARGE_META] = str(exc)
            body = b""
        except BadGzip as exc:
            request.meta[BAD_GZIP_META] = "Content-Encoding: gzip body: %s" % exc
            body = b""
        decoded = response.replace(body=body)
        del decoded.headers["Content-Encoding"]
        return decoded
