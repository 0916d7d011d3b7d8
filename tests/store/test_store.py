"""The same behaviour suite against both backends: embedded SQLite and a real PouchDB Server."""

from __future__ import annotations

import base64
import json

import pytest

from votersdaily.store import StoreError, mask_uri, open_store
from votersdaily.store.upsert import upsert
from votersdaily.store.views import DESIGN_ID

DB = "vd_events"

#: The tables of embedded store files made before the rowid document table (verbatim from then): such
#: files are read and written by the same statements, so the whole suite runs on one of them too.
EARLIER_EMBEDDED_TABLES = """
CREATE TABLE IF NOT EXISTS dbs (name TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS docs (
    db TEXT NOT NULL, id TEXT NOT NULL, rev TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (db, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS attachments (
    db TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL,
    content_type TEXT NOT NULL, digest TEXT NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (db, id, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS view_rows (
    db TEXT NOT NULL, view TEXT NOT NULL, k0 TEXT NOT NULL, k1 TEXT NOT NULL, k2 TEXT NOT NULL,
    id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS view_rows_key ON view_rows (db, view, k0, k1, k2, id);
CREATE INDEX IF NOT EXISTS view_rows_doc ON view_rows (db, id);
"""


@pytest.fixture(
    params=[
        "embedded",
        "embedded-earlier-tables",
        "embedded-in-a-process",
        pytest.param("couchdb", marks=pytest.mark.couchdb),
    ]
)
def store_uri(request, tmp_path):
    """conftest's fresh stores, an embedded file with the earlier tables, and the embedded store
    answering from a process of its own (store/process.py: what a crawl's writers write through)."""
    if request.param == "couchdb":
        return request.getfixturevalue("couch_uri")
    path = tmp_path / "store.db"
    if request.param == "embedded-earlier-tables":
        import sqlite3

        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(EARLIER_EMBEDDED_TABLES)
    return "sqlite:///%s" % path


@pytest.fixture
def store(request, store_uri):
    from votersdaily.store.process import StoreProcess

    opened = open_store(store_uri)
    if request.node.callspec.params.get("store_uri") == "embedded-in-a-process":
        opened = StoreProcess.of(opened)
    yield opened
    opened.close()


def test_a_new_embedded_file_has_the_rowid_tables_and_8k_pages(sqlite_uri):
    import sqlite3

    from votersdaily.store.embedded import EmbeddedStore

    path = EmbeddedStore.path_of(sqlite_uri)
    open_store(sqlite_uri).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA page_size").fetchone() == (8192,)
        tables = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall())
    assert "WITHOUT ROWID" not in tables["docs"] and "WITHOUT ROWID" in tables["view_rows"]


def event(i: int, **extra) -> dict:
    doc = {
        "_id": "2026-09-%02dT12:00:00Z-test_parser-%d" % (1 + i % 28, i),
        "datetime": "2026-09-%02dT12:00:00Z" % (1 + i % 28),
        "title": "Event %d" % i,
        "branch": ("Executive", "Legislative", "Judicial")[i % 3],
        "entity": ("White House", "Senate", "Supreme Court")[i % 3],
        "parser_name": "test_parser",
        "unique_key": str(i),
        "access_datetime": "2026-10-01T00:00:00Z",
    }
    doc.update(extra)
    return doc


@pytest.fixture
def db(store):
    store.ensure_db(DB)
    store.install_views(DB)
    return store


def test_insert_then_get(db):
    result = upsert(db, DB, [event(1)])
    assert result.inserted == [event(1)["_id"]]
    doc = db.get(DB, event(1)["_id"])
    assert doc["title"] == "Event 1"
    assert doc["_rev"].startswith("1-")


def test_unchanged_rewrite_is_a_no_op_and_keeps_first_access(db):
    upsert(db, DB, [event(1)], ignore=("access_datetime",))
    first = db.get(DB, event(1)["_id"])
    again = upsert(db, DB, [event(1, access_datetime="2026-10-09T00:00:00Z")], ignore=("access_datetime",))
    assert again.unchanged == [event(1)["_id"]] and not again.inserted and not again.updated
    doc = db.get(DB, event(1)["_id"])
    assert doc["_rev"] == first["_rev"]
    assert doc["access_datetime"] == "2026-10-01T00:00:00Z"


def test_a_batch_found_unchanged_writes_nothing_and_asks_the_store_no_write(db):
    upsert(db, DB, [event(1), event(2)], ignore=("access_datetime",))
    writes = []
    real = db.bulk_docs
    db.bulk_docs = lambda *a, **k: (writes.append(a), real(*a, **k))[1]
    again = upsert(
        db, DB, [event(1, access_datetime="2026-10-09T00:00:00Z"), event(2)], ignore=("access_datetime",)
    )
    assert sorted(again.unchanged) == sorted([event(1)["_id"], event(2)["_id"]]) and writes == []
    upsert(db, DB, [event(1, title="changed"), event(2)], ignore=("access_datetime",))
    assert [[doc["_id"] for doc in docs] for _, docs in writes] == [[event(1)["_id"]]]


def test_changed_rewrite_gets_a_new_revision(db):
    upsert(db, DB, [event(1)])
    result = upsert(db, DB, [event(1, title="Rescheduled hearing")])
    assert result.updated == [event(1)["_id"]]
    doc = db.get(DB, event(1)["_id"])
    assert doc["_rev"].startswith("2-") and doc["title"] == "Rescheduled hearing"


def test_stale_revision_is_a_conflict(db):
    upsert(db, DB, [event(1)])
    doc = db.get(DB, event(1)["_id"])
    upsert(db, DB, [event(1, title="changed by someone else")])
    answer = db.bulk_docs(DB, [dict(doc, title="late writer")])[0]
    assert answer["error"] == "conflict"


def test_bulk_of_5000(db):
    docs = [event(i) for i in range(5000)]
    result = upsert(db, DB, docs)
    assert len(result.inserted) == 5000
    assert db.count(DB) == 5000
    again = upsert(db, DB, docs)
    assert len(again.unchanged) == 5000
    ids = {d["_id"] for d in db.iter_docs(DB)}
    assert ids == {d["_id"] for d in docs}


def test_views_range_and_prefix_queries(db):
    upsert(db, DB, [event(i) for i in range(60)])
    rows = db.query(DB, "by_datetime", startkey="2026-09-05T00:00:00Z", endkey="2026-09-06T23:59:59Z")
    assert rows and all("2026-09-05" <= r.key <= "2026-09-06T23:59:59Z" for r in rows)
    assert [r.key for r in rows] == sorted(r.key for r in rows)
    expected = sorted(
        (d["datetime"], d["_id"]) for d in (event(i) for i in range(60)) if d["branch"] == "Judicial"
    )
    rows = db.query(DB, "by_branch_datetime", startkey=["Judicial"], endkey=["Judicial", {}])
    assert [(r.key[1], r.id) for r in rows] == expected
    assert all(r.doc["branch"] == "Judicial" for r in rows)
    desc = db.query(
        DB, "by_branch_datetime", startkey=["Judicial", {}], endkey=["Judicial"], descending=True, limit=3
    )
    assert [(r.key[1], r.id) for r in desc] == expected[::-1][:3]
    one = db.query(DB, "by_parser_unique_key", key=["test_parser", "7"])
    assert [r.id for r in one] == [event(7)["_id"]]
    many = db.query(
        DB, "by_parser_unique_key", keys=[["test_parser", "7"], ["test_parser", "8"], ["nope", "1"]]
    )
    assert [r.id for r in many] == [event(7)["_id"], event(8)["_id"]]


def test_views_follow_updates(db):
    upsert(db, DB, [event(1)])
    upsert(db, DB, [event(1, branch="Judicial", entity="Supreme Court")])
    assert [
        r.id for r in db.query(DB, "by_branch_datetime", startkey=["Executive"], endkey=["Executive", {}])
    ] == []
    assert [
        r.id for r in db.query(DB, "by_branch_datetime", startkey=["Judicial"], endkey=["Judicial", {}])
    ] == [event(1)["_id"]]


def test_id_views_emit_a_row_per_id_and_follow_updates(db):
    bills = [["hr1-119"], ["hr1-119", "s2-119"], [], ["s2-119"]]
    upsert(db, DB, [event(i, bill_ids=b, dockets=["24-%d" % (i % 2 + 1)]) for i, b in enumerate(bills)])
    upsert(db, DB, [event(4, vote_id="h5-119.2025"), event(5, vote_ids=["h5-119.2025", "s9-119.2025"])])

    def ids(view, one):
        return [(r.id, r.key) for r in db.query(DB, view, startkey=[one], endkey=[one, {}])]

    assert ids("by_bill", "hr1-119") == [(event(i)["_id"], ["hr1-119", event(i)["datetime"]]) for i in (0, 1)]
    assert [i for i, _ in ids("by_bill", "s2-119")] == [event(1)["_id"], event(3)["_id"]]
    assert [i for i, _ in ids("by_docket", "24-1")] == [event(0)["_id"], event(2)["_id"]]
    assert [i for i, _ in ids("by_vote", "h5-119.2025")] == [event(4)["_id"], event(5)["_id"]]
    # A reparse that names another bill moves the event from one id's rows to the other's.
    upsert(db, DB, [event(0, bill_ids=["hr7-119"], dockets=[])])
    assert [i for i, _ in ids("by_bill", "hr1-119")] == [event(1)["_id"]]
    assert [i for i, _ in ids("by_bill", "hr7-119")] == [event(0)["_id"]]
    assert [i for i, _ in ids("by_docket", "24-1")] == [event(2)["_id"]]


def test_a_views_value_follows_the_document_and_is_read_without_it(db):
    """by_parser_provenance's value: the keys the document holds of those its view emits (null and
    false kept), on every backend (an embedded file with the earlier tables gets the column), and
    it follows an update."""
    pointer = {"warc_file": "a.warc.gz", "warc_offset": 7, "warc_record_id": "<urn:uuid:1>"}
    upsert(db, DB, [event(1, parser_version="1.0", **pointer), event(2, archived=False, withdrawn_by=None)])
    rows = db.query(
        DB, "by_parser_provenance", startkey=["test_parser"], endkey=["test_parser", {}], include_docs=False
    )
    assert [(r.id, r.key, r.doc, r.value) for r in rows] == [
        (event(1)["_id"], ["test_parser", "1"], None, {**pointer, "parser_version": "1.0"}),
        (event(2)["_id"], ["test_parser", "2"], None, {"archived": False, "withdrawn_by": None}),
    ]
    assert db.query(DB, "by_parser_unique_key", include_docs=False)[0].value is None  # null elsewhere
    upsert(db, DB, [event(1, parser_version="1.1", replaced_by=event(2)["_id"])])
    (row,) = db.query(DB, "by_parser_provenance", keys=[["test_parser", "1"]], include_docs=False)
    assert row.value == {"parser_version": "1.1", "replaced_by": event(2)["_id"]}


def test_a_view_is_installed_when_the_design_holds_it_as_the_code_defines_it(tmp_path):
    from votersdaily.store.views import view_installed

    store = open_store("sqlite:///%s" % (tmp_path / "old.db"))
    assert not view_installed(store, DB, "by_parser_provenance")  # no database yet
    store.install_views(DB)
    assert view_installed(store, DB, "by_parser_provenance")
    assert not view_installed(store, DB, "no_such_view")
    design = store.get(DB, DESIGN_ID)
    design["views"]["by_parser_provenance"]["map"] = "function (doc) {}"  # an earlier version's
    store.bulk_docs(DB, [design])
    assert not view_installed(store, DB, "by_parser_provenance")
    store.close()


def _store_from_before_by_bill(path, count: int):
    """An embedded store as a release before ``by_bill`` left it: ``count`` events with bills, a
    design document without the view and no rows in it (made by taking both out of a store written
    today)."""
    store = open_store("sqlite:///%s" % path)
    store.install_views(DB)
    upsert(store, DB, [event(i, bill_ids=["hr%d-119" % (i % 3 + 1)]) for i in range(count)])
    design = store.get(DB, DESIGN_ID)
    del design["views"]["by_bill"]
    store.bulk_docs(DB, [design])
    store._conn.execute("DELETE FROM view_rows WHERE view = 'by_bill'")
    return store


def test_an_upgrade_that_adds_a_view_indexes_the_stored_documents(tmp_path):
    """An embedded store written before the id views existed: its design document lacks them and its
    documents have no rows in them (made here by taking both out of a store written today). The
    upgraded code's install_views rebuilds the rows, as CouchDB indexes a changed design."""
    store = _store_from_before_by_bill(tmp_path / "old.db", 30)
    assert store.query(DB, "by_bill") == []
    assert store.install_views(DB) is True
    rows = store.query(DB, "by_bill", startkey=["hr1-119"], endkey=["hr1-119", {}])
    assert sorted(r.id for r in rows) == sorted(event(i)["_id"] for i in range(0, 30, 3))
    assert len(store.query(DB, "by_datetime")) == 30  # every other view rebuilt as it was
    assert store.install_views(DB) is False
    store.close()


def test_a_rebuild_the_disk_cut_short_is_done_again_at_the_next_open(tmp_path):
    """The upgrade above on a full disk (a real tmpfs): the rows cannot be rebuilt, and the design
    document stays the earlier one, so no reader trusts a view whose rows are missing, and the next
    open, with room again, rebuilds them. Written the other way round (design first), the new design
    was stored, the rebuild failed, and every later open took the view as installed without rows."""
    from tests.support.tmpfs import fill, small_tmpfs
    from votersdaily.store.base import StoreUnavailable
    from votersdaily.store.views import view_installed

    with small_tmpfs(tmp_path / "disk", size="16m") as disk:
        _store_from_before_by_bill(disk / "old.db", 3000).close()
        filler = fill(disk, leave=256 * 1024)
        store = open_store("sqlite:///%s" % (disk / "old.db"))
        with pytest.raises(StoreUnavailable, match=str(disk)):
            store.install_views(DB)
        assert not view_installed(store, DB, "by_bill")
        store.close()
        filler.unlink()
        store = open_store("sqlite:///%s" % (disk / "old.db"))
        assert store.install_views(DB) is True
        assert view_installed(store, DB, "by_bill")
        rows = store.query(DB, "by_bill", startkey=["hr1-119"], endkey=["hr1-119", {}])
        assert sorted(r.id for r in rows) == sorted(event(i)["_id"] for i in range(0, 3000, 3))
        assert len(store.query(DB, "by_datetime")) == 3000
        store.close()


def _revision_plans(store, startkey, endkey) -> list[str]:
    """How SQLite reads the documents' table in ``view_rows`` with revisions (its query plan)."""
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    try:
        rows = store.view_rows(DB, "by_parser_provenance", startkey=startkey, endkey=endkey, revisions=True)
    finally:
        store._conn.set_trace_callback(None)
    (select,) = [sql for sql in statements if sql.lstrip().upper().startswith("SELECT V.ID")]
    plan = [row[3] for row in store._conn.execute("EXPLAIN QUERY PLAN " + select)]
    return rows, [step for step in plan if " d " in step + " "]


def test_the_revisions_are_read_from_their_index_which_an_older_file_gets_and_a_full_disk_goes_without(
    tmp_path,
):
    """A view read with the revision alone (a reparse's 200,000 events) takes it from the
    ``docs_rev`` index, not from each document's row among the bodies. A file from before the index
    gets it when opened; on a full disk (a real tmpfs) the file opens and is read without it, with
    the same revisions, and gets it at the next open with room."""
    import sqlite3

    from tests.support.tmpfs import fill, small_tmpfs
    from votersdaily.store.embedded import REV_INDEX, EmbeddedStore

    low, high = ["p"], ["p", {}]
    with small_tmpfs(tmp_path / "disk", size="16m") as disk:
        path = disk / "events.db"
        store = EmbeddedStore(path)
        store.ensure_db(DB)
        store.install_views(DB)
        docs = [event(i, parser_name="p", warc_record_id="<urn:uuid:%d>" % i) for i in range(3000)]
        upsert(store, DB, docs[:2000])
        upsert(store, DB, [dict(doc, title="changed") for doc in docs[1000:]])  # second revisions too
        expected, plan = _revision_plans(store, low, high)
        assert len(expected) == 3000 and {rev[:2] for *_, rev in expected} == {"1-", "2-"}
        assert plan == ["SEARCH d USING COVERING INDEX %s (db=? AND id=?)" % REV_INDEX], plan
        store.close()
        with sqlite3.connect(path) as older:  # the file as an earlier version left it
            older.execute("DROP INDEX %s" % REV_INDEX)
        filler = fill(disk, leave=16 * 1024)
        store = EmbeddedStore(path)
        rows, plan = _revision_plans(store, low, high)
        assert rows == expected
        assert plan and all(REV_INDEX not in step for step in plan), plan
        store.close()
        filler.unlink()
        store = EmbeddedStore(path)
        rows, plan = _revision_plans(store, low, high)
        assert rows == expected
        assert plan == ["SEARCH d USING COVERING INDEX %s (db=? AND id=?)" % REV_INDEX], plan
        store.close()


def test_log_views(store):
    store.ensure_db("vd_log")
    store.install_views("vd_log")
    docs = [
        {"_id": "a", "parser_name": "p1", "access_datetime": "2026-10-01T00:00:00Z", "result": "success"},
        {"_id": "b", "parser_name": "p1", "access_datetime": "2026-10-02T00:00:00Z", "result": "ErrorPage"},
        {"_id": "c", "parser_name": "p2", "access_datetime": "2026-10-03T00:00:00Z", "result": "success"},
    ]
    upsert(store, "vd_log", docs)
    assert [r.id for r in store.query("vd_log", "errors")] == ["b"]
    assert [r.id for r in store.query("vd_log", "by_access_datetime", descending=True)] == ["c", "b", "a"]
    assert [r.id for r in store.query("vd_log", "by_parser", startkey=["p1"], endkey=["p1", {}])] == [
        "a",
        "b",
    ]


def test_attachment_roundtrip_and_kept_on_update(db):
    big = ("x" * 1000 + "\n") * 2000
    doc = event(
        1,
        _attachments={
            "source_text": {"content_type": "text/plain", "data": base64.b64encode(big.encode()).decode()}
        },
    )
    upsert(db, DB, [doc])
    assert db.get_attachment(DB, doc["_id"], "source_text") == big.encode()
    stored = db.get(DB, doc["_id"])
    assert stored["_attachments"]["source_text"]["stub"] is True
    upsert(db, DB, [event(1, title="new title")])
    assert db.get_attachment(DB, doc["_id"], "source_text") == big.encode()


def test_install_views_is_idempotent(store):
    assert store.install_views(DB) is True
    assert store.install_views(DB) is False
    design = store.get(DB, DESIGN_ID)
    assert "by_branch_datetime" in design["views"]
    assert all(not d["_id"].startswith("_design/") for d in store.iter_docs(DB))


def test_missing_database_is_a_clear_error(store):
    with pytest.raises(StoreError):
        store.get_many("no_such_db", ["x"])


def test_ids_with_reserved_characters(db):
    doc = event(1, _id="2026-09-01T12:00:00Z-test_parser-H.R. 21/amdt #3?x=1")
    upsert(db, DB, [doc])
    assert db.get(DB, doc["_id"])["title"] == "Event 1"


def test_credentials_are_masked():
    assert mask_uri("http://admin:s3cret@127.0.0.1:5984/") == "http://admin:***@127.0.0.1:5984/"
    store = open_store("http://admin:s3cret@127.0.0.1:9/")
    assert "s3cret" not in store.display_uri
    with pytest.raises(StoreError) as err:
        store.list_dbs()
    assert "s3cret" not in str(err.value)


def _moved(i: int, day: int, **extra) -> dict:
    return event(
        i,
        _id="2026-09-%02dT12:00:00Z-test_parser-%d" % (day, i),
        datetime="2026-09-%02dT12:00:00Z" % day,
        **extra,
    )


def _write(db, tracker, docs, *, prepare=True):
    """One batch as the BatchWriter writes it (``prepare=False``: as a spool delivery does)."""
    before = (lambda written: tracker.before_write(db, DB, written)) if prepare else None
    result = upsert(db, DB, docs, before_write=before)
    tracker.after_batch(db, DB, docs, result)
    return result


def test_reschedules_within_one_run_and_across_runs(db):
    """One tracker per run: reschedules inside the run come from memory, earlier runs' from the view."""
    from votersdaily.store.reschedules import RescheduleTracker

    first = RescheduleTracker()
    _write(db, first, [event(1), event(2)])
    # Within the run: 1 moves twice in one batch, then 2 moves in a later batch.
    result = _write(db, first, [_moved(1, 10), _moved(1, 11)])
    assert sorted(result.superseded) == sorted([event(1)["_id"], _moved(1, 10)["_id"]])
    _write(db, first, [_moved(2, 12)])
    # A new run (new tracker) moves 1 back to its first datetime.
    result = _write(db, RescheduleTracker(), [event(1)])
    assert sorted(result.superseded) == sorted([_moved(1, 10)["_id"], _moved(1, 11)["_id"]])  # re-pointed
    docs = {doc["_id"]: doc for doc in db.iter_docs(DB)}
    assert "superseded_by" not in docs[event(1)["_id"]]
    assert docs[_moved(1, 10)["_id"]]["superseded_by"] == event(1)["_id"]
    assert docs[_moved(1, 11)["_id"]]["superseded_by"] == event(1)["_id"]
    assert docs[event(2)["_id"]]["superseded_by"] == _moved(2, 12)["_id"]
    live = [doc_id for doc_id, doc in docs.items() if "superseded_by" not in doc]
    assert sorted(live) == sorted([event(1)["_id"], _moved(2, 12)["_id"]])


def test_two_live_documents_of_one_key_are_repaired_by_the_next_run_that_sees_the_key(db):
    """Two runs racing can each leave a datetime of one event live; the next run that stores the
    event, changed or not, marks the other one and counts it as repaired (not as a reschedule)."""
    from votersdaily.store.reschedules import RescheduleTracker

    upsert(db, DB, [event(3), _moved(3, 20), event(4), _moved(4, 21)])  # as if by two unaware runs
    tracker = RescheduleTracker()
    result = _write(db, tracker, [_moved(3, 20)])
    assert result.unchanged == [_moved(3, 20)["_id"]]
    assert result.repaired == [event(3)["_id"]] and result.superseded == []
    assert db.get(DB, event(3)["_id"])["superseded_by"] == _moved(3, 20)["_id"]
    # Event 4 moves again: one of its two live documents is what the move replaces, the other a repair.
    result = _write(db, tracker, [_moved(4, 22)])
    assert len(result.superseded) == len(result.repaired) == 1
    assert sorted(result.superseded + result.repaired) == sorted([event(4)["_id"], _moved(4, 21)["_id"]])
    live = [d["_id"] for d in db.iter_docs(DB) if "superseded_by" not in d]
    assert sorted(live) == sorted([_moved(3, 20)["_id"], _moved(4, 22)["_id"]])
    # The next run finds nothing to repair and writes nothing.
    result = _write(db, RescheduleTracker(), [_moved(3, 20), _moved(4, 22)])
    assert result.repaired == result.superseded == [] and len(result.unchanged) == 2


@pytest.mark.parametrize("prepare", [True, False], ids=["read-before-write", "read-after-write"])
def test_a_batch_whose_marking_failed_is_marked_on_its_retry(db, prepare):
    """Reading the view fails: before the write, the batch is not written and its retry writes and
    marks it; after the write (a spool delivery), the retry finds the documents unchanged and the
    tracker still marks what they replace."""
    from votersdaily.store.base import StoreUnavailable
    from votersdaily.store.reschedules import RescheduleTracker

    upsert(db, DB, [event(5)])
    tracker = RescheduleTracker()
    real_query = db.query

    def store_down(*args, **kwargs):
        raise StoreUnavailable("store went away")

    db.query = store_down
    with pytest.raises(StoreUnavailable):
        _write(db, tracker, [_moved(5, 22)], prepare=prepare)
    db.query = real_query
    assert (db.get(DB, _moved(5, 22)["_id"]) is None) is prepare
    result = _write(db, tracker, [_moved(5, 22)], prepare=prepare)
    assert (result.inserted if prepare else result.unchanged) == [_moved(5, 22)["_id"]]
    assert result.superseded == [event(5)["_id"]]


def test_the_view_is_read_before_the_first_write_of_a_parser_and_once(db):
    """So the store never has to index the batch being written before answering; later batches of
    the parser are tracked in memory."""
    from votersdaily.store.reschedules import RescheduleTracker

    upsert(db, DB, [event(6)])
    calls = []
    for name in ("query", "bulk_docs"):
        real = getattr(db, name)
        setattr(db, name, lambda *a, _real=real, _name=name, **k: (calls.append(_name), _real(*a, **k))[1])
    tracker = RescheduleTracker()
    result = _write(db, tracker, [_moved(6, 23), event(7)])
    assert calls[:2] == ["query", "bulk_docs"]
    assert result.superseded == [event(6)["_id"]]
    calls.clear()
    result = _write(db, tracker, [_moved(7, 24), event(8)])
    assert "query" not in calls and result.superseded == [event(7)["_id"]]


def test_spooled_batches_name_a_reschedule_tracker_made_once_per_delivery():
    from votersdaily.store.reschedules import RescheduleTracker, SpooledRescheduleTracker
    from votersdaily.store.spool import DELIVERY_HOOKS, delivery_name, hook_name

    assert hook_name(RescheduleTracker()) == "reschedules"
    assert DELIVERY_HOOKS[delivery_name("reschedules")] is SpooledRescheduleTracker
    # What earlier versions recorded: the import path of the hooks, read as the name it meant.
    for path in ("votersdaily.pipelines:SpooledRescheduleTracker", "votersdaily.pipelines:mark_superseded"):
        assert delivery_name(path) == "reschedules"
    # The ingest's file-table bookkeeping served only the run that spooled the batch: no hooks now.
    assert delivery_name("votersdaily.ingest.persist:IngestStorePipeline._rows_written") is None


def test_a_batch_whose_hooks_no_delivery_could_run_is_not_spooled(tmp_path):
    """Hooks must be registered to be spooled with: a batch naming others would wait for nothing."""
    from votersdaily.store.hooks import AfterBatch
    from votersdaily.store.spool import Spool

    class Unregistered(AfterBatch):
        durable = "somewhere:else"

    with pytest.raises(ValueError, match="no delivery could run"):
        Spool(tmp_path / "spool").write("sqlite:///x.db", DB, [event(1)], (), Unregistered(print))
    assert not (tmp_path / "spool").exists()


def test_a_document_that_is_not_unicode_is_refused_on_its_own(db):
    """A lone surrogate (valid JSON, not Unicode; generated here) used to fail the embedded store's
    whole batch: now that one document is refused and the rest of the batch is written."""
    docs = [event(1), event(2, title="bad \ud800 title"), event(3), event(4, _id="bad-\udfff-id")]
    result = upsert(db, DB, docs)
    assert sorted(result.inserted) == sorted([event(1)["_id"], event(3)["_id"]])
    assert set(result.failed) == {event(2)["_id"], "bad-\udfff-id"}
    assert all("not valid Unicode" in reason for reason in result.failed.values())
    assert sorted(d["_id"] for d in db.iter_docs(DB)) == sorted([event(1)["_id"], event(3)["_id"]])
    answers = db.bulk_docs(DB, [event(5, title="\ud800"), event(6)])
    assert answers[0]["error"] == "bad_request" and answers[1]["ok"]


def test_a_document_that_is_not_json_is_refused_on_its_own(db):
    """A value JSON has no form for (a set, bytes, NaN or an infinity, which CouchDB's parser refuses),
    a cycle, or a nesting deeper than the encoder goes (variants generated here) used to fail its whole
    batch, whose writer then counted every document failed; the embedded store even kept NaN. Now that
    one document is refused with its reason and the rest is written, by ``upsert`` and by
    ``bulk_docs``, on every store."""
    deep: dict = {}
    inner = deep
    for _ in range(5000):
        inner["a"] = {}
        inner = inner["a"]
    cyclic: dict = {}
    cyclic["self"] = cyclic
    bad = {
        2: event(2, tags={"a"}),
        4: event(4, raw=b"x"),
        6: event(6, score=float("nan")),
        8: event(8, score=float("-inf")),
        10: event(10, nested=deep),
        12: event(12, loop=cyclic),
    }
    result = upsert(db, DB, [event(1), *bad.values(), event(3)])
    assert sorted(result.inserted) == sorted([event(1)["_id"], event(3)["_id"]])
    assert set(result.failed) == {doc["_id"] for doc in bad.values()}
    assert all(
        reason.startswith("bad_request: the document is not JSON") for reason in result.failed.values()
    )
    assert sorted(d["_id"] for d in db.iter_docs(DB)) == sorted([event(1)["_id"], event(3)["_id"]])
    # A stored document's update that is not JSON: refused, the stored one kept, its neighbour written.
    again = upsert(db, DB, [event(1, tags={"a"}), event(9)])
    assert list(again.failed) == [event(1)["_id"]] and again.inserted == [event(9)["_id"]]
    assert "tags" not in db.get(DB, event(1)["_id"])
    answers = db.bulk_docs(DB, [bad[2], event(5), bad[6], bad[4], event(7)])
    assert [answer.get("error") for answer in answers] == [
        "bad_request",
        None,
        "bad_request",
        "bad_request",
        None,
    ]
    assert db.get(DB, event(5)["_id"]) and db.get(DB, event(7)["_id"]) and not db.get(DB, bad[6]["_id"])


def test_a_document_couchdb_refuses_a_whole_batch_for_is_refused_on_its_own(db):
    """CouchDB answers HTTP 400 to a whole ``_bulk_docs`` request holding one document whose id starts
    with an underscore but is not reserved, or that holds a key starting with one that is not
    CouchDB's own (the pinned PouchDB Server does the same for the id). Such a document (generated
    here) failed its batch, and every later delivery of the spool file it then waited in; the embedded
    store took it. Both stores now refuse it on its own. ``upsert`` writes content: it refuses a
    ``_deleted`` (it would delete the stored document) and ignores a ``_rev`` given (the revisions are
    the store's; a caller's could only conflict)."""
    docs = [event(1), dict(event(2), _id="_not_reserved"), event(3, _private=1), event(4)]
    result = upsert(db, DB, docs)
    assert sorted(result.inserted) == sorted([event(1)["_id"], event(4)["_id"]])
    assert set(result.failed) == {"_not_reserved", event(3)["_id"]}
    assert all(reason.startswith("bad_request: ") for reason in result.failed.values())
    answers = db.bulk_docs(DB, [event(5, _private=1), event(6), dict(event(8), _id="_bad")])
    assert [answer.get("error") for answer in answers] == ["bad_request", None, "bad_request"]
    assert db.get(DB, event(6)["_id"]) and not db.get(DB, event(5)["_id"])
    again = upsert(
        db,
        DB,
        [
            event(1, title="new", _deleted=True),
            event(7, _rev="1-0123"),
            event(4, title="changed", _rev="9-bogus"),
        ],
    )
    assert list(again.failed) == [event(1)["_id"]] and "_deleted" in again.failed[event(1)["_id"]]
    assert db.get(DB, event(1)["_id"])["title"] == event(1)["title"]
    assert again.inserted == [event(7)["_id"]] and again.updated == [event(4)["_id"]]
    assert db.get(DB, event(4)["_id"])["title"] == "changed"


def test_a_document_over_couchdbs_size_limit_is_refused_on_its_own(couchdb, couch_uri):
    """Apache CouchDB 3 refuses a whole ``_bulk_docs`` request for one document over its
    ``max_document_size`` (default 8,000,000 bytes of JSON): before, the batch failed with it, and every
    delivery of the spool file it then waited in. Only a real CouchDB has the limit (the pinned PouchDB
    Server has none); tests/cli/test_couch_answers.py shows the same on every run from its answers."""
    from tests.support.services import ExternalCouchDB

    if not isinstance(couchdb, ExternalCouchDB):
        pytest.skip("needs a real CouchDB 3 ($VOTERSDAILY_TEST_COUCHDB): PouchDB Server has no size limit")
    store = open_store(couch_uri)
    store.ensure_db(DB)
    big = event(2, text="x" * 9_000_000)
    result = upsert(store, DB, [event(1), big, event(3)])
    assert sorted(result.inserted) == sorted([event(1)["_id"], event(3)["_id"]])
    assert list(result.failed) == [big["_id"]]
    assert result.failed[big["_id"]].startswith("document_too_large: ")
    assert store.get(DB, event(3)["_id"]) and store.get(DB, big["_id"]) is None
    store.close()


def test_a_spool_delivery_reads_the_reschedule_view_once(db, tmp_path):
    """Delivering 1,200 spooled reschedules (three chunks) reads the view once, not once per chunk,
    and still marks every document they replace."""
    from votersdaily.store.identity import identity_of
    from votersdaily.store.reschedules import RescheduleTracker
    from votersdaily.store.spool import Spool

    earlier = [event(i, unique_key="k%d" % i) for i in range(1200)]
    upsert(db, DB, earlier)
    moved = [
        dict(
            doc,
            _id=doc["_id"].replace("T12:00:00Z", "T15:00:00Z"),
            datetime=doc["datetime"][:11] + "15:00:00Z",
        )
        for doc in earlier
    ]
    spool = Spool(tmp_path / "spool")
    spool.write(identity_of(db), DB, moved, (), RescheduleTracker())
    reads = []
    real_query = db.query
    db.query = lambda *a, **k: (reads.append(a[1]), real_query(*a, **k))[1]
    report = spool.deliver(db, DB)
    db.query = real_query
    assert report.documents == 1200 and reads == ["by_parser_unique_key"]
    assert len(report.result.superseded) == 1200 and not report.result.repaired
    live = [d["_id"] for d in db.iter_docs(DB) if "superseded_by" not in d]
    assert sorted(live) == sorted(d["_id"] for d in moved)


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "pieces"])
@pytest.mark.parametrize("size", [10, 2047, 2048, 4095, 100_000])
def test_embedded_revisions_are_the_md5_of_the_stored_body(sqlite_uri, size, compiled, monkeypatch):
    """The body is hashed keeping Python's lock (store/embedded.py:md5_holding_the_gil: compiled, or
    in pieces by hashlib without the module): the revision is still the MD5 of the stored JSON,
    whatever its length; and text_md5 (a text's, as the writer tells an unchanged event by it) is the
    same either way, None for a text without UTF-8."""
    import hashlib
    import json

    from votersdaily.store import embedded

    if compiled:
        assert embedded._compiled_text_md5 is not None  # scripts/setup.sh builds it
    else:
        monkeypatch.setattr(embedded, "md5_holding_the_gil", embedded._md5_in_pieces)
        monkeypatch.setattr(embedded, "_compiled_text_md5", None)
    for text in ("x" * size, "é" * size, "😀" * size):
        assert embedded.text_md5(text) == hashlib.md5(text.encode("utf-8")).hexdigest()
    assert embedded.text_md5("x" * size + "\ud800") is None
    store = open_store(sqlite_uri)
    store.ensure_db(DB)
    doc = event(1, text="x" * size)
    [answer] = store.bulk_docs(DB, [doc])
    body = json.dumps({k: v for k, v in doc.items() if k != "_id"}, ensure_ascii=False)
    assert answer["rev"] == "1-" + hashlib.md5(body.encode("utf-8")).hexdigest()
    assert store.get(DB, doc["_id"])["_rev"] == answer["rev"]


def test_a_view_query_may_read_only_some_fields_of_each_document(db):
    docs = [event(i, archived=False, nested={"a": [1, 2.5, None]}, text='é\u2028"q"') for i in range(5)]
    docs.append(event(9))  # without the extra fields
    upsert(db, DB, docs)
    full = db.query(DB, "by_parser_unique_key", startkey=["test_parser"], endkey=["test_parser", {}])
    fields = ("archived", "nested", "text", "title", "missing")
    cut = db.query(
        DB, "by_parser_unique_key", startkey=["test_parser"], endkey=["test_parser", {}], fields=fields
    )
    assert [r.id for r in cut] == [r.id for r in full] and [r.key for r in cut] == [r.key for r in full]
    for whole, part in zip(full, cut, strict=True):
        assert part.doc == {
            "_id": whole.id,
            "_rev": whole.doc["_rev"],
            **{f: whole.doc.get(f) for f in fields},
        }
    assert cut[0].doc["archived"] is False
    one = db.query(DB, "by_parser_unique_key", keys=[["test_parser", "3"]], fields=("title",))
    assert [r.doc for r in one] == [{"_id": event(3)["_id"], "_rev": full[3].doc["_rev"], "title": "Event 3"}]
    bare = db.query(
        DB, "by_parser_unique_key", key=["test_parser", "3"], include_docs=False, fields=("title",)
    )
    assert [(r.id, r.doc) for r in bare] == [(event(3)["_id"], None)]


def variants_of(doc: dict) -> dict[str, tuple[dict, str]]:
    """Rewrites of a stored document (derived, one change each) and what an upsert of each must do."""
    reordered = dict(reversed(list(doc.items())))
    return {
        "identical": (dict(doc), "unchanged"),
        "a new access time": (dict(doc, access_datetime="2026-10-09T00:00:00Z"), "unchanged"),
        "the keys in another order": (reordered, "unchanged"),
        "a tuple for a list": (dict(doc, votes=tuple(doc["votes"])), "unchanged"),
        "a new parser version": (dict(doc, parser_version="2.0"), "updated"),
        "a new title": (dict(doc, title="Rescheduled"), "updated"),
        "an integer turned float": (dict(doc, votes=[1.0, 2, True]), "updated"),
        "a boolean turned integer": (dict(doc, votes=[1, 2, 1]), "updated"),
        "a key more": (dict(doc, room="Room 1"), "updated"),
        "a key less": ({k: v for k, v in doc.items() if k != "votes"}, "updated"),
        "a volatile key less": ({k: v for k, v in doc.items() if k != "access_datetime"}, "unchanged"),
    }


@pytest.mark.parametrize("case", list(variants_of(event(0, votes=[1, 2, True], parser_version="1.0"))))
def test_a_rewrite_is_unchanged_or_updated_by_its_content_alone(db, case):
    """The embedded store tells unchanged documents without reading their bodies
    (EmbeddedStore.compare_stored); whichever path tells it, the outcome is the content's."""
    doc = event(0, votes=[1, 2, True], parser_version="1.0")
    upsert(db, DB, [doc], ignore=("access_datetime",), probe=("parser_version",))
    rewrite, outcome = variants_of(doc)[case]
    result = upsert(db, DB, [rewrite], ignore=("access_datetime",), probe=("parser_version",))
    assert getattr(result, outcome) == [doc["_id"]], result
    import json

    stored = {k: v for k, v in db.get(DB, doc["_id"]).items() if k != "_rev"}
    expected = doc if outcome == "unchanged" else rewrite  # an unchanged one keeps its first access time
    assert stored == json.loads(json.dumps(expected))


def test_the_embedded_store_tells_what_it_can_without_the_bodies(sqlite_uri):
    store = open_store(sqlite_uri)
    store.ensure_db(DB)
    doc = event(0, votes=[1, 2, True], parser_version="1.0")
    upsert(store, DB, [doc])
    told = {
        case: store.compare_stored(DB, {doc["_id"]: rewrite}, ("access_datetime",), ("parser_version",))[
            doc["_id"]
        ].same
        for case, (rewrite, _) in variants_of(doc).items()
    }
    assert told == {
        "identical": True,
        "a new access time": True,
        "the keys in another order": None,  # the whole documents tell
        "a tuple for a list": True,
        "a new parser version": False,  # told by the probe alone
        "a new title": None,
        "an integer turned float": None,
        "a boolean turned integer": None,
        "a key more": None,
        "a key less": None,
        "a volatile key less": None,
    }
    assert store.compare_stored(DB, {"no-such-id": doc}, ("access_datetime",)) == {}


@pytest.mark.parametrize(
    "recorded",
    [
        "votersdaily.pipelines:mark_superseded",
        "votersdaily.pipelines:SpooledRescheduleTracker",
        "votersdaily.store.reschedules:SpooledRescheduleTracker",
    ],
)
def test_spool_files_of_earlier_versions_are_delivered_with_the_hooks_they_meant(db, tmp_path, recorded):
    """Their lines name the hooks by import path (as versions before the registry wrote them): the
    delivery runs the reschedule tracker they meant, found by name, and marks what they replace."""
    from votersdaily.store.identity import identity_of
    from votersdaily.store.reschedules import RescheduleTracker
    from votersdaily.store.spool import Spool

    upsert(db, DB, [event(11), event(12)])
    spool = Spool(tmp_path / "spool")
    path = spool.write(identity_of(db), DB, [_moved(11, 25), _moved(12, 26)], (), RescheduleTracker())
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert {line["after_batch"] for line in lines} == {"reschedules"}
    path.write_text("".join(json.dumps(dict(line, after_batch=recorded)) + "\n" for line in lines))
    report = spool.deliver(db, DB)
    assert report.documents == 2 and not report.kept and not report.problems
    assert sorted(report.result.superseded) == sorted([event(11)["_id"], event(12)["_id"]])
    assert not list(spool.directory.iterdir())


def test_a_documents_own_text_is_stored_as_its_encoding_would_be(tmp_path):
    """An EncodedDocument (the event check's JSON text with the event: what the event pipeline hands
    the writer) is written and compared as the plain document is: the same bodies byte for byte, the
    same revisions, the same verdicts, on every event of the real recordings; pickled with its text
    (the store's process)."""
    import pickle

    from tests.test_schema import recorded_events
    from votersdaily import schema
    from votersdaily.store.base import EncodedDocument, body_json_of

    plain, encoded = [], []
    for event in recorded_events():
        _, text = schema.check_event_json(event)
        assert text is not None
        event["_id"] = schema.event_id(event["datetime"], event["parser_name"], event["unique_key"])
        plain.append(dict(event))
        encoded.append(EncodedDocument(event, text))
    twin = pickle.loads(pickle.dumps(encoded[0], protocol=pickle.HIGHEST_PROTOCOL))
    assert type(twin) is EncodedDocument and twin == encoded[0] and twin.body_json == encoded[0].body_json
    stores = {}
    for name, docs in (("plain", plain), ("encoded", encoded)):
        store = stores[name] = open_store("sqlite:///%s" % (tmp_path / ("%s.db" % name)))
        store.ensure_db(DB)
        first = upsert(store, DB, docs, ignore=schema.VOLATILE_EVENT_KEYS, insert_first=name == "encoded")
        assert first.inserted and not first.failed
        again = upsert(store, DB, docs, ignore=schema.VOLATILE_EVENT_KEYS)  # told by the text's MD5
        assert sorted(again.unchanged) == sorted(first.inserted) and not again.updated
        later = [  # a later access time: the document with the stored one (its own text does not serve)
            EncodedDocument({**doc, "access_datetime": "2030-01-01T00:00:00Z"}, "not the text")
            if name == "encoded"
            else {**doc, "access_datetime": "2030-01-01T00:00:00Z"}
            for doc in docs
        ]
        assert all(body_json_of(doc) is not None for doc in later if name == "encoded")
        told = store.compare_stored(DB, {doc["_id"]: doc for doc in later}, schema.VOLATILE_EVENT_KEYS)
        assert {stored.same for stored in told.values()} == {True}
    bodies = [
        sorted(
            (doc_id, rev, body)
            for doc_id, rev, body in store._conn.execute(
                "SELECT id, rev, body FROM docs WHERE id NOT LIKE '%design%'"
            )
        )
        for store in stores.values()
    ]
    assert bodies[0] == bodies[1] and len(bodies[0]) > 400
