"""The spool keeps what a store did not take, for that store only, whole, and says what it could not
keep, and the crawl summary's ``spooled`` column and exit status 4 that say so.

Every failure is real: a store port where nothing listens yet, a store that answers the command's
check and then stops (a loopback proxy that closes its port, ``tests/support/faultproxy.py``), a real
PouchDB Server refusing a wrong password (401), a loopback server answering 403 or 503 as CouchDB does,
and a spool folder on a real full filesystem (a 64 KiB tmpfs: root only).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import requests

from tests.support.cli_main import run_main
from tests.support.faultproxy import FaultProxy
from tests.support.services import REPO, PouchDBServer, cli_environment, free_port, run_cli
from votersdaily import schema
from votersdaily.recordings import HERE as RECORDINGS
from votersdaily.spiders.house_floor import HouseFloorSpider
from votersdaily.store import open_store
from votersdaily.store.identity import identity_of, store_identity, store_key
from votersdaily.store.spool import Spool, process_start

ROLL = RECORDINGS / "gov/house_roll_call/roll314.xml"
#: What the store has to go through quickly in a test (the defaults wait 31 s before spooling).
FAST_RETRIES = ("-s", "VOTERSDAILY_STORE_RETRY_TIMES=1", "-s", "VOTERSDAILY_STORE_RETRY_BACKOFF=0.1")


def spooled_records(folder: Path) -> list[dict]:
    """Every record of every spool file in ``folder`` (a line that is not whole JSON fails here)."""
    return [
        json.loads(line)
        for path in sorted(folder.glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]


def summary(stdout: str) -> dict[str, dict[str, str]]:
    """The rows of ``crawl``'s summary table by spider."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    header = re.split(r"\s{2,}", lines[0].strip())
    rows = [dict(zip(header, re.split(r"\s{2,}", line.strip()), strict=True)) for line in lines[2:]]
    return {row["spider"]: row for row in rows}


def crawl_offline_through(cli, proxy: FaultProxy, spool: Path, *spiders: str):
    """``python -m votersdaily crawl --offline`` into the store behind ``proxy`` (stopped after)."""
    try:
        return cli(
            "crawl",
            "--offline",
            *spiders,
            *FAST_RETRIES,
            store_uri=proxy.url,
            env={"VOTERSDAILY_SPOOL_DIR": str(spool)},
        )
    finally:
        proxy.stop()


def other_port(taken: int) -> int:
    """A free port that is not ``taken`` (a port nothing is bound to yet may be handed out again)."""
    port = free_port()
    while port == taken:
        port = free_port()
    return port


def docs(uri: str, db: str) -> list[dict]:
    store = open_store(uri)
    try:
        return list(store.iter_docs(db)) if db in store.list_dbs() else []
    finally:
        store.close()


# -- item 2: a spool knows its store -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("http://admin:secret@127.0.0.1:5984", "http://127.0.0.1:5984/"),
        ("http://LOCALHOST:5984/", "http://127.0.0.1:5984"),
        ("http://[::1]:5984/", "http://localhost:5984/"),
        ("http://[::ffff:127.0.0.1]:5984//", "http://127.0.0.1:5984/"),
        ("HTTP://Couch.Example.:80/db/../", "http://couch.example/"),
        ("https://couch.example/prefix/%7Euser/", "https://couch.example:443/prefix/~user"),
    ],
)
def test_one_store_spelled_two_ways_is_one_store(one, other):
    assert store_identity(one) == store_identity(other)
    assert "secret" not in store_identity(one) and "admin" not in store_identity(one)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("http://127.0.0.1:5984/", "http://127.0.0.1:5985/"),
        ("http://127.0.0.1:5984/", "https://127.0.0.1:5984/"),
        ("http://127.0.0.1:5984/", "http://127.0.0.2:5984/"),
        ("http://couch.example/a/", "http://couch.example/b/"),
        ("http://127.0.0.1:5984/", "sqlite:///votersdaily.db"),
    ],
)
def test_two_stores_never_share_an_identity(one, other):
    assert store_identity(one) != store_identity(other)
    assert store_key(store_identity(one)) != store_key(store_identity(other))


def test_two_deployments_on_one_server_are_two_stores():
    """A database-name prefix (staging and production on one cluster) is part of the identity."""
    server = "http://127.0.0.1:5984/"
    assert store_identity(server, "staging_") != store_identity(server)
    assert store_identity(server, "staging_") != store_identity(server, "prod_")
    assert store_identity("http://localhost:5984", "staging_") == store_identity(server, "staging_")


def test_a_spool_of_one_deployment_is_not_flushed_into_another(tmp_path, sqlite_uri):
    """Documents spooled for the ``staging_`` databases wait there: a flush with another prefix on the
    same server leaves them and says so (exit 4); with the prefix they were spooled for, it delivers."""
    spool = tmp_path / "spool"
    doc = {"_id": "2026-09-16T23:05:00Z-test-1", "title": "spooled for staging"}
    Spool(spool).write(store_identity(sqlite_uri, "staging_"), schema.LOG_DB, [doc])
    env = {"VOTERSDAILY_SPOOL_DIR": str(spool)}
    other = run_main("flush", store_uri=sqlite_uri, env=dict(env, VOTERSDAILY_DB_PREFIX="prod_"))
    assert other.returncode == 4, other.stderr
    assert "(databases staging_*)" in other.stderr
    own = run_main("flush", store_uri=sqlite_uri, env=dict(env, VOTERSDAILY_DB_PREFIX="staging_"))
    assert own.returncode == 0, own.stderr
    store = open_store(sqlite_uri)
    try:
        assert not store.has_db(schema.LOG_DB)
        store.prefix = "staging_"
        assert store.get(schema.LOG_DB, doc["_id"])["title"] == "spooled for staging"
    finally:
        store.close()


def test_an_embedded_store_is_named_by_its_absolute_path(tmp_path, monkeypatch):
    """Its file's absolute path, a relative one under the data home whatever the working folder."""
    (tmp_path / "data").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "data")
    monkeypatch.setenv("VOTERSDAILY_HOME", str(tmp_path))
    absolute = "sqlite:///" + str(tmp_path.resolve() / "data" / "store.db")
    assert store_identity("sqlite:///data/store.db") == absolute
    assert store_identity("sqlite:////%s" % (tmp_path / "link" / "store.db")) == absolute
    assert store_identity("SQLITE:///data/./store.db") == absolute
    monkeypatch.chdir(tmp_path / "data")
    assert store_identity("sqlite:///data/store.db") == absolute
    assert store_identity("sqlite:///store.db") != absolute


def test_an_open_store_has_the_identity_of_its_uri(store_uri):
    """Writers tag what they spool from the store they hold, readers from the URI they are given."""
    store = open_store(store_uri)
    try:
        assert store_identity(store.display_uri) == store_identity(store_uri)
    finally:
        store.close()


def test_a_spooled_run_log_waits_for_its_own_store(cli, sqlite_uri, tmp_path):
    """The issue's misrouting: a run log spooled for one CouchDB was delivered to the next, unrelated
    store. Now it waits for its own; ``flush`` elsewhere says what it left and exits 4, and the store,
    once it runs (spelled another way), takes it."""
    env = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}
    pouch = PouchDBServer(tmp_path / "pouch")  # its port: nothing listens there yet
    down = run_main("crawl", "--offline", "house_votes", store_uri=pouch.url, env=env)
    assert down.returncode == 3, down.stderr
    [record] = spooled_records(tmp_path / "spool")
    assert record["store"] == "http://127.0.0.1:%d/" % pouch.port and record["db"] == "vd_log"

    other = cli("crawl", "--offline", "house_votes", store_uri=sqlite_uri, env=env)
    assert other.returncode == 0, other.stderr[-3000:]
    assert "spooled for http://127.0.0.1:%d/: left there" % pouch.port in other.stderr
    assert [d["result"] for d in docs(sqlite_uri, "vd_log")] == ["success"]
    [log] = docs(sqlite_uri, "vd_log")
    assert log["spool_delivered_count"] == 0

    elsewhere = run_main("flush", store_uri=sqlite_uri, env=env)
    assert elsewhere.returncode == 4, elsewhere.stderr
    assert elsewhere.stderr.splitlines() == [
        "votersdaily flush: left 1 documents in 1 spool files spooled for http://127.0.0.1:%d/, not for "
        "this store (%s): they are delivered only there (`python -m votersdaily flush --store "
        "http://127.0.0.1:%d/`), or here with `python -m votersdaily flush --from http://127.0.0.1:%d/`"
        % (pouch.port, store_identity(sqlite_uri), pouch.port, pouch.port)
    ]
    assert len(spooled_records(tmp_path / "spool")) == 1

    pouch.start()
    try:
        up = run_main("flush", store_uri="http://localhost:%d" % pouch.port, env=env)
        assert up.returncode == 0, up.stderr
        assert [d["result"] for d in docs(pouch.url, "vd_log")] == ["StoreUnavailable"]
        assert not list((tmp_path / "spool").iterdir())
    finally:
        pouch.stop()


def test_the_commands_flush_names_for_another_prefix_deliver_as_printed(sqlite_uri, tmp_path, monkeypatch):
    """Documents spooled under a database prefix (``VOTERSDAILY_DB_PREFIX=x_``) for a store that was
    down, and a ``flush`` without that prefix: it leaves them and names the commands that deliver
    them. Before, it named ``flush --from http://127.0.0.1:<port>/ (databases x_*)``, which, run as
    printed, delivered nothing (exit 4: ``--from`` reads a URI under the prefix flush runs with).
    Now each command, run by a shell as printed, delivers them: there, and here."""
    env = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}
    pouch = PouchDBServer(tmp_path / "pouch")  # its port: nothing listens there yet
    down = run_main(
        "crawl", "--offline", "house_votes", store_uri=pouch.url, env={**env, "VOTERSDAILY_DB_PREFIX": "x_"}
    )
    assert down.returncode == 3, down.stderr
    shutil.copytree(tmp_path / "spool", tmp_path / "spool-copy")
    left = run_main("flush", store_uri=sqlite_uri, env=env)
    assert left.returncode == 4, left.stderr
    (line,) = left.stderr.splitlines()
    assert re.findall(r"`([^`]+)`", line) == [
        "VOTERSDAILY_DB_PREFIX=x_ python -m votersdaily flush --%s http://127.0.0.1:%d/"
        % (option, pouch.port)
        for option in ("store", "from")
    ], line
    there, here = re.findall(r"`([^`]+)`", line)

    def as_printed(command: str, spool: Path) -> subprocess.CompletedProcess:
        shell_env = {**os.environ, **cli_environment(sqlite_uri, {"VOTERSDAILY_SPOOL_DIR": str(spool)})}
        shell_env.pop("VOTERSDAILY_DB_PREFIX", None)  # the person's: no prefix
        return subprocess.run(
            ["bash", "-c", command], cwd=REPO, env=shell_env, capture_output=True, text=True
        )

    delivered_here = as_printed(here, tmp_path / "spool")
    assert delivered_here.returncode == 0, delivered_here.stderr
    pouch.start()
    try:
        delivered_there = as_printed(there, tmp_path / "spool-copy")
        assert delivered_there.returncode == 0, delivered_there.stderr
        monkeypatch.setenv("VOTERSDAILY_DB_PREFIX", "x_")
        for uri in (sqlite_uri, pouch.url):
            assert [d["result"] for d in docs(uri, "vd_log")] == ["StoreUnavailable"], uri
    finally:
        pouch.stop()


def test_a_crawl_counts_what_it_delivers_from_the_spool_apart(crawl, cli, tmp_path):
    """The issue's ``senate_votes ... 2 inserted, 1 items``: a crawl that delivers what an earlier run
    spooled counts it in neither its table row nor its run log's counts, but apart."""
    env = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}
    pouch = PouchDBServer(tmp_path / "pouch")  # not started yet
    earlier = crawl("house_votes", ROLL, pouch.url, env=env)
    assert earlier.returncode == 4, earlier.stderr[-3000:]  # scrapy crawl: documents wait in the spool
    assert sorted(r["db"] for r in spooled_records(tmp_path / "spool")) == ["vd_events", "vd_log"]

    pouch.start()
    try:
        proc = cli("crawl", "--offline", "senate_votes", store_uri=pouch.url, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        row = summary(proc.stdout)["senate_votes"]
        assert (row["result"], row["inserted"], row["items"], row["spooled"]) == ("success", "1", "1", "0")
        assert (
            "2 documents spooled by earlier runs were delivered to %s (not counted above)" % pouch.url
            in proc.stderr
        )
        logs = {d["parser_name"]: d for d in docs(pouch.url, "vd_log")}
        assert logs["house_votes"]["result"] == "StoreUnavailable"  # the earlier run's own log
        own = logs["senate_votes"]
        assert own["insert_count"] == own["items_scraped"] == 1
        assert own["store"] == {"vd_events": {"inserted": 1}} and own["spool_delivered_count"] == 2
        assert "119-2-314" in {d["unique_key"] for d in docs(pouch.url, "vd_events")}
        assert not list((tmp_path / "spool").iterdir())
    finally:
        pouch.stop()


def test_the_health_page_counts_only_what_waits_for_its_own_store(crawl, tmp_path):
    """A run whose log waits in the spool is not on the health page yet: the page says how much waits
    for its store, and nothing of what waits for another one."""
    env = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}
    pouch = PouchDBServer(tmp_path / "pouch")  # not started yet
    for uri in (pouch.url, "http://127.0.0.1:%d/" % other_port(pouch.port)):
        # scrapy crawl: documents wait in the spool
        assert crawl("house_votes", ROLL, uri, env=env).returncode == 4
    assert len(spooled_records(tmp_path / "spool")) == 4
    pouch.start()
    try:
        built = run_main("site", "build", str(tmp_path / "site"), store_uri=pouch.url, env=env)
    finally:
        pouch.stop()
    assert built.returncode == 0, built.stderr
    assert (
        "votersdaily site: 2 documents for this store wait in the spool %s (not on the site until "
        "`python -m votersdaily flush` delivers them)" % (tmp_path / "spool")
    ) in built.stderr.splitlines()
    page = (tmp_path / "site" / "health.html").read_text()
    assert (
        "Waiting in the spool for this store, not shown here until delivered: 1 documents of vd_events, 1 run logs."
        in page
    )


def test_flush_leaves_what_earlier_versions_spooled_unless_told(crawl, pouchdb, tmp_path):
    """Files of versions before spooled documents named their store are delivered only on
    ``--untagged``. The file is derived from a real spooled run (roll 314 while the store was down):
    its ``store`` field removed and its name in the earlier form, as those versions wrote it."""
    pouchdb.reset()
    spool = tmp_path / "spool"
    proc = crawl(
        "house_votes", ROLL, "http://127.0.0.1:%d/" % free_port(), env={"VOTERSDAILY_SPOOL_DIR": str(spool)}
    )
    assert proc.returncode == 4  # scrapy crawl: documents wait in the spool
    for path in spool.glob("*.jsonl"):
        db, _key, rest = path.name.split("--")
        records = [json.loads(line) for line in path.read_text().splitlines()]
        (spool / ("%s--%s" % (db, rest))).write_text(
            "".join(json.dumps({k: v for k, v in r.items() if k != "store"}) + "\n" for r in records)
        )
        path.unlink()
    env = {"VOTERSDAILY_SPOOL_DIR": str(spool)}
    left = run_main("flush", store_uri=pouchdb.url, env=env)
    assert left.returncode == 4
    assert (
        "left 2 documents in 2 spool files spooled for no store (spooled by an earlier version)"
        in left.stderr
    )
    assert "`flush --untagged` delivers them to this store" in left.stderr
    delivered = run_main("flush", "--untagged", store_uri=pouchdb.url, env=env)
    assert delivered.returncode == 0, delivered.stderr
    assert [d["unique_key"] for d in docs(pouchdb.url, "vd_events")] == ["119-2-314"]
    assert not list(spool.iterdir())


# -- item 5: every store refusal alike --------------------------------------------------------------


class RefusingStore:
    """A loopback HTTP server answering every request with ``status`` and CouchDB's JSON error body
    for it (what CouchDB sends a user without rights, 403, or while it is overloaded, 503)."""

    BODIES = {
        403: {"error": "forbidden", "reason": "You are not allowed to access this db."},
        503: {"error": "service_unavailable", "reason": "Service unavailable"},
    }

    def __init__(self, status: int):
        body = json.dumps(self.BODIES[status]).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = answer

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def refusing_store(request, pouchdb):
    """A store URI that refuses every request the way ``request.param`` says, and the run-log result
    that refusal gives."""
    kind = request.param
    if kind == "401":
        # Its own user: CouchDB locks a user out after 5 failed logins, so no other test shares it.
        yield "http://nobody-%s:wrong@127.0.0.1:%d/" % (uuid.uuid4().hex[:8], pouchdb.port), "StoreRefused"
    elif kind == "connection refused":
        yield "http://127.0.0.1:%d/" % free_port(), "StoreUnavailable"
    else:
        server = RefusingStore(int(kind))
        yield server.url, "StoreRefused" if kind == "403" else "StoreUnavailable"
        server.stop()


@pytest.mark.parametrize("refusing_store", ["401", "403", "503", "connection refused"], indirect=True)
def test_every_store_refusal_spools_the_run_log_with_the_events(crawl, refusing_store, tmp_path):
    """``scrapy crawl`` against a store answering 401 spooled the events but lost the run log (``could
    not write the run log ... answered 401``), while a closed port spooled both. Every refusal alike."""
    uri, result = refusing_store
    spool = tmp_path / "spool"
    proc = crawl("house_votes", ROLL, uri, env={"VOTERSDAILY_SPOOL_DIR": str(spool)})
    assert proc.returncode == 4  # scrapy crawl: documents wait in the spool
    assert "could not write the run log" not in proc.stderr and "Traceback" not in proc.stderr
    records = spooled_records(spool)
    by_db = {db: [r["doc"] for r in records if r["db"] == db] for db in ("vd_events", "vd_log")}
    assert [d["unique_key"] for d in by_db["vd_events"]] == ["119-2-314"]
    [log] = by_db["vd_log"]
    assert log["result"] == result and log["spooled_count"] == log["still_spooled_count"] == 1
    assert {r["store"] for r in records} == {store_identity(uri)}
    assert "wrong" not in json.dumps(records)  # no password kept
    kept = [line for line in proc.stderr.splitlines() if "did not take the run log of house_votes" in line]
    assert len(kept) == 1 and kept[0].endswith("spooled to %s" % spool)


def test_a_wrong_password_loses_nothing_and_flush_delivers_once_it_is_fixed(crawl, pouchdb, tmp_path):
    """The spooled documents name the store, not the user: fixing the password is enough."""
    pouchdb.reset()
    env = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}
    wrong = "http://nobody-%s:wrong@127.0.0.1:%d/" % (uuid.uuid4().hex[:8], pouchdb.port)
    assert (
        crawl("house_votes", ROLL, wrong, env=env).returncode == 4
    )  # scrapy crawl: documents wait in the spool
    refused = run_main("flush", store_uri=wrong, env=env)
    assert refused.returncode == 3 and "refused the credentials (HTTP 401)" in refused.stderr
    fixed = run_main("flush", store_uri=pouchdb.url, env=env)
    assert fixed.returncode == 0, fixed.stderr
    assert [d["unique_key"] for d in docs(pouchdb.url, "vd_events")] == ["119-2-314"]
    [log] = docs(pouchdb.url, "vd_log")
    assert log["result"] == "StoreRefused" and "HTTP 401" in log["error_message"]


@pytest.fixture
def crawler_user(pouchdb):
    """A user of its own on the session's PouchDB Server (never the shared admin party's): its name
    and password. CouchDB 3.4+ would lock it out after 5 failed logins; PouchDB Server counts none,
    so the test counts them itself."""
    name = "crawler-%s" % uuid.uuid4().hex[:8]
    password = uuid.uuid4().hex
    user = "%s_users/org.couchdb.user:%s" % (pouchdb.url, name)
    doc = {"name": name, "password": password, "roles": [], "type": "user"}
    assert requests.put(user, json=doc, timeout=10).status_code == 201
    yield name, password
    rev = requests.get(user, timeout=10).json()["_rev"]
    requests.delete(user, params={"rev": rev}, timeout=10)


@pytest.mark.parametrize(
    ("spider", "args"),
    [
        ("house_votes", ("-a", "url=" + ROLL.as_uri())),
        # five databases: each writer's first request was one more failed login, a lockout in one run
        ("ingest", ("-a", "url=http://127.0.0.1:9/a.pdf", "-s", "INGEST_ALLOW_PRIVATE=True")),
    ],
)
def test_a_wrong_password_is_tried_once_a_crawl(crawl, pouchdb, crawler_user, tmp_path, spider, args):
    """A wrong password cost two failed logins a crawl (the events' writer, then the run log), five
    an ingest (a writer a database, then the run log): concurrent scrapyd jobs locked the user out
    for everyone. Once the server refused it, the crawl sends it no more; the run log is spooled, as
    for any store that refuses, and so are the events."""
    name, _ = crawler_user
    proxy = FaultProxy(pouchdb.port).start()
    spool = tmp_path / "spool"
    try:
        wrong = "http://%s:wrong@127.0.0.1:%d/" % (name, proxy.port)
        proc = crawl(spider, None, wrong, *args, env={"VOTERSDAILY_SPOOL_DIR": str(spool)})
    finally:
        proxy.stop()
    failed_logins = [line for line, authorized, status in proxy.exchanges if authorized and status == 401]
    assert len(failed_logins) == 1, (proxy.exchanges, proc.stderr[-3000:])
    [log] = [record["doc"] for record in spooled_records(spool) if record["db"] == schema.LOG_DB]
    assert "refused the credentials (HTTP 401)" in log["error_message"], log
    assert proc.returncode == 4 and log["result"] == "StoreRefused", proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]  # the ingest's catalog check: one line
    if spider == "house_votes":
        assert [r["doc"]["unique_key"] for r in spooled_records(spool) if r["db"] == "vd_events"] == [
            "119-2-314"
        ]


def test_documents_the_store_forbids_are_spooled_not_lost(crawl, pouchdb, tmp_path):
    """A store may refuse single documents (a ``validate_doc_update`` throwing ``forbidden``; PouchDB
    Server runs it as CouchDB does): they are spooled like a refused batch, not counted failed;
    ``flush`` tries them again each time (exit 1 while refused) and delivers them once allowed."""
    pouchdb.reset()
    guard = {
        "_id": "_design/guard",
        "validate_doc_update": "function (doc) { if (doc.unique_key === '119-2-314') "
        "{ throw({forbidden: 'not this roll call'}); } }",
    }
    store = open_store(pouchdb.url)
    store.ensure_db(schema.EVENTS_DB)
    [answer] = store.bulk_docs(schema.EVENTS_DB, [guard])
    env = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}
    try:
        assert (
            crawl("house_votes", ROLL, pouchdb.url, env=env).returncode == 4
        )  # scrapy crawl: documents wait in the spool
        [log] = docs(pouchdb.url, schema.LOG_DB)
        assert (log["result"], log["failed_writes"], log["still_spooled_count"]) == ("success", 0, 1)
        [record] = spooled_records(tmp_path / "spool")
        assert record["doc"]["unique_key"] == "119-2-314"
        refused = run_main("flush", store_uri=pouchdb.url, env=env)
        assert refused.returncode == 1
        [path] = (tmp_path / "spool").glob("*.jsonl")
        assert refused.stderr.splitlines() == [
            "votersdaily flush: left %s spooled: the store refused 1 of its documents (document %s refused "
            "by the store (forbidden: not this roll call)); the next flush tries again"
            % (path, record["doc"]["_id"])
        ]
        store.bulk_docs(schema.EVENTS_DB, [dict(guard, _rev=answer["rev"], _deleted=True)])
    finally:
        store.close()
    assert run_main("flush", store_uri=pouchdb.url, env=env).returncode == 0
    assert [d["unique_key"] for d in docs(pouchdb.url, schema.EVENTS_DB)] == ["119-2-314"]
    assert not list((tmp_path / "spool").iterdir())


# -- item 4: a full spool folder --------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """``small_disk(name, size)``: a folder on a real filesystem of ``size`` (a tmpfs), unmounted
    afterwards; ``small_disk.grow(folder, size)`` gives it room again."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs (a real full filesystem) needs root")
    mounted: list[Path] = []

    def mount(name: str, size: str) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=%s,mode=0755" % size, "tmpfs", str(folder)],
            capture_output=True,
            text=True,
        )
        if done.returncode:
            pytest.skip("cannot mount a tmpfs here (%s)" % done.stderr.strip())
        mounted.append(folder)
        return folder

    def grow(folder: Path, size: str) -> None:
        subprocess.run(["mount", "-o", "remount,size=%s" % size, str(folder)], check=True)

    mount.grow = grow  # type: ignore[attr-defined]
    yield mount
    for folder in mounted:
        subprocess.run(["umount", "-l", str(folder)], check=True)


@pytest.fixture
def full_spool(small_disk):
    """A spool folder on a real 64 KiB filesystem."""
    return small_disk("spool", "64k")


def test_a_full_spool_folder_says_what_it_lost_once_and_exits_1(cli, pouchdb, full_spool, tmp_path):
    """The issue: spool on a full 64 KiB filesystem, store gone: run logs lost with no message, an
    events file cut mid-line, exit 0. Now every spooled batch is whole (or split until what fits is
    kept), the folder is named once, each lost document is counted, and the crawl exits 1."""
    pouchdb.reset()
    proxy = FaultProxy(pouchdb.port).start()
    proxy.stop_at(b"/vd_")  # it answers the crawl's check of the store, then stops
    spiders = ("house_floor", "senate_votes", "house_votes")
    proc = crawl_offline_through(cli, proxy, full_spool, *spiders)
    assert proxy.stopped.is_set()
    assert proc.returncode == 1, proc.stderr[-3000:]
    said = [line for line in proc.stderr.splitlines() if "spool folder %s cannot take" % full_spool in line]
    assert len(said) == 1 and "[Errno 28] No space left on device" in said[0]
    rows = summary(proc.stdout)
    lost = sum(int(rows[s]["lost"]) for s in spiders)
    spooled = sum(int(rows[s]["spooled"]) for s in spiders)
    assert lost and spooled
    for name in spiders:  # every document of a run (its events and its run log) spooled or lost
        assert int(rows[name]["spooled"]) + int(rows[name]["lost"]) == int(rows[name]["items"]) + 1
    assert (
        "votersdaily crawl: %d documents were lost: neither the store nor the spool folder %s took them"
        % (lost, full_spool)
        in proc.stderr.splitlines()
    )
    # What is there is whole: only finished spool files, every line of them JSON.
    assert all(p.name.endswith(".jsonl") for p in full_spool.iterdir())
    assert len(spooled_records(full_spool)) == spooled

    # The real store takes what was spooled for the proxy's address when told it is the same store.
    delivered = run_main(
        "flush", "--from", proxy.url, store_uri=pouchdb.url, env={"VOTERSDAILY_SPOOL_DIR": str(full_spool)}
    )
    assert delivered.returncode == 0, delivered.stderr
    assert delivered.stdout.startswith("delivered %d documents" % spooled)
    assert not list(full_spool.iterdir())


def test_a_crawl_that_cannot_even_spool_its_run_logs_says_so(small_disk, tmp_path):
    """The store is down and the spool's disk has no room at all (filled here by the test): the
    crawl's run logs of runs that never started are lost, and it says so."""
    spool = small_disk("spool", "64k")
    # The test's own file, filling the disk (unbuffered: every write reaches it, until one fails).
    with open(spool / "filler", "wb", buffering=0) as filler, contextlib.suppress(OSError):
        while True:
            filler.write(b"x" * 512)
    port = free_port()  # nothing listens there
    proc = run_main(
        "crawl",
        "--offline",
        "house_votes",
        "senate_votes",
        store_uri="http://127.0.0.1:%d/" % port,
        env={"VOTERSDAILY_SPOOL_DIR": str(spool)},
    )
    assert proc.returncode == 3
    err = proc.stderr.splitlines()
    assert err[0].startswith("votersdaily crawl: cannot reach the store at http://127.0.0.1:%d/" % port)
    assert [line for line in err if "cannot take documents" in line] == [
        "spool folder %s cannot take documents ([Errno 28] No space left on device): what the store "
        "does not take is lost (free space there; each run's losses are in its summary)" % spool
    ]
    assert (
        err[-1]
        == "votersdaily crawl: nothing crawled; 2 run logs (StoreUnavailable) lost: the spool could not take them either"
    )
    assert sorted(p.name for p in spool.iterdir()) == ["filler"]


def test_flush_over_damaged_spool_files_delivers_the_rest_and_keeps_them(crawl, pouchdb, tmp_path):
    """``flush`` skipped a cut line with a warning and exited 0. Now it delivers every good document,
    keeps each damaged file untouched and named, and exits 1 (again on the next flush, until the
    operator removes it). The files are real spooled batches of the house_floor recordings (a wrong
    password, batches of 10); two are damaged here: one cut in its last line (as a full disk cut the
    files earlier versions appended to), one with a byte of a middle line overwritten."""
    pouchdb.reset()
    spool = tmp_path / "spool"
    env = {"VOTERSDAILY_SPOOL_DIR": str(spool)}
    wrong = "http://nobody-%s:wrong@127.0.0.1:%d/" % (uuid.uuid4().hex[:8], pouchdb.port)
    proc = crawl(
        "house_floor", HouseFloorSpider.recording_urls(), wrong, "-s", "VOTERSDAILY_BATCH_SIZE=10", env=env
    )
    assert proc.returncode == 4  # scrapy crawl: documents wait in the spool
    events = sorted(spool.glob("vd_events--*.jsonl"))
    total = sum(len(p.read_bytes().splitlines()) for p in events)
    assert len(events) > 3 and total == 133
    cut, flipped = events[1], events[2]
    data = cut.read_bytes()
    cut.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 200])  # 200 bytes into the last line
    lines = flipped.read_bytes().split(b"\n")
    lines[3] = b"{" + lines[3][5:]
    flipped.write_bytes(b"\n".join(lines))
    damaged = {cut.name: cut.read_bytes(), flipped.name: flipped.read_bytes()}

    first = run_main("flush", store_uri=pouchdb.url, env=env)
    assert first.returncode == 1
    kept = sorted(spool.iterdir())
    assert [p.name for p in kept] == sorted(name + ".undelivered" for name in damaged)
    for path in kept:
        assert path.read_bytes() == damaged[path.name[: -len(".undelivered")]]  # untouched
    problems = first.stderr.splitlines()  # one line per kept file, nothing else
    assert len(problems) == 2 and all(line.startswith("votersdaily flush: kept ") for line in problems)
    assert (
        "kept %s: 1 lines could not be delivered (line 10 is not whole JSON (cut short or damaged))" % kept[0]
        in problems[0] + problems[1]
    )
    assert "line 4 is not whole JSON" in problems[0] + problems[1]
    assert len(docs(pouchdb.url, "vd_events")) == total - 2  # everything else arrived
    assert len(docs(pouchdb.url, "vd_log")) == 1

    again = run_main("flush", store_uri=pouchdb.url, env=env)
    assert again.returncode == 1
    assert sorted(line.split()[3].rstrip(":") for line in again.stderr.splitlines()) == [str(p) for p in kept]
    assert sorted(spool.iterdir()) == kept


def test_a_spool_file_naming_code_is_refused_kept_and_runs_nothing(crawl, pouchdb, tmp_path, monkeypatch):
    """A spool file names its delivery hooks by a registered name; one naming code (``os:system``, a
    module on the path, a real class left out of the registry) is refused line by line: nothing it
    names is imported or called, the file is kept untouched and named, and the rest of the spool is
    delivered. The files are a real spooled batch (roll 314 under a wrong password), copied and
    their ``after_batch`` rewritten here."""
    pouchdb.reset()
    spool = tmp_path / "spool"
    env = {"VOTERSDAILY_SPOOL_DIR": str(spool)}
    wrong = "http://nobody-%s:wrong@127.0.0.1:%d/" % (uuid.uuid4().hex[:8], pouchdb.port)
    assert (
        crawl("house_votes", ROLL, wrong, env=env).returncode == 4
    )  # scrapy crawl: documents wait in the spool
    (events,) = spool.glob("vd_events--*.jsonl")
    record = json.loads(events.read_text())
    assert record["after_batch"] == "reschedules"
    tripwire = tmp_path / "modules"
    tripwire.mkdir()
    (tripwire / "spool_tripwire.py").write_text(
        "from pathlib import Path\nPath(%r).touch()\ndef boom(*args):\n    raise SystemExit(9)\n"
        % str(tmp_path / "imported")
    )
    monkeypatch.syspath_prepend(str(tripwire))
    called = []
    monkeypatch.setattr(os, "system", lambda *args: called.append(args) or 0)
    hostile = {}
    for n, name in enumerate(
        ["os:system", "spool_tripwire:boom", "votersdaily.store.reschedules:RescheduleTracker"]
    ):
        path = events.with_name(events.name.replace(".jsonl", "%d.jsonl" % n))
        path.write_text(json.dumps(dict(record, after_batch=name)) + "\n")
        hostile[path] = (name, path.read_bytes())
    events.unlink()

    flushed = run_main("flush", store_uri=pouchdb.url, env=env)
    assert flushed.returncode == 1
    assert not (tmp_path / "imported").exists() and "spool_tripwire" not in sys.modules
    assert called == []
    for path, (name, data) in hostile.items():
        kept = path.with_name(path.name + ".undelivered")
        assert kept.read_bytes() == data  # untouched
        assert (
            'kept %s: 1 lines could not be delivered (line 1 names delivery hooks "%s", which are not '
            "among those a spool delivery runs (families, reschedules))" % (kept, name) in flushed.stderr
        )
    assert docs(pouchdb.url, "vd_events") == []
    assert [log["parser_name"] for log in docs(pouchdb.url, "vd_log")] == ["house_votes"]
    assert sorted(spool.iterdir()) == sorted(p.with_name(p.name + ".undelivered") for p in hostile)


def test_a_full_disk_under_the_embedded_store_spools_what_it_cannot_store(crawl, small_disk, tmp_path):
    """The embedded store's disk fills mid-crawl (SQLite: ``database or disk is full``): the store
    refuses like an unavailable CouchDB, so what it cannot take is spooled, not lost; with room
    again, ``flush`` stores it."""
    disk = small_disk("store", "320k")
    uri = "sqlite:///%s" % (disk / "store.db")
    env = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}
    proc = crawl(
        "house_floor",
        HouseFloorSpider.recording_urls(),
        uri,
        "-s",
        "VOTERSDAILY_BATCH_SIZE=20",
        *FAST_RETRIES,
        env=env,
    )
    assert proc.returncode == 4  # scrapy crawl: documents wait in the spool
    assert "database or disk is full" in proc.stderr and "Traceback" not in proc.stderr
    stored = len(docs(uri, "vd_events"))
    spooled = [r for r in spooled_records(tmp_path / "spool") if r["db"] == "vd_events"]
    assert spooled and stored + len(spooled) == 133
    small_disk.grow(disk, "8m")
    flushed = run_main("flush", store_uri=uri, env=env)
    assert flushed.returncode == 0, flushed.stderr
    assert len(docs(uri, "vd_events")) == 133
    assert {d["parser_name"] for d in docs(uri, "vd_log")} == {"house_floor"}


# -- item 9: the summary says what waits in the spool ------------------------------------------------


def test_a_crawl_whose_store_went_away_says_what_waits_in_the_spool_and_exits_4(cli, pouchdb, tmp_path):
    """The issue: after an outage a crawl printed ``success ... 0 inserted`` and exited 0 while its
    events waited in the spool. The store here answers the check and the views, then stops at the
    first write of events."""
    pouchdb.reset()
    store = open_store(pouchdb.url)
    for db in (schema.EVENTS_DB, schema.LOG_DB):
        store.ensure_db(db)
        store.install_views(db)
    store.close()
    proxy = FaultProxy(pouchdb.port).start()
    proxy.stop_at(b"POST /vd_events/_bulk_docs")
    spool = tmp_path / "spool"
    proc = crawl_offline_through(cli, proxy, spool, "house_votes")
    assert proc.returncode == 4, proc.stderr[-3000:]
    row = summary(proc.stdout)["house_votes"]
    assert (row["result"], row["inserted"], row["items"], row["spooled"]) == ("success", "0", "3", "4")
    assert (
        "4 documents wait in the spool %s for %s: `python -m votersdaily flush` delivers them once it takes them"
        % (spool, proxy.url)
        in proc.stderr.splitlines()
    )
    assert len(spooled_records(spool)) == 4
    assert Spool(spool).waiting(store_identity(proxy.url)) == {"vd_events": 3, "vd_log": 1}
    assert Spool(spool).waiting(store_identity(pouchdb.url)) == {}


def test_every_failure_row_of_the_operations_guide_names_tests_that_exist():
    """docs/operations.md's *When something fails* names, per failure, the tests that prove it."""
    repo = Path(__file__).resolve().parents[2]
    text = (repo / "docs" / "operations.md").read_text(encoding="utf-8")
    section = text.split("## When something fails", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "tests/" in line]
    assert len(rows) >= 8
    checked = 0
    for row in rows:
        module = None
        for path, test in re.findall(r"`(tests/[\w/]+\.py)?::(\w+)`", row):
            module = path or module  # `::other_test` is in the file named before it
            assert module and re.search(r"^def %s\(" % test, (repo / module).read_text(), re.M), (
                module,
                test,
            )
            checked += 1
    assert checked >= len(rows)


def test_a_document_no_store_could_take_is_refused_not_lost_while_the_store_is_down(tmp_path):
    """With its store unreachable (a port where nothing listens) a writer spools each batch. A
    document in it that is not JSON (a set; the variant is generated here) used to make the spool
    refuse the batch, in halves down to that one document, which was then counted lost and reported as
    a spool folder that could not take documents. It is refused now, with its reason, as the store
    would refuse it, and the rest of the batch is spooled."""
    from tests.store.test_store import event
    from votersdaily.store.writer import BatchWriter

    store = open_store("http://127.0.0.1:%d/" % free_port())
    writer = BatchWriter(store, schema.EVENTS_DB, retry_times=0, spool=Spool(tmp_path / "spool"))
    bad = event(2, tags={"not", "json"})
    result = writer._write([event(1), bad, event(3)])  # what the writer's thread runs for a batch
    assert sorted(result.spooled) == sorted([event(1)["_id"], event(3)["_id"]])
    assert list(result.failed) == [bad["_id"]] and not result.lost and writer.outage.lost == 0
    assert result.failed[bad["_id"]].startswith("bad_request: the document is not JSON")
    assert sorted(r["doc"]["_id"] for r in spooled_records(tmp_path / "spool")) == sorted(result.spooled)


def test_a_spool_folder_that_holds_the_users_files_keeps_them_as_they_are(sqlite_uri, tmp_path):
    """``VOTERSDAILY_SPOOL_DIR`` pointed at a folder of the user's: files named ``<x>--<y>.jsonl`` (a
    dump kept there, an empty note) were taken for earlier versions' spool files: ``flush`` counted
    them as waiting (exit 4), ``flush --untagged`` renamed the dump to ``….undelivered`` and deleted
    the empty note. Only names in the form every version wrote (``<db>--[<key>--]<time>-<pid>-<n>``)
    are spool files."""
    folder = tmp_path / "exports"
    folder.mkdir()
    mine = {
        "vd_log--2026-11.jsonl": '{"_id": "a run log I dumped"}\n',
        "vd_events--2026-11-27.jsonl": '{"_id": "an event I dumped"}\n',
        "notes--todo.jsonl": "",
        "x--y.jsonl.undelivered": "mine too\n",
    }
    for name, text in mine.items():
        (folder / name).write_text(text, encoding="utf-8")
    env = {"VOTERSDAILY_SPOOL_DIR": str(folder)}
    for args in (("flush",), ("flush", "--untagged")):
        proc = run_main(*args, store_uri=sqlite_uri, env=env)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "nothing spooled in %s" % folder, proc.stdout + proc.stderr
        assert {p.name: p.read_text(encoding="utf-8") for p in folder.iterdir()} == mine
    assert Spool(folder).pending() == [] and Spool(folder).kept() == []


@pytest.mark.parametrize(
    "store, args",
    [
        ("ftp://127.0.0.1/", ("flush",)),
        (None, ("flush", "--from", "ftp://127.0.0.1/")),
        (None, ("flush", "--from", "couchdb")),
    ],
)
def test_flush_with_a_store_uri_that_cannot_be_one_is_a_usage_error(sqlite_uri, tmp_path, store, args):
    """A mistyped store (``$VOTERSDAILY_STORE``, ``--store``) was "store still unavailable, documents
    stay spooled" (exit 3), as for an outage; a mistyped ``--from`` was taken and matched nothing,
    without a word. One line, exit 2, and the spooled file as it was."""
    spool = Spool(tmp_path / "spool")
    spooled = spool.write(store_identity(sqlite_uri, ""), "vd_events", [{"_id": "one"}])
    before = spooled.read_bytes()
    proc = run_main(*args, store_uri=store or sqlite_uri, env={"VOTERSDAILY_SPOOL_DIR": str(spool.directory)})
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("votersdaily flush: ") and "store URI" in line, line
    assert [p.name for p in spool.directory.iterdir()] == [spooled.name] and spooled.read_bytes() == before


def test_a_claim_left_by_a_dead_process_whose_pid_is_taken_again_is_delivered(tmp_path):
    """A process killed while delivering (or writing) a spool file leaves its claim named by its
    process id. After a restart the id is often taken again (a container's crawl is pid 1 every time;
    after a reboot ids start over), and the claim looked alive for ever: its documents were neither
    delivered nor reported. A claim names its process by id and start time, so only the process
    that made it holds it; a living process's own claim is still left alone."""
    store = open_store("sqlite:///%s" % (tmp_path / "store.db"))
    spool = Spool(tmp_path / "spool")
    target = identity_of(store)
    stale = []
    for owner in (
        "%d" % os.getpid(),  # an earlier version's claim with this process's id (not this process's)
        "%d-1" % os.getpid(),  # this id, another start: a process before a reboot or container restart
    ):
        for suffix in (".delivering", ".writing"):
            doc_id = "doc-%s%s" % (owner, suffix)
            path = spool.write(target, "vd_events", [{"_id": doc_id}])
            stale.append((doc_id, path.rename(path.with_name("%s.%s%s" % (path.name, owner, suffix)))))
    alive = subprocess.Popen(["sleep", "60"])
    try:
        # In another database: one being delivered holds its database's later files back (in order).
        path = spool.write(target, "vd_log", [{"_id": "held"}])
        held = path.rename(
            path.with_name("%s.%d-%s.delivering" % (path.name, alive.pid, process_start(alive.pid)))
        )
        report = spool.deliver(store)
        assert report.documents == len(stale), report
        ids = [doc_id for doc_id, _ in stale]
        assert sorted(store.get_many("vd_events", ids)) == sorted(ids)
        assert not any(claim.exists() for _, claim in stale)
        store.ensure_db("vd_log")
        assert held.exists() and store.get("vd_log", "held") is None, "a living process's claim is its own"
    finally:
        alive.kill()
        alive.wait()
        store.close()


@pytest.mark.parametrize("spooled", [(), (schema.EVENTS_DB,)], ids=["nothing-spooled", "events-spooled"])
def test_flush_of_a_mistyped_database_says_so_and_names_the_one_meant(tmp_path, sqlite_uri, spooled):
    """``flush --db vd_event`` (for ``vd_events``) said "nothing spooled", exit 0, as if everything
    had been delivered: with other databases spooled it named them, with nothing spooled it said
    nothing of the typo. Both are now a usage error naming the database meant (known names of the
    project's or spooled ones) and what is spooled; nothing spooled is touched."""
    spool = tmp_path / "spool"
    doc = {"_id": "2026-09-16T23:05:00Z-test-1", "title": "spooled"}
    for db in spooled:
        Spool(spool).write(store_identity(sqlite_uri), db, [doc])
    before = sorted(p.name for p in spool.iterdir()) if spool.exists() else []
    proc = run_main(
        "flush", "--db", "vd_event", store_uri=sqlite_uri, env={"VOTERSDAILY_SPOOL_DIR": str(spool)}
    )
    assert proc.returncode == 2, proc.stderr
    there = "spooled in %s: vd_events" % spool if spooled else "nothing spooled in %s" % spool
    assert proc.stderr == (
        "votersdaily flush: unknown database 'vd_event'; did you mean vd_events? (the project's: "
        "vd_events, vd_log, vd_scheduler, ingest_requests, ingest_catalog, ingest_file_result, html_meta, "
        "wbgrp-journal-extract-0-dev, ll_seeds; %s)\n" % there
    )
    assert proc.stdout == ""
    assert (sorted(p.name for p in spool.iterdir()) if spool.exists() else []) == before


def test_what_was_spooled_for_a_database_url_is_delivered_with_from(couch_uri, tmp_path):
    """A store URI ending with a database is refused now; what earlier versions spooled for one
    (``http://host:5984/vd_events``) is still delivered to the server with ``flush --from``."""
    spool = tmp_path / "spool"
    wrong = couch_uri + "vd_events"
    Spool(spool).write(store_identity(wrong), schema.EVENTS_DB, [{"_id": "e1", "title": "spooled"}])
    env = {"VOTERSDAILY_SPOOL_DIR": str(spool)}
    proc = run_main("flush", "--from", wrong, store_uri=couch_uri, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("delivered 1 documents from 1 spool files to %s" % couch_uri)
    assert requests.get(couch_uri + "vd_events/e1", timeout=10).json()["title"] == "spooled"


def test_flush_of_a_database_spooled_under_another_name_delivers_it(tmp_path, sqlite_uri):
    """A database is known by being spooled too (a crawl run with another ``INGEST_REQUESTS_DB``):
    ``--db`` of it delivers it; of a known database with nothing spooled, the databases spooled are
    named (exit 0)."""
    spool = tmp_path / "spool"
    doc = {"_id": "r1", "url": "https://example.org/a.pdf"}
    Spool(spool).write(store_identity(sqlite_uri), "my_requests", [doc])
    env = {"VOTERSDAILY_SPOOL_DIR": str(spool)}
    proc = run_main("flush", "--db", "vd_log", store_uri=sqlite_uri, env=env)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert (
        proc.stdout == "nothing spooled for database vd_log in %s (spooled there for: my_requests)\n" % spool
    )
    proc = run_main("flush", "--db", "my_requests", store_uri=sqlite_uri, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("delivered 1 documents from 1 spool files"), proc.stdout
    assert not Spool(spool).pending()


def _command_process(proxy: FaultProxy, spool: Spool, *command: str) -> subprocess.Popen:
    """A real ``python -m votersdaily flush`` (or ``command``) with ``spool``, into the store behind
    ``proxy``."""
    env = cli_environment(proxy.url, {"VOTERSDAILY_SPOOL_DIR": str(spool.directory)})
    return subprocess.Popen(
        [sys.executable, "-m", "votersdaily", *(command or ("flush",))],
        cwd=REPO,
        env=dict(os.environ, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@contextlib.contextmanager
def writer_that_spooled(pouchdb, tmp_path):
    """A writer on PouchDB Server behind a proxy not yet started (the store refuses connections)
    that spooled version A of ``doc`` (the writer's thread's call): ``(writer, proxy)``; the proxy's
    start brings the store back."""
    from votersdaily.store.writer import BatchWriter

    proxy = FaultProxy(pouchdb.port)
    store = open_store(proxy.url)
    writer = BatchWriter(
        store, "db_%s" % uuid.uuid4().hex[:12], retry_times=0, spool=Spool(tmp_path / "spool")
    )
    try:
        assert writer._write([{"_id": "doc", "version": "A"}]).spooled == ["doc"]
        yield writer, proxy
    finally:
        store.close()
        proxy.stop()


def test_a_spooled_version_another_process_delivers_never_replaces_the_writers_newer_one(pouchdb, tmp_path):
    """Two processes on one spool. A writer whose store was away spooled version A of a document;
    the store came back and ``flush``, another process, took that spool file and was delivering it
    (its write held 3 s by the proxy) when the writer wrote version B. The writer found its file
    claimed, took it for delivered and wrote B at once; flush's A then replaced B. Now a writer whose
    file (or any file of its database for its store) another live process is delivering queues its
    batch behind it in the spool, and delivers it once that delivery is done: B stays."""
    with writer_that_spooled(pouchdb, tmp_path) as (writer, proxy):
        store, spool, db = writer.store, writer.spool, writer.db
        proxy.start()
        write = b"POST /%s/_bulk_docs" % db.encode()
        proxy.delay(write, 3.0)
        flush = _command_process(proxy, spool)
        deadline = time.monotonic() + 60
        while not proxy.delayed and flush.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proxy.delayed, flush.communicate()
        proxy.delay(write, 0)  # flush's version A is on its way; the writer's writes pass at once
        newer = writer._write([{"_id": "doc", "version": "B"}])
        out, err = flush.communicate(timeout=60)
        assert flush.returncode == 0, out + err
        writer._drain([])  # the writer's last call at its end: what it spooled, delivered in order
        assert store.get(db, "doc")["version"] == "B"
        assert newer.spooled == ["doc"] and not newer.inserted  # behind A, not before it
        assert not spool.pending()


def _claimed_by(spool: Spool, store, doc: dict, process: subprocess.Popen) -> Path:
    """A spool file of ``doc`` for ``store``, claimed by the live ``process`` as a deliverer claims it."""
    path = spool.write(identity_of(store), "vd_events", [doc])
    return path.rename(
        path.with_name("%s.%d-%s.delivering" % (path.name, process.pid, process_start(process.pid)))
    )


def test_a_database_spooled_for_a_store_is_delivered_by_one_process_in_order(tmp_path):
    """While another live process delivers a file of a database for a store, a second delivery (a
    second ``flush``, the next run's) leaves that database's later files for that store: delivered
    at once, they could land before the earlier file's versions, which would then replace them. Once
    that process is gone, its claim is taken over and everything delivered, oldest first."""
    store = open_store("sqlite:///%s" % (tmp_path / "store.db"))
    store.ensure_db("vd_events")
    spool = Spool(tmp_path / "spool")
    deliverer = subprocess.Popen(["sleep", "60"])
    try:
        claim = _claimed_by(spool, store, {"_id": "doc", "version": "A"}, deliverer)
        spool.write(identity_of(store), "vd_events", [{"_id": "doc", "version": "B"}])
        spool.write(identity_of(store), "vd_log", [{"_id": "log"}])  # another database: not held up
        uri = "sqlite:///%s" % (tmp_path / "store.db")
        flushed = run_cli(
            [sys.executable, "-m", "votersdaily", "flush", "--db", "vd_events"],
            uri,
            env={"VOTERSDAILY_SPOOL_DIR": str(spool.directory)},
        )
        assert flushed.returncode == 4, flushed.stderr
        assert flushed.stderr == (
            "votersdaily flush: left 1 spool files spooled: another process is delivering files of their "
            "database for this store now (they go after it, in order); flush again once it is done\n"
        )
        report = spool.deliver(store)
        assert (report.behind, report.documents) == (1, 1)
        assert store.get("vd_events", "doc") is None and store.get("vd_log", "log") is not None
    finally:
        deliverer.kill()
        deliverer.wait()
    try:
        report = spool.deliver(store)
        assert (report.behind, report.documents) == (0, 2) and not claim.exists()
        assert store.get("vd_events", "doc")["version"] == "B"
    finally:
        store.close()


def test_a_writer_writes_behind_what_another_process_is_delivering(tmp_path):
    """The next run's writer (no spool file of its own) while another process delivers earlier
    versions of its database for its store: its batch waits behind them in the spool, not written
    before them (they would replace it); once that delivery is done, the writer delivers it."""
    from votersdaily.store.writer import BatchWriter

    store = open_store("sqlite:///%s" % (tmp_path / "store.db"))
    store.ensure_db("vd_events")
    spool = Spool(tmp_path / "spool")
    writer = BatchWriter(store, "vd_events", retry_times=0, spool=spool)
    deliverer = subprocess.Popen(["sleep", "60"])
    try:
        claim = _claimed_by(spool, store, {"_id": "doc", "version": "A"}, deliverer)
        newer = writer._write([{"_id": "doc", "version": "B"}])  # the writer's thread's call
        assert newer.spooled == ["doc"] and store.get("vd_events", "doc") is None
        store.bulk_docs("vd_events", [{"_id": "doc", "version": "A"}])  # what that delivery wrote
        claim.unlink()  # and its file done
        writer._drain([])
        assert store.get("vd_events", "doc")["version"] == "B"
    finally:
        deliverer.kill()
        deliverer.wait()
        store.close()


def test_a_writers_spool_file_a_dead_deliverer_claimed_is_delivered_by_the_writer(pouchdb, tmp_path):
    """A deliverer that died holding the writer's own spool file: the writer takes the claim over and
    delivers it in its order (it took the missing file for delivered, wrote its newer versions, and
    the next delivery then replaced them with the older ones)."""
    with writer_that_spooled(pouchdb, tmp_path) as (writer, proxy):
        (path,) = writer.spool.directory.iterdir()
        dead = path.rename(path.with_name("%s.%d-1.delivering" % (path.name, os.getpid())))  # before a reboot
        proxy.start()
        writer._drain([])
        assert writer.store.get(writer.db, "doc")["version"] == "A" and not dead.exists()


def _flushed(proxy: FaultProxy, spool: Spool) -> str:
    """Run ``flush`` to its end (it must deliver everything): its output."""
    out, err = _command_process(proxy, spool).communicate(timeout=120)
    assert not spool.pending(), out + err
    return out + err


@contextlib.contextmanager
def _flush_delivering(proxy: FaultProxy, spool: Spool, db: str):
    """A real ``flush`` held in the middle of its write of ``db`` (its spool file claimed); at the
    block's end it is killed (``kill -9``) and its held write dropped, never reaching the store: its
    claim is left by a dead process."""
    write = b"POST /%s/_bulk_docs" % db.encode()
    proxy.hold(write)
    flush = _command_process(proxy, spool)
    try:
        deadline = time.monotonic() + 120
        while not proxy.holding and flush.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proxy.holding, flush.communicate()
        yield flush
    finally:
        flush.kill()
        flush.communicate()
        proxy.release()
    deadline = time.monotonic() + 30
    while proxy.dropped_after_hold + proxy.passed_after_hold < proxy.holding and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (proxy.dropped_after_hold, proxy.passed_after_hold) == (1, 0), (
        "the killed flush's write never arrived"
    )
    assert len(list(spool.directory.glob("*.delivering"))) == 1, "the dead flush's claim is left"


@pytest.mark.parametrize(
    "order",
    [
        "the writer writes after the kill",
        "the writer waited behind the delivery, then it died",
        "flush again before the writer writes",
        "the file was the writer's own",
    ],
)
def test_a_dead_deliverers_older_version_never_replaces_a_live_writers_newer_one(pouchdb, tmp_path, order):
    """A real ``flush`` killed (``kill -9``) while delivering a spool file of version A leaves its
    claim; a live writer, then, writes version B of the same document. The writer saw no live
    delivery and wrote B at once (or, had it waited behind that delivery, delivered only its own
    file once it was dead); the next ``flush`` took the dead claim over and A replaced B. Now a
    writer delivers every file of its database for its store that it goes after (another process's,
    a dead one's claim) before it writes, in order: B stays, in every order of events."""
    from votersdaily.store.writer import BatchWriter

    proxy = FaultProxy(pouchdb.port)
    spool = Spool(tmp_path / "spool")
    store = open_store(proxy.url)
    db = "db_%s" % uuid.uuid4().hex[:12]
    writer = BatchWriter(store, db, retry_times=0, spool=spool)
    try:
        if order == "the file was the writer's own":  # the store was away: the writer spooled A
            assert writer._write([{"_id": "doc", "version": "A"}]).spooled == ["doc"]
        else:  # an earlier run's spool file
            spool.write(identity_of(store), db, [{"_id": "doc", "version": "A"}])
        proxy.start()
        with _flush_delivering(proxy, spool, db):
            if order == "the writer waited behind the delivery, then it died":
                assert writer._write([{"_id": "doc", "version": "B"}]).spooled == ["doc"]
        if order == "flush again before the writer writes":
            _flushed(proxy, spool)
            assert store.get(db, "doc")["version"] == "A"
        if order != "the writer waited behind the delivery, then it died":
            newer = writer._write([{"_id": "doc", "version": "B"}])  # the writer's thread's call
            assert newer.updated == ["doc"] or newer.inserted == ["doc"], newer
        writer._drain([])  # the writer's last call at its end
        if spool.pending():
            _flushed(proxy, spool)
        assert store.get(db, "doc")["version"] == "B"
        # Another process's A, delivered by the writer first, is counted apart from its run's own.
        delivered_by_writer = order in (
            "the writer writes after the kill",
            "the writer waited behind the delivery, then it died",
        )
        assert writer.take_delivered_earlier() == (1 if delivered_by_writer else 0)
        spooled_by_writer = order in (
            "the writer waited behind the delivery, then it died",
            "the file was the writer's own",
        )
        assert (writer.outage.spooled, writer.outage.delivered_from_spool) == (
            spooled_by_writer,
            spooled_by_writer,
        )
        assert not spool.pending() and not list(spool.directory.iterdir())
    finally:
        store.close()
        proxy.stop()


def test_a_spool_file_the_store_refuses_is_left_for_flush_not_tried_before_every_write(
    pouchdb, tmp_path, caplog
):
    """A writer delivers the spool files of its database ahead of its writes; one whose document the
    store refuses (a ``validate_doc_update``) stays spooled for ``flush``, and the writer does not try
    it again before each of its later batches (a round trip and an error line per batch)."""
    from votersdaily.store.writer import BatchWriter

    store = open_store(pouchdb.url)
    db = "db_%s" % uuid.uuid4().hex[:12]
    store.ensure_db(db)
    guard = "function (doc) { if (doc._id === 'refused') { throw({forbidden: 'not this one'}); } }"
    store.bulk_docs(db, [{"_id": "_design/guard", "validate_doc_update": guard}])
    spool = Spool(tmp_path / "spool")
    path = spool.write(identity_of(store), db, [{"_id": "refused"}, {"_id": "taken"}])
    writer = BatchWriter(store, db, retry_times=0, spool=spool)
    try:
        with caplog.at_level(logging.WARNING):
            assert writer._write([{"_id": "first"}]).inserted == ["first"]
            assert writer._write([{"_id": "second"}]).inserted == ["second"]
        refusals = [r.getMessage() for r in caplog.records if "could not be delivered" in r.getMessage()]
        assert len(refusals) == 1 and "forbidden: not this one" in refusals[0]
        assert writer.take_delivered_earlier() == 1 and store.get(db, "taken") is not None
        assert [f.path for f in spool.pending()] == [path]
    finally:
        store.close()


def test_what_another_process_spooled_a_crawl_delivers_before_its_write_is_counted_apart(pouchdb, tmp_path):
    """A crawl's writer that delivers another process's spool file ahead of its next write (here a
    claim whose deliverer died after the crawl opened: its first batch held by the proxy meanwhile)
    counts those documents as delivered from the spool, never as its own: the summary's line, the
    run log's ``spool_delivered_count``, not its ``insert_count``."""
    pouchdb.reset()
    proxy = FaultProxy(pouchdb.port).start()
    store = open_store(proxy.url)
    spool = Spool(tmp_path / "spool")
    try:
        store.ensure_db(schema.EVENTS_DB)
        store.install_views(schema.EVENTS_DB)  # as `views push` did: the crawl's first POST is its batch
        proxy.hold(b"POST /%s/_" % schema.EVENTS_DB.encode())
        crawl = _command_process(
            proxy, spool, "crawl", "house_votes", "--offline", "-s", "VOTERSDAILY_BATCH_SIZE=1"
        )
        deadline = time.monotonic() + 120
        while not proxy.holding and crawl.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proxy.holding, crawl.communicate()
        path = spool.write(identity_of(store), schema.EVENTS_DB, [{"_id": "spooled-elsewhere"}])
        path.rename(path.with_name("%s.%d-1.delivering" % (path.name, os.getpid())))  # its deliverer is gone
        proxy.release()
        _, err = crawl.communicate(timeout=300)
        assert crawl.returncode == 0, err
        assert "1 documents spooled by earlier runs were delivered to" in err
        [log] = store.iter_docs(schema.LOG_DB)
        events = [doc["_id"] for doc in store.iter_docs(schema.EVENTS_DB)]
        assert "spooled-elsewhere" in events and not spool.pending()
        assert (log["spool_delivered_count"], log["insert_count"]) == (1, len(events) - 1)
    finally:
        store.close()
        proxy.stop()
