"""The ingest spider's own byte count of a hop's body."""

from __future__ import annotations

import pytest
import scrapy

from votersdaily.ingest import hops as H


def test_hop_body_growing_past_the_limit_is_stopped_with_its_response():
    """A body without Content-Length: counted as it arrives, stopped (response kept, so the
    terminal has its status) once past INGEST_MAX_BODY_BYTES; sub-resources are left to their own
    limit."""
    from scrapy.exceptions import StopDownload

    from votersdaily.ingest.config import IngestConfig
    from votersdaily.ingest.spider import IngestSpider

    spider = IngestSpider()
    spider.config = IngestConfig(max_body=10)
    hop = scrapy.Request("http://example.com/a", meta={H.STATE_META: {}})
    spider._count_bytes(b"x" * 6, hop)
    spider._stop_if_too_large({}, 10, hop)
    with pytest.raises(StopDownload) as stopped:
        spider._count_bytes(b"x" * 6, hop)
    assert stopped.value.fail is False and "more than 10 bytes" in hop.meta["ingest_body_too_large"]
    resource = scrapy.Request("http://example.com/r.png")
    spider._count_bytes(b"x" * 60, resource)
    spider._stop_if_too_large({}, 60, resource)


def test_page0_is_rendered_only_when_wanted_and_renderable():
    """INGEST_PDF_THUMBNAILS off, or a PDF that was not read (a variant of the recorded PDF cut in
    half): no render is started and pdf_meta says there is no thumbnail."""
    import asyncio

    from tests.ingest.conftest import scholarly
    from votersdaily.ingest.config import IngestConfig
    from votersdaily.ingest.pdf import extract_pdf
    from votersdaily.ingest.spider import IngestSpider

    blob = scholarly("dummy.pdf").read_bytes()
    read, _, _ = extract_pdf(blob, thumbnail=False)
    unread, _, _ = extract_pdf(blob[: len(blob) // 2], thumbnail=False)
    spider = IngestSpider()
    spider.renders = asyncio.Semaphore(0)  # a render would wait here for ever
    for config, meta in ((IngestConfig(pdf_thumbnails=False), read), (IngestConfig(), unread)):
        spider.config = config
        assert asyncio.run(asyncio.wait_for(spider._page0(blob, meta), 5)) == (meta, None)
    assert read["has_page0_thumbnail"] is False and unread["status"] == "parse-error"


def test_each_download_signal_has_one_ingest_receiver_for_hops_and_sub_resources():
    """Every receiver of a download signal costs every request (about 7 us): the ingest's hop checks,
    byte budgets, digests and downloader room share one receiver a signal."""
    from pydispatch import dispatcher
    from scrapy import signals
    from scrapy.utils.test import get_crawler

    from votersdaily.ingest.spider import IngestSpider

    crawler = get_crawler(IngestSpider)
    spider = IngestSpider.from_crawler(crawler)  # held: the receivers are weak references
    for signal in (signals.request_reached_downloader, signals.headers_received, signals.bytes_received):
        receivers = [
            r
            for r in dispatcher.liveReceivers(dispatcher.getAllReceivers(crawler, signal))
            if getattr(r, "__module__", "").startswith("votersdaily.ingest")
        ]
        assert len(receivers) == 1, (signal, receivers)
    assert spider.room is not None
