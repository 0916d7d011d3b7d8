"""The same behaviour suite against both backends: embedded SQLite and a real PouchDB Server."""

from __future__ import annotations

import base64

import pytest

from votersdaily.store import StoreError, mask_uri, open_store
from votersdaily.store.upsert import upsert
from votersdaily.store.views import DESIGN_ID

DB = "vd_events"


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
    desc = db.query(DB, "by_branch_datetime", startkey=["Judicial", {}], endkey=["Judicial"], descending=True, limit=3)
    assert [(r.key[1], r.id) for r in desc] == expected[::-1][:3]
    one = db.query(DB, "by_parser_unique_key", key=["test_parser", "7"])
    assert [r.id for r in one] == [event(7)["_id"]]
    many = db.query(DB, "by_parser_unique_key", keys=[["test_parser", "7"], ["test_parser", "8"], ["nope", "1"]])
    assert [r.id for r in many] == [event(7)["_id"], event(8)["_id"]]


def test_views_follow_updates(db):
    upsert(db, DB, [event(1)])
    upsert(db, DB, [event(1, branch="Judicial", entity="Supreme Court")])
    assert [r.id for r in db.query(DB, "by_branch_datetime", startkey=["Executive"], endkey=["Executive", {}])] == []
    assert [r.id for r in db.query(DB, "by_branch_datetime", startkey=["Judicial"], endkey=["Judicial", {}])] == [event(1)["_id"]]


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
    assert [r.id for r in store.query("vd_log", "by_parser", startkey=["p1"], endkey=["p1", {}])] == ["a", "b"]


def test_attachment_roundtrip_and_kept_on_update(db):
    big = ("x" * 1000 + "\n") * 2000
    doc = event(1, _attachments={"source_text": {
        "content_type": "text/plain", "data": base64.b64encode(big.encode()).decode()}})
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
