"""The PDF information dictionary's dates as ISO 8601 at the precision they give (UTC when they give
an offset), on the recorded PDF and on variants derived from it (the CreationDate rewritten in
place, padded to the same length, so the xref stays valid)."""

from __future__ import annotations

import pytest

from tests.ingest.conftest import scholarly
from votersdaily.ingest.pdf import extract_pdf, pdf_date_iso

RECORDED = b"(D:20070223175637+02'00')"


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [
        (RECORDED, "2007-02-23T15:56:37Z"),  # as recorded: two hours east of UTC
        (b"(D:20070223175637-05'30')", "2007-02-23T23:26:37Z"),  # derived: west of UTC
        (b"(D:20070223175637Z00'00')", "2007-02-23T17:56:37Z"),  # derived: UTC
        # derived: no offset: "the relationship of the specified time to UT shall be considered to be
        # unknown" (ISO 32000-1 §7.9.4), so it stays a wall time, never assumed to be UTC
        (b"(D:20070223175637)       ", "2007-02-23T17:56:37"),
        (b"(D:2007022x175637+02'00')", "D:2007022x175637+02'00'"),  # derived: unreadable, kept as is
        # derived: the parts after the year are optional; the standard's defaults (January, the
        # first, midnight) are not the document's, so none is written
        (b"(D:2007)                 ", "2007"),
        (b"(D:200702)               ", "2007-02"),
        (b"(D:20070223)             ", "2007-02-23"),
        (b"(D:2007022317)           ", "2007-02-23T17"),
        (b"(D:200702231756+02'00')  ", "2007-02-23T17:56+02:00"),
    ],
)
def test_pdf_creation_date(stamp, expected):
    assert len(stamp) == len(RECORDED)
    blob = scholarly("dummy.pdf").read_bytes()
    assert blob.count(RECORDED) == 1
    meta, _, _ = extract_pdf(blob.replace(RECORDED, stamp), thumbnail=False)
    assert meta["status"] == "success"
    assert meta["pdf_info"]["CreationDate"] == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("D:2007", "2007"),
        ("D:200702", "2007-02"),
        ("20070223175637Z", "2007-02-23T17:56:37Z"),  # no "D:", as some producers write it
        ("D:20070223175637+0200", "2007-02-23T15:56:37Z"),  # no apostrophes
        ("D:20071323", None),  # month 13
        ("D:07", None),  # a two-digit year is no PDF date
        ("Friday", None),
    ],
)
def test_pdf_date_parser(raw, expected):
    assert pdf_date_iso(raw) == expected
