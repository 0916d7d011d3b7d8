"""The PDF information dictionary's dates as ISO 8601 UTC, read by pypdf, on the recorded PDF and on
variants derived from it (the CreationDate rewritten in place, same length, so the xref stays valid)."""

from __future__ import annotations

import pytest

from tests.ingest.conftest import scholarly
from votersdaily.ingest.pdf import extract_pdf

RECORDED = b"(D:20070223175637+02'00')"


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [
        (RECORDED, "2007-02-23T15:56:37Z"),  # as recorded: two hours east of UTC
        (b"(D:20070223175637-05'30')", "2007-02-23T23:26:37Z"),  # derived: west of UTC
        (b"(D:20070223175637Z00'00')", "2007-02-23T17:56:37Z"),  # derived: UTC
        (b"(D:20070223175637)       ", "2007-02-23T17:56:37Z"),  # derived: no offset is taken as UTC
        (b"(D:2007022x175637+02'00')", "D:2007022x175637+02'00'"),  # derived: unreadable, kept as is
    ],
)
def test_pdf_creation_date(stamp, expected):
    assert len(stamp) == len(RECORDED)
    blob = scholarly("dummy.pdf").read_bytes()
    assert blob.count(RECORDED) == 1
    meta, _, _ = extract_pdf(blob.replace(RECORDED, stamp), thumbnail=False)
    assert meta["status"] == "success"
    assert meta["pdf_info"]["CreationDate"] == expected
