"""A kept-alive connection the server closes just as it is reused costs no request and no run log.

A CouchDB client pools its keep-alive connections; a server closes an idle one after its own
timeout (Node's, under PouchDB Server, is 5 s). When that close crosses the client's reuse, the
first request after an idle spell fails before any answer, though the server is up: an ingest
worker of the Redis fault test met it at its run-log write, which went to the spool and made the
run exit 4. The fault proxy closes the connection at a chosen reused request, so the race happens
every time.
"""

from __future__ import annotations

import pytest

from tests.support.faultproxy import FaultProxy
from votersdaily import schema
from votersdaily.store import open_store
from votersdaily.store.base import StoreUnavailable


def with_log_views(pouchdb) -> None:
    """The run-log database with its views in place: the run log is the crawl's one write to it."""
    store = open_store(pouchdb.url)
    store.ensure_db(schema.LOG_DB)
    store.install_views(schema.LOG_DB)


def crawl_through(cli, proxy: FaultProxy, spool):
    """``crawl --offline house_floor`` into the store behind ``proxy`` (quick store retries)."""
    return cli(
        "crawl",
        "--offline",
        "house_floor",
        "-s",
        "VOTERSDAILY_STORE_RETRY_BACKOFF=0.1",
        store_uri=proxy.url,
        env={"VOTERSDAILY_SPOOL_DIR": str(spool)},
    )


@pytest.fixture
def proxy(pouchdb):
    pouchdb.reset()
    proxy = FaultProxy(pouchdb.port).start()
    yield proxy
    proxy.stop()


def test_a_read_meeting_a_closed_kept_alive_connection_is_sent_again(proxy, pouchdb):
    store = open_store(proxy.url)
    store.ensure_db("vd_events")  # the connection is pooled now
    proxy.close_reused(b"GET /vd_events ")
    assert store.has_db("vd_events")
    assert proxy.closed_reused == 1
    proxy.close_reused(b"POST /vd_events/_all_docs")
    store.bulk_docs("vd_events", [{"_id": "a", "n": 1}])
    assert store.get_many("vd_events", ["a"])["a"]["n"] == 1  # a read by POST, sent again too
    assert proxy.closed_reused == 2


def test_a_write_meeting_a_closed_kept_alive_connection_is_not_sent_twice_by_the_client(proxy, pouchdb):
    """A write is retried by its caller under the store retry policy (it knows its own answer when
    it meets it again); the HTTP client does not repeat it on its own."""
    store = open_store(proxy.url)
    store.ensure_db("vd_events")
    proxy.close_reused(b"POST /vd_events/_bulk_docs")
    with pytest.raises(StoreUnavailable, match=r"POST .*_bulk_docs failed: ConnectionError"):
        store.bulk_docs("vd_events", [{"_id": "a"}])
    assert proxy.closed_reused == 1
    assert open_store(pouchdb.url).get("vd_events", "a") is None


def test_the_run_log_meeting_a_closed_kept_alive_connection_is_stored_not_spooled(
    proxy, pouchdb, cli, tmp_path
):
    """Its write goes through the store retry policy (before: one attempt, then the spool, exit 4)."""
    spool = tmp_path / "spool"
    with_log_views(pouchdb)
    proxy.close_reused(b"POST /vd_log/_bulk_docs")
    proc = crawl_through(cli, proxy, spool)
    assert proxy.closed_reused == 1  # the run log's write met the closed connection
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not list(spool.glob("*.jsonl"))
    logs = list(open_store(pouchdb.url).iter_docs(schema.LOG_DB))
    assert [(doc["parser_name"], doc["result"]) for doc in logs] == [("house_floor", "success")]


def test_a_run_log_whose_answer_was_lost_is_stored_once(proxy, pouchdb, cli, tmp_path):
    """The store took the run log and the answer was lost: the retry meets its own document (a
    conflict) and takes it for the answer, not a second copy under ``-2``."""
    spool = tmp_path / "spool"
    with_log_views(pouchdb)
    proxy.lose_answer(b"POST /vd_log/_bulk_docs")
    proc = crawl_through(cli, proxy, spool)
    assert proxy.lost == 1, proc.stderr[-3000:]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not list(spool.glob("*.jsonl"))
    logs = list(open_store(pouchdb.url).iter_docs(schema.LOG_DB))
    assert [(doc["parser_name"], doc["result"]) for doc in logs] == [("house_floor", "success")]
