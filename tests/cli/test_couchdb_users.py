"""A least-privilege deployment on a real CouchDB 3, set up as docs/operations.md says: a server
admin creates the databases and views once (docs/events.md's path with credentials), a
member user crawls and runs every read command, and a user who is no member, a user who may not create
a database and a locked-out user are each told so in one line, with nothing on standard output.

These run only with ``$VOTERSDAILY_TEST_COUCHDB`` (CONTRIBUTING.md: Tests on a real CouchDB): the
pinned PouchDB Server 4.2 knows no database members and no lockout, and crashes on ``PUT /{db}`` once
an admin exists, so the credentials path cannot run on it. tests/cli/test_couch_answers.py checks the
messages on every run, from CouchDB's answers recorded on a real server.
"""

from __future__ import annotations

import json
import urllib.error
import uuid

import pytest

from tests.cli.test_couch_answers import lockout_line
from tests.support.services import COUCHDB_ENV, ExternalCouchDB
from votersdaily.cli.views import project_databases
from votersdaily.defaults import DEFAULTS
from votersdaily.store.names import database_name

NO_COUCHDB = (
    "needs a real CouchDB 3 ($%s, CONTRIBUTING.md): the pinned PouchDB Server has no database members "
    "or lockout, and crashes on PUT /{db} once an admin exists" % COUCHDB_ENV
)


@pytest.fixture
def deployment(couchdb, tmp_path):
    """docs/operations.md's steps: a member role's users, every database and view made by the admin,
    the role made each database's member; the users are removed afterwards."""
    if not isinstance(couchdb, ExternalCouchDB):
        pytest.skip(NO_COUCHDB)
    couchdb.reset()
    role = couchdb.prefix + "crawlers"
    users = {
        kind: ("%s%s-%s" % (couchdb.prefix, kind, uuid.uuid4().hex[:6]), uuid.uuid4().hex)
        for kind in ("member", "outsider", "locked")
    }
    for kind, (name, password) in users.items():
        roles = [role] if kind != "outsider" else []
        couchdb.request(
            "PUT",
            "_users/org.couchdb.user:" + name,
            {"name": name, "password": password, "roles": roles, "type": "user"},
        )
    try:
        yield (
            couchdb,
            {kind: couchdb.url_as(*credentials) for kind, credentials in users.items()},
            users,
            role,
        )
    finally:
        for name, _ in users.values():
            doc = couchdb.request("GET", "_users/org.couchdb.user:" + name)
            couchdb.request("DELETE", "_users/org.couchdb.user:%s?rev=%s" % (name, doc["_rev"]))


def set_up(cli_main, couchdb, role: str) -> None:
    """As the admin: ``views push`` of every database, then the role as each one's member."""
    databases = project_databases(DEFAULTS)
    pushed = cli_main("views", "push", *databases, store_uri=couchdb.url)
    assert pushed.returncode == 0, pushed.stderr
    security = {"admins": {"names": [], "roles": []}, "members": {"names": [], "roles": [role]}}
    for db in databases:
        assert couchdb.request("PUT", database_name(couchdb.prefix, db) + "/_security", security)["ok"]


def test_a_member_crawls_and_runs_every_read_command(cli, cli_main, deployment, tmp_path):
    couchdb, uris, _, role = deployment
    set_up(cli_main, couchdb, role)
    member = uris["member"]
    with pytest.raises(urllib.error.HTTPError) as refused:  # what the commands used to ask
        ExternalCouchDB(member, couchdb.prefix).request("GET", "_all_dbs")
    assert refused.value.code == 401
    env = {
        "VOTERSDAILY_ARCHIVE_DIR": str(tmp_path / "archive"),
        "VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool"),
    }
    crawled = cli("crawl", "--offline", "house_votes", store_uri=member, env=env)
    assert crawled.returncode == 0, crawled.stderr[-3000:]
    dumped = cli_main("dump", "vd_events", store_uri=member, env=env)
    assert dumped.returncode == 0, dumped.stderr
    events = [json.loads(line) for line in dumped.stdout.splitlines()]
    assert events and all(e["parser_name"] == "house_votes" for e in events)
    ics = cli_main("export", "ics", store_uri=member, env=env)
    assert ics.returncode == 0, ics.stderr
    assert ics.stdout.count("BEGIN:VEVENT") == len(events)
    feed = cli_main("export", "json", store_uri=member, env=env)
    assert feed.returncode == 0 and len(json.loads(feed.stdout)["events"]) == len(events), feed.stderr
    site = cli_main("site", "build", str(tmp_path / "site"), store_uri=member, env=env)
    assert site.returncode == 0, site.stderr
    assert (tmp_path / "site" / "feeds" / "all.ics").is_file()
    due = cli("crawl", "--offline", "--due", "house_votes", store_uri=member, env=env)
    assert due.returncode == 0, due.stderr[-3000:]
    assert "not due" in due.stdout
    reparsed = cli("reparse", "house_votes", store_uri=member, env=env)
    assert reparsed.returncode == 0, reparsed.stderr[-3000:]
    pushed = cli_main("views", "push", store_uri=member, env=env)  # the admin's views are current
    assert pushed.returncode == 0, pushed.stderr
    assert not list((tmp_path / "spool").glob("*.jsonl"))  # every write reached the store


def test_a_member_may_not_create_a_database_and_is_told_who_may(cli_main, deployment):
    couchdb, uris, users, role = deployment
    set_up(cli_main, couchdb, role)
    couchdb.request("DELETE", database_name(couchdb.prefix, "ll_seeds"))  # one the admin did not make
    proc = cli_main("views", "push", "ll_seeds", store_uri=uris["member"])
    assert proc.returncode == 3 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "votersdaily views: database %r does not exist in the store at %s and user %r may not create it "
        "(PUT /%s: HTTP 401 unauthorized: You are not a server admin.): a server admin creates the "
        "databases once, e.g. with `python -m votersdaily views push` (docs/operations.md: Users and roles)"
        % (
            database_name(couchdb.prefix, "ll_seeds"),
            uris["member"].replace(users["member"][1], "***"),
            users["member"][0],
            database_name(couchdb.prefix, "ll_seeds"),
        )
    ]


@pytest.mark.parametrize("command", [["dump", "vd_events"], ["export", "ics"], ["site", "build"]])
def test_a_user_who_is_no_member_is_told_so_and_gets_no_partial_output(
    cli_main, deployment, tmp_path, command
):
    couchdb, uris, users, role = deployment
    set_up(cli_main, couchdb, role)
    site = tmp_path / "site"
    proc = cli_main(*command, *([str(site)] if command[0] == "site" else []), store_uri=uris["outsider"])
    assert proc.returncode == 3 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith(
        "votersdaily %s: user %r may not use database " % (command[0], users["outsider"][0])
    )
    assert any(repr(database_name(couchdb.prefix, db)) in line for db in ("vd_events", "vd_log"))
    assert "HTTP 403 forbidden: You are not allowed to access this db.)" in line
    assert line.endswith("a server admin makes it a member there (docs/operations.md: Users and roles)")
    assert not site.exists()


def test_a_locked_out_user_is_told_so_and_for_how_long(cli_main, deployment):
    couchdb, uris, users, _ = deployment
    name, password = users["locked"]
    wrong = couchdb.url_as(name, "wrong")
    for _ in range(5):  # CouchDB's default threshold
        proc = cli_main("dump", "vd_events", store_uri=wrong)
        assert proc.returncode == 3 and "refused the credentials (HTTP 401)" in proc.stderr
    proc = cli_main("dump", "vd_events", store_uri=uris["locked"])  # the right password, too late
    assert proc.returncode == 3 and proc.stdout == ""
    assert proc.stderr.splitlines() == [lockout_line("dump", uris["locked"].replace(password, "***"), name)]
