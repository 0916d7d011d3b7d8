"""A PDF's text is poppler's ``pdftotext -q -l <max pages> - -``, byte for byte: read by the compiled
module in an extraction process, by a ``pdftotext`` process elsewhere, by pypdf only where poppler
gives none (votersdaily/ingest/pdftext.py, votersdaily/ingest/pdf.py)."""

from __future__ import annotations

import asyncio
import logging
import subprocess
from types import SimpleNamespace

import pytest

from tests.ingest.conftest import recorded_pdfs
from votersdaily.ingest import pdftext
from votersdaily.ingest.config import IngestConfig
from votersdaily.ingest.workers import ExtractPool

pytestmark = pytest.mark.skipif(pdftext.PDFTOTEXT is None, reason="poppler-utils' pdftotext is not installed")


def pdftotext(blob: bytes, max_pages: int) -> tuple[int, bytes]:
    """poppler-utils' own ``pdftotext`` on the PDF: (exit status, what it wrote)."""
    done = subprocess.run(
        [str(pdftext.PDFTOTEXT), "-q", "-l", str(max_pages), "-", "-"],
        input=blob,
        capture_output=True,
        check=False,
    )
    return done.returncode, done.stdout


def compiled_text():
    """The compiled module's ``text`` (skips where it is not built)."""
    module = pytest.importorskip("votersdaily.ingest._page0", reason="votersdaily.ingest._page0 is not built")
    if not hasattr(module, "text"):
        pytest.skip("votersdaily.ingest._page0 was built from an older source")
    return module.text


@pytest.fixture
def compiled_state(monkeypatch):
    """This process taken for an extraction process, its compiled reader looked up afresh."""
    monkeypatch.setattr(pdftext.workers, "in_extraction_process", lambda: True)
    for name, value in (("checked", False), ("function", None), ("compared", False), ("refused", None)):
        monkeypatch.setattr(pdftext._Compiled, name, value)
    return pdftext._Compiled


@pytest.mark.parametrize("max_pages", [1, 50])
def test_the_compiled_text_is_pdftotexts_on_every_recorded_pdf(max_pages):
    """Exit status and bytes, on every recorded PDF (the broken and the encrypted among them), for
    the first page only and for the default INGEST_PDF_MAX_PAGES."""
    text = compiled_text()
    pdfs = recorded_pdfs()
    for name, blob in pdfs:
        status, out = pdftotext(blob, max_pages)
        assert text(blob, max_pages) == (status, out if status == 0 else b""), name
    assert sum(1 for _, blob in pdfs if text(blob, max_pages)[1].strip()) >= 10, "the corpus has text"


def test_each_reader_gives_pdftotexts_outcome_and_the_pdf_meta_says_which_read(compiled_state):
    """In an extraction process (the compiled module) and outside one (a pdftotext process): the
    same text; ``pdf_meta`` names pdftotext as what read it."""
    compiled_text()
    from votersdaily.ingest.pdf import extract_pdf

    for name, blob in recorded_pdfs():
        status, out = pdftotext(blob, 50)
        inside = pdftext.pdf_text(blob, 50)
        assert inside == pdftext.text_by_pdftotext(blob, 50), name
        assert inside.text == (out.decode("utf-8", "replace") if status == 0 else None), name
        meta, text, _ = extract_pdf(blob, thumbnail=False)
        if meta["status"] == "success" and meta["pdf_extra"]["page_count"] and status == 0:
            assert (meta["text_extractor"], text) == ("pdftotext", inside.text), name
    assert compiled_state.compared and compiled_state.refused is None and compiled_state.function is not None


def reader_here(blob: bytes) -> tuple[bool, bool, pdftext.PdfText, bool, str | None]:
    """(an extraction process?, the compiled reader in use?, the text, compared?, refused?), run in a
    pool's process."""
    from votersdaily.ingest.workers import in_extraction_process

    in_use = pdftext._compiled_text() is not None
    outcome = pdftext.pdf_text(blob, 50)
    return in_extraction_process(), in_use, outcome, pdftext._Compiled.compared, pdftext._Compiled.refused


def test_an_extraction_process_reads_the_text_with_the_compiled_module():
    """A real pool's process: the compiled reader, its first text compared with pdftotext's and
    kept; the crawl process itself (not an extraction process) runs pdftotext."""
    compiled_text()
    from votersdaily.ingest.process import process_pdf

    blob = dict(recorded_pdfs())["dummy.pdf"]
    pool = ExtractPool(1, SimpleNamespace(stats=SimpleNamespace(inc_value=lambda *a, **k: None)))
    pool.start()
    try:
        here, in_use, outcome, compared, refused = asyncio.run(pool.run(reader_here, blob))
        meta, text, _ = asyncio.run(pool.run(process_pdf, blob, IngestConfig()))
    finally:
        pool.close()
    assert (here, in_use, compared, refused) == (True, True, True, None)
    assert outcome == pdftext.text_by_pdftotext(blob, 50) and outcome.text
    assert (meta["text_extractor"], text) == ("pdftotext", outcome.text)
    assert pdftext._compiled_text() is None, "the crawl process itself reads by pdftotext"


def test_a_compiled_text_unlike_pdftotexts_is_refused_for_the_process(compiled_state, monkeypatch, caplog):
    """A poppler upgraded under a module built for another (mocked: it cannot happen here) gives other
    text: the first text is pdftotext's, one warning, and pdftotext reads from then on."""
    text = compiled_text()
    monkeypatch.setattr(compiled_state, "checked", True)
    monkeypatch.setattr(compiled_state, "function", lambda blob, pages: (0, text(blob, pages)[1] + b"x"))
    blob = dict(recorded_pdfs())["dummy.pdf"]
    reference = pdftext.text_by_pdftotext(blob, 50)
    with caplog.at_level(logging.WARNING, logger=pdftext.__name__):
        assert pdftext.pdf_text(blob, 50) == reference
        assert pdftext.pdf_text(blob, 50) == reference
    assert compiled_state.refused and pdftext._compiled_text() is None
    assert [r.getMessage() for r in caplog.records].count(
        "poppler's compiled text is not used: %s; pdftotext reads" % compiled_state.refused
    ) == 1


def test_without_poppler_pypdf_reads_the_text_and_says_so(monkeypatch):
    """poppler-utils not installed (and no extraction process): pypdf's text, as before poppler read
    it, with ``text_extractor`` pypdf; INGEST_PDF_MAX_PAGES 0 reads no text at all."""
    from votersdaily.ingest.pdf import extract_pdf

    blob = dict(recorded_pdfs())["dummy.pdf"]
    monkeypatch.setattr(pdftext, "PDFTOTEXT", None)
    assert pdftext.pdf_text(blob, 50) == pdftext.PdfText(None, "poppler's pdftotext is not installed")
    meta, text, _ = extract_pdf(blob, thumbnail=False)
    assert meta["text_extractor"] == "pypdf" and "Dummy PDF file" in text
    meta, text, _ = extract_pdf(blob, max_pages=0, thumbnail=False)
    assert (meta["text_extractor"], text, meta["has_text"]) == (None, "", False)


def test_a_pdf_poppler_cannot_open_says_why():
    """The recorded PDF cut in half (DERIVED: its second half removed): no text, and why."""
    blob = dict(recorded_pdfs())["dummy.pdf"]
    half = blob[: len(blob) // 2]
    outcome = pdftext.text_by_pdftotext(half, 50)
    status, _ = pdftotext(half, 50)
    if status == 0:
        pytest.skip("this poppler reads the half PDF")
    assert outcome.text is None and "exit status %d" % status in str(outcome.reason)
