"""End to end with the other configurations: PouchDB store + WARC + GROBID + store blobs + catalog
match; tight limits and the strict sub-resource policy; the SSRF guard with its default (off)."""

from __future__ import annotations

import gzip
import hashlib
import json
import socket

from warcio.archiveiterator import ArchiveIterator

from votersdaily.ingest.filemeta import sha1_b32
from votersdaily.ingest.warc import read_record
from votersdaily.store import open_store

from .conftest import STALL, read_results, run_ingest, scholarly, write_requests

TEI = "23b29ea36382680716be08fc71aa81bd226e8a85.xml"


def test_pouchdb_warc_grobid_catalog(crawl, couch_uri, ingest_site, tmp_path):
    site = ingest_site
    tei = scholarly(TEI).read_bytes()
    posted = []

    def grobid(handler):
        posted.append(handler.request_body)
        return tei

    site.route("/grobid/api/processFulltextDocument", grobid, content_type="application/xml")
    from .conftest import article

    site.route(
        "/titled",
        article("Local article", 1500, '<meta name="citation_title" content="Local article">'),
        content_type="text/html",
    )
    catalog = tmp_path / "catalog.jsonl"
    catalog.write_text(
        "\n".join(
            json.dumps(w)
            for w in [
                # our test catalog: the PLOS DOI and title as printed on the page; a title shared by two works
                {
                    "doi": "10.1371/journal.pone.0213978",
                    "title": "Assessment on reticuloendotheliosis virus infection",
                },
                {"doi": "10.5555/test.railway", "title": "Dynamics of Railway Freight Vehicles"},
                {"doi": "10.5555/test.a", "title": "Local article"},
                {"doi": "10.5555/test.b", "title": "Local article"},
            ]
        )
        + "\n"
    )
    requests = write_requests(
        tmp_path / "r.jsonl",
        [
            {"base_url": site.url + "/start", "ingest_type": "pdf"},
            {"base_url": site.url + "/scholarly/plos_one_article.html", "ingest_type": "html"},
            {"base_url": site.url + "/article", "ingest_type": "html", "ext_ids": {}},
            {"base_url": site.url + "/titled", "ingest_type": "html"},
        ],
    )
    warcs = tmp_path / "warcs"
    # small WARC files: the writer thread rotates files while records arrive concurrently
    run_ingest(
        crawl,
        couch_uri,
        requests,
        tmp_path,
        "INGEST_WARC_ENABLED=True",
        "INGEST_WARC_DIR=%s" % warcs,
        "INGEST_WARC_MAX_SIZE=30000",
        "GROBID_URL=%s/grobid" % site.url,
        "INGEST_BLOB_BACKEND=store",
        "INGEST_CATALOG_JSONL=%s" % catalog,
    )
    results = {d["request"]["base_url"]: d for d in read_results(couch_uri).values()}
    pdf = results[site.url + "/start"]
    assert pdf["status"] == "success"
    # GROBID got the PDF as multipart field "input"; its TEI is read into metadata, not echoed
    assert posted and b'name="input"' in posted[0] and scholarly("dummy.pdf").read_bytes() in posted[0]
    assert pdf["grobid"]["status"] == "success" and pdf["grobid"]["status_code"] == 200
    assert pdf["grobid"]["grobid_version"] == "0.5.1-SNAPSHOT"  # <application version=...> in the TEI
    # sandcrawler's shape: fatcat_release (no biblio-glutton idno in this TEI) and grobid_version at
    # the top, once; metadata.biblio; the TEI's xml:lang as language_code
    assert "fatcat_release" in pdf["grobid"] and pdf["grobid"]["fatcat_release"] is None
    metadata = pdf["grobid"]["metadata"]
    assert "grobid_version" not in metadata and metadata["language_code"] == "en"
    assert metadata["biblio"]["title"] == "DYNAMICS OF RAILWAY FREIGHT VEHICLES"
    assert metadata["biblio"]["authors"] and "abstract" not in metadata
    assert "tei_xml" not in pdf["grobid"]
    # WARC: cdx points at a real record holding the PDF
    cdx = pdf["cdx"]
    url, status, payload = read_record(warcs, cdx["warc_path"], cdx["warc_offset"])
    assert url == site.url + "/scholarly/dummy.pdf" and status == "200"
    assert payload == scholarly("dummy.pdf").read_bytes() and cdx["warc_csize"] > 0
    store = open_store(couch_uri)
    try:
        table = "wbgrp-journal-extract-0-dev"
        row = store.get(table, sha1_b32(pdf["file_meta"]["sha1hex"]))
        assert row["grobid0"]["status_code"] == 200 and row["grobid0"]["quality"] == "good"
        assert gzip.decompress(store.get_attachment(table, row["_id"], row["grobid0"]["tei_xml"])) == tei
        tei_json = json.loads(
            gzip.decompress(store.get_attachment(table, row["_id"], row["grobid0"]["tei_json"]))
        )
        assert tei_json["title"] == "DYNAMICS OF RAILWAY FREIGHT VEHICLES" and tei_json["body"]
        f = json.loads(row["f"]["c"])
        assert f["f"] == cdx["warc_path"] and f["o"] == cdx["warc_offset"]
        assert f["i"] == warc_record_id(warcs, cdx["warc_path"], cdx["warc_offset"]) and f["i"].startswith(
            "<urn:uuid:"
        )
        # the WARC files hold the crawled web only, never the answers of our own GROBID
        archived = [
            record.rec_headers.get_header("WARC-Target-URI")
            for path in warcs.glob("*.warc.gz")
            for record in ArchiveIterator(open(path, "rb"))
            if record.rec_type == "response"
        ]
        assert site.url + "/scholarly/dummy.pdf" in archived and not [u for u in archived if "/grobid/" in u]
        file_cdx = json.loads(row["file"]["cdx"])
        assert file_cdx["offset"] == str(cdx["warc_offset"]) and file_cdx["c_size"] == str(cdx["warc_csize"])
        assert row["match0"]["mstatus"] == "matched" and row["match0"]["doi"] == "10.5555/test.railway"
        plos = results[site.url + "/scholarly/plos_one_article.html"]
        plos_row = store.get(table, sha1_b32(plos["file_meta"]["sha1hex"]))
        assert (
            plos_row["match0"]["mstatus"] == "matched"
            and plos_row["match0"]["doi"] == "10.1371/journal.pone.0213978"
        )
        local = results[site.url + "/article"]
        titled = results[site.url + "/titled"]
        titled_row = store.get(table, sha1_b32(titled["file_meta"]["sha1hex"]))
        assert titled_row["match0"]["mstatus"] == "ambiguous"
        assert json.loads(titled_row["match0"]["minfo"])["candidates"] == ["10.5555/test.a", "10.5555/test.b"]
        # TEI blob as a CouchDB attachment
        sha1 = local["file_meta"]["sha1hex"]
        blob = store.get_attachment("sandcrawler", "html/%s.tei.xml" % sha1, "blob")
        assert blob and b"<TEI" in blob
        by_url = {r["url"]: r for r in local["html_resources"]}
        png = by_url[site.url + "/res/fig1.png"]
        assert png["warc_path"] and png["warc_offset"] >= 0
        # every record location of every result holds that URL's bytes (offsets exact across files)
        located = [
            (r["url"], r)
            for res in results.values()
            for r in res.get("html_resources") or []
            if r.get("warc_path")
        ]
        located += [(res["cdx"]["url"], res["cdx"]) for res in results.values() if res.get("cdx")]
        assert len(located) > 10 and len({where["warc_path"] for _, where in located}) > 1
        for url, where in located:
            found_url, _, payload = read_record(warcs, where["warc_path"], where["warc_offset"])
            assert found_url == url
            if where.get("sha1hex"):
                assert hashlib.sha1(payload).hexdigest() == where["sha1hex"]
    finally:
        store.close()


def test_grobid_failure_is_recorded_not_fatal(crawl, sqlite_uri, ingest_site, tmp_path):
    """GROBID answering 503: the PDF ingest still succeeds; the failure is on ``grobid`` and the file
    row's grobid0 (quality ``bad``)."""
    site = ingest_site
    site.route(
        "/grobid-down/api/processFulltextDocument",
        b"GROBID is overloaded",
        status=503,
        content_type="text/plain",
    )
    requests = write_requests(tmp_path / "r.jsonl", [{"base_url": site.url + "/start", "ingest_type": "pdf"}])
    run_ingest(crawl, sqlite_uri, requests, tmp_path, "GROBID_URL=%s/grobid-down" % site.url)
    [pdf] = read_results(sqlite_uri).values()
    assert (pdf["status"], pdf["hit"]) == ("success", True)
    assert pdf["grobid"]["status"] == "error" and pdf["grobid"]["status_code"] == 503
    assert "overloaded" in pdf["grobid"]["error_msg"]
    store = open_store(sqlite_uri)
    try:
        row = store.get("wbgrp-journal-extract-0-dev", sha1_b32(pdf["file_meta"]["sha1hex"]))
    finally:
        store.close()
    assert row["grobid0"]["status_code"] == 503 and row["grobid0"]["quality"] == "bad"
    assert "tei_xml" not in row["grobid0"]


def test_limits_and_strict_resources(crawl, sqlite_uri, ingest_site, tmp_path):
    site = ingest_site
    requests = write_requests(
        tmp_path / "r.jsonl",
        [
            {"base_url": site.url + "/scholarly/dummy.pdf", "ingest_type": "pdf"},
            {"base_url": site.url + "/bomb", "ingest_type": "html"},
            {"base_url": site.url + "/article", "ingest_type": "html"},
            {"base_url": site.url + "/hops/0", "ingest_type": "pdf"},
            "not an object",
            {"ingest_type": "pdf"},
            {"base_url": site.url + "/x", "ingest_type": "dataset"},
        ],
    )
    with open(requests, "a") as handle:
        handle.write("{broken json\n")
    proc = run_ingest(
        crawl,
        sqlite_uri,
        requests,
        tmp_path,
        "INGEST_MAX_BODY_BYTES=12000",
        "INGEST_STRICT_RESOURCES=True",
        "INGEST_MAX_HOPS=3",
    )
    results = {d["request"]["base_url"]: d for d in read_results(sqlite_uri).values()}
    too_large = results[site.url + "/scholarly/dummy.pdf"]
    assert too_large["status"] == "body-too-large" and "13264 bytes announced" in too_large["error_message"]
    term = too_large["terminal"]  # the URL fetched, its status and date (stopped after the headers)
    assert (term["terminal_url"], term["terminal_status_code"]) == (site.url + "/scholarly/dummy.pdf", 200)
    assert len(term["terminal_dt"]) == 14
    assert results[site.url + "/bomb"]["status"] == "body-too-large"  # gzip bomb stopped while decoding
    article = results[site.url + "/article"]
    assert article["status"] == "html-resource-no-capture"
    assert article["error_message"] == "HTML sub-resource not found: %s/res/missing.png" % site.url
    # INGEST_MAX_HOPS=3: /hops/2 is the third URL and still fetched, /hops/3 only recorded
    assert len(results[site.url + "/hops/0"]["hops"]) == 4 and site.hits.get("/hops/3") is None
    assert len(results) == 4  # bad requests are logged, never stored half-made
    assert proc.stderr.count("bad ingest request") == 4
    store = open_store(sqlite_uri)
    try:
        log = next(iter(store.iter_docs("vd_log")))
    finally:
        store.close()
    # 4 bad requests among 8: the run succeeds (every good request has its result) and lists them
    assert log["result"] == "success" and "error_count" not in log
    assert log["rejected_count"] == 4
    assert [r["where"] for r in log["rejected"]] == ["%s:%d" % (requests, n) for n in (5, 6, 7, 8)]
    assert {r["exception"] for r in log["rejected"]} == {"IngestRequestError"}
    assert "dataset" in log["rejected"][2]["message"] and "not JSON" in log["rejected"][3]["message"]


def test_run_fails_when_no_request_is_usable(crawl, sqlite_uri, ingest_site, tmp_path):
    """A requests file of JSON objects none of which is a request fails the run; one that is not
    there is refused before the run (tests/cli/test_typos.py), no run log."""
    requests = write_requests(tmp_path / "r.jsonl", [{"ingest_type": "pdf"}, "not an object"])
    run_ingest(crawl, sqlite_uri, requests, tmp_path, status=1)
    run_ingest(crawl, sqlite_uri, tmp_path / "missing.jsonl", tmp_path, status=2)
    store = open_store(sqlite_uri)
    try:
        logs = sorted(store.iter_docs("vd_log"), key=lambda d: d["access_datetime"])
        assert "ingest_file_result" not in store.list_dbs() or not store.count("ingest_file_result")
    finally:
        store.close()
    assert [log["result"] for log in logs] == ["IngestRequestError"]
    assert logs[0]["error_count"] == 2


def test_private_addresses_refused_by_default(crawl, sqlite_uri, ingest_site, tmp_path):
    site = ingest_site
    host = socket.gethostname()
    urls = [
        site.url + "/start",
        "http://localhost:%d/start" % site.port,
        "http://[::1]:%d/x" % site.port,
        "http://%s:%d/start" % (host, site.port),
    ]
    requests = write_requests(tmp_path / "r.jsonl", [{"base_url": u, "ingest_type": "pdf"} for u in urls])
    extra = ["-a", "requests=%s" % requests, "-s", "INGEST_BLOB_DIR=%s" % (tmp_path / "b")]
    proc = crawl("ingest", None, sqlite_uri, *extra)
    assert proc.returncode == 1, proc.stderr[-3000:]  # the run failed: PrivateAddressRefused
    results = {d["request"]["base_url"]: d for d in read_results(sqlite_uri).values()}
    for url in urls[:3]:
        assert results[url]["status"] == "blocked-private-address", results[url]
    # a name that resolves (DNS / hosts file) to a private address is refused after resolution
    addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    from votersdaily.plumbing.address_policy import is_public

    if not all(is_public(a) for a in addresses):
        assert results[urls[3]]["status"] == "blocked-private-address"
    assert (
        site.hits.get("/start") is None and site.hits.get("/robots.txt") is None
    )  # nothing reached the site


def test_timeouts(crawl, sqlite_uri, ingest_site, tmp_path):
    """``timeout``: the ingest's own deadline (INGEST_TIMEOUT) ends it, whether a hop or a
    sub-resource is what stalls; ``read-timeout``: one download took longer than DOWNLOAD_TIMEOUT.

    The deadline (5 s) is far from both sides: the stalls answer after STALL (7 s), and a healthy ingest
    (a page, four sub-resources, an extraction in the worker pool) has room when the machine is loaded
    (with a 1 s deadline it timed out under load)."""
    site = ingest_site
    requests = write_requests(
        tmp_path / "r.jsonl",
        [
            {"base_url": site.url + "/slow-redirect", "ingest_type": "pdf"},
            {"base_url": site.url + "/slow-resources", "ingest_type": "html"},
            {"base_url": site.url + "/article", "ingest_type": "html"},
        ],
    )
    deadline = 5
    assert deadline < STALL < 10
    run_ingest(crawl, sqlite_uri, requests, tmp_path, "INGEST_TIMEOUT=%d" % deadline, "DOWNLOAD_TIMEOUT=10")
    results = {d["request"]["base_url"]: d for d in read_results(sqlite_uri).values()}
    slow_hop = results[site.url + "/slow-redirect"]
    assert slow_hop["status"] == "timeout" and slow_hop["hit"] is False, slow_hop.get("error_message")
    assert "INGEST_TIMEOUT (%d s)" % deadline in slow_hop["error_message"]
    slow_res = results[site.url + "/slow-resources"]
    # the page itself was fetched; its stalled image (STALL < DOWNLOAD_TIMEOUT) did not hold it up
    assert slow_res["status"] == "timeout", slow_res.get("error_message")
    assert "sub-resources" in slow_res["error_message"] and "html_resources" not in slow_res
    assert results[site.url + "/article"]["status"] == "success"

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = "http://127.0.0.1:%d/paper.pdf" % probe.getsockname()[1]
    stalled = write_requests(
        tmp_path / "s.jsonl",
        [{"base_url": site.url + "/stall", "ingest_type": "pdf"}, {"base_url": closed, "ingest_type": "pdf"}],
    )
    run_ingest(crawl, sqlite_uri, stalled, tmp_path, "DOWNLOAD_TIMEOUT=1", "RETRY_ENABLED=False")
    results = read_results(sqlite_uri)
    result = results["pdf:%s/stall" % site.url]
    assert result["status"] == "read-timeout" and "TimeoutError" in result["error_message"]
    assert result["terminal"]["terminal_url"] == site.url + "/stall"
    assert results["pdf:%s" % closed]["status"] == "connection-refused"


def test_sub_resources_keep_the_per_domain_concurrency(crawl, sqlite_uri, ingest_site, tmp_path):
    """A page's sub-resources are handed to the downloader only as it has room, so the site never
    sees more simultaneous requests than CONCURRENT_REQUESTS_PER_DOMAIN (Scrapy's downloader would
    otherwise start a whole burst at once)."""
    import threading
    import time

    from .conftest import PNG, article

    site = ingest_site
    lock, now, peak = threading.Lock(), [0], [0]

    def slow_png(handler):
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        time.sleep(0.05)
        with lock:
            now[0] -= 1
        return PNG

    for i in range(3):
        site.route(
            "/burst/%d" % i,
            article(
                "Burst %d" % i, 1500, "", "".join('<img src="/burst/%d/%d.png">' % (i, k) for k in range(12))
            ),
            content_type="text/html",
        )
        for k in range(12):
            site.route("/burst/%d/%d.png" % (i, k), slow_png, content_type="image/png")
    requests = write_requests(
        tmp_path / "r.jsonl",
        [{"base_url": site.url + "/burst/%d" % i, "ingest_type": "html"} for i in range(3)],
    )
    run_ingest(crawl, sqlite_uri, requests, tmp_path, "CONCURRENT_REQUESTS_PER_DOMAIN=4")
    results = read_results(sqlite_uri).values()
    assert [r["status"] for r in results] == ["success"] * 3
    assert all(
        len(r["html_resources"]) == 12 and {x["status_code"] for x in r["html_resources"]} == {200}
        for r in results
    )
    assert 1 < peak[0] <= 4, peak[0]


def warc_record_id(folder, name: str, offset: int) -> str:
    with open(folder / name, "rb") as fh:
        fh.seek(offset)
        return next(iter(ArchiveIterator(fh))).rec_headers.get_header("WARC-Record-ID")


def test_block_lists_from_settings(crawl, sqlite_uri, ingest_site, tmp_path):
    """``*_EXTRA`` settings add to the built-in block lists (a redirect into a listed URL is never
    fetched; sub-resources of a listed host are never fetched)."""
    site = ingest_site
    requests = write_requests(
        tmp_path / "r.jsonl",
        [
            {"base_url": site.url + "/start", "ingest_type": "pdf"},
            {"base_url": site.url + "/article", "ingest_type": "html"},
        ],
    )
    run_ingest(
        crawl,
        sqlite_uri,
        requests,
        tmp_path,
        "INGEST_URL_BLOCKLIST_EXTRA=/landing-pdf",
        "INGEST_RESOURCE_DOMAIN_BLOCKLIST_EXTRA=127.0.0.1",
    )
    results = {d["request"]["base_url"]: d for d in read_results(sqlite_uri).values()}
    start = results[site.url + "/start"]
    assert start["status"] == "skip-url-blocklist" and site.hits.get("/landing-pdf") is None
    article = results[site.url + "/article"]
    assert article["status"] == "success" and article["html_resources"] == []
    assert site.hits.get("/res/style.css") is None and site.hits.get("/res/fig1.png") is None
