"""What a reparse reads of every stored event of its parser, at its start and at its end
(``votersdaily/reparse.py``: ``ReparseExtension._events_of``), comes from the rows of the view
``by_parser_provenance`` and not from the documents: the same fields, of the same events, in the same
order as reading them out of the documents gives (the way still taken where the view is not installed
as the code defines it), on both stores."""

from __future__ import annotations

import pytest

from tests.test_schema import recorded_events
from votersdaily import schema
from votersdaily.reparse import CHECK_FIELDS, PROVENANCE_VIEW, VERSION_FIELDS, ReparseExtension
from votersdaily.store import open_store
from votersdaily.store.upsert import upsert
from votersdaily.store.views import DESIGN_ID, PROVENANCE, view_installed


def provenance_variants() -> list[dict]:
    """Every real recorded event, each given one of the provenances a store holds (derived here: an
    archive pointer, none because its crawl could not archive it, a reschedule's or a reparse's mark,
    an explicit null), and one without a unique key (in no view of its parser)."""
    docs: dict[str, dict] = {}
    for i, event in enumerate(recorded_events()):
        doc = dict(event, _id=schema.event_id(event["datetime"], event["parser_name"], event["unique_key"]))
        kind = i % 5
        if kind in (0, 3):
            doc.update(warc_file="%s-x.warc.gz" % doc["parser_name"], warc_offset=1000 * i)
            doc["warc_record_id"] = "<urn:uuid:%08d-0000-4000-8000-000000000000>" % i
        if kind == 1:
            doc[schema.NOT_ARCHIVED] = False
        if kind == 3:
            doc["superseded_by"] = doc["_id"] + "-later"
        if kind == 4:
            doc.update(withdrawn_by="%s 9.0" % doc["parser_name"], replaced_by=None)
        docs[doc["_id"]] = doc
    loose = dict(next(iter(docs.values())), _id="no-unique-key")
    del loose["unique_key"]
    docs[loose["_id"]] = loose
    return list(docs.values())


@pytest.fixture
def store(store_uri):
    opened = open_store(store_uri)
    opened.ensure_db(schema.EVENTS_DB)
    opened.install_views(schema.EVENTS_DB)
    yield opened
    opened.close()


def test_the_view_holds_every_field_a_reparse_reads():
    assert {*VERSION_FIELDS, *CHECK_FIELDS} <= set(PROVENANCE)


def test_the_views_rows_give_what_the_documents_give(store):
    docs = provenance_variants()
    assert not upsert(store, schema.EVENTS_DB, docs).failed
    parsers = sorted({doc["parser_name"] for doc in docs})
    assert len(parsers) > 5
    fields_read = (VERSION_FIELDS, CHECK_FIELDS, ("warc_file",))
    assert view_installed(store, schema.EVENTS_DB, PROVENANCE_VIEW)
    from_rows = {(p, f): ReparseExtension._events_of(store, p, f) for p in parsers for f in fields_read}

    # The design of a store written before the view existed: the documents are read instead.
    design = store.get(schema.EVENTS_DB, DESIGN_ID)
    del design["views"][PROVENANCE_VIEW]
    store.bulk_docs(schema.EVENTS_DB, [design])
    assert not view_installed(store, schema.EVENTS_DB, PROVENANCE_VIEW)
    from_docs = {
        (p, f): [
            {k: v for k, v in doc.items() if k != "_rev"} for doc in ReparseExtension._events_of(store, p, f)
        ]
        for p in parsers
        for f in fields_read
    }
    assert from_rows == from_docs
    every = [doc for (_, f), read in from_rows.items() if f == CHECK_FIELDS for doc in read]
    assert len(every) == len(docs) - 1  # all but the one without a unique key
    # Each provenance is there, with its types (an offset a number, archived false, a null mark).
    assert {type(doc["warc_offset"]) for doc in every} == {int, type(None)}
    assert {doc[schema.NOT_ARCHIVED] for doc in every} == {False, None}
    assert sum(bool(doc["superseded_by"]) for doc in every) and sum(
        bool(doc["withdrawn_by"]) for doc in every
    )


def _reschedules(store, tracker) -> tuple[list[dict], list[dict]]:
    """Two events each left with two live documents (two unaware runs), then a run that stores one
    unchanged, moves the other and adds a third, through ``tracker``: its results and the store."""
    from tests.store.test_store import _moved, _write, event

    upsert(store, schema.EVENTS_DB, [event(3), _moved(3, 20), event(4), _moved(4, 21)])
    known = getattr(tracker, "known_from", None)
    if known is not None:
        known(store)
    batches = [[_moved(3, 20)], [_moved(4, 22), event(5)]]
    results = [_write(store, tracker, batch).counts() for batch in batches]
    return results, sorted(
        ({k: v for k, v in doc.items() if k != "_rev"} for doc in store.iter_docs(schema.EVENTS_DB)),
        key=lambda doc: doc["_id"],
    )


def test_a_reschedule_tracker_handed_the_reparses_read_marks_as_one_that_reads(
    store_uri, tmp_path, monkeypatch
):
    """A reparse hands what it read of its parser's events at its start to the events' writer
    (``RescheduleTracker.known``), which then reads no view of its own: the same marks, repairs and
    counts as a tracker that reads by_parser_unique_key itself."""
    from votersdaily.store.reschedules import RescheduleTracker

    monkeypatch.setenv("VOTERSDAILY_FROZEN_NOW", "2026-10-02T18:00:00Z")
    reads = []

    class Handed(RescheduleTracker):
        def known_from(self, store):
            docs = ReparseExtension._events_of(store, "test_parser", VERSION_FIELDS)
            ids_by_key: dict[str, set[str]] = {}
            for doc in docs:
                ids_by_key.setdefault(doc["unique_key"], set()).add(doc["_id"])
            self.known("test_parser", ids_by_key)

        def _read(self, store, db, parser_name):
            reads.append(parser_name)
            return super()._read(store, db, parser_name)

    reading = open_store(store_uri)
    reading.ensure_db(schema.EVENTS_DB)
    reading.install_views(schema.EVENTS_DB)
    handed = open_store("sqlite:///%s" % (tmp_path / "handed.db"))
    handed.ensure_db(schema.EVENTS_DB)
    handed.install_views(schema.EVENTS_DB)
    try:
        expected = _reschedules(reading, RescheduleTracker())
        assert expected[0][0]["repaired"] == 1 and expected[0][1]["superseded"] == 1  # the scenario's marks
        assert _reschedules(handed, Handed()) == expected
        assert reads == []
    finally:
        reading.close()
        handed.close()
