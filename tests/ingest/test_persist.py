"""The store pipeline hands each ingest's blocking work (TEI blob, feed line, thumbnail blob, file row)
to its file threads once: each trip costs the reactor thread more than the writes it carries. Counted
through a real in-process crawl of the local site (tests/ingest/conftest.py): a PLOS ONE article (HTML,
its TEI extracted) and the scholarly fixture PDF (its page-0 thumbnail)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from votersdaily.blocking import ThreadLane
from votersdaily.ingest import persist
from votersdaily.ingest.blobs import tei_path, thumbnail_path
from votersdaily.ingest.filetable import sha1_b32, table_name
from votersdaily.store import open_store

from .conftest import read_results, run_ingest, write_requests


def test_each_ingest_hands_its_files_and_file_row_to_the_file_threads_once(
    crawl, sqlite_uri, ingest_site, tmp_path, monkeypatch
):
    """Before: the HTML ingest made three hand-offs (TEI blob, feed line, file row), the PDF two
    (thumbnail blob, file row), each through the reactor's thread pool; now one to the pipeline's
    file threads (a ``ThreadLane``), and the pool only at the start."""
    handed: Counter[str] = Counter()
    real_pool, real_lane = persist.run_in_thread, ThreadLane.run

    async def counted(func: Any, *args: Any, **kwargs: Any) -> Any:
        handed["pool " + getattr(func, "__name__", repr(func))] += 1
        return await real_pool(func, *args, **kwargs)

    async def counted_lane(lane: ThreadLane, func: Any, *args: Any) -> Any:
        handed["%s %s" % (lane.name, getattr(func, "__name__", repr(func)))] += 1
        return await real_lane(lane, func, *args)

    monkeypatch.setattr(persist, "run_in_thread", counted)
    monkeypatch.setattr(ThreadLane, "run", counted_lane)
    chains = {ingest_site.url + "/scholarly/plos_one_article.html": "html", ingest_site.url + "/start": "pdf"}
    requests = write_requests(
        tmp_path / "r.jsonl", [{"base_url": url, "ingest_type": kind} for url, kind in chains.items()]
    )
    run_ingest(crawl, sqlite_uri, requests, tmp_path)
    results = {d["request"]["base_url"]: d for d in read_results(sqlite_uri).values()}
    assert {url: r["status"] for url, r in results.items()} == dict.fromkeys(chains, "success")
    # has_db: open_spider's catalog check; ingest-sniff: the HTML page's sub-resources
    assert {k: v for k, v in handed.items() if not k.startswith("ingest-sniff ")} == {
        "ingest-files _write_files": 2,
        "pool has_db": 1,
    }
    # and every write was made: the TEI blob and its feed line, the thumbnail, both file rows
    html_sha1, pdf_sha1 = (results[url]["file_meta"]["sha1hex"] for url in chains)
    assert [json.loads(line)["key"] for line in (tmp_path / "feed.jsonl").read_text().splitlines()] == [
        html_sha1
    ]
    blobs = tmp_path / "blobs"
    assert sorted(str(p.relative_to(blobs)) for p in blobs.rglob("*") if p.is_file()) == sorted(
        [tei_path(html_sha1), thumbnail_path(pdf_sha1)]
    )
    store = open_store(sqlite_uri)
    try:
        assert store.get("html_meta", html_sha1)["has_teixml"] is True
        for sha1hex in (html_sha1, pdf_sha1):
            assert store.get(table_name("0", "dev"), sha1_b32(sha1hex)) is not None
    finally:
        store.close()


def test_a_blob_folder_that_is_not_a_folder_fails_the_item_after_its_result_as_before(
    crawl, sqlite_uri, ingest_site, tmp_path
):
    """A blob write failing for another reason than a full disk (here the blob folder's ``html``, where
    the TEI goes, is a file, a real ``OSError``; a blob folder that is itself a file is refused before
    the run) stops that ingest's writes where it stopped them before the single hand-off: its result
    is stored, its feed line, file row and ``html_meta`` are not."""
    article = ingest_site.url + "/scholarly/plos_one_article.html"
    requests = write_requests(tmp_path / "r.jsonl", [{"base_url": article, "ingest_type": "html"}])
    blobs = tmp_path / "blobs-html-a-file"
    blobs.mkdir()
    (blobs / "html").write_bytes(b"")
    proc = run_ingest(crawl, sqlite_uri, requests, tmp_path, "INGEST_BLOB_DIR=%s" % blobs, status=1)
    assert "Error processing" in proc.stderr and " is full " not in proc.stderr
    (result,) = read_results(sqlite_uri).values()
    assert result["status"] == "success"
    assert not (tmp_path / "feed.jsonl").exists()
    store = open_store(sqlite_uri)
    try:
        sha1hex = result["file_meta"]["sha1hex"]
        assert store.get("html_meta", sha1hex) is None
        assert store.get(table_name("0", "dev"), sha1_b32(sha1hex)) is None
        (log,) = store.iter_docs("vd_log")
    finally:
        store.close()
    assert log["result"] == "FileExistsError"  # making the folder html, which is a file
