"""``python -m votersdaily ingest load-catalog|enqueue``, then ``scrapy crawl ingest -a requests=store``
reading what was queued, with match0 against the loaded catalog; on both store backends. The ``ingest``
commands run no reactor: they call the CLI's ``main(argv)`` in this process (tests/support/cli_main.py)."""

from __future__ import annotations

import json

from tests.support.cli_main import run_main
from votersdaily.store import open_store

from .conftest import read_results


def test_catalog_and_queue_feed_a_crawl(crawl, store_uri, ingest_site, tmp_path):
    site = ingest_site
    catalog = tmp_path / "works.jsonl"
    catalog.write_text(
        "\n".join(
            [
                json.dumps({"doi": "10.5555/CLI.Paper", "title": "A paper queued from the command line"}),
                json.dumps({"doi": "10.5555/cli.other", "title": "Another work"}),
                json.dumps({"title": "no DOI here"}),
                "{not json",
            ]
        )
        + "\n"
    )
    proc = run_main("ingest", "load-catalog", str(catalog), store_uri=store_uri)
    assert proc.returncode == 1, proc.stderr  # bad lines are an error, the good ones are loaded
    assert "works.jsonl:3: catalog record without a DOI" in proc.stderr
    assert "works.jsonl:4: not JSON" in proc.stderr
    assert "loaded 2 works into ingest_catalog" in proc.stdout

    queue = tmp_path / "requests.jsonl"
    queue.write_text(
        "\n".join(
            [
                json.dumps(
                    {
                        "base_url": site.url + "/start",
                        "ingest_type": "file",
                        "link_source": "doi",
                        "link_source_id": "10.5555/cli.paper",
                        "ext_ids": {"doi": "10.5555/cli.paper"},
                    }
                ),
                json.dumps({"base_url": site.url + "/article", "ingest_type": "html"}),
                json.dumps({"ingest_type": "pdf"}),
            ]
        )
        + "\n"
    )
    proc = run_main(
        "ingest", "enqueue", str(queue), "--url", site.url + "/landing-nopdf", store_uri=store_uri
    )
    assert proc.returncode == 1 and "requests.jsonl:3: ingest request without a base_url" in proc.stderr
    assert "queued 3 ingest requests in ingest_requests" in proc.stdout and "new=3" in proc.stdout
    again = run_main("ingest", "enqueue", "--url", site.url + "/landing-nopdf", store_uri=store_uri)
    assert again.returncode == 0 and "unchanged=1" in again.stdout  # queueing twice keeps one request

    store = open_store(store_uri)
    try:
        queued = {doc["base_url"]: doc for doc in store.iter_docs("ingest_requests")}
        assert (
            store.get("ingest_catalog", "doi:10.5555/cli.paper")["title"]
            == "A paper queued from the command line"
        )
    finally:
        store.close()
    assert set(queued) == {site.url + "/start", site.url + "/article", site.url + "/landing-nopdf"}
    assert queued[site.url + "/start"]["ingest_type"] == "pdf"  # legacy "file" rewritten, as upstream

    proc = crawl(
        "ingest",
        None,
        store_uri,
        "-a",
        "requests=store",
        "-s",
        "INGEST_ALLOW_PRIVATE=True",
        "-s",
        "INGEST_ALLOWED_HOSTS=127.0.0.1",
        "-s",
        "INGEST_BLOB_DIR=%s" % (tmp_path / "blobs"),
        "-s",
        "INGEST_TEIXML_FEED=%s" % (tmp_path / "feed.jsonl"),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = {doc["request"]["base_url"]: doc for doc in read_results(store_uri).values()}
    assert results[site.url + "/start"]["status"] == "success"
    assert results[site.url + "/start"]["request"]["link_source_id"] == "10.5555/cli.paper"
    assert results[site.url + "/article"]["status"] == "success"
    assert results[site.url + "/landing-nopdf"]["status"] == "no-pdf-link"
    store = open_store(store_uri)
    try:
        from votersdaily.ingest.filemeta import sha1_b32

        row = store.get(
            "wbgrp-journal-extract-0-dev", sha1_b32(results[site.url + "/start"]["file_meta"]["sha1hex"])
        )
    finally:
        store.close()
    assert row["match0"]["mstatus"] == "matched" and row["match0"]["doi"] == "10.5555/cli.paper"


def test_bad_catalog_lines_never_take_the_good_ones_down(sqlite_uri, tmp_path):
    """Before: a line that is not UTF-8 (bytes of a binary file) or a title that is not text ended
    the command in a traceback with nothing loaded, and a 50 MB line was read whole and stored."""
    catalog = tmp_path / "works.jsonl"
    good = json.dumps({"doi": "10.5555/cli.paper", "title": "A paper queued from the command line"})
    with open(catalog, "wb") as f:
        f.write(b'{"doi": "10.5555/latin1", "title": "caf\xe9"}\n')  # Latin-1, not UTF-8
        f.write(json.dumps({"doi": "10.5555/number", "title": 5}).encode() + b"\n")
        f.write(json.dumps({"doi": 10.5555, "title": "a DOI that is a number"}).encode() + b"\n")
        f.write(json.dumps({"doi": "10.5555/huge", "title": "x" * 200_000}).encode() + b"\n")
        f.write(good.encode() + b"\n")
    proc = run_main("ingest", "load-catalog", str(catalog), store_uri=sqlite_uri)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [
        "votersdaily ingest: %s:1: line is not UTF-8: 'utf-8' codec can't decode byte 0xe9 in position 39: "
        "invalid continuation byte" % catalog,
        "votersdaily ingest: %s:2: catalog record whose title is not text: '5'" % catalog,
        'votersdaily ingest: %s:3: catalog record without a DOI: {"doi": 10.5555, "title": "a DOI that is a '
        'number"}' % catalog,
        "votersdaily ingest: %s:4: line is longer than 65536 bytes" % catalog,
    ]
    assert "loaded 1 works into ingest_catalog" in proc.stdout
    store = open_store(sqlite_uri)
    try:
        assert sorted(d["_id"] for d in store.iter_docs("ingest_catalog")) == [
            "doi:10.5555/cli.paper",
            "title:a paper queued from the command line",
        ]
    finally:
        store.close()
