"""A PDF's page-0 thumbnail: only when wanted and renderable."""

from __future__ import annotations

from tests.ingest.conftest import scholarly


def test_pdf_thumbnail_only_when_wanted_and_renderable():
    """process_pdf reads text and metadata only (the thumbnail is rendered apart: warm_page0);
    extract_pdf renders it only when asked and when the PDF was read and has a first page."""
    from votersdaily.ingest import pdf as P
    from votersdaily.ingest import thumbnail as T
    from votersdaily.ingest.config import IngestConfig
    from votersdaily.ingest.process import process_pdf

    blob = scholarly("dummy.pdf").read_bytes()
    meta, text, thumbnail = process_pdf(blob, IngestConfig())
    assert thumbnail is None and meta["has_page0_thumbnail"] is False and meta["status"] == "success"
    assert T.page0_renderable(meta) and (meta, text, None) == P.extract_pdf(blob, thumbnail=False)
    assert not T.page0_renderable(P.extract_pdf(blob[: len(blob) // 2])[0])  # parse-error: none
    if T.PDFTOPPM:
        meta, _, thumbnail = P.extract_pdf(blob)
        assert meta["has_page0_thumbnail"] is True and thumbnail[:3] == b"\xff\xd8\xff"
    failed = T.render_page0(b"%PDF-1.4 not really")  # a failed render is no thumbnail, and says why
    assert failed.jpeg is None and failed.reason


def test_thumbnail_rendered_beside_the_text_is_pdftoppms_own_bytes():
    """The render started before the text is read (PageZeroRender) gives exactly what one blocking
    ``pdftoppm`` run on the same recorded PDF gives; a PDF cut in half (a variant of the recording)
    still ends parse-error with no thumbnail; a render not collected is stopped and reaped."""
    import subprocess

    import pytest

    from votersdaily.ingest import pdf as P
    from votersdaily.ingest import thumbnail as T

    if not T.PDFTOPPM:
        pytest.skip("poppler-utils' pdftoppm is not installed")
    blob = scholarly("dummy.pdf").read_bytes()
    blocking = subprocess.run(
        [T.PDFTOPPM, *T._PDFTOPPM_ARGS], input=blob, capture_output=True, check=True
    ).stdout
    meta, text, thumbnail = P.extract_pdf(blob)
    assert thumbnail == blocking and meta["has_page0_thumbnail"] is True and text
    meta, text, thumbnail = P.extract_pdf(blob, sha1hex="0" * 40)  # the caller's hash is used as is
    assert meta["sha1hex"] == "0" * 40 and thumbnail == blocking
    meta, text, thumbnail = P.extract_pdf(blob[: len(blob) // 2])
    assert (meta["status"], text, thumbnail) == ("parse-error", "", None)
    render = T.PageZeroRender(blob, 30.0)  # a render nobody collects (the text then failed)
    process = render.process
    assert process is not None
    render.cancel()
    assert process.returncode is not None and render.result() is None  # stopped and reaped


def test_the_extraction_process_renders_page0_by_its_warm_renderer_and_hands_back_pdftoppms_bytes():
    """examine_hop of a terminal PDF (the recorded one) brings its page-0 thumbnail back with the
    text when the warm renderer is built: pdftoppm's bytes, and pdf_meta saying so; the rest of the
    answer is what process_pdf gives. Thumbnails off, a PDF that was not read (a variant of the
    recording cut in half) or no warm renderer: nothing rendered there, for the spider to decide."""
    import pytest

    from votersdaily.ingest import thumbnail as T
    from votersdaily.ingest.config import IngestConfig
    from votersdaily.ingest.process import examine_hop, process_pdf, start_page0, warm_page0

    warm = T.warm_renderer()
    if warm is None or not T.PDFTOPPM:
        pytest.skip("the warm page-0 renderer (votersdaily.ingest._page0) or pdftoppm is missing")
    blob = scholarly("dummy.pdf").read_bytes()
    url = "https://example.org/paper.pdf"
    facts = examine_hop(blob, url, "application/pdf", "pdf", [url], IngestConfig())
    meta, text, jpeg = process_pdf(blob, IngestConfig())
    assert facts.page0 == T.Page0(T.render_by_pdftoppm(blob).jpeg) and facts.page0.jpeg
    assert facts.pdf == (dict(meta, has_page0_thumbnail=True), text, facts.page0.jpeg)
    assert start_page0(blob, IngestConfig(pdf_thumbnails=False)) is None
    pdf = (meta, text, jpeg)
    assert warm_page0(pdf, None) == (pdf, None)
    cut = blob[: len(blob) // 2]
    unread = process_pdf(cut, IngestConfig())
    assert warm_page0(unread, start_page0(cut, IngestConfig())) == (unread, None)
    assert warm.pids(), "the render started for the PDF that was not read was read, the renderer idle"


def test_a_page0_render_that_failed_in_the_extraction_process_is_counted_and_not_repeated(caplog):
    """The extraction process's render outcome stands: a failure (its reason) is logged and counted
    once, and the spider does not render again; no thumbnail, pdf_meta saying so."""
    import asyncio
    import logging

    from scrapy.utils.test import get_crawler

    from votersdaily.ingest import hops as H
    from votersdaily.ingest.config import IngestConfig
    from votersdaily.ingest.process import process_pdf
    from votersdaily.ingest.spider import IngestSpider
    from votersdaily.ingest.thumbnail import Page0

    crawler = get_crawler(IngestSpider)
    spider = IngestSpider.from_crawler(crawler, url="https://example.org/paper.pdf")
    spider.config = IngestConfig()
    spider.renders = asyncio.Semaphore(0)  # a render by the spider would wait here for ever
    blob = scholarly("dummy.pdf").read_bytes()
    meta, text, _ = process_pdf(blob, IngestConfig())
    state = H.new_state({"base_url": "https://example.org/paper.pdf", "ingest_type": "pdf"})
    common = {"terminal": {"terminal_url": "https://example.org/paper.pdf"}}
    failed = Page0(None, "the page-0 renderer crashed (SIGSEGV)")
    with caplog.at_level(logging.INFO):
        item = asyncio.run(
            asyncio.wait_for(spider._terminal_pdf(state, blob, (meta, text, None), {}, common, failed), 5)
        )
    assert (
        item["side"]["pdf_thumbnail"] is None and item["result"]["pdf_meta"]["has_page0_thumbnail"] is False
    )
    assert crawler.stats.get_value("ingest/page0/failed") == 1
    assert "renderer crashed (SIGSEGV)" in caplog.text
