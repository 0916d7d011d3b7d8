"""CouchDB's refusals told apart by its ``{"error", "reason"}`` answer, not by the status alone
(the member user's path and the lockout), on every run of the suite.

The server here is a STUB: the local test site answering, path by path, what Apache CouchDB 3.4.3
answered (built from its source, tag 3.4.3, QuickJS engine; recorded with curl on 2026-11-26) to a
locked-out user (``GET /_session`` after 5 failed logins; the reason is ``LOCKOUT_MSG`` of
src/couch/src/couch_httpd_auth.erl), to a member user (``GET /_all_dbs``, ``PUT /{db}``, a design document in ``_bulk_docs``), to a user who
is no member (``GET /{db}``) and for a missing database. The pinned PouchDB Server has no members and
no lockout; tests/cli/test_couchdb_users.py runs the same cases on a real CouchDB
($VOTERSDAILY_TEST_COUCHDB).
"""

from __future__ import annotations

import json

import pytest

from tests.support.couchlimit import TAKEN, TOO_LARGE, SizeLimitProxy, refusal
from votersdaily.recordings import HERE as RECORDINGS
from votersdaily.store import StoreError, StoreUnavailable, open_store
from votersdaily.store.base import StoreRefused
from votersdaily.store.views import design_document

#: CouchDB 3.4.3's answers, recorded (status, body).
SESSION_OF_MEMBER = (
    200,
    {
        "ok": True,
        "userCtx": {"name": "member1", "roles": ["votersdaily"]},
        "info": {"authentication_handlers": ["cookie", "default"], "authenticated": "default"},
    },
)
LOCKED_OUT = (
    403,
    {"error": "forbidden", "reason": "Account is temporarily locked due to multiple authentication failures"},
)
NOT_A_SERVER_ADMIN = (401, {"error": "unauthorized", "reason": "You are not a server admin."})
NOT_A_MEMBER = (403, {"error": "forbidden", "reason": "You are not allowed to access this db."})
NO_USER = (401, {"error": "unauthorized", "reason": "You are not authorized to access this db."})
NO_DATABASE = (404, {"error": "not_found", "reason": "Database does not exist."})
EMPTY_DATABASE = (200, {"db_name": "vd_events", "doc_count": 0, "doc_del_count": 0})
#: ``POST /{db}/_bulk_docs`` of a design document by a member.
DESIGN_REFUSED = (
    201,
    [{"id": "_design/votersdaily", "error": "forbidden", "reason": "You are not a db or server admin."}],
)


@pytest.fixture
def couch_stub(site):
    """``answer(path, (status, body))`` programs the stub; it answers JSON like CouchDB."""

    def answer(path: str, reply: tuple[int, object]) -> None:
        status, body = reply
        site.route(path, json.dumps(body), status=status, content_type="application/json")

    answer("/_session", SESSION_OF_MEMBER)
    answer("/_all_dbs", NOT_A_SERVER_ADMIN)
    answer("/vd_events", EMPTY_DATABASE)
    answer("/vd_events/_all_docs", (200, {"total_rows": 0, "offset": 0, "rows": []}))
    return answer


def uri(site, user: str = "member1") -> str:
    return site.url.replace("://", "://%s:secret@" % user) + "/"


def shown(site, user: str = "member1") -> str:
    return site.url.replace("://", "://%s:***@" % user) + "/"


def lockout_line(command: str, uri: str, user: str) -> str:
    """What a command says when CouchDB has locked ``user`` out."""
    return (
        "votersdaily %s: the store at %s has locked user %r out after failed logins (GET /_session: HTTP 403 "
        "forbidden: Account is temporarily locked due to multiple authentication failures): CouchDB 3.4+ "
        "refuses it from this address until max_lifetime has passed since the first failure (default "
        "300000 ms: 5 minutes, after threshold = 5 failures), by its [chttpd_auth_lockout] settings; fix "
        "the password in $VOTERSDAILY_STORE, then wait" % (command, uri, user)
    )


def test_a_member_reads_without_asking_for_the_list_of_databases(cli_main, site, couch_stub):
    proc = cli_main("dump", "vd_events", store_uri=uri(site))
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert not site.hits.get("/_all_dbs")  # which only a server admin may read
    couch_stub("/vd_events", NO_DATABASE)
    proc = cli_main("dump", "vd_events", store_uri=uri(site))
    assert proc.returncode == 2
    assert proc.stderr == "votersdaily dump: no database 'vd_events' in %s\n" % shown(site)


def test_a_locked_out_user_is_told_so_and_for_how_long(cli_main, site, couch_stub):
    couch_stub("/_session", LOCKED_OUT)
    proc = cli_main("export", "ics", store_uri=uri(site))
    assert proc.returncode == 3 and proc.stdout == ""
    assert proc.stderr.splitlines() == [lockout_line("export", shown(site), "member1")]


def test_a_member_who_may_not_create_a_database_is_told_who_may(site, couch_stub):
    site.route("/vd_events", _get_or_put)
    store = open_store(uri(site))
    with pytest.raises(StoreError) as refused:
        store.ensure_db("vd_events")
    assert str(refused.value) == (
        "database 'vd_events' does not exist in the store at %s and user 'member1' may not create it "
        "(PUT /vd_events: HTTP 401 unauthorized: You are not a server admin.): a server admin creates the "
        "databases once, e.g. with `python -m votersdaily views push` (docs/operations.md: Users and roles)"
        % shown(site)
    )
    assert isinstance(refused.value, StoreRefused)  # spooled like an outage, never retried


def _get_or_put(handler) -> tuple[int, dict, bytes]:
    status, body = NO_DATABASE if handler.command == "GET" else NOT_A_SERVER_ADMIN
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode()


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            NOT_A_MEMBER,
            "user 'member1' may not use database 'vd_events' in the store at {uri} (GET /vd_events: HTTP 403 "
            "forbidden: You are not allowed to access this db.): a server admin makes it a member there "
            "(docs/operations.md: Users and roles)",
        ),
        (
            (502, "<html><body>Bad Gateway</body></html>"),
            "the store at {uri} answered GET /vd_events with HTTP 502, not CouchDB's error",
        ),
        (
            (404, "<html><body>Not Found</body></html>"),
            "{uri} does not answer like CouchDB (GET /vd_events: HTTP 404): check the URL in $VOTERSDAILY_STORE",
        ),
        (
            (503, {"error": "service_unavailable", "reason": "Service unavailable"}),
            "the store at {uri} answered GET /vd_events: HTTP 503 service_unavailable: Service unavailable",
        ),
    ],
)
def test_refusals_are_told_by_couchdbs_answer(site, couch_stub, reply, message):
    status, body = reply
    if isinstance(body, str):  # a proxy's page, not CouchDB's answer
        site.route("/vd_events", body, status=status, content_type="text/html")
    else:
        couch_stub("/vd_events", reply)
    store = open_store(uri(site))
    with pytest.raises(StoreError) as refused:
        store.has_db("vd_events")
    assert str(refused.value) == message.format(uri=shown(site))
    # A refusal of the credentials or rights is spooled like an outage but never retried.
    assert isinstance(refused.value, StoreRefused) is (status in (401, 403))
    assert isinstance(refused.value, StoreUnavailable) is (status >= 500 or status in (401, 403))


def test_a_request_without_a_user_is_asked_for_one(site, couch_stub):
    couch_stub("/vd_events", NO_USER)
    store = open_store(site.url + "/")
    with pytest.raises(StoreError) as refused:
        store.has_db("vd_events")
    assert str(refused.value) == (
        "the store at %s/ wants a user (GET /vd_events: HTTP 401 unauthorized: You are not authorized to "
        "access this db.): put a member's user and password in $VOTERSDAILY_STORE (docs/operations.md: "
        "Users and roles)" % site.url
    )


def test_a_member_meeting_views_it_may_not_write_is_told_who_may(site, couch_stub):
    couch_stub("/vd_log", EMPTY_DATABASE)
    couch_stub("/vd_log/_design/votersdaily", (404, {"error": "not_found", "reason": "missing"}))
    couch_stub("/vd_log/_bulk_docs", DESIGN_REFUSED)
    store = open_store(uri(site))
    with pytest.raises(StoreError) as refused:
        store.install_views("vd_log")
    assert str(refused.value) == (
        "the views of vd_log are missing or out of date and this user may not write them (forbidden: You "
        "are not a db or server admin.): a server admin runs `python -m votersdaily views push` once "
        "(docs/operations.md: Users and roles)"
    )


def test_a_read_command_on_a_store_nothing_was_crawled_into_says_so(cli_main, site, couch_stub, tmp_path):
    """A store without ``vd_events`` (another server, a mistyped VOTERSDAILY_DB_PREFIX): before,
    ``export`` printed an empty calendar and ``site build`` an empty site, exit 0 both."""
    couch_stub("/vd_events", NO_DATABASE)
    couch_stub("/vd_log", NO_DATABASE)
    export = cli_main("export", "ics", store_uri=uri(site))
    assert (export.returncode, export.stdout) == (2, "")
    assert export.stderr == (
        "votersdaily export: no database 'vd_events' in %s: nothing was crawled into this store; run a crawl "
        "first, or check $VOTERSDAILY_STORE and $VOTERSDAILY_DB_PREFIX\n" % shown(site)
    )
    built = cli_main("site", "build", str(tmp_path / "site"), store_uri=uri(site))
    assert built.returncode == 2 and not (tmp_path / "site").exists()
    assert built.stderr.startswith(
        "votersdaily site: no database 'vd_events' or 'vd_log' in %s:" % shown(site)
    )


def test_a_page_that_is_not_json_where_a_document_should_be_is_one_line(cli_main, site, couch_stub):
    """A proxy's page in place of a design document: before, a 40-line JSONDecodeError traceback."""
    site.route("/vd_events/_design/votersdaily", "<html>maintenance</html>", content_type="text/html")
    proc = cli_main("views", "push", store_uri=uri(site))
    assert proc.returncode == 3
    assert proc.stderr == (
        "votersdaily views: GET %svd_events/_design/votersdaily answered non-JSON: '<html>maintenance</html>'\n"
        % shown(site)
    )


@pytest.fixture
def archived(cli, tmp_path) -> dict[str, str]:
    """An archive of house_votes (an offline crawl into an embedded store); the environment naming it."""
    env = {
        "VOTERSDAILY_ARCHIVE_DIR": str(tmp_path / "archive"),
        "VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool"),
    }
    crawled = cli(
        "crawl", "house_votes", "--offline", store_uri="sqlite:///%s" % (tmp_path / "s.db"), env=env
    )
    assert crawled.returncode == 0, crawled.stderr
    return env


def views_installed_by_an_admin() -> tuple[str, tuple[int, dict]]:
    """The events' design document as ``views push`` installs it (a member may not write it)."""
    return "/vd_events/_design/votersdaily", (200, {**design_document("vd_events"), "_rev": "1-a"})


def test_a_member_reparses_without_asking_for_the_list_of_databases(cli, site, couch_stub, archived):
    """Before, the reparse asked ``_all_dbs`` (server admins only) at its end: a member's dry run
    failed with 90 lines of a 401 traceback."""
    couch_stub(*views_installed_by_an_admin())
    couch_stub("/vd_events/_design/votersdaily/_view/by_parser_provenance", (200, {"rows": []}))
    proc = cli("reparse", "--dry-run", "house_votes", store_uri=uri(site), env=archived)
    assert proc.returncode == 0, proc.stderr
    assert "would insert 3, update 0, withdraw 0, replace 0; 0 unchanged" in proc.stdout
    assert not site.hits.get("/_all_dbs")


@pytest.mark.parametrize("where", ["/vd_events", "/vd_events/_design/votersdaily/_view/by_parser_provenance"])
def test_a_store_failing_under_a_reparse_is_one_line(cli, site, couch_stub, archived, where):
    """The store answers the check, then fails: on the events database (before any work: exit 3, as
    every store command), or on the view the reparse reads (the run fails with it: one line for the
    spider, exit 1). Before, 400 to 600 lines of tracebacks from the reparse's signal handlers."""
    couch_stub(*views_installed_by_an_admin())
    couch_stub(where, (500, {"error": "internal_server_error", "reason": "No DB shards could be opened."}))
    proc = cli("reparse", "--dry-run", "house_votes", store_uri=uri(site), env=archived)
    said = (
        "the store at %s answered GET %s: HTTP 500 internal_server_error: No DB shards could be opened."
        % (
            shown(site),
            where,
        )
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    if where == "/vd_events":
        assert proc.returncode == 3 and proc.stdout == ""
        assert proc.stderr == "votersdaily reparse: %s\n" % said
    else:
        assert proc.returncode == 1
        (line,) = [line for line in proc.stderr.splitlines() if "ERROR" in line]
        assert line.endswith("ERROR: reparse of house_votes: %s" % said)


def test_a_document_over_the_servers_size_limit_is_refused_on_its_own(site, couch_stub):
    """CouchDB 3 refuses a whole ``_bulk_docs`` request for one document over its
    ``max_document_size``: before, the batch failed with it (StoreError), spooled, and every ``flush``
    failed the same way. The stub is a DERIVED variant of the recorded answers: it applies the rule with
    a limit of 1,000 bytes (a server whose admin lowered the setting) and names the first document over
    it, so the test sends small documents; what it answers has the recorded shapes."""
    limit = 1000
    posted: list[list[str]] = []

    def bulk_docs(handler) -> tuple[int, dict, bytes]:
        docs = json.loads(handler.request_body)["docs"]
        posted.append([doc["_id"] for doc in docs])
        status, answer = refusal(docs, limit) or (201, [dict(TAKEN, id=doc["_id"]) for doc in docs])
        return status, {"Content-Type": "application/json"}, json.dumps(answer).encode()

    site.route("/vd_events/_bulk_docs", bulk_docs)
    store = open_store(uri(site))
    docs = [
        {"_id": "small1", "n": 1},
        {"_id": "big1", "text": "x" * limit},
        {"_id": "small2", "n": 2},
        {"_id": "big2", "text": "y" * limit},
    ]
    answers = store.bulk_docs("vd_events", docs)
    assert [answer["id"] for answer in answers] == ["small1", "big1", "small2", "big2"]
    assert [answer.get("error") for answer in answers] == [
        None,
        "document_too_large",
        None,
        "document_too_large",
    ]
    assert "max_document_size" in answers[1]["reason"]
    assert posted == [
        ["small1", "big1", "small2", "big2"],
        ["small1", "small2", "big2"],
        ["small1", "small2"],
    ]
    refused = TOO_LARGE[0], {"error": "document_too_large", "reason": "one that is not in the batch"}
    couch_stub("/vd_events/_bulk_docs", refused)  # an answer naming no document sent: the refusal, as before
    with pytest.raises(StoreError, match="HTTP 413 document_too_large"):
        store.bulk_docs("vd_events", docs[:1])


def test_a_flush_the_store_refuses_says_it_refused_not_that_it_is_unavailable(
    cli_main, site, couch_stub, tmp_path
):
    """A user who is no member flushes: the store answers, and refuses the database. Before, the line
    said "store still unavailable", as if the server were down, so the operator waited for it."""
    from votersdaily.store.identity import store_identity
    from votersdaily.store.spool import Spool

    couch_stub("/vd_events", NOT_A_MEMBER)
    spool = tmp_path / "spool"
    Spool(spool).write(store_identity(uri(site)), "vd_events", [{"_id": "one", "title": "One"}])
    proc = cli_main("flush", store_uri=uri(site), env={"VOTERSDAILY_SPOOL_DIR": str(spool)})
    assert (proc.returncode, proc.stdout) == (3, "")
    assert proc.stderr.splitlines() == [
        "votersdaily flush: the store refused them, documents stay spooled in %s: user 'member1' may not use "
        "database 'vd_events' in the store at %s (GET /vd_events: HTTP 403 forbidden: You are not allowed to "
        "access this db.): a server admin makes it a member there (docs/operations.md: Users and roles)"
        % (spool, shown(site))
    ]
    assert len(list(spool.glob("*.jsonl"))) == 1  # kept for a flush with a member's credentials


@pytest.mark.parametrize("command", ["votersdaily crawl", "scrapy crawl"])
def test_a_document_over_the_servers_size_limit_is_said_once_by_id_and_fails_the_crawl(
    cli, crawl, pouchdb, tmp_path, command
):
    """A crawl into CouchDB 3 with an event over its ``max_document_size``: the store refuses that
    event on its own (the rest stored) and it is never spooled (no later try can store it). Before, the
    run log counted it (``failed_writes``) and nothing else did: a run of result ``success``, no line,
    exit 0. Now the crawl's last lines say it once, naming the document and the setting, its run log
    names it (``failed_documents``), and the crawl exits 1. PouchDB Server behind a proxy answering the
    recorded 413 (tests/support/couchlimit.py: a DERIVED variant, a limit just under the largest event
    of the recording, learnt from a first crawl)."""
    from votersdaily.store.couch import TOO_LARGE_REASON

    env = {
        "VOTERSDAILY_ARCHIVE_DIR": str(tmp_path / "archive"),
        "VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool"),
    }

    def crawled(uri: str):
        if command == "scrapy crawl":
            # A process of its own: the in-process runner leaves the command's last lines out of its stderr.
            roll = RECORDINGS / "gov/house_roll_call/roll314.xml"
            return crawl("house_votes", roll, uri, env=env, subprocess=True)
        return cli("crawl", "house_votes", "--offline", store_uri=uri, env=env)

    pouchdb.reset()
    with SizeLimitProxy(pouchdb.port, "vd_events") as measured:
        assert crawled(measured.url).returncode == 0
    sizes = [0, *sorted(measured.sizes.values())]  # a limit between the largest event and the next
    assert sizes[-1] - sizes[-2] > 200, sizes  # one event alone over it
    (largest,) = [doc_id for doc_id, size in measured.sizes.items() if size == sizes[-1]]
    pouchdb.reset()
    with SizeLimitProxy(pouchdb.port, "vd_events", limit=(sizes[-1] + sizes[-2]) // 2) as limited:
        proc = crawled(limited.url)
    assert limited.refused >= 1
    assert proc.returncode == 1, proc.stderr
    reason = "document_too_large: %s" % TOO_LARGE_REASON
    assert [line for line in proc.stderr.splitlines() if largest in line] == [
        "%s: 1 documents of 1 runs (house_votes) were not stored: the store refused them "
        "(%s: %s); their run logs name them (failed_documents)" % (command, largest, reason)
    ]
    store = open_store(pouchdb.url)
    try:
        [log] = store.iter_docs("vd_log")
        assert (log["failed_writes"], log["failed_documents"]) == (1, {largest: reason})
        assert {doc["_id"] for doc in store.iter_docs("vd_events")} == set(measured.sizes) - {largest}
    finally:
        store.close()
    assert not list((tmp_path / "spool").glob("*.jsonl")), "a refused document is not spooled"
