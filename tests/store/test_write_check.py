"""``Store.check_writes``: whether a store takes a write now, which a worker waiting out a store
outage asks (votersdaily/distributed/redis_scheduler.py). A store that answers reads but fails
writes (its disk full) must not pass it; a check leaves nothing anyone reads. Real parts: both
stores (the conftest's ``store``), and the embedded store's file on a real full tmpfs."""

from __future__ import annotations

import pytest

from tests.support.tmpfs import fill, small_tmpfs
from votersdaily.store import open_store
from votersdaily.store.base import StoreUnavailable


def test_a_check_takes_a_write_and_leaves_nothing_behind(store):
    store.ensure_db("vd_log")
    store.bulk_docs("vd_log", [{"_id": "run", "result": "success"}])
    before = (store.count("vd_log"), list(store.iter_docs("vd_log")), store.list_dbs())

    for _ in range(3):
        store.check_writes("vd_log")

    assert (store.count("vd_log"), list(store.iter_docs("vd_log")), store.list_dbs()) == before


def test_an_embedded_store_on_a_full_disk_answers_reads_but_fails_the_check_until_there_is_room(tmp_path):
    """Before the check existed, a worker asked ``has_db`` (a read), which a full disk answers."""
    with small_tmpfs(tmp_path / "disk", "1m") as folder:
        store = open_store("sqlite:///%s" % (folder / "store.sqlite"))
        try:
            store.ensure_db("vd_log")
            store.bulk_docs("vd_log", [{"_id": "run-%d" % n, "text": "x" * 4000} for n in range(20)])
            filler = fill(folder)

            for _ in range(3):
                with pytest.raises(StoreUnavailable, match="disk is full"):
                    store.check_writes("vd_log")
            assert store.has_db("vd_log") and store.count("vd_log") == 20, "it answers reads"

            filler.unlink()
            store.check_writes("vd_log")
            assert store.count("vd_log") == 20
        finally:
            store.close()


def test_a_database_not_made_yet_passes_when_the_store_answers(store):
    """A worker's first check may come before its run log's database exists (made at the run's end)."""
    store.check_writes("vd_log")
    assert not store.has_db("vd_log")
