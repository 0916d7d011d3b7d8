"""A PDF's page-0 thumbnail: only when wanted and renderable."""

from __future__ import annotations

from tests.ingest.conftest import scholarly


def test_pdf_thumbnail_only_when_wanted_and_renderable():
    """The extraction process reads text and metadata only (the spider renders the thumbnail);
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
