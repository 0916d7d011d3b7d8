"""A full disk under the ingest's blob folder, TEI feed and job folder (a real small tmpfs, root only, skipped
otherwise): every result and file row is stored, the TEI that did not fit is marked not kept
(``has_teixml: false``), the folder is said once and the run fails with ``OutputFolderFull``, and no
half-written blob or cut feed line is left behind. The documents are the local site's
(tests/ingest/conftest.py): a PLOS ONE article (HTML, its TEI extracted) and the scholarly fixture PDF."""

from __future__ import annotations

import json

import pytest

from tests.support.tmpfs import assert_a_full_job_folder_stopped_the_start, fill, small_tmpfs
from votersdaily.ingest.blobs import JsonLinesFeed
from votersdaily.ingest.filetable import sha1_b32, table_name
from votersdaily.store import open_store

from .conftest import read_results, run_ingest, write_requests


def test_a_full_blob_disk_costs_no_ingest_result_and_cuts_no_feed_line(
    crawl, sqlite_uri, ingest_site, tmp_path
):
    """Before: the HTML ingest's item failed half-way (an OSError traceback: its file row and
    html_meta never written), a half-written ``….tei.xml.tmp<thread>`` stayed among the blobs, and
    the folder was named nowhere."""
    site = ingest_site
    article = site.url + "/scholarly/plos_one_article.html"
    requests = write_requests(
        tmp_path / "r.jsonl",
        [
            {"base_url": article, "ingest_type": "html"},
            {"base_url": site.url + "/start", "ingest_type": "pdf"},
        ],
    )
    with small_tmpfs(tmp_path / "out", size="64k") as folder:
        (folder / "feed.jsonl").write_text(json.dumps({"key": "earlier", "tei_xml": "<TEI/>"}) + "\n")
        fill(folder, leave=4096)
        proc = run_ingest(
            crawl,
            sqlite_uri,
            requests,
            tmp_path,
            "INGEST_BLOB_DIR=%s" % (folder / "blobs"),
            "INGEST_TEIXML_FEED=%s" % (folder / "feed.jsonl"),
            status=1,
        )
        said = [line for line in proc.stderr.splitlines() if " is full " in line]
        assert len(said) == 1 and said[0].endswith(
            "ERROR: the ingest's blob folder %s is full (No space left on device): the TEI and thumbnails "
            "that do not fit are not kept; the results are stored" % (folder / "blobs")
        )
        assert "Traceback" not in proc.stderr
        assert not [p.name for p in folder.rglob("*.tmp*")]
        assert [json.loads(line)["key"] for line in (folder / "feed.jsonl").read_text().splitlines()] == [
            "earlier"
        ]
    results = {d["request"]["base_url"]: d for d in read_results(sqlite_uri).values()}
    assert {url: r["status"] for url, r in results.items()} == {
        article: "success",
        site.url + "/start": "success",
    }
    sha1hex = results[article]["file_meta"]["sha1hex"]
    store = open_store(sqlite_uri)
    try:
        assert store.get("html_meta", sha1hex)["has_teixml"] is False
        assert store.get(table_name("0", "dev"), sha1_b32(sha1hex)) is not None  # its file row
        (log,) = store.iter_docs("vd_log")
    finally:
        store.close()
    assert log["result"] == "OutputFolderFull"
    assert {error["where"] for error in log["errors"]} == {"output"}


def test_a_feed_line_the_disk_cannot_take_whole_is_not_written_at_all(tmp_path):
    """Before: the disk took the head of a message and the line stayed cut, so a later message was
    appended to it and lost too. Each message is a line whole, or nothing."""
    with small_tmpfs(tmp_path / "out", size="64k") as folder:
        feed = JsonLinesFeed(folder / "feed.jsonl")
        fill(folder, leave=6000)
        published = 0
        with pytest.raises(OSError, match="No space left on device"):
            for n in range(100):
                feed.publish({"key": n, "tei_xml": "<TEI>%s</TEI>" % ("x" * 1500)})
                published += 1
        assert published >= 1
        (folder / "filler").unlink()
        feed.publish({"key": "after", "tei_xml": "<TEI/>"})
        keys = [json.loads(line)["key"] for line in (folder / "feed.jsonl").read_text().splitlines()]
    assert keys == [*range(published), "after"]


def test_a_full_job_folder_fails_the_ingests_start_naming_the_folder(
    crawl, sqlite_uri, ingest_site, tmp_path
):
    """``JOBDIR`` on a full disk under the ingest, whose start requests go to the scheduler several at
    a time (votersdaily/plumbing/start_batches.py): the scheduler's refusal reaches the engine as it
    does for one request a turn, so the run stops before fetching, said once with the folder, and
    the run log says ``OutputFolderFull`` (not ``interrupted``, nor a failure to read the input)."""
    requests = write_requests(
        tmp_path / "r.jsonl",
        [{"base_url": ingest_site.url + "/start", "ingest_type": "pdf"} for _ in range(3)],
    )
    with small_tmpfs(tmp_path / "job", size="64k") as folder:
        fill(folder)
        proc = run_ingest(crawl, sqlite_uri, requests, tmp_path, "JOBDIR=%s" % folder, status=1)
    assert_a_full_job_folder_stopped_the_start(proc.stderr, "ingest", folder, sqlite_uri)
    assert "Traceback" not in proc.stderr
    assert read_results(sqlite_uri) == {}
