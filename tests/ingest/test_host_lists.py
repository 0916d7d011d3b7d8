"""The ingest's host lists take ``host:port``: ``INGEST_PRIVATE_HOSTS`` opens one
port of a private host and no other, ``INGEST_ALLOWED_HOSTS=127.0.0.1:<port>`` confines a run to that
port (it used to refuse everything), and an entry that can never match stops ``scrapy crawl`` before
it starts (exit 2, one line naming the setting)."""

from __future__ import annotations

import sys

import pytest

from tests.ingest.conftest import read_results, scholarly, write_requests
from tests.support.services import LocalSite, run_cli
from votersdaily.store import open_store


@pytest.fixture
def other_port():
    """A second local site on another loopback port: what a hostile page points the ingest at."""
    other = LocalSite().start()
    other.mount("/scholarly/", scholarly("."))
    yield other
    other.stop()


def _requests(site, other, tmp_path):
    site.route("/to-other-port", status=302, headers={"Location": other.url + "/scholarly/dummy.pdf"})
    site.route(
        "/landing-other-port",
        '<html><head><meta name="citation_pdf_url" content="%s/scholarly/dummy.pdf"></head></html>'
        % other.url,
        content_type="text/html; charset=utf-8",
    )
    urls = [
        site.url + "/start",  # redirects to a landing page, then the PDF: all on the allowed port
        site.url + "/to-other-port",
        site.url + "/landing-other-port",
        other.url + "/scholarly/dummy.pdf",
    ]
    return urls, write_requests(tmp_path / "r.jsonl", [{"base_url": u, "ingest_type": "pdf"} for u in urls])


def _ingest(crawl, store_uri, requests, tmp_path, *settings, status: int = 0):
    """``status``: `scrapy crawl`'s exit status (1: the run failed, e.g. PrivateAddressRefused)."""
    extra = ["-a", "requests=%s" % requests, "-s", "INGEST_BLOB_DIR=%s" % (tmp_path / "blobs")]
    for setting in settings:
        extra += ["-s", setting]
    proc = crawl("ingest", None, store_uri, *extra)
    assert proc.returncode == status, proc.stderr[-3000:]
    return {d["request"]["base_url"]: d["status"] for d in read_results(store_uri).values()}


def test_private_hosts_open_one_port_and_no_other(crawl, sqlite_uri, ingest_site, other_port, tmp_path):
    urls, requests = _requests(ingest_site, other_port, tmp_path)
    statuses = _ingest(
        crawl,
        sqlite_uri,
        requests,
        tmp_path,
        "INGEST_PRIVATE_HOSTS=127.0.0.1:%d" % ingest_site.port,
        status=1,
    )
    assert statuses == {
        urls[0]: "success",
        urls[1]: "blocked-private-address",
        urls[2]: "blocked-private-address",
        urls[3]: "blocked-private-address",
    }
    assert other_port.hits == {}, "nothing reached the other port"


def test_allowed_hosts_with_a_port_confine_the_run_to_it(
    crawl, sqlite_uri, ingest_site, other_port, tmp_path
):
    urls, requests = _requests(ingest_site, other_port, tmp_path)
    statuses = _ingest(
        crawl,
        sqlite_uri,
        requests,
        tmp_path,
        "INGEST_ALLOW_PRIVATE=True",
        "INGEST_ALLOWED_HOSTS=127.0.0.1:%d" % ingest_site.port,
    )
    assert statuses == {
        urls[0]: "success",
        urls[1]: "skip-host-not-allowed",
        urls[2]: "skip-host-not-allowed",
        urls[3]: "skip-host-not-allowed",
    }
    assert other_port.hits == {}


@pytest.mark.parametrize(
    "spider, setting",
    [
        ("ingest", "INGEST_PRIVATE_HOSTS=127.0.0.1:99999"),
        ("laundromat", "LAUNDROMAT_ALLOWED_HOSTS=http://x/"),
    ],
)
def test_an_entry_that_can_never_match_stops_scrapy_crawl_with_exit_2(site, tmp_path, spider, setting):
    db = tmp_path / "never.db"
    proc = run_cli(
        [sys.executable, "-m", "scrapy", "crawl", spider, "-a", "url=%s/start" % site.url, "-s", setting],
        "sqlite:///%s" % db,
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    name, _, value = setting.partition("=")
    (line,) = proc.stderr.strip().splitlines()  # before any work: Scrapy's start-up not even logged
    assert line.startswith("scrapy crawl: %s: %r " % (name, value)), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert site.hits == {} and not db.exists(), "nothing fetched, nothing stored"


def test_an_ingest_refused_for_a_private_address_is_a_warning_and_fails_the_run(
    crawl, sqlite_uri, ingest_site, tmp_path
):
    """A refused private address fails the run: it used to end ``success`` with the refusal at INFO."""
    url = ingest_site.url + "/start"
    proc = crawl("ingest", url, sqlite_uri, "-s", "INGEST_BLOB_DIR=%s" % (tmp_path / "blobs"))
    assert proc.returncode == 1, proc.stderr[-3000:]  # the run failed (PrivateAddressRefused)
    assert read_results(sqlite_uri)["pdf:" + url]["status"] == "blocked-private-address"
    warnings = [line for line in proc.stderr.splitlines() if "WARNING" in line and "refused" in line]
    assert len(warnings) == 1 and url in warnings[0] and "INGEST_ALLOW_PRIVATE is off" in warnings[0]
    store = open_store(sqlite_uri)
    (log,) = store.iter_docs("vd_log")
    store.close()
    assert log["result"] == "PrivateAddressRefused"
    assert [(e["exception"], e["url"]) for e in log["errors"]] == [("PrivateAddressRefused", url)]
    assert "127.0.0.1 is a private/loopback/link-local address" in log["error_message"]
    assert ingest_site.hits == {}
