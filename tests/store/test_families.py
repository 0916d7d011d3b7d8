"""Rows of column families merged where they are written (:mod:`votersdaily.store.families`): with
the stored row, with an earlier copy in the same batch, and, for a spooled row, with the row stored
when it is delivered. On both stores (the conftest's ``store``: embedded, and the PouchDB Server
or a real CouchDB). The rows are the ingest file table's shape, their values made here."""

from __future__ import annotations

import base64
import gzip

from votersdaily.store.families import FamilyRows, made_at, merge_families
from votersdaily.store.spool import Spool
from votersdaily.store.upsert import upsert

TABLE = "wbgrp-journal-extract-0-dev"
ROW = "I3JGR3M2VNGWUHGTMXBBWFECSRUL4LRN"


def row(**families) -> dict:
    return {"_id": ROW, **families}


def tei_attachment(text: bytes) -> dict:
    return {"content_type": "application/gzip", "data": base64.b64encode(gzip.compress(text)).decode()}


def stored(store) -> dict:
    found = store.get(TABLE, ROW)
    return {k: v for k, v in found.items() if k not in ("_rev", "_attachments")}


def test_a_row_keeps_the_stored_families_it_does_not_carry(store):
    store.ensure_db(TABLE)
    grobid = {"status_code": 200, "tei_xml": "grobid0:tei_xml.gz"}
    first = row(f={"c": "1"}, grobid0=grobid, _attachments={"grobid0:tei_xml.gz": tei_attachment(b"<TEI/>")})
    upsert(store, TABLE, [first], merge=merge_families)

    result = upsert(store, TABLE, [row(f={"c": "2"}, pdf0={"page_count": 3})], merge=merge_families)

    assert result.updated == [ROW]
    assert stored(store) == row(f={"c": "2"}, grobid0=grobid, pdf0={"page_count": 3})
    assert gzip.decompress(store.get_attachment(TABLE, ROW, "grobid0:tei_xml.gz")) == b"<TEI/>"
    rev = store.get(TABLE, ROW)["_rev"]
    again = upsert(store, TABLE, [row(pdf0={"page_count": 3})], merge=merge_families)
    assert again.unchanged == [ROW] and store.get(TABLE, ROW)["_rev"] == rev, "no revision for nothing new"


def test_a_family_replaced_without_attachments_leaves_none_of_the_stored_ones(store):
    """A later ingest of the file whose GROBID call failed: its ``grobid0`` has no TEI. Before, with
    no attachment left in the merged row, the write put back every stub of the stored one, so the old
    TEI stayed, named by no field and contradicting the newer family (audit, 2026-11-29)."""
    store.ensure_db(TABLE)
    grobid = {"status_code": 200, "tei_xml": "grobid0:tei_xml.gz"}
    first = row(
        f={"c": "1"},
        grobid0=grobid,
        updated={"f": "2026-12-01T00:00:00Z", "grobid0": "2026-12-01T00:00:00Z"},
        _attachments={"grobid0:tei_xml.gz": tei_attachment(b"<TEI/>")},
    )
    upsert(store, TABLE, [first], merge=merge_families)
    failed = row(
        f={"c": "2"},
        grobid0={"status_code": 500},
        updated={"f": "2026-12-02T00:00:00Z", "grobid0": "2026-12-02T00:00:00Z"},
    )

    result = upsert(store, TABLE, [failed], merge=merge_families)

    assert result.updated == [ROW]
    assert stored(store) == failed
    assert not store.get(TABLE, ROW).get("_attachments")


def test_two_rows_of_one_file_in_a_batch_are_merged_in_order(store):
    store.ensure_db(TABLE)
    result = upsert(
        store,
        TABLE,
        [row(f={"c": "1"}, pdf0={"page_count": 3}), row(f={"c": "2"}, match0={"mstatus": "matched"})],
        merge=merge_families,
    )
    assert (result.inserted, result.duplicates) == ([ROW], [ROW])
    assert stored(store) == row(f={"c": "2"}, pdf0={"page_count": 3}, match0={"mstatus": "matched"})


def test_a_spooled_row_is_merged_with_the_row_stored_when_it_is_delivered(store, tmp_path):
    """Spooled while the store was down, delivered after another run stored the file's GROBID family
    (rows of earlier versions, saying nothing of when their families were made: the later write wins)."""
    spool = Spool(tmp_path / "spool")
    spool.write(store.display_uri, TABLE, [row(f={"c": "late"})], hooks=FamilyRows())
    store.ensure_db(TABLE)
    upsert(store, TABLE, [row(f={"c": "early"}, grobid0={"status_code": 200})])

    report = spool.deliver(store)

    assert report.documents == 1 and not report.problems
    assert stored(store) == row(f={"c": "late"}, grobid0={"status_code": 200})


def made(when, **families) -> dict:
    """A row whose families were all made at ``when``."""
    return made_at(row(**families), when)


def test_a_row_spooled_before_a_newer_ingest_wrote_the_file_adds_only_the_families_it_lacks(store, tmp_path):
    """The defect (noticed in session 20, fixed in 23): a row made at 10:00 and spooled while the store
    was down, delivered at 12:00 after an ingest of the same file at 11:00 stored its row, replaced
    that newer row's ``f`` and ``pdf0`` (an older capture, an older text) with its own. As an HBase
    cell keeps its newest version, the stored families made later stay, their attachments with them;
    the late row only adds the family the stored row lacks."""
    spool = Spool(tmp_path / "spool")
    late = made(
        "2026-11-29T10:00:00+00:00",
        f={"c": "capture at 10:00"},
        pdf0={"pdf_text": "pdf0:pdf_text.gz"},
        grobid0={"status_code": 200},
        _attachments={"pdf0:pdf_text.gz": tei_attachment(b"text read at 10:00")},
    )
    spool.write(store.display_uri, TABLE, [late], hooks=FamilyRows())
    store.ensure_db(TABLE)
    newer = made(
        "2026-11-29T11:00:00+00:00",
        f={"c": "capture at 11:00"},
        pdf0={"pdf_text": "pdf0:pdf_text.gz"},
        _attachments={"pdf0:pdf_text.gz": tei_attachment(b"text read at 11:00")},
    )
    upsert(store, TABLE, [newer], merge=merge_families)

    report = spool.deliver(store)

    assert report.documents == 1 and not report.problems
    assert stored(store) == row(
        f={"c": "capture at 11:00"},
        pdf0={"pdf_text": "pdf0:pdf_text.gz"},
        grobid0={"status_code": 200},
        updated={
            "f": "2026-11-29T11:00:00+00:00",
            "grobid0": "2026-11-29T10:00:00+00:00",
            "pdf0": "2026-11-29T11:00:00+00:00",
        },
    )
    assert gzip.decompress(store.get_attachment(TABLE, ROW, "pdf0:pdf_text.gz")) == b"text read at 11:00"


def test_a_family_made_later_replaces_the_stored_one_whatever_the_order_of_the_rows(store):
    """Of two rows of one file in a batch, and of a row and the stored one, each family is the one made
    last: here the batch's rows come newest first, and the stored ``match0`` was made earliest."""
    store.ensure_db(TABLE)
    upsert(
        store, TABLE, [made("2026-11-29T09:00:00Z", match0={"mstatus": "not-matched"})], merge=merge_families
    )

    result = upsert(
        store,
        TABLE,
        [
            made("2026-11-29T11:00:00Z", f={"c": "11:00"}, match0={"mstatus": "matched"}),
            made("2026-11-29T10:00:00Z", f={"c": "10:00"}, pdf0={"page_count": 3}),
        ],
        merge=merge_families,
    )

    assert result.updated == [ROW]
    assert stored(store) == row(
        f={"c": "11:00"},
        match0={"mstatus": "matched"},
        pdf0={"page_count": 3},
        updated={
            "f": "2026-11-29T11:00:00Z",
            "match0": "2026-11-29T11:00:00Z",
            "pdf0": "2026-11-29T10:00:00Z",
        },
    )
    rev = store.get(TABLE, ROW)["_rev"]
    older = upsert(store, TABLE, [made("2026-11-29T08:00:00Z", f={"c": "08:00"})], merge=merge_families)
    assert older.unchanged == [ROW] and store.get(TABLE, ROW)["_rev"] == rev, "an older family writes nothing"
