"""An ingest whose store is down from its start (a systemd restart during store maintenance) keeps
everything it scraped in the spool: results, file-table rows and ``html_meta``; ``flush`` stores
them once the store is back, each file-table row merged with the row stored by then, as the run
would have merged it.

The pages are the project's own recordings (votersdaily/recordings/gov, tests/distributed/workloads.py
serves them); "down" is a port nothing listens on; the store the spool is flushed into is the
session's PouchDB Server.
"""

from __future__ import annotations

import base64
import gzip
import json

import pytest

from tests.distributed.workloads import Document, read_db, recorded_documents, write_ingest_requests
from tests.ingest.conftest import local_ingest_args
from tests.support.cli_main import run_main
from tests.support.services import free_port
from votersdaily.ingest.blobs import tei_path
from votersdaily.ingest.filetable import sha1_b32, table_name
from votersdaily.store import open_store

FILE_TABLE = table_name("0", "dev")
#: A file-table row of an earlier ingest of the same file, with families the run's row does not
#: carry: GROBID's (and its TEI attachment) and a catalog match. Made here, in the table's own shape.
EARLIER_TEI = b"<TEI>an earlier GROBID run</TEI>"


def earlier_row(doc: Document) -> dict:
    return {
        "_id": sha1_b32(doc.sha1hex),
        "f": {"c": json.dumps({"u": "http://earlier.example/", "d": "2020-01-01T00:00:00Z"})},
        "grobid0": {"status_code": 200, "tei_xml": "grobid0:tei_xml.gz"},
        "match0": {"mstatus": "matched", "doi": "10.5555/earlier", "minfo": "{}"},
        "_attachments": {
            "grobid0:tei_xml.gz": {
                "content_type": "application/gzip",
                "data": base64.b64encode(gzip.compress(EARLIER_TEI)).decode(),
            }
        },
    }


def store_earlier_row(store_uri: str, earlier: Document) -> None:
    store = open_store(store_uri)
    try:
        store.ensure_db(FILE_TABLE)
        assert store.bulk_docs(FILE_TABLE, [earlier_row(earlier)])[0].get("ok")
    finally:
        store.close()


def check_flushed(store_uri: str, docs: list[Document], earlier: Document) -> None:
    """Every result, a file-table row for every hit, an ``html_meta`` for every HTML hit; the row of
    ``earlier``'s file keeps the families the run did not carry, and takes the run's others."""
    results = {r["_id"]: r for r in read_db(store_uri, "ingest_file_result")}
    assert sorted(results) == sorted(d.result_id for d in docs)
    hits = [r for r in results.values() if r["hit"]]
    assert hits, "the recordings include ingest hits"
    rows = {row["_id"]: row for row in read_db(store_uri, FILE_TABLE)}
    assert sorted(rows) == sorted({sha1_b32(r["file_meta"]["sha1hex"]) for r in hits})
    for r in hits:
        row = rows[sha1_b32(r["file_meta"]["sha1hex"])]
        assert json.loads(row["file"]["meta"])["sha1"] == r["file_meta"]["sha1hex"]
    html = {r["file_meta"]["sha1hex"] for r in hits if r.get("html_body")}
    assert html, "the recordings include an HTML hit"
    assert sorted(m["_id"] for m in read_db(store_uri, "html_meta")) == sorted(html)
    merged = rows[sha1_b32(earlier.sha1hex)]
    stored = earlier_row(earlier)
    assert (merged["grobid0"], merged["match0"]) == (stored["grobid0"], stored["match0"])
    assert json.loads(merged["f"]["c"])["u"] == earlier.url, "the run's own families replace the stored"
    store = open_store(store_uri)
    try:
        tei = store.get_attachment(FILE_TABLE, merged["_id"], "grobid0:tei_xml.gz")
    finally:
        store.close()
    assert gzip.decompress(tei) == EARLIER_TEI


@pytest.mark.parametrize("blobs", ["folder", "store"])
def test_an_ingest_whose_store_is_down_from_the_start_spools_every_row_for_flush(
    crawl, pouchdb, site, tmp_path, blobs
):
    """Before: every hit's item failed (``Error processing … StoreUnavailable``: the file-table row
    was merged with a read of the stored row, which failed; with ``INGEST_BLOB_BACKEND=store`` the
    TEI blob was written straight to the store, which failed too), and after ``flush`` the file
    table and ``html_meta`` were missing; ``flush`` exited 0 all the same. A catalog to load
    (``INGEST_CATALOG_JSONL``, a work made here) stopped the run before it began, with a traceback."""
    pouchdb.reset()
    docs = recorded_documents(site, 12)
    requests = write_ingest_requests(tmp_path / "requests.jsonl", docs)
    earlier = next(d for d in docs if d.ingest_type == "xml")
    store_earlier_row(pouchdb.url, earlier)
    down = "http://127.0.0.1:%d/" % free_port()  # nothing listens there
    env = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}
    catalog = tmp_path / "works.jsonl"
    catalog.write_text('{"doi": "10.5555/earlier", "title": "An earlier work"}\n')
    args = (
        *local_ingest_args(requests, tmp_path),
        *("-s", "INGEST_BLOB_BACKEND=%s" % blobs),
        *("-s", "INGEST_CATALOG_JSONL=%s" % catalog),
    )

    run = crawl("ingest", None, down, *args, env=env)

    assert run.returncode == 4, run.stderr[-3000:]  # what it scraped waits in the spool
    assert "Error processing" not in run.stderr and "Traceback" not in run.stderr, run.stderr[-3000:]
    assert "catalog %s not loaded into ingest_catalog" % catalog in run.stderr
    flushed = run_main("flush", "--from", down, store_uri=pouchdb.url, env=env)
    assert flushed.returncode == 0, flushed.stderr
    check_flushed(pouchdb.url, docs, earlier)
    teis = {m["_id"] for m in read_db(pouchdb.url, "html_meta") if m["has_teixml"]}
    assert teis, "the recordings include an HTML page with a TEI body"
    if blobs == "store":
        store = open_store(pouchdb.url)
        try:
            kept = {
                sha1hex: store.get_attachment("sandcrawler", tei_path(sha1hex), "blob") for sha1hex in teis
            }
        finally:
            store.close()
        assert all(tei and b"<TEI" in tei for tei in kept.values()), kept


@pytest.mark.slow  # a PouchDB Server of its own, stopped and started
def test_an_ingest_of_the_stores_requests_whose_store_is_down_stops_in_one_line_and_exits_3(
    crawl, ingest_site, durable_pouch, tmp_path
):
    """``-a requests=store`` with the store down: its requests cannot be read. Before: ``Error while
    reading start items and requests`` with a traceback, and exit 4 ("done, documents wait in the
    spool") though nothing was done. Now one line saying what to do, exit 3 (the store unavailable,
    nothing done), the run log spooled; once the store is back ``flush`` delivers it, and the next
    run ingests the requests."""
    site = ingest_site
    queued = run_main(
        "ingest", "enqueue", "--url", site.url + "/article", "--type", "html", store_uri=durable_pouch.url
    )
    assert queued.returncode == 0, queued.stderr
    durable_pouch.stop()
    env = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}
    args = ("-a", "requests=store", *local_ingest_args(tmp_path / "unused.jsonl", tmp_path)[2:])

    run = crawl("ingest", None, durable_pouch.url, *args, env=env)

    assert run.returncode == 3, run.stderr[-3000:]
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    said = (
        "cannot reach the store at %s (connection refused): start CouchDB or PouchDB Server there, or fix "
        "host and port in $VOTERSDAILY_STORE; this ingest reads its requests from ingest_requests there, "
        "so it stopped before fetching anything: run it again once the store answers" % durable_pouch.url
    )
    (line,) = [line for line in run.stderr.splitlines() if "reads its requests" in line]
    assert line.endswith("ERROR: " + said), line
    # Said once: each writer's "cannot be opened" and the catalog's "not consulted" are INFO, not
    # one more ERROR or WARNING each (three writers and the catalog said it before the run's line).
    loud = [line for line in run.stderr.splitlines() if " ERROR: " in line or " WARNING: " in line]
    assert len(loud) == 2 and "did not take the run log" in loud[1], loud
    assert sum("cannot be opened" in line for line in run.stderr.splitlines()) == 3, run.stderr[-3000:]
    assert "/article" not in site.hits

    durable_pouch.start()  # the same port and data folder
    flushed = run_main("flush", store_uri=durable_pouch.url, env=env)
    assert flushed.returncode == 0, flushed.stderr
    (log,) = read_db(durable_pouch.url, "vd_log")
    assert (log["result"], log["finish_reason"], log["error_message"]) == (
        "StoreUnavailable",
        "store unavailable",
        said,
    )
    # The writers' own failures to open the store too (each database's), all the store's.
    assert {error["where"] for error in log["errors"]} == {"store"}
    assert said in [error["message"] for error in log["errors"]]
    again = crawl("ingest", None, durable_pouch.url, *args, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    (result,) = read_db(durable_pouch.url, "ingest_file_result")
    assert (result["request"]["base_url"], result["status"]) == (site.url + "/article", "success")
