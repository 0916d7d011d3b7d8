"""What a reparse reads of every stored event of its parser, at its start and at its end
(``votersdaily/reparse.py``: ``ReparseExtension._events_of``), comes from the rows of the view
``by_parser_provenance`` and not from the documents: the same fields, of the same events, in the same
order as reading them out of the documents gives (the way still taken where the view is not installed
as the code defines it), on both stores."""

from __future__ import annotations

from pathlib import Path

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


def test_the_start_reads_rows_give_what_the_end_reads(store):
    """The end of a reparse may reuse its start read (``_stored_at_end``): each of its values gives
    every field the end reads as the end's own read does (``get``: a field the event lacks is None)."""
    docs = provenance_variants()
    assert not upsert(store, schema.EVENTS_DB, docs).failed
    wanted = ("_id", "unique_key", *CHECK_FIELDS)
    for parser in sorted({doc["parser_name"] for doc in docs}):
        rows, whole = ReparseExtension._provenance_of(store, parser, revisions=True)
        assert whole
        at_start = [{k: value.get(k) for k in wanted} for _, _, value, _ in rows]
        assert at_start == ReparseExtension._events_of(store, parser, CHECK_FIELDS)
        assert [row[0] for row in rows] == [doc["_id"] for doc in at_start]
        assert all(rev for *_, rev in rows)


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


def _flipped(crawl, uri: str, env: dict) -> tuple[str, ...]:
    """house_floor crawled twice, a byte flipped in its first WARC's second record (as
    tests/test_reparse_damaged.py does): an unchanged reparse that repoints and names the damage."""
    from tests.test_reparse import events
    from tests.test_reparse_damaged import response_offsets
    from votersdaily.spiders.house_floor import HouseFloorSpider

    for _ in range(2):
        assert crawl("house_floor", HouseFloorSpider.recording_urls(), uri, env=env).returncode == 0
    (pointed,) = {event["warc_file"] for event in events(uri).values()}  # the first run's, kept
    first = Path(env["VOTERSDAILY_ARCHIVE_DIR"]) / "house_floor" / pointed
    data = bytearray(first.read_bytes())
    data[response_offsets(first)[1] + 300] ^= 0xFF
    first.write_bytes(bytes(data))
    return ("house_floor",)


def _retired(crawl, uri: str, env: dict) -> tuple[str, ...]:
    """house_votes, its first WARC removed by the retention (listed in retired.txt): an unchanged
    reparse that counts a retired event."""
    from votersdaily.spiders.house_votes import HouseVotesSpider

    first, second, _ = HouseVotesSpider.recording_urls()
    assert crawl("house_votes", [first], uri, env=env).returncode == 0
    assert (
        crawl("house_votes", [second], uri, "-s", "VOTERSDAILY_ARCHIVE_MAX_BYTES=1", env=env).returncode == 0
    )
    return ("house_votes",)


def _rekeyed(crawl, uri: str, env: dict) -> tuple[str, ...]:
    """house_votes, reparsed by the fixed parser that changed its key scheme: every event is written
    anew (under another id), each old one replaced; the new ones are what the end must read."""
    from tests.test_reparse import FIXED
    from votersdaily.spiders.house_votes import HouseVotesSpider

    assert crawl("house_votes", HouseVotesSpider.recording_urls(), uri, env=env).returncode == 0
    return ("house_votes", *FIXED, "-s", "REPARSE_TEST_CHANGE=key")


@pytest.mark.slow  # offline crawls, then the same reparse of two copies of their store and archive
@pytest.mark.parametrize(
    ("scenario", "end_read"), [(_flipped, "reused"), (_retired, "reused"), (_rekeyed, "read")]
)
def test_the_end_reuses_the_start_read_only_while_nothing_was_committed_and_concludes_the_same(
    crawl, tmp_path, scenario, end_read
):
    """The end of a reparse checks every stored event of its parser (``_stored_at_end``): it reuses
    the rows its start read when the store's change token says nothing was committed since (a
    reparse of unchanged events writes nothing before its end), and reads them again otherwise (this
    run's writes, anyone's). The same reparse of two copies of one store and archive, one end reusing
    where it may and the other made to read again: the same run log and the same stored events."""
    import json
    import shutil

    from tests.test_reparse import events, logs
    from votersdaily.store.embedded import EmbeddedStore

    frozen = {"VOTERSDAILY_FROZEN_NOW": "2026-10-02T18:00:00Z"}
    origin = tmp_path / "origin"
    args = scenario(
        crawl,
        "sqlite:///%s" % (origin / "store.db"),
        dict(frozen, VOTERSDAILY_ARCHIVE_DIR=str(origin / "archive")),
    )
    found = {}
    for way in ("as it may", "read again"):
        folder = tmp_path / way.replace(" ", "-")
        shutil.copytree(origin, folder)
        uri = "sqlite:///%s" % (folder / "store.db")
        with pytest.MonkeyPatch.context() as patch:
            if way == "read again":  # a token never equal to the start's
                patch.setattr(EmbeddedStore, "change_token", lambda self: object())
            proc = crawl(
                args[0],
                None,
                uri,
                "-a",
                "reparse=archive",
                *args[1:],
                env=dict(frozen, VOTERSDAILY_ARCHIVE_DIR=str(folder / "archive")),
            )
        assert "'reparse/end_read': '%s'" % (end_read if way == "as it may" else "read") in proc.stderr
        (log,) = [log for log in logs(uri) if log.get("reparse")]
        volatile = ("_rev", "parser_runtime")  # the write, the clock
        found[way] = (
            proc.returncode,
            # the folder named in a damage's message: each copy's own
            json.loads(
                json.dumps({k: v for k, v in log.items() if k not in volatile}).replace(str(folder), "")
            ),
            {i: {k: v for k, v in e.items() if k != "_rev"} for i, e in events(uri).items()},
        )
    assert found["as it may"] == found["read again"]
    returncode, log, stored = found["as it may"]
    assert log["reparse"] is True and log["verified_count"] > 0
    if scenario is _flipped:
        assert returncode == 1 and log["result"] == "DamagedWarc" and log["repointed_count"] > 0
    if scenario is _retired:
        assert returncode == 0 and log["retired_count"] == 1
    if scenario is _rekeyed:  # the old events and the new ones, each pointing at its record
        assert returncode == 0 and log["replaced_count"] == log["insert_count"] == len(stored) // 2
        assert log["verified_count"] == len(stored)
