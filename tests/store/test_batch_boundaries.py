"""Where a writer's batches end changes neither what is stored nor how it is counted, and a buffered
document waits at most ``VOTERSDAILY_BATCH_MAX_WAIT`` seconds for its batch.

The events are real recorded ones (``tests.test_schema.recorded_events``); the retitled copies are
derived from them and say so where they are made. The writers run on the test session's reactor
(``tests/support/inprocess.py``), with their batches in its thread pool, as in a crawl.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from twisted.internet import defer, task, threads

from tests.store.test_told_unchanged import encoded, parser_events  # noqa: F401 - parser_events: a fixture
from tests.support.inprocess import session_reactor
from votersdaily import schema
from votersdaily.store.base import EncodedDocument
from votersdaily.store.embedded import EmbeddedStore
from votersdaily.store.upsert import UpsertResult, upsert
from votersdaily.store.writer import BatchWriter

DB = schema.EVENTS_DB


def retitled(event: EncodedDocument, title: str) -> EncodedDocument:
    """Derived: ``event`` under another title (another version of the same id)."""
    return encoded(dict(event, title=title))


def fresh_store(path, stored: list[EncodedDocument]) -> EmbeddedStore:
    store = EmbeddedStore(path)
    store.ensure_db(DB)
    store.install_views(DB)
    upsert(store, DB, stored, ignore=schema.VOLATILE_EVENT_KEYS)
    return store


def written(
    store: EmbeddedStore, docs: list[EncodedDocument], **writer_args: Any
) -> tuple[UpsertResult, list]:
    """``docs`` added to a writer on ``store`` one after another (waiting whenever it says so), then
    flushed: its total result, and each batch's result as it came."""
    batches: list[UpsertResult] = []
    writer = BatchWriter(
        store, DB, ignore=schema.VOLATILE_EVENT_KEYS, retry_times=0, on_result=batches.append, **writer_args
    )

    @defer.inlineCallbacks
    def run():
        for doc in docs:
            waiting = writer.add(EncodedDocument(dict(doc), doc.body_json))
            if waiting is not None:
                yield waiting
        yield writer.flush()

    session_reactor().call(run, 60)
    return writer.total, batches


def test_counts_and_stored_documents_do_not_depend_on_where_batches_end(parser_events, tmp_path):  # noqa: F811
    """Before, an id written again by a later batch of the same run counted as written anew there
    (updated or unchanged against the run's own first copy), where two copies in one batch count the
    first a duplicate: the two recorded Federal Register pages that share three documents counted
    them duplicates with the default batch size and updated with a small one."""
    events = [encoded(event) for event in parser_events[:6]]
    stored = [events[0], events[1]]
    docs = [
        events[0],  # as stored ...
        retitled(events[0], "Retitled"),  # ... then changed: updated, the first copy a duplicate
        retitled(events[1], "Retitled"),  # changed ...
        retitled(events[1], "Retitled"),  # ... and the same again
        events[2],  # new ...
        retitled(events[2], "Retitled"),  # ... then changed: still new to the store
        events[3],  # new, twice the same
        events[3],
        events[4],  # new, three times
        events[4],
        events[4],
        events[5],  # new, once
    ]
    expected = {"inserted": 4, "updated": 2, "duplicates": 6}
    outcomes = {}
    for batch_size in (10_000, 1, 2, 3):
        store = fresh_store(tmp_path / ("%d.db" % batch_size), stored)
        total, batches = written(store, docs, batch_size=batch_size)
        assert total.counts() == expected, (batch_size, total.counts())
        # what the run's stats and run log add up, batch by batch, comes to the same
        summed: dict[str, int] = {}
        for result in batches:
            for kind, n in result.counts().items():
                summed[kind] = summed.get(kind, 0) + n
        assert {kind: n for kind, n in summed.items() if n} == expected, (batch_size, summed)
        assert sorted(total.inserted + total.updated) == sorted({doc["_id"] for doc in docs})
        outcomes[batch_size] = {
            doc["_id"]: {k: v for k, v in doc.items() if k != "_rev"} for doc in store.iter_docs(DB)
        }
        store.close()
    assert outcomes[1] == outcomes[2] == outcomes[3] == outcomes[10_000]
    assert outcomes[1][events[0]["_id"]]["title"] == "Retitled"


def test_a_rerun_that_finds_every_copy_as_stored_counts_them_unchanged_and_duplicate(
    parser_events,  # noqa: F811
    tmp_path,
):
    events = [encoded(event) for event in parser_events[:3]]
    docs = [events[0], events[0], events[1], events[2], events[1]]
    for batch_size in (10_000, 1):
        store = fresh_store(tmp_path / ("%d.db" % batch_size), events)
        total, _ = written(store, docs, batch_size=batch_size)
        assert total.counts() == {"unchanged": 3, "duplicates": 2}, (batch_size, total.counts())
        store.close()


def stored_ids(path) -> set[str]:
    """The ids in the store's file, read through a store of this thread's own."""
    reader = EmbeddedStore(path)
    try:
        return {doc["_id"] for doc in reader.iter_docs(DB)} if DB in reader.list_dbs() else set()
    finally:
        reader.close()


def test_a_buffered_document_is_written_once_it_waited_max_wait(parser_events, tmp_path):  # noqa: F811
    """Before, a document waited for a full batch (1,000) or the end of the crawl: a slow crawl killed
    (the OOM killer, ``kill -9``) lost every document it had buffered."""
    events = [encoded(event) for event in parser_events[:2]]
    path = tmp_path / "store.db"
    store = fresh_store(path, [])
    seen: dict[str, Any] = {}
    batches: list[UpsertResult] = []
    writer = BatchWriter(store, DB, max_wait=0.3, retry_times=0, on_result=batches.append)

    @defer.inlineCallbacks
    def run():
        from twisted.internet import reactor

        assert writer.add(EncodedDocument(dict(events[0]), events[0].body_json)) is None
        yield task.deferLater(reactor, 0.1, lambda: None)
        seen["early"] = yield threads.deferToThread(stored_ids, path)
        yield task.deferLater(reactor, 1.0, lambda: None)
        seen["waited"] = yield threads.deferToThread(stored_ids, path)
        seen["batches"] = len(batches)
        yield writer.flush()

    session_reactor().call(run, 60)
    assert seen["early"] == set(), "not before max_wait"
    assert seen["waited"] == {events[0]["_id"]}, "written before the crawl ends, without a full batch"
    assert seen["batches"] == 1
    assert writer._wait is None
    store.close()


class SlowStore(EmbeddedStore):
    """The embedded store with a second's latency on every write, as a distant CouchDB has."""

    def bulk_docs(self, db: str, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        time.sleep(1.0)
        return super().bulk_docs(db, docs)


def test_what_comes_while_a_batch_is_written_is_one_batch_once_it_is_done(parser_events, tmp_path):  # noqa: F811
    """The first document's wait ends while the previous batch is still being written: the documents
    that came meanwhile go together once it is done, not as a batch each, nor at the end of the run."""
    events = [encoded(event) for event in parser_events[:3]]
    path = tmp_path / "store.db"
    fresh_store(path, []).close()
    store = SlowStore(path)
    seen: dict[str, Any] = {}
    batches: list[UpsertResult] = []
    writer = BatchWriter(store, DB, max_wait=0.2, retry_times=0, on_result=batches.append)

    @defer.inlineCallbacks
    def run():
        from twisted.internet import reactor

        writer.add(EncodedDocument(dict(events[0]), events[0].body_json))
        while not writer._pending:  # its wait is over: written (for a second)
            yield task.deferLater(reactor, 0.01, lambda: None)
        for event in events[1:]:
            writer.add(EncodedDocument(dict(event), event.body_json))
        while len(batches) < 2:
            assert time.monotonic() < deadline, "the documents that came meanwhile were never written"
            yield task.deferLater(reactor, 0.05, lambda: None)
        seen["before_flush"] = yield threads.deferToThread(stored_ids, path)
        yield writer.flush()

    deadline = time.monotonic() + 30
    session_reactor().call(run, 60)
    assert [sorted(result.inserted) for result in batches] == [
        [events[0]["_id"]],
        sorted(event["_id"] for event in events[1:]),
    ]
    assert seen["before_flush"] == {event["_id"] for event in events}
    store.close()


@pytest.mark.slow  # two `scrapy crawl federal_register` runs
def test_a_crawl_counts_the_same_with_batches_of_two(cli, tmp_path):
    """The two recorded Federal Register pages share three documents: one run counts them
    duplicates whatever VOTERSDAILY_BATCH_SIZE is (before: with batches of two, updated)."""
    rows = {}
    for batch_size in (1000, 2):
        uri = "sqlite:///%s" % (tmp_path / ("%d.db" % batch_size))
        proc = cli(
            "crawl",
            "federal_register",
            "--offline",
            "-s",
            "VOTERSDAILY_BATCH_SIZE=%d" % batch_size,
            store_uri=uri,
            env={"VOTERSDAILY_HOME": str(tmp_path / ("home%d" % batch_size))},
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        (row,) = [line.split() for line in proc.stdout.splitlines() if line.startswith("federal_register ")]
        rows[batch_size] = row[1:8]  # result, inserted, updated, unchanged, duplicate, dropped, items
    assert rows[2] == rows[1000], rows
    assert rows[1000][4] == "3" and int(rows[1000][1]) + 3 == int(rows[1000][6]), rows


@pytest.mark.slow  # a crawl with its store on a full filesystem
def test_a_full_store_disk_is_one_error_however_many_batches_spool(cli, tmp_path):
    """Every small batch the store on a full disk did not take was an error line of its own (seven
    for the 133 recorded House floor events in batches of 20): one error now, the rest in the run's
    last lines; nothing is lost."""
    from tests.store.test_spool import spooled_records
    from tests.support.tmpfs import small_tmpfs

    with small_tmpfs(tmp_path / "full", size="256k") as folder:
        proc = cli(
            "crawl",
            "house_floor",
            "--offline",
            "-s",
            "VOTERSDAILY_BATCH_SIZE=20",
            "-s",
            "VOTERSDAILY_BATCH_MAX_WAIT=0.05",
            "-s",
            "VOTERSDAILY_STORE_RETRY_TIMES=0",
            store_uri="sqlite:///%s" % (folder / "store.db"),
            env={"VOTERSDAILY_HOME": str(tmp_path / "home")},
        )
    assert proc.returncode == 4, proc.stderr[-3000:]
    spooled_lines = [line for line in proc.stderr.splitlines() if "documents for vd_events (" in line]
    assert len(spooled_lines) == 1 and " ERROR: " in spooled_lines[0], spooled_lines
    (row,) = [line.split() for line in proc.stdout.splitlines() if line.startswith("house_floor ")]
    inserted, items = int(row[2]), int(row[7])
    (spool,) = re.findall(r"documents wait in the spool (\S+) for", proc.stderr)
    records = spooled_records(Path(spool))
    assert inserted + sum(r["db"] == "vd_events" for r in records) == items  # nothing lost
