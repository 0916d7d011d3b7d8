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


def test_thumbnail_rendered_beside_the_text_is_pdftoppms_own_bytes():
    """The render started before the text is read (PageZeroRender) gives exactly what one blocking
    ``pdftoppm`` run on the same recorded PDF gives; a PDF cut in half (a variant of the recording)
    still ends parse-error with no thumbnail; a render not collected is stopped and reaped."""
    import subprocess

    import pytest

    from votersdaily.ingest import pdf as P

    if not P.PDFTOPPM:
        pytest.skip("poppler-utils' pdftoppm is not installed")
    blob = scholarly("dummy.pdf").read_bytes()
    blocking = subprocess.run(
        [P.PDFTOPPM, *P._PDFTOPPM_ARGS], input=blob, capture_output=True, check=True
    ).stdout
    meta, text, thumbnail = P.extract_pdf(blob)
    assert thumbnail == blocking and meta["has_page0_thumbnail"] is True and text
    meta, text, thumbnail = P.extract_pdf(blob, sha1hex="0" * 40)  # the caller's hash is used as is
    assert meta["sha1hex"] == "0" * 40 and thumbnail == blocking
    meta, text, thumbnail = P.extract_pdf(blob[: len(blob) // 2])
    assert (meta["status"], text, thumbnail) == ("parse-error", "", None)
    render = P.PageZeroRender(blob, 30.0)  # a render nobody collects (the text then failed)
    process = render.process
    assert process is not None
    render.cancel()
    assert process.returncode is not None and render.result() is None  # stopped and reaped
