"""An ingest's spooled result, delivered after a newer ingest of the same URL was stored, keeps the
newer one (the events' case, and why: tests/store/test_late_spool.py).

The pages are the project's own recordings (votersdaily/recordings/gov); the URL that served one
serves another recording later, as a page replaced at its address.
"""

from __future__ import annotations

import uuid

from tests.distributed.workloads import RECORDED, recorded_documents, write_ingest_requests
from tests.ingest.conftest import local_ingest_args, read_results
from tests.store.test_spool import spooled_records
from tests.support.cli_main import run_main
from votersdaily.ingest.persist import UPDATED
from votersdaily.recordings import recording_path

EARLY, LATE = "2026-09-17T08:00:00Z", "2026-09-17T09:00:00Z"


def test_a_spooled_ingest_result_delivered_late_keeps_the_newer_result(crawl, pouchdb, site, tmp_path):
    pouchdb.reset()
    [page] = recorded_documents(site, 1)
    requests = write_ingest_requests(tmp_path / "requests.jsonl", [page])
    settings = local_ingest_args(requests, tmp_path)
    node_a = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool-a"), "VOTERSDAILY_FROZEN_NOW": EARLY}
    node_b = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool-b"), "VOTERSDAILY_FROZEN_NOW": LATE}
    wrong = "http://nobody-%s:wrong@127.0.0.1:%d/" % (uuid.uuid4().hex[:8], pouchdb.port)
    spooled = crawl("ingest", None, wrong, *settings, env=node_a)
    assert spooled.returncode == 4, spooled.stderr[-3000:]
    [record] = [r for r in spooled_records(tmp_path / "spool-a") if r["doc"]["_id"] == page.result_id]
    assert (record["newer_by"], record["doc"][UPDATED]) == (UPDATED, EARLY)
    replacement = recording_path(RECORDED[1][0]).read_bytes()  # the page at that address replaced
    site.route(page.path, replacement, content_type=RECORDED[1][2])
    assert crawl("ingest", None, pouchdb.url, *settings, env=node_b).returncode == 0
    newer = read_results(pouchdb.url)[page.result_id]
    assert newer["file_meta"]["sha1hex"] != record["doc"]["file_meta"]["sha1hex"]

    flushed = run_main("flush", store_uri=pouchdb.url, env=node_a)

    assert flushed.returncode == 0, flushed.stderr
    kept = read_results(pouchdb.url)[page.result_id]
    assert (kept["file_meta"]["sha1hex"], kept[UPDATED], kept["_rev"]) == (
        newer["file_meta"]["sha1hex"],
        LATE,
        newer["_rev"],
    )
    assert "kept the store's version of 1 documents" in flushed.stderr
