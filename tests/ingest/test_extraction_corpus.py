"""The extraction processes' shortcuts give what the plain path gives, byte for byte, on every recorded
document: pypdf's named encoding tables decoded once per process (votersdaily/ingest/pdf.py)."""

from __future__ import annotations

import pickle

import pytest

from tests.ingest.conftest import recorded_pdfs


def _pypdf_builds_every_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """pypdf as it is installed: each page decodes its own WinAnsi table."""
    from pypdf import _codecs

    from votersdaily.ingest import pdf as P

    for name in P._ENCODING_TABLE_USERS:
        module = pytest.importorskip(name)
        if getattr(module, "encoding_dict_from_named_encoding", None) is P.named_encoding_table:
            monkeypatch.setattr(
                module, "encoding_dict_from_named_encoding", _codecs.encoding_dict_from_named_encoding
            )


def test_pdf_text_and_metadata_with_shared_encoding_tables_are_pypdfs_own(monkeypatch):
    """Every recorded PDF (the benchmark's among them), read in one order and then backwards (a
    table one PDF's font changes must not reach the next): the same ``pdf_meta`` and text as pypdf
    building every table itself, compared as pickled bytes."""
    from pypdf import _codecs

    from votersdaily.ingest import pdf as P

    if getattr(_codecs, "encoding_dict_from_named_encoding", None) is not None:
        import pypdf._text_extraction._text_extractor as per_page

        assert per_page.encoding_dict_from_named_encoding is P.named_encoding_table, "the shortcut is in use"
    pdfs = recorded_pdfs()
    shared = {name: pickle.dumps(P.extract_pdf(blob, thumbnail=False)) for name, blob in pdfs}
    backwards = {name: pickle.dumps(P.extract_pdf(blob, thumbnail=False)) for name, blob in reversed(pdfs)}
    _pypdf_builds_every_table(monkeypatch)
    own = {name: pickle.dumps(P.extract_pdf(blob, thumbnail=False)) for name, blob in pdfs}
    assert shared == own and backwards == own
    texts = [pickle.loads(own[name])[1] for name, _ in pdfs]
    assert sum(1 for text in texts if text.strip()) >= 10, "the corpus has text to compare"


def test_a_shared_table_is_a_fresh_copy_each_time():
    """pypdf writes into a font's table (a ToUnicode map's codes below 256): each caller gets its
    own copy of the process's decoded table, equal to what pypdf would build."""
    from pypdf import _codecs

    from votersdaily.ingest.pdf import named_encoding_table

    first = named_encoding_table("cp1252")
    first[0x41] = "changed"
    second = named_encoding_table("cp1252")
    assert second == _codecs.encoding_dict_from_named_encoding("cp1252") and second is not first
    assert second[0x41] == "A" and second[0x80] == "\u20ac"
