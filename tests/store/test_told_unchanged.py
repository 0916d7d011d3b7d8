"""A writer given the stored texts' digests at the start of a reparse (``BatchWriter.know_stored_texts``)
tells an event unchanged where it is added, out of any batch. Whatever comes after, the store, the
reschedule marks and the counts come out as when every event goes through a batch.

The events are real recorded ones (``tests.test_schema.recorded_events``); the variants are derived
from them and say so where they are made: one rescheduled (another datetime), one retitled, one with
another access time, one under a changed key scheme (``replaces_key``), one key given a second live
document (as a lost write answer leaves it).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.test_schema import recorded_events
from votersdaily import schema
from votersdaily.store.base import EncodedDocument
from votersdaily.store.embedded import EmbeddedStore, text_md5_of
from votersdaily.store.reschedules import KeyIds, RescheduleTracker, key_ids
from votersdaily.store.upsert import UpsertResult, upsert
from votersdaily.store.writer import BatchWriter

DB = schema.EVENTS_DB
#: Where a batch is written in the sequence (the first path's batches hold the told events too).
BATCH = object()


def encoded(event: dict[str, Any]) -> EncodedDocument:
    """An event as the event pipeline hands it to the writer: checked, with its JSON text and id."""
    event = {k: v for k, v in event.items() if k != "_id"}
    _, text = schema.check_event_json(event)
    assert text is not None
    event["_id"] = schema.event_id(event["datetime"], event["parser_name"], event["unique_key"])
    return EncodedDocument(event, text)


@pytest.fixture(scope="module")
def parser_events() -> list[dict[str, Any]]:
    """Twelve recorded events of one parser with twelve unique keys."""
    by_parser: dict[str, dict[str, dict[str, Any]]] = {}
    for event in recorded_events():
        by_parser.setdefault(event["parser_name"], {}).setdefault(event["unique_key"], event)
    events = max(by_parser.values(), key=len)
    assert len(events) >= 12
    return [dict(event) for event in list(events.values())[:12]]


def rescheduled(event: dict[str, Any]) -> dict[str, Any]:
    """Derived: the same event a day later (another id, the same key)."""
    day = int(event["datetime"][8:10])
    return dict(event, datetime=event["datetime"][:8] + "%02d" % (day % 27 + 1) + event["datetime"][10:])


def start_read(
    store: EmbeddedStore, parser: str, compact: bool = False
) -> tuple[dict[str, KeyIds], dict[str, str]]:
    """What the reparse reads at its start: the ids of each key (with ``compact``, as the reparse
    hands them over: a key with one document gives its id alone), and each stored text's digest."""
    ids: dict[str, KeyIds] = {}
    digests: dict[str, str] = {}
    rows = store.query(
        DB, "by_parser_provenance", startkey=[parser], endkey=[parser, {}], include_docs=True, fields=()
    )
    for row in rows:
        if compact and row.key[1] not in ids:
            ids[row.key[1]] = row.id
        else:
            key_ids(ids, row.key[1]).add(row.id)
        assert row.doc is not None and set(row.doc) == {"_id", "_rev"}
        digests[row.id] = text_md5_of(row.doc["_rev"])
    return ids, digests


def replay(
    store: EmbeddedStore, steps: list[Any], parser: str, tell: bool, copy: bool = False, compact: bool = False
) -> tuple[UpsertResult, list]:
    """The steps through a writer as the reparse sets it up (batches written at ``BATCH``): the
    total result, and every document that went into a batch. With ``copy``, each step is added as
    the event pipeline adds it (``add_copy``: the event and its text; the writer copies it)."""
    ids, digests = start_read(store, parser, compact)
    tracker = RescheduleTracker()
    tracker.known(parser, ids)
    writer = BatchWriter(
        store,
        DB,
        batch_size=10_000,
        ignore=schema.VOLATILE_EVENT_KEYS,
        probe=schema.EVENT_CHANGE_PROBE,
        hooks=tracker,
    )
    if tell:
        writer.know_stored_texts(digests)
    total, batched = UpsertResult(), []
    for step in [*steps, BATCH]:
        if step is BATCH:
            batch, writer._buffer = writer._buffer, []  # what the writer hands to its thread
            batched += batch
            if batch:
                total.merge(writer._write_now(batch))
        elif copy:
            event = dict(step)
            assert writer.add_copy(event, step.body_json) is None
            assert all(doc is not event for doc in writer._buffer)
        else:
            assert writer.add(step) is None
    assert not writer.take_unwritten()
    total.merge(writer.total)  # the events told where they were added, counted at the end
    return total, batched


@pytest.mark.parametrize("compact", [False, True], ids=["sets", "ids-alone"])
@pytest.mark.parametrize("copy", [False, True], ids=["added", "copied"])
def test_told_where_added_or_written_in_batches_the_store_and_counts_come_out_the_same(
    parser_events, tmp_path, frozen_now, copy, compact
):
    events = [encoded(event) for event in parser_events]
    parser = events[0]["parser_name"]
    second_live = encoded(rescheduled(parser_events[5]))  # derived: a second live document of key 5
    old_scheme = encoded(dict(parser_events[6], unique_key=parser_events[6]["unique_key"] + "-old"))
    # Derived: an event stored under a new key scheme whose old key's document was never marked.
    new_scheme = encoded(dict(parser_events[8], replaces_key=parser_events[8]["unique_key"] + "-old"))
    unmarked = encoded(dict(parser_events[8], unique_key=new_scheme["replaces_key"]))
    # Derived: another under a new key scheme whose old key has no document until this run writes one.
    fresh_scheme = encoded(dict(parser_events[9], replaces_key=parser_events[9]["unique_key"] + "-old"))
    stored = [*events[:7], *events[10:], second_live, old_scheme, new_scheme, unmarked, fresh_scheme]
    stores = []
    for name in ("batched", "told"):
        store = EmbeddedStore(tmp_path / ("%s.db" % name))
        store.ensure_db(DB)
        store.install_views(DB)
        assert len(upsert(store, DB, stored, ignore=schema.VOLATILE_EVENT_KEYS).inserted) == len(stored)
        stores.append(store)
    steps = [
        encoded(parser_events[0]),  # as stored
        encoded(parser_events[1]),  # as stored, and again (another archived copy)
        encoded(dict(parser_events[1], access_datetime="2031-01-01T00:00:00Z")),
        encoded(rescheduled(parser_events[2])),  # derived: rescheduled, then back as stored
        encoded(parser_events[2]),
        encoded(dict(parser_events[3], title="Retitled")),  # derived: changed
        encoded(dict(parser_events[4], access_datetime="2031-01-01T00:00:00Z")),  # derived: fetched anew
        encoded(parser_events[0]),  # as stored, once more
        encoded(parser_events[10]),  # as stored
        BATCH,
        encoded(parser_events[5]),  # as stored, its key with a second live document: repaired
        encoded(dict(parser_events[6], replaces_key=old_scheme["unique_key"])),  # derived: a new key scheme
        EncodedDocument(dict(old_scheme), old_scheme.body_json),  # the old scheme's event, as stored
        encoded(parser_events[7]),  # never stored
        EncodedDocument(dict(new_scheme), new_scheme.body_json),  # as stored: its old document marked
        encoded(dict(parser_events[9], unique_key=fresh_scheme["replaces_key"])),  # derived: the old key's
        EncodedDocument(dict(fresh_scheme), fresh_scheme.body_json),  # as stored: that one marked
        encoded(parser_events[11]),  # as stored
        encoded(rescheduled(parser_events[11])),  # derived: then rescheduled, the stored one superseded
    ]
    batched, batched_docs = replay(stores[0], steps, parser, tell=False)
    told, told_docs = replay(stores[1], steps, parser, tell=True, copy=copy, compact=compact)
    assert {k: sorted(v) if isinstance(v, list) else v for k, v in vars(told).items()} == {
        k: sorted(v) if isinstance(v, list) else v for k, v in vars(batched).items()
    }
    assert batched.counts() == {
        "duplicates": 2,
        "inserted": 4,
        "updated": 2,
        "unchanged": 10,
        "superseded": 2,
        "replaced": 3,
        "repaired": 1,
    }, batched.counts()
    after = [{doc["_id"]: doc for doc in store.iter_docs(DB)} for store in stores]
    assert after[0] == after[1]
    assert any(doc.get("superseded_by") for doc in after[1].values())
    # Told out of any batch: the first copies of events 0 and 1 (each then counted a duplicate, as in
    # one batch), and events 10 and 11.
    assert Counter(d["_id"] for d in batched_docs) - Counter(d["_id"] for d in told_docs) == Counter(
        [events[0]["_id"], events[1]["_id"], events[10]["_id"], events[11]["_id"]]
    )
    for store in stores:
        store.close()


def telling_writer(store: EmbeddedStore, events: list[EncodedDocument]) -> tuple[BatchWriter, dict[str, str]]:
    """``events`` stored, then a writer set up as a reparse's (its start read handed over): the
    writer, and the digests it was given."""
    store.ensure_db(DB)
    store.install_views(DB)
    upsert(store, DB, events, ignore=schema.VOLATILE_EVENT_KEYS)
    parser = events[0]["parser_name"]
    ids, digests = start_read(store, parser)
    tracker = RescheduleTracker()
    tracker.known(parser, ids)
    writer = BatchWriter(store, DB, batch_size=10_000, ignore=schema.VOLATILE_EVENT_KEYS, hooks=tracker)
    writer.know_stored_texts(dict(digests))
    return writer, digests


def test_told_unchanged_only_where_the_text_is_the_stored_one(parser_events, tmp_path):
    """Without the event's own text, with a text not the stored one, for an id not stored: a batch."""
    store = EmbeddedStore(tmp_path / "store.db")
    events = [encoded(event) for event in parser_events[:4]]
    writer, _ = telling_writer(store, events)
    assert writer.tells_unchanged
    writer.add(dict(events[0]))  # no text of its own
    writer.add(EncodedDocument(dict(events[1]), events[1].body_json + " "))  # derived: not the stored text
    writer.add(encoded(parser_events[5]))  # not stored
    writer.add(encoded(parser_events[2]))  # as stored: told
    unwritten = writer.take_unwritten()
    assert [doc["_id"] for doc in unwritten] == [events[0]["_id"], events[1]["_id"], unwritten[2]["_id"]]
    assert writer.total.unchanged == [events[2]["_id"]]
    # The same four as the event pipeline adds them (the writer copies what it keeps), and an event
    # with a revision of its own (its text is not its body's: a batch).
    writer.add_copy(dict(events[0]))
    writer.add_copy(dict(events[1]), events[1].body_json + " ")
    fresh = encoded(parser_events[5])
    writer.add_copy(dict(fresh), fresh.body_json)
    writer.add_copy(dict(events[3], _rev="1-x"), events[3].body_json)
    writer.add_copy(dict(events[2]), events[2].body_json)  # as stored again: a duplicate now
    unwritten = writer.take_unwritten()
    assert [doc["_id"] for doc in unwritten] == [
        events[0]["_id"],
        events[1]["_id"],
        fresh["_id"],
        events[3]["_id"],
        events[2]["_id"],
    ]
    assert [type(doc) for doc in unwritten] == [
        dict,
        EncodedDocument,
        EncodedDocument,
        EncodedDocument,
        EncodedDocument,
    ]
    assert unwritten[1].body_json == events[1].body_json + " " and unwritten[2] == fresh
    store.close()


def test_digests_known_again_leave_a_told_event_told_once(parser_events, tmp_path):
    """An event told unchanged spends its digest: given the digests again (the same start read) it
    is not told a second time; its next copy goes to a batch and makes it a duplicate, as before."""
    store = EmbeddedStore(tmp_path / "store.db")
    events = [encoded(event) for event in parser_events[:2]]
    writer, digests = telling_writer(store, events)
    writer.add_copy(dict(events[0]), events[0].body_json)  # told
    writer.know_stored_texts(dict(digests))
    writer.add_copy(dict(events[0]), events[0].body_json)  # its second copy
    writer.add_copy(dict(events[1]), events[1].body_json)  # told
    assert [doc["_id"] for doc in writer.take_unwritten()] == [events[0]["_id"]]
    assert (writer.total.unchanged, writer.total.duplicates) == ([events[1]["_id"]], [events[0]["_id"]])
    store.close()
