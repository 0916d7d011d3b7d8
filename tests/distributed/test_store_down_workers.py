"""Redis-fed workers whose store is down when they start (a systemd restart during store
maintenance): no request goes to the dead stream. The ingest worker spools every result, file-table
row and ``html_meta`` and acks its requests (``flush`` stores them, rows merged with the stored ones).

Real processes: redis-server with the production settings, PouchDB Server, the worker as ``scrapy
crawl``; "down" is a port nothing listens on; the pages are the project's recordings.
"""

from __future__ import annotations

import pytest

from tests.distributed.workloads import (
    INGEST_SETTINGS,
    QUEUE_SETTINGS,
    enqueue,
    log_path,
    queue_state,
    recorded_documents,
    roomy,
    start_workers,
    wait_all,
    write_ingest_requests,
)
from tests.ingest.test_store_down_ingest import FILE_TABLE, check_flushed, earlier_row
from tests.support.cli_main import run_main
from tests.support.services import free_port
from votersdaily.store import open_store

pytestmark = pytest.mark.slow  # separate processes: Redis, PouchDB Server, workers

#: A request that failed would be given up after its second delivery: every delivery counts here.
STRICT_QUEUE = (*QUEUE_SETTINGS, "VOTERSDAILY_REDIS_LEASE=30", "VOTERSDAILY_REDIS_MAX_ATTEMPTS=2")
CLEAN_QUEUE = {"waiting": 0, "processing": 0, "dead": 0, "recovered": 0}


def test_an_ingest_worker_whose_store_is_down_spools_its_work_and_dead_letters_none(
    site, redis_server, pouchdb, tmp_path
):
    """Before: every hit (10 of these 12 requests) failed in the item pipeline on each delivery and
    went to the dead stream; the file table and ``html_meta`` were never stored, and re-enqueuing
    queued none of them (already seen)."""
    pouchdb.reset()
    roomy(site)
    docs = recorded_documents(site, 12)
    earlier = next(d for d in docs if d.ingest_type == "xml")
    store = open_store(pouchdb.url)
    try:
        store.ensure_db(FILE_TABLE)
        store.bulk_docs(FILE_TABLE, [earlier_row(earlier)])
    finally:
        store.close()
    down = "http://127.0.0.1:%d/" % free_port()  # nothing listens there
    enqueue("ingest", write_ingest_requests(tmp_path / "requests.jsonl", docs), down, redis_server.url)
    spool = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}
    workers = start_workers(
        "ingest_worker",
        1,
        down,
        redis_server.url,
        tmp_path,
        *INGEST_SETTINGS,
        *STRICT_QUEUE,
        *("%s=%s" % setting for setting in spool.items()),
        "INGEST_BLOB_DIR=%s" % (tmp_path / "blobs"),
    )

    wait_all(workers, tmp_path, status=4)  # what it did waits in the spool

    assert queue_state(redis_server, "ingest") == CLEAN_QUEUE
    assert "Error processing" not in log_path(tmp_path, 0).read_text()
    flushed = run_main("flush", "--from", down, store_uri=pouchdb.url, env=spool)
    assert flushed.returncode == 0, flushed.stderr
    check_flushed(pouchdb.url, docs, earlier)
