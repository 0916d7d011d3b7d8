"""The extraction processes' shortcuts give what the plain path gives, byte for byte, on every recorded
document: pypdf's named encoding tables decoded once per process and its hex strings read in C
(votersdaily/ingest/pdf_pypdf.py)."""

from __future__ import annotations

import io
import pickle
import re

import pytest

from tests.ingest.conftest import recorded_pdfs


@pytest.fixture
def pypdf_own():
    """``with pypdf_own():`` runs pypdf as it is installed (the plain path), the shortcuts back after."""
    import contextlib

    from votersdaily.ingest import pdf_pypdf

    @contextlib.contextmanager
    def own():
        pdf_pypdf.uninstall()
        try:
            yield
        finally:
            pdf_pypdf.install()

    return own


def test_the_shortcuts_are_in_use_with_the_installed_pypdf():
    """A pypdf that moved or changed the functions replaced would silently lose the shortcuts: this
    says so (then check the replacements against its new code)."""
    import pypdf._text_extraction._text_extractor as per_page
    import pypdf.generic._data_structures as objects

    from votersdaily.ingest import pdf, pdf_pypdf

    assert pdf.extract_pdf, "importing the extraction installs the shortcuts"
    assert per_page.encoding_dict_from_named_encoding is pdf_pypdf.named_encoding_table
    assert objects.read_hex_string_from_stream is pdf_pypdf.read_hex_string


def test_pdf_text_and_metadata_are_pypdfs_own_on_every_recorded_pdf(pypdf_own):
    """Every recorded PDF (the benchmark's among them), read in one order and then backwards (a
    table one PDF's font changes must not reach the next): the same ``pdf_meta`` and text as pypdf
    on its own, compared as pickled bytes."""
    from votersdaily.ingest.pdf import extract_pdf

    pdfs = recorded_pdfs()
    ours = {name: pickle.dumps(extract_pdf(blob, thumbnail=False)) for name, blob in pdfs}
    backwards = {name: pickle.dumps(extract_pdf(blob, thumbnail=False)) for name, blob in reversed(pdfs)}
    with pypdf_own():
        own = {name: pickle.dumps(extract_pdf(blob, thumbnail=False)) for name, blob in pdfs}
    assert ours == own and backwards == own
    texts = [pickle.loads(own[name])[1] for name, _ in pdfs]
    assert sum(1 for text in texts if text.strip()) >= 10, "the corpus has text to compare"


def _read(reader, data: bytes, at: int) -> tuple[object, int]:
    """(the string read or the error's type and text, where the stream was left)."""
    stream = io.BytesIO(data)
    stream.seek(at)
    try:
        value: object = reader(stream)
        value = (type(value).__name__, value.original_bytes if hasattr(value, "original_bytes") else value)
    except Exception as exc:
        value = (type(exc).__name__, str(exc))
    return value, stream.tell()


def test_hex_strings_read_as_pypdf_reads_them(pypdf_own):
    """Every ``<`` of every recorded PDF's bytes that does not open a dictionary (their ids and
    information dictionaries; content streams are compressed there and covered above), and
    variants derived from the recorded dummy.pdf's /Author string: whitespace of each kind between
    digits, an odd count, lower case, a byte that is no digit, a string cut before its ``>``, an
    empty string, the end of the stream. The same value (type and bytes), or the same error, and
    the stream left at the same place."""
    from pypdf.generic._utils import read_hex_string_from_stream

    from votersdaily.ingest import pdf_pypdf

    author = b"<FEFF004500760061006E00670065006C006F0073>"
    cases = [
        (author, 0),
        (author.replace(b"00", b"0 0\n").replace(b"FE", b"F\x00E\t", 1) + b" tail", 0),
        (author[:-2] + b">", 0),  # an odd number of digits
        (author.lower(), 0),
        (author[:9] + b"G" + author[10:], 0),  # a byte that is no hex digit
        (author[:9] + b"(" + author[10:], 0),
        (author[:-1], 0),  # cut before the ">"
        (b"<>", 0),
        (b"<", 0),
        (b"", 0),
        (b"x<41>", 1),
        (b"<41>", 4),  # at the end of the stream
    ]
    for _, blob in recorded_pdfs():
        cases += [
            (blob, m.start())
            for m in re.finditer(rb"<(?!<)", blob)
            if m.start() == 0 or blob[m.start() - 1] != 60
        ]
    assert len(cases) > 60
    for data, at in cases:
        assert _read(pdf_pypdf.read_hex_string, data, at) == _read(read_hex_string_from_stream, data, at), (
            data[at : at + 60],
            at,
        )


def test_a_shared_table_is_a_fresh_copy_each_time():
    """pypdf writes into a font's table (a ToUnicode map's codes below 256): each caller gets its
    own copy of the process's decoded table, equal to what pypdf would build."""
    from pypdf import _codecs

    from votersdaily.ingest.pdf_pypdf import named_encoding_table

    first = named_encoding_table("cp1252")
    first[0x41] = "changed"
    second = named_encoding_table("cp1252")
    assert second == _codecs.encoding_dict_from_named_encoding("cp1252") and second is not first
    assert second[0x41] == "A" and second[0x80] == "\u20ac"
