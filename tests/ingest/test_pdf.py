"""A PDF's page-0 thumbnail: only when wanted and renderable."""

from __future__ import annotations

from tests.ingest.conftest import scholarly


def test_pdf_thumbnail_only_when_wanted_and_renderable():
    from votersdaily.ingest import pdf as P
    from votersdaily.ingest.config import IngestConfig
    from votersdaily.ingest.process import process_pdf

    blob = scholarly("dummy.pdf").read_bytes()
    meta, _, thumbnail = process_pdf(blob, IngestConfig(pdf_thumbnails=False))  # INGEST_PDF_THUMBNAILS
    assert thumbnail is None and meta["has_page0_thumbnail"] is False and meta["status"] == "success"
    if P.PDFTOPPM:
        meta, _, thumbnail = process_pdf(blob, IngestConfig())
        assert meta["has_page0_thumbnail"] is True and thumbnail[:3] == b"\xff\xd8\xff"
    assert P.render_page0(b"%PDF-1.4 not really") is None  # a failed render is no thumbnail
