"""A full disk under the ingest's WARC output: its folder's disk fills during a run. Every ingest
result is stored (without ``warc_*`` keys: no record was written), the run log says ``archived: false``
naming the folder, and no WARC file holds half a record. The disk is a real small tmpfs (root only,
skipped otherwise); the documents are the local site's (tests/ingest/conftest.py) with the project's
scholarly fixture PDF."""

from __future__ import annotations

from tests.support.tmpfs import fill, small_tmpfs
from votersdaily.plumbing.warc_reader import WarcDamage, iter_records
from votersdaily.store import open_store

from .conftest import read_results, run_ingest, write_requests


def test_a_full_warc_disk_costs_no_ingest_result(crawl, sqlite_uri, ingest_site, tmp_path):
    site = ingest_site
    requests = write_requests(
        tmp_path / "r.jsonl",
        [
            {"base_url": site.url + "/start", "ingest_type": "pdf"},
            {"base_url": site.url + "/scholarly/plos_one_article.html", "ingest_type": "html"},
            {"base_url": site.url + "/landing-nopdf", "ingest_type": "pdf"},
        ],
    )
    with small_tmpfs(tmp_path / "warcs", size="64k") as folder:
        fill(folder, leave=8192)  # room for a record or two, not for the run
        run_ingest(
            crawl,
            sqlite_uri,
            requests,
            tmp_path,
            "INGEST_WARC_ENABLED=True",
            "INGEST_WARC_DIR=%s" % folder,
            status=1,  # the results stored, not all archived: the work not all done
        )
        for path in folder.glob("*.warc.gz"):
            assert not [e for e in iter_records(path) if isinstance(e, WarcDamage)]
    results = {d["request"]["base_url"]: d for d in read_results(sqlite_uri).values()}
    assert len(results) == 3
    pdf = results[site.url + "/start"]
    assert pdf["status"] == "success"
    assert "warc_path" not in pdf["cdx"]  # its record was not written: no location to point at
    assert results[site.url + "/landing-nopdf"]["status"] == "no-pdf-link"
    store = open_store(sqlite_uri)
    try:
        (log,) = store.iter_docs("vd_log")
    finally:
        store.close()
    assert log["archived"] is False and log["not_archived_count"] >= 1
    assert log["archive_error"] == "the folder %s is full (No space left on device)" % folder
