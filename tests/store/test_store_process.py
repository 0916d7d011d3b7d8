"""The embedded store in a process of its own (votersdaily/store/process.py): what a crawl's writers
write through. The behaviour suite of tests/store/test_store.py runs on it too ("embedded-in-a-process");
here, what a process adds: it dies, its crawl dies, Ctrl-C, a crawl's writers use it."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from scrapy import Spider
from scrapy.utils.test import get_crawler

from tests.support.services import REPO
from tests.test_schema import recorded_events
from votersdaily import schema
from votersdaily.store import StoreUnavailable, open_store
from votersdaily.store.base import EncodedDocument
from votersdaily.store.crawler import writer_store_for
from votersdaily.store.embedded import EmbeddedStore, compared_fields
from votersdaily.store.process import PackedDocs, StoreProcess
from votersdaily.store.upsert import upsert

DB = "vd_events"


def doc(i: int) -> dict:
    return {"_id": "doc-%d" % i, "title": "Event %d" % i}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (ended, not yet reaped by its parent) is not alive either
    with open("/proc/%d/stat" % pid) as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def process(sqlite_uri):
    store = StoreProcess.of(open_store(sqlite_uri))
    store.ensure_db(DB)
    yield store
    store.close()


def test_a_child_that_dies_is_an_unavailable_store_and_the_next_call_starts_another(process, sqlite_uri):
    upsert(process, DB, [doc(1)])
    first = process._process.pid
    os.kill(first, signal.SIGKILL)
    with pytest.raises(StoreUnavailable, match="its process ended"):
        process.bulk_docs(DB, [doc(2)])
    assert upsert(process, DB, [doc(2)]).inserted == ["doc-2"]
    assert process._process.pid != first
    assert sorted(d["_id"] for d in open_store(sqlite_uri).iter_docs(DB)) == ["doc-1", "doc-2"]


def test_ctrl_c_is_left_to_the_crawl_process(process):
    process.ensure_db(DB)
    os.kill(process._process.pid, signal.SIGINT)
    assert upsert(process, DB, [doc(1)]).inserted == ["doc-1"]


def test_ctrl_c_while_the_child_is_still_starting_is_left_to_the_crawl_process(sqlite_uri):
    """The terminal's Ctrl-C reaches the whole process group, so the store's child too, perhaps while
    it is still starting (spawn: a new interpreter importing, before ``_serve`` ignores SIGINT).
    Before: it died of a KeyboardInterrupt (its traceback on the crawl's standard error) and the call
    it was started for failed as StoreUnavailable."""
    store = StoreProcess.of(open_store(sqlite_uri))
    store._start()  # what the first call does, here without waiting for the answer
    try:
        pid = store._process.pid
        for _ in range(25):  # through the child's start (some 0.1 to 0.3 s), and on into _serve
            os.kill(pid, signal.SIGINT)
            time.sleep(0.02)
        store.ensure_db(DB)
        assert upsert(store, DB, [doc(1)]).inserted == ["doc-1"]
        assert store._process.pid == pid
    finally:
        store.close()


def test_closing_ends_the_child(process):
    process.ensure_db(DB)
    pid = process._process.pid
    process.close()
    assert wait_gone(pid)


def test_the_child_never_outlives_a_killed_crawl_process(sqlite_uri, tmp_path):
    script = textwrap.dedent(
        """
        import sys, time
        from votersdaily.store import open_store
        from votersdaily.store.process import PackedDocs, StoreProcess
        store = StoreProcess.of(open_store(sys.argv[1]))
        store.ensure_db("vd_events")
        print(store._process.pid, flush=True)
        time.sleep(60)
        """
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    crawl = subprocess.Popen(
        [sys.executable, "-c", script, sqlite_uri], stdout=subprocess.PIPE, text=True, cwd=tmp_path, env=env
    )
    try:
        child = int(crawl.stdout.readline())
        assert alive(child)
        crawl.kill()
        crawl.wait()
        assert wait_gone(child)
    finally:
        crawl.kill()


def test_errors_come_back_as_raised(process):
    from votersdaily.store import StoreError

    with pytest.raises(StoreError, match="does not exist"):
        process.get_many("vd_nowhere", ["x"])
    assert upsert(process, DB, [doc(1)]).inserted == ["doc-1"]  # and the child serves on


def test_a_crawls_writers_write_through_it_unless_switched_off(sqlite_uri, monkeypatch):
    monkeypatch.setenv("VOTERSDAILY_STORE", sqlite_uri)
    on = get_crawler(Spider, {"VOTERSDAILY_STORE_PROCESS": True})
    off = get_crawler(Spider, {"VOTERSDAILY_STORE_PROCESS": False})
    assert isinstance(writer_store_for(on), StoreProcess)
    assert isinstance(writer_store_for(off), EmbeddedStore)
    writer_store_for(on).close()


def test_its_child_collects_garbage_as_the_crawl_process_does(sqlite_uri, monkeypatch):
    """The crawl's young threshold reaches the child, which froze what it started with; switched off,
    the child keeps Python's collector as it is."""
    monkeypatch.setenv("VOTERSDAILY_STORE", sqlite_uri)
    on = {"VOTERSDAILY_STORE_PROCESS": True}
    tuned = get_crawler(
        Spider, {**on, "VOTERSDAILY_GC_FREEZE": True, "VOTERSDAILY_GC_YOUNG_THRESHOLD": 43_210}
    )
    plain = get_crawler(Spider, {**on, "VOTERSDAILY_GC_FREEZE": False, "VOTERSDAILY_GC_YOUNG_THRESHOLD": 0})
    for crawler in (tuned, plain):
        assert isinstance(writer_store_for(crawler), StoreProcess)
    try:
        state = writer_store_for(tuned).collector_state()
        assert state["threshold"] == (43_210, *gc.get_threshold()[1:])
        assert state["frozen"] > 10_000  # the imports and the open store, not a handful
        state = writer_store_for(plain).collector_state()
        assert (state["threshold"], state["frozen"]) == (gc.get_threshold(), 0)
    finally:
        writer_store_for(tuned).close()
        writer_store_for(plain).close()


def _encoded(event: dict) -> EncodedDocument:
    """An event as the event pipeline hands it to the writer: checked, with its JSON text and id."""
    _, text = schema.check_event_json(event)
    assert text is not None
    event["_id"] = schema.event_id(event["datetime"], event["parser_name"], event["unique_key"])
    return EncodedDocument(event, text)


def test_it_tells_what_the_store_tells_sending_only_the_documents_to_encode_anew(
    process, sqlite_uri, monkeypatch
):
    """compare_stored through the process tells what the store itself tells. Only ids cross to the
    child, and only the documents it must encode anew (another access time; no text of their own)
    follow them: an event with its own text and the stored volatile values (a reparse's) is hashed
    in the crawl process, changed or not; one the store does not hold (a first crawl's) is never sent."""
    events = recorded_events()[:8]
    held = [_encoded(dict(event)) for event in events[:6]]
    upsert(process, DB, held, ignore=schema.VOLATILE_EVENT_KEYS)
    moved = dict(events[1], title="Moved")
    later = {**held[2], "access_datetime": "2030-01-01T00:00:00Z"}
    asked = [
        _encoded(dict(events[0])),  # as stored: told here, the same
        _encoded(moved),  # its own new text: told here, not the same (the whole documents tell)
        EncodedDocument(later, held[2].body_json),  # another access time: encoded anew, in the child
        dict(held[3]),  # no text of its own: encoded in the child
        dict(held[4], parser_version="9.9"),  # a new parser version: told by the probe, here
    ]
    new = [_encoded(dict(event)) for event in events[6:]]
    docs = {d["_id"]: d for d in asked + new}
    sent: list[tuple[str, tuple]] = []
    call = process._call
    monkeypatch.setattr(process, "_call", lambda name, *a, **k: sent.append((name, a)) or call(name, *a, **k))
    told = process.compare_stored(DB, docs, schema.VOLATILE_EVENT_KEYS, schema.EVENT_CHANGE_PROBE)
    itself = EmbeddedStore.from_uri(sqlite_uri).compare_stored(
        DB, docs, schema.VOLATILE_EVENT_KEYS, schema.EVENT_CHANGE_PROBE
    )
    assert told == itself
    assert [told[d["_id"]].same for d in asked] == [True, None, True, True, False]
    assert [name for name, _ in sent] == ["stored_values", "compare_stored"]
    assert sorted(sent[0][1][1]) == sorted(docs)  # the ids alone
    assert sorted(sent[1][1][1].unpack()) == sorted([later["_id"], held[3]["_id"]])
    sent.clear()
    assert process.compare_stored(DB, {d["_id"]: d for d in new}, schema.VOLATILE_EVENT_KEYS) == {}
    assert [name for name, _ in sent] == ["stored_values"]


def test_a_reparse_of_unchanged_events_sends_the_store_their_ids_alone(process, monkeypatch):
    """The events of a reparse, rewritten as they are stored: found unchanged with one call per batch
    that carries ids, and no document crosses to the child."""
    events = list({e["_id"]: e for e in (_encoded(dict(event)) for event in recorded_events())}.values())
    first = upsert(process, DB, events, ignore=schema.VOLATILE_EVENT_KEYS, insert_first=True)
    assert len(first.inserted) == len(events) > 400
    again = [_encoded({k: v for k, v in event.items() if k != "_id"}) for event in events]
    sent: list[str] = []
    call = process._call
    monkeypatch.setattr(process, "_call", lambda name, *a, **k: sent.append(name) or call(name, *a, **k))
    result = upsert(process, DB, again, ignore=schema.VOLATILE_EVENT_KEYS, probe=schema.EVENT_CHANGE_PROBE)
    assert sorted(result.unchanged) == sorted(first.inserted) and not result.updated and not result.failed
    assert sent == ["stored_values"]


def test_stored_values_reads_an_id_sqlite_cannot_carry_whole(sqlite_uri):
    store = EmbeddedStore.from_uri(sqlite_uri)
    store.ensure_db(DB)
    upsert(store, DB, [doc(1), {"_id": "nul\x00id", "title": "x", "access_datetime": "2026-01-01T00:00:00Z"}])
    fields = compared_fields(("access_datetime",), ("title",))
    values = store.stored_values(DB, ["doc-1", "doc-2", "nul\x00id", "other\x00"], fields)
    assert sorted(values) == ["doc-1", "nul\x00id"]
    assert values["nul\x00id"][1] == ["x", "2026-01-01T00:00:00Z", None]
    assert values["nul\x00id"][0] == store.get(DB, "nul\x00id")["_rev"]
    told = store.compare_stored(
        DB, {"nul\x00id": {"_id": "nul\x00id", "title": "x", "access_datetime": "2027"}}, ("access_datetime",)
    )
    assert told["nul\x00id"].same is True


def test_documents_cross_to_the_child_pickled_one_by_one_and_come_back_whole():
    """PackedDocs: what bulk_docs and compare_stored send; a list stays a list, a mapping a mapping,
    shared and nested values each document's own."""
    shared = {"nested": [1, 2.5, None, {"é": "\u2028"}]}
    docs = [dict(doc(i), extra=shared, votes=(1, True)) for i in range(3)]
    assert PackedDocs(docs).unpack() == docs
    by_id = {d["_id"]: d for d in docs}
    back = PackedDocs(by_id).unpack()
    assert back == by_id and list(back) == list(by_id)
    assert back["doc-0"]["extra"] is not back["doc-1"]["extra"]


def test_the_event_check_makes_the_text_for_the_stores_process_unless_the_writes_are_mostly_new(
    sqlite_uri, monkeypatch
):
    """An event's JSON text serves the store's process only to tell it unchanged in the crawl
    process: made while the writes are not mostly new (a reparse, a re-crawl), not for a first
    crawl's inserts (sent pickled, the text would only double the bytes)."""
    from votersdaily.store.crawler import writer_for

    monkeypatch.setenv("VOTERSDAILY_STORE", sqlite_uri)
    crawler = get_crawler(Spider, {"VOTERSDAILY_STORE_PROCESS": True})
    writer = writer_for(crawler, DB, ignore=schema.VOLATILE_EVENT_KEYS)
    try:
        assert isinstance(writer.batch.store, StoreProcess)
        writer.batch.store.ensure_db(DB)
        events = list({e["_id"]: e for e in (_encoded(dict(event)) for event in recorded_events())}.values())
        assert writer.takes_body_json  # nothing written yet: the text is made
        writer.batch._write_now(events)  # a first crawl's batch: all inserted
        assert not writer.takes_body_json
        writer.batch._write_now(events)  # the same again: all unchanged
        assert writer.takes_body_json
    finally:
        writer.batch.store.close()
    in_crawl = get_crawler(Spider, {"VOTERSDAILY_STORE_PROCESS": False})
    assert writer_for(in_crawl, DB).takes_body_json  # the embedded store writes the text as it is


def test_a_script_without_the_main_guard_is_not_run_again_in_the_stores_process(tmp_path):
    """multiprocessing imports the main script again in every process it starts; the store's
    process runs ``_serve`` alone and is not told the script (``plumbing/processes.py``). A script
    without the ``if __name__ == "__main__":`` guard, as Scrapy's "run from a script" example is
    written, ran again there: here its store, written from the store's process too, would hold two
    documents and its log two lines."""
    log = tmp_path / "imports.log"
    script = tmp_path / "unguarded.py"
    script.write_text(
        textwrap.dedent(
            """
            import os
            with open(%r, "a") as out:
                out.write("%%d\\n" %% os.getpid())
            from votersdaily.store.embedded import EmbeddedStore
            from votersdaily.store.process import StoreProcess
            store = StoreProcess.of(EmbeddedStore(%r))
            store.ensure_db("vd_log")
            store.bulk_docs("vd_log", [{"_id": "run-%%d" %% os.getpid()}])
            print(os.getpid(), store.count("vd_log"))
            store.close()
            """
            % (str(log), str(tmp_path / "store.db"))
        )
    )
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    pid, count = (int(word) for word in out.stdout.split())
    assert count == 1
    assert [int(line) for line in log.read_text().split()] == [pid]


def test_the_change_token_moves_with_every_commit_to_the_file_and_with_nothing_else(process, sqlite_uri):
    """What lets a reparse reuse its start read at its end (votersdaily/reparse.py): the crawl
    process's token holds over reads and over a write that changes nothing, and moves with a commit
    of its own connection, of the store's process (its writers') and of another opened store."""
    crawl = open_store(sqlite_uri)
    assert isinstance(crawl, EmbeddedStore)
    upsert(process, DB, [doc(1)])
    token = crawl.change_token()
    assert crawl.get(DB, "doc-1") is not None
    assert crawl.view_rows(DB, "by_datetime", startkey=None, endkey=None) == []
    assert upsert(process, DB, [doc(1)]).unchanged == ["doc-1"]  # compared, nothing written
    assert crawl.change_token() == token
    for n, writer in enumerate((process, crawl, open_store(sqlite_uri)), start=2):
        before = crawl.change_token()
        assert upsert(writer, DB, [doc(n)]).inserted == ["doc-%d" % n]
        assert crawl.change_token() != before, writer
    crawl.close()
