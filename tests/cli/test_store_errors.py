"""A bad or unreachable store: one line saying what is wrong and how to fix it, an honest exit status,
the run log spooled with result StoreUnavailable, no partial output."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest

from tests.feeds.events import load_events
from tests.support.faultproxy import FaultProxy
from tests.support.services import free_port, run_cli
from votersdaily.store import open_store

REFUSED = "cannot reach the store at http://127.0.0.1:%d/ (connection refused): start CouchDB or PouchDB Server there, or fix host and port in $VOTERSDAILY_STORE"
USE = "use sqlite:///path/to/file.db or http://user:password@host:5984/ in $VOTERSDAILY_STORE or --store"


def bad_stores(couchdb) -> dict[str, tuple[str, str]]:
    port = free_port()  # nothing listens there
    # Its own user: CouchDB locks a user out after 5 failed logins, so no other test shares it.
    user = "nobody-%s" % uuid.uuid4().hex[:8]
    creds = "http://%s:wrong@%s:%d/" % (user, couchdb.host, couchdb.port)
    return {
        "refused": ("http://127.0.0.1:%d/" % port, REFUSED % port),
        "credentials": (
            creds,
            "the store at http://%s:***@127.0.0.1:%d/ refused the credentials (HTTP 401): fix the user and "
            "password in $VOTERSDAILY_STORE (a server in admin party, like the PouchDB Server "
            "scripts/pouchdb_server.py starts, takes none)" % (user, couchdb.port),
        ),
        "tls": (  # https to the plain-HTTP server: "connection refused" before, "fix host and port"
            "https://%s:%d/" % (couchdb.host, couchdb.port),
            "cannot reach the store at https://%s:%d/ (TLS failed: WRONG_VERSION_NUMBER): use http:// if "
            "the server speaks plain HTTP there, else fix its certificate" % (couchdb.host, couchdb.port),
        ),
        "scheme": ("ftp://127.0.0.1/x", "store URI 'ftp://127.0.0.1/x' has an unknown scheme 'ftp': " + USE),
        "garbage": ("not a store", "store URI 'not a store' is not a URI: " + USE),
        "no host": ("http://:5984/", "store URI 'http://:5984/' names no host: " + USE),
        "ipv6": (
            "http://admin:secret@[::1:5984/",
            "store URI 'http://admin:***@[::1:5984/' is not a URI (Invalid IPv6 URL): " + USE,
        ),
    }


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("case", ["refused", "credentials", "tls"])
def test_crawl_on_a_bad_store_says_why_in_one_line_and_spools_the_run_log(cli_main, couchdb, tmp_path, case):
    uri, message = bad_stores(couchdb)[case]
    spool = tmp_path / "spool"
    proc = cli_main(
        "crawl",
        "--offline",
        "house_votes",
        "senate_votes",
        store_uri=uri,
        env={"VOTERSDAILY_SPOOL_DIR": str(spool)},
    )
    assert proc.returncode == 3
    assert proc.stdout == ""
    err = lines(proc.stderr)
    assert err[0] == "votersdaily crawl: " + message
    assert len(err) <= 3, proc.stderr  # never a wall of tracebacks
    assert err[1] == "votersdaily crawl: nothing crawled; 2 run logs (StoreUnavailable) spooled to %s" % spool
    logs = [
        json.loads(line)["doc"]
        for f in sorted(spool.glob("vd_log--*.jsonl"))
        for line in f.read_text().splitlines()
    ]
    assert sorted(d["parser_name"] for d in logs) == ["house_votes", "senate_votes"]
    for doc in logs:
        assert doc["result"] == "StoreUnavailable" and doc["parser_runtime"] == 0.0
        assert doc["error_message"] == message and doc["store_outage"]
        assert doc["source_url"].startswith("file://")  # the replayed recording, not robots.txt
        assert "wrong" not in json.dumps(doc)  # no password in what is kept


@pytest.mark.parametrize("case", ["scheme", "garbage", "no host", "ipv6"])
@pytest.mark.parametrize(
    "command", [("crawl", "--offline", "house_votes"), ("dump", "vd_events"), ("views", "push")]
)
def test_a_malformed_store_uri_is_a_usage_error(cli_main, couchdb, tmp_path, case, command):
    """A URI that cannot name a store is the user's typo (exit 2, docs/cli.md: Exit codes), not an
    unavailable store (3): one line, and nothing spooled for a store that cannot exist."""
    uri, message = bad_stores(couchdb)[case]
    spool = tmp_path / "spool"
    proc = cli_main(*command, store_uri=uri, env={"VOTERSDAILY_SPOOL_DIR": str(spool)})
    assert proc.returncode == 2, proc.stderr
    assert lines(proc.stderr) == ["votersdaily %s: %s" % (command[0], message)]
    assert not spool.exists()


@pytest.mark.parametrize(
    "command",
    [
        ("dump", "vd_events"),
        ("export", "ics"),
        ("views", "push"),
        ("site", "build", "SITE"),
        ("flush",),
    ],
)
def test_every_store_command_on_a_refused_store_is_one_line(cli_main, tmp_path, command):
    port = free_port()
    site = tmp_path / "site"
    (tmp_path / "spool").mkdir()
    (tmp_path / "spool" / "vd_events--1795000000.000000-1-0.jsonl").write_text(
        json.dumps({"db": "vd_events", "doc": {"_id": "x"}}) + "\n"
    )
    args = [str(site) if a == "SITE" else a for a in command]
    proc = cli_main(
        *args, store_uri="http://127.0.0.1:%d/" % port, env={"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}
    )
    assert proc.returncode == 3, proc.stderr
    if command == ("flush",):
        expected = "flush: store still unavailable, documents stay spooled in %s: " % (tmp_path / "spool")
    else:
        expected = "%s: " % command[0]
    assert lines(proc.stderr) == ["votersdaily " + expected + REFUSED % port]
    assert not site.exists() and not list(tmp_path.glob(".site.*"))  # no half-written site


@pytest.mark.parametrize("command", [("dump", "vd_events"), ("export", "json"), ("site", "build", "SITE")])
def test_read_commands_never_create_a_store(cli_main, tmp_path, command):
    missing = tmp_path / "nothing-here.db"
    args = [str(tmp_path / "site") if a == "SITE" else a for a in command]
    proc = cli_main(*args, store_uri="sqlite:///%s" % missing)
    assert proc.returncode == 2
    assert lines(proc.stderr) == [
        "votersdaily %s: no store at sqlite:///%s (the file does not exist): run a crawl first, or point "
        "VOTERSDAILY_STORE at your store" % (command[0], missing)
    ]
    assert not missing.exists() and not (tmp_path / "site").exists()


def test_scrapy_crawl_on_a_refused_store_spools_everything_without_a_traceback(crawl, tmp_path):
    """The run goes on, its events and run log are spooled (nothing lost), the log says what is wrong
    in one line instead of tracebacks, and the exit status says so: 4, what it scraped waits in the
    spool (as for `python -m votersdaily crawl`)."""
    spool = tmp_path / "spool"
    port = free_port()
    roll = Path(__file__).resolve().parents[2] / "votersdaily/recordings/gov/house_roll_call/roll314.xml"
    proc = crawl(
        "house_votes", roll, "http://127.0.0.1:%d/" % port, env={"VOTERSDAILY_SPOOL_DIR": str(spool)}
    )
    assert proc.returncode == 4
    assert "Traceback" not in proc.stderr and "Unhandled error" not in proc.stderr
    opened = [line for line in proc.stderr.splitlines() if "cannot be opened" in line]
    assert len(opened) == 1 and "python -m votersdaily flush" in opened[0]
    (event,) = [line for f in spool.glob("vd_events--*.jsonl") for line in f.read_text().splitlines()]
    assert json.loads(event)["doc"]["unique_key"] == "119-2-314"
    (line,) = [line for f in spool.glob("vd_log--*.jsonl") for line in f.read_text().splitlines()]
    log = json.loads(line)["doc"]
    assert log["result"] == "StoreUnavailable" and log["spooled_count"] == 1
    assert log["error_message"] == "GET http://127.0.0.1:%d/vd_events failed: ConnectionError" % port
    assert log["source_url"] == "https://clerk.house.gov/evs/2026/roll314.xml" and log["store_outage"]


def test_a_web_server_that_is_not_couchdb(cli_main, site):
    proc = cli_main("views", "push", store_uri=site.url + "/")
    assert proc.returncode == 3
    assert lines(proc.stderr) == [
        "votersdaily views: %s/ does not answer like CouchDB (GET /_session: HTTP 404): check the URL in "
        "$VOTERSDAILY_STORE" % site.url
    ]


def test_a_live_crawl_on_an_unreachable_store_names_the_listing_it_would_have_read(cli_main, tmp_path):
    """Without --offline the run log's source is where the spider would have started: house_votes'
    listing is a property (the current year's index), read from an instance, never from the class."""
    spool = tmp_path / "spool"
    proc = cli_main(
        "crawl",
        "house_votes",
        store_uri="http://127.0.0.1:%d/" % free_port(),  # nothing listens there: nothing is fetched
        env={"VOTERSDAILY_SPOOL_DIR": str(spool)},
    )
    assert proc.returncode == 3, proc.stderr
    [doc] = [
        json.loads(line)["doc"]
        for f in sorted(spool.glob("vd_log--*.jsonl"))
        for line in f.read_text().splitlines()
    ]
    assert doc["result"] == "StoreUnavailable"
    assert doc["source_url"].startswith("https://clerk.house.gov/evs/"), doc["source_url"]
    assert doc["source_url"].endswith("/index.asp"), doc["source_url"]


@pytest.mark.parametrize("fmt", ["ics", "json"])
def test_a_store_failing_half_way_through_an_export_leaves_no_partial_feed(cli_main, couchdb, fmt):
    """The feed's head is written before its events are read: a store that stops answering then (here
    a proxy that loses the answers of the first view query, and of the one retry a read gets) must not
    leave a truncated feed behind."""
    couchdb.reset()
    store = open_store(couchdb.url)
    load_events(store)
    store.close()
    proxy = FaultProxy(couchdb.port, couchdb.host).start()
    try:
        proxy.lose_answer(b"/_view/", times=2)
        proc = cli_main("export", fmt, store_uri=couchdb.url_at(proxy.port))
    finally:
        proxy.stop()
    assert proxy.lost == 2
    assert proc.returncode == 3 and proc.stdout == ""
    (line,) = lines(proc.stderr)
    assert line.startswith("votersdaily export: GET ") and line.endswith("failed: ConnectionError")


@pytest.mark.parametrize("case", ["scheme", "garbage", "no host", "ipv6"])
def test_scrapy_crawl_with_a_malformed_store_uri_is_one_line_before_any_work(couchdb, tmp_path, case):
    """Before: the pipelines met the URI once the crawl had started: Scrapy's "Task exception was
    never retrieved" traceback, exit 1 (a bad IPv6 literal printed the password)."""
    uri, message = bad_stores(couchdb)[case]
    roll = Path(__file__).resolve().parents[2] / "votersdaily/recordings/gov/house_roll_call/roll314.xml"
    proc = run_cli(
        [sys.executable, "-m", "scrapy", "crawl", "house_votes", "-a", "url=" + roll.as_uri()],
        uri,
        env={"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")},
    )
    assert proc.returncode == 2
    assert proc.stderr == "scrapy crawl: %s\n" % message
    assert not (tmp_path / "spool").exists()
