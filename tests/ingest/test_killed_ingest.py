"""An ingest killed mid-run (the OOM killer, ``kill -9``: no shutdown, no spool) has stored every
result older than a second (the ingest spider's VOTERSDAILY_BATCH_MAX_WAIT)."""

from __future__ import annotations

import time

import pytest

from tests.distributed.workloads import (
    INGEST_SETTINGS,
    hold_documents,
    kill_worker,
    read_db,
    recorded_documents,
    write_ingest_requests,
)
from tests.support.processes import start_crawl

pytestmark = pytest.mark.slow  # a `scrapy crawl ingest` subprocess, killed


def test_a_killed_ingest_keeps_the_results_it_finished(site, sqlite_uri, tmp_path):
    """Before, results waited in memory for a batch of 1,000 or the end of the run: the ingest of a
    long file of requests, killed after hours, had stored none of them."""
    docs = recorded_documents(site, 3)  # the project's own recordings (votersdaily/recordings)
    gate = hold_documents(site, docs[2:])  # the last one's answer waits: the crawl goes on
    requests = write_ingest_requests(tmp_path / "requests.jsonl", docs)
    crawl = start_crawl(
        "ingest",
        sqlite_uri,
        *INGEST_SETTINGS,
        "INGEST_BLOB_DIR=%s" % (tmp_path / "blobs"),
        "INGEST_WARC_ENABLED=False",
        "LOG_LEVEL=INFO",
        log=tmp_path / "crawl.log",
        args={"requests": str(requests)},
        env={"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")},
    )
    try:
        finished = {d.result_id for d in docs[:2]}
        deadline = time.monotonic() + 60
        stored: set[str] = set()
        while time.monotonic() < deadline and not finished <= stored:
            assert crawl.poll() is None, (tmp_path / "crawl.log").read_text()[-3000:]
            time.sleep(0.2)
            stored = {r["_id"] for r in read_db(sqlite_uri, "ingest_file_result")}
        assert finished <= stored, "the finished ingests' results are stored while the crawl runs"
        assert site.hits.get(docs[2].path), "the last ingest is under way"
    finally:
        kill_worker(crawl)
        gate.event.set()
    results = {r["_id"]: r for r in read_db(sqlite_uri, "ingest_file_result")}
    assert set(results) == finished
    for d in docs[:2]:  # as the ingest found them (government pages: most hold no full text to extract)
        assert results[d.result_id]["request"]["base_url"] == d.url and results[d.result_id]["status"]
    assert not (tmp_path / "spool").exists() or not any((tmp_path / "spool").iterdir()), "killed: no spool"
