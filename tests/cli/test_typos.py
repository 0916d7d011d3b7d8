"""Typos that used to create things or crash: each is now one line and exit status 2,
before any work; and ``python -m votersdaily crawl`` takes ``-a``/``-s`` as ``scrapy crawl`` does, whose
exit status now says how the run went."""

from __future__ import annotations

import contextlib
import json
import random
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from scrapy.utils.project import get_project_settings

from tests.conftest import recording
from tests.support.services import REPO, run_cli
from votersdaily.setting_rules import (
    BadSettingValue,
    _typos_apart,
    all_rules,
    assign,
    bad_settings,
    project_rules,
)
from votersdaily.store import open_store

ROLL314 = recording("gov/house_roll_call/roll314.xml")


def one_line(proc) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return lines[0]


def test_views_push_of_an_unknown_database_creates_nothing(cli_main, couch_uri):
    line = one_line(cli_main("views", "push", "vd_event", store_uri=couch_uri))
    assert line.startswith("votersdaily views: unknown database(s) 'vd_event'; known: vd_events, vd_log, ")
    assert "vd_event" not in requests.get(couch_uri + "_all_dbs", timeout=10).json()
    assert cli_main("views", "push", "vd_log", store_uri=couch_uri).returncode == 0


def test_dump_of_a_mistyped_database_names_the_one_meant(cli_main, couch_uri):
    assert cli_main("views", "push", "vd_events", store_uri=couch_uri).returncode == 0
    line = one_line(cli_main("dump", "vd_event", store_uri=couch_uri))
    assert line == "votersdaily dump: no database 'vd_event' in %s; did you mean vd_events?" % couch_uri
    line = one_line(cli_main("dump", "vd_log", store_uri=couch_uri))  # no typo: never "did you mean vd_log?"
    assert line == "votersdaily dump: no database 'vd_log' in %s" % couch_uri


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ("-s", "VOTERSDAILY_BATCH_SIZE=abc"),
            "setting VOTERSDAILY_BATCH_SIZE takes a whole number of at least 1, not 'abc'",
        ),
        (
            ("-s", "VOTERSDAILY_BATCH_SIZE=0"),
            "setting VOTERSDAILY_BATCH_SIZE takes a whole number of at least 1, not '0'",
        ),
        (("-s", "ROBOTSTXT_OBEY=maybe"), "setting ROBOTSTXT_OBEY takes True or False, not 'maybe'"),
        (("-s", "DOWNLOAD_DELAY=soon"), "setting DOWNLOAD_DELAY takes a number, not 'soon'"),
        (
            ("-s", "VOTERSDAILY_SCHEDULE_HOURS=daily"),
            "setting VOTERSDAILY_SCHEDULE_HOURS takes a JSON object, not 'daily'",
        ),
        (
            ("--log-level", "VERBOSE"),
            "argument --log-level: unknown level 'VERBOSE'; known: CRITICAL, ERROR, WARNING, INFO, DEBUG (see --help)",
        ),
        (("-a", "url"), "argument -a: 'url' is not NAME=VALUE (see --help)"),
    ],
)
def test_a_bad_value_is_one_line_before_any_work(cli_main, tmp_path, args, message):
    """In the test process: the command stops before it starts a crawl (it would run a reactor)."""
    store = tmp_path / "store.db"
    line = one_line(cli_main("crawl", "house_votes", *args, store_uri="sqlite:///%s" % store))
    assert line == "votersdaily crawl: " + message
    assert not store.exists()  # nothing ran: no store, no run log


def test_reparse_checks_its_settings_alike(cli_main, sqlite_uri):
    line = one_line(
        cli_main("reparse", "house_votes", "-s", "VOTERSDAILY_BATCH_SIZE=abc", store_uri=sqlite_uri)
    )
    assert (
        line
        == "votersdaily reparse: setting VOTERSDAILY_BATCH_SIZE takes a whole number of at least 1, not 'abc'"
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ("-s", "VOTERSDAILY_BATCH_SIZE=abc"),
            "setting VOTERSDAILY_BATCH_SIZE takes a whole number of at least 1, not 'abc'",
        ),
        (
            ("-L", "VERBOSE"),
            "setting LOG_LEVEL takes one of CRITICAL, ERROR, WARNING, INFO, DEBUG, not 'VERBOSE'",
        ),
    ],
)
def test_scrapy_crawl_checks_settings_before_any_work(tmp_path, args, message):
    """A real ``scrapy crawl`` (its own option parsing and crawler process): one line, exit 2."""
    store = tmp_path / "store.db"
    proc = run_cli([sys.executable, "-m", "scrapy", "crawl", "house_votes", *args], "sqlite:///%s" % store)
    assert one_line(proc) == "scrapy crawl: " + message
    assert not store.exists()


@pytest.mark.parametrize(
    "args, env, given",
    [
        ((), {"VOTERSDAILY_DB_PREFIX": "Staging_"}, "environment variable"),
        (("-s", "VOTERSDAILY_DB_PREFIX=9x"), {}, "setting"),
    ],
)
@pytest.mark.parametrize("command", ["votersdaily crawl", "scrapy crawl"])
def test_a_database_prefix_no_database_name_can_start_with_is_one_line_before_any_work(
    tmp_path, command, args, env, given
):
    """``VOTERSDAILY_DB_PREFIX=Staging_``: ``scrapy crawl`` was a traceback from the pipeline's
    opening store, exit 1; ``votersdaily crawl`` two lines, exit 3 (an unavailable store). Both
    refuse it now with every other setting, before any work."""
    store = tmp_path / "store.db"
    base = ["-m", "votersdaily", "crawl"] if command == "votersdaily crawl" else ["-m", "scrapy", "crawl"]
    proc = run_cli(
        [sys.executable, *base, "house_votes", "-a", "url=" + ROLL314.as_uri(), *args],
        "sqlite:///%s" % store,
        env=env,
    )
    value = env.get("VOTERSDAILY_DB_PREFIX") or args[1].partition("=")[2]
    assert one_line(proc) == (
        "%s: %s VOTERSDAILY_DB_PREFIX takes the start of a CouchDB database name: a lowercase letter, "
        "then lowercase letters, digits or _$()+-/, not %r" % (command, given, value)
    )
    assert not store.exists()


def test_scrapy_crawl_takes_any_case_of_a_level(crawl, sqlite_uri):
    assert crawl("house_votes", ROLL314, sqlite_uri, "-L", "warning").returncode == 0


def test_scrapy_crawl_names_the_spiders_of_a_typo(tmp_path):
    proc = run_cli(
        [sys.executable, "-m", "scrapy", "crawl", "house_vote"], "sqlite:///%s" % (tmp_path / "s.db")
    )
    assert one_line(proc).startswith("scrapy crawl: unknown spider 'house_vote'; known: federal_register, ")


def test_scrapy_crawl_of_a_failed_run_exits_non_zero(tmp_path):
    """A missing local file: retried, then FileNotFoundError in the run log; the exit status says so."""
    uri = "sqlite:///%s" % (tmp_path / "store.db")
    missing = (tmp_path / "gone" / "roll999.xml").as_uri()
    proc = run_cli([sys.executable, "-m", "scrapy", "crawl", "house_votes", "-a", "url=" + missing], uri)
    assert proc.returncode == 1, proc.stderr[-3000:]
    delivered = open_store(uri)
    try:
        (log,) = delivered.iter_docs("vd_log")
    finally:
        delivered.close()
    assert log["result"] == "FileNotFoundError"
    ok = run_cli(
        [sys.executable, "-m", "scrapy", "crawl", "house_votes", "-a", "url=" + ROLL314.as_uri()], uri
    )
    assert ok.returncode == 0, ok.stderr[-3000:]


def test_votersdaily_crawl_takes_spider_arguments_and_settings(cli, tmp_path):
    """The ``-a url=`` workflows with the command whose exit status matters."""
    uri = "sqlite:///%s" % (tmp_path / "store.db")
    proc = cli(
        "crawl",
        "house_votes",
        "-a",
        "url=" + ROLL314.as_uri(),
        "-s",
        "VOTERSDAILY_BATCH_SIZE=5",
        store_uri=uri,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[2].split()[:3] == ["house_votes", "success", "1"]
    delivered = open_store(uri)
    try:
        (log,) = delivered.iter_docs("vd_log")
    finally:
        delivered.close()
    assert log["input"] == "replay" and log["source_url"] == "https://clerk.house.gov/evs/2026/roll314.xml"
    failed = cli("crawl", "house_votes", "-a", "url=" + (tmp_path / "gone.xml").as_uri(), store_uri=uri)
    assert failed.returncode == 1 and "FileNotFoundError" in failed.stdout


def test_offline_and_url_together_is_a_usage_error(cli_main, sqlite_uri):
    line = one_line(
        cli_main("crawl", "house_votes", "--offline", "-a", "url=" + ROLL314.as_uri(), store_uri=sqlite_uri)
    )
    assert line == "votersdaily crawl: -a url= and --offline both say which documents to read: give one"


# -- the class: every typed setting of votersdaily/settings.py is checked ------------------------------


def bad_value(rule) -> str:
    """A value the rule must refuse."""
    if rule.kind is dict:
        return "[1, 2]"
    if rule.kind is bool:
        return "perhaps"
    if rule.choices:
        return "NOT-A-CHOICE"
    if rule.matches is not None:
        return "Not Of The Form!"
    if rule.minimum is not None:
        return str(rule.minimum - 1)
    return "twelve"


TYPED = {
    name: rule
    for name, rule in project_rules().items()
    if rule.kind is not str or rule.choices or rule.matches is not None
}
TYPED = {name: rule for name, rule in TYPED.items() if rule.kind is not list}  # a list takes any text


@pytest.mark.parametrize("name", sorted(TYPED))
def test_every_typed_setting_refuses_a_value_its_readers_cannot_use(name):
    settings = get_project_settings()
    assert list(bad_settings(settings)) == []  # every default passes its own rule
    value = bad_value(TYPED[name])
    with pytest.raises(BadSettingValue) as refused:
        assign(settings, name, value)
    assert str(refused.value) == "setting %s takes %s, not %r" % (name, TYPED[name].describe(), value)


TEXTS = sorted(name for name, rule in all_rules().items() if rule.kind is str)


def test_no_text_setting_takes_a_byte_that_is_no_utf_8():
    """``VOTERSDAILY_SPOOL_DIR=$'/srv/spool\\xff'`` (Python reads the byte as a lone surrogate): a
    folder or a URL named so cannot be written in a run log or a spool file, and the run died of
    ``UnicodeEncodeError`` after it began (the data home's case, audit, 2026-11-29). Every text
    setting, the project's and Scrapy's, now refuses it before the run."""
    settings = get_project_settings()
    accepted = []
    for name in TEXTS:
        try:
            assign(settings, name, "/srv/votersdaily/h\udcff")
        except BadSettingValue:
            continue
        accepted.append(name)
    assert accepted == []
    assert {"VOTERSDAILY_SPOOL_DIR", "LAUNDROMAT_OUTPUT_DIR", "USER_AGENT"} <= set(TEXTS)


NUMBERS = sorted(name for name, rule in all_rules().items() if rule.kind in (int, float))


@pytest.mark.parametrize("value", ["inf", "-Infinity", "1e400", "nan"])
def test_no_number_setting_takes_a_number_that_is_not_finite(value):
    """``-s LAUNDROMAT_CONTEXT_TIMEOUT=inf`` passed (only NaN was refused): the watchdog timer of
    every remote context fetch then died of ``OverflowError`` in a thread, every JSON-LD document
    with a remote context was failed, and the run exited 0; ``LAUNDROMAT_DEFAULT_INTERVAL=inf`` made
    the run store no seed at all (audit, 2026-11-29). Every number setting, the project's and
    Scrapy's, now refuses it before the run."""
    settings = get_project_settings()
    accepted = []
    for name in NUMBERS:
        try:
            assign(settings, name, value)
        except BadSettingValue:
            continue
        accepted.append(name)
    assert accepted == []
    assert "LAUNDROMAT_CONTEXT_TIMEOUT" in NUMBERS and "DOWNLOAD_TIMEOUT" in NUMBERS


def test_every_setting_read_as_a_number_is_declared_as_one():
    """A setting the code reads with getfloat must take a fraction, one read with getint a whole
    number, getbool True/False: the rules agree with every reader in the package."""
    readers = {"getint": int, "getfloat": float, "getbool": bool, "getdict": dict}
    rules = all_rules()
    wrong = []
    for path in (REPO / "votersdaily").rglob("*.py"):
        for reader, name in re.findall(
            r"\.(getint|getfloat|getbool|getdict)\(\s*\"([A-Z][A-Z0-9]*_[A-Z0-9_]+)\"", path.read_text()
        ):
            rule = rules.get(name)
            if rule is None or rule.kind is not readers[reader]:
                wrong.append("%s: %s(%r) but the rule is %s" % (path.name, reader, name, rule))
    assert wrong == []


def test_settings_without_a_default_value_declare_their_type():
    from votersdaily import settings as module

    undeclared = [
        name
        for name in dir(module)
        if name.isupper() and getattr(module, name) is None and name not in module.__annotations__
    ]
    assert undeclared == []


def test_settings_import_nothing_but_the_standard_library():
    """settings.py imports setting_rules: the laundromat's cleaning workers read it without Scrapy."""
    code = "import sys, votersdaily.settings; print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('scrapy', 'twisted'))))"
    out = subprocess.run(
        [sys.executable, "-c", "import json; " + code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out) == []


def test_a_mistyped_setting_of_the_project_is_named_not_ignored(cli_main, sqlite_uri):
    """``-s VOTERSDAILY_BATCH_SIZ=10`` used to run with the default, without a word."""
    line = one_line(cli_main("crawl", "house_votes", "-s", "VOTERSDAILY_BATCH_SIZ=10", store_uri=sqlite_uri))
    assert (
        line
        == "votersdaily crawl: unknown setting VOTERSDAILY_BATCH_SIZ; did you mean VOTERSDAILY_BATCH_SIZE?"
    )


@pytest.mark.parametrize(
    "given, meant",
    [
        ("VOTERDAILY_BATCH_SIZE", "VOTERSDAILY_BATCH_SIZE"),  # the prefix mistyped
        ("votersdaily_batch_size", "VOTERSDAILY_BATCH_SIZE"),  # another case
        ("HTTPCACHE_ENABLD", "HTTPCACHE_ENABLED"),  # one of Scrapy's, which settings.py sets
        ("DOWNLAOD_DELAY", "DOWNLOAD_DELAY"),  # one of Scrapy's, two letters swapped
    ],
)
def test_a_mistyped_setting_outside_the_prefixes_is_named_not_ignored(cli_main, tmp_path, given, meant):
    """``-s VOTERDAILY_BATCH_SIZE=10`` or ``-s HTTPCACHE_ENABLD=True`` used to run with the default,
    without a word: only names with the project's own prefixes were checked. Both crawl commands."""
    store = tmp_path / "store.db"
    expected = "unknown setting %s; did you mean %s?" % (given, meant)
    proc = cli_main("crawl", "house_votes", "-s", "%s=1" % given, store_uri="sqlite:///%s" % store)
    assert one_line(proc) == "votersdaily crawl: " + expected
    proc = run_cli(
        [sys.executable, "-m", "scrapy", "crawl", "house_votes", "-s", "%s=1" % given], "sqlite:///%s" % store
    )
    assert one_line(proc) == "scrapy crawl: " + expected
    assert not store.exists()


@pytest.mark.parametrize(
    "name", ["SCHEDULER_PERSIST", "REDIS_START_URLS_KEY", "PLAYWRIGHT_BROWSER_TYPE", "LOG_FILE", "JOBDIR"]
)
def test_other_packages_settings_are_no_typos(name):
    """scrapy-redis's, scrapy-playwright's and Scrapy's own names are taken as they are."""
    settings = get_project_settings()
    assign(settings, name, "x")
    assert settings.get(name) == "x"


@pytest.mark.parametrize("uri", ["sqlite:///", "sqlite:", "sqlite://"])
@pytest.mark.parametrize("command", ["votersdaily crawl", "scrapy crawl"])
def test_a_store_uri_that_names_no_file_is_a_usage_error(tmp_path, command, uri):
    """``VOTERSDAILY_STORE=sqlite:///`` (the file left out) was a store outage: ``votersdaily crawl``
    exited 3 and spooled a run log for a store that cannot exist, ``scrapy crawl`` printed a
    50-line traceback and exited 1. It is a malformed store URI, as ``couchdb`` or ``ftp://…`` are."""
    spool = tmp_path / "spool"
    base = [
        sys.executable,
        "-m",
        *(("votersdaily", "crawl") if command == "votersdaily crawl" else ("scrapy", "crawl")),
    ]
    proc = run_cli(
        [*base, "house_votes", "-a", "url=" + ROLL314.as_uri()],
        uri,
        env={"VOTERSDAILY_SPOOL_DIR": str(spool)},
    )
    assert one_line(proc) == (
        "%s: store URI %r names no file: use sqlite:///path/to/file.db or "
        "http://user:password@host:5984/ in $VOTERSDAILY_STORE or --store" % (command, uri)
    )
    assert not spool.exists()


@pytest.mark.parametrize("command", ["votersdaily crawl", "scrapy crawl"])
def test_a_store_uri_ending_with_a_database_is_a_usage_error(couch_uri, tmp_path, command):
    """``VOTERSDAILY_STORE=http://host:5984/vd_events`` (a database's URL, as Fauxton shows it):
    ``scrapy crawl`` made documents named ``vd_events`` and ``vd_log`` inside the real ``vd_events``
    (``PUT /vd_events/vd_log``), spooled what it scraped for a store that can never take it and
    exited 4; ``votersdaily crawl`` said the store answered 404 (exit 3). One line, exit 2, nothing
    written anywhere."""
    requests.put(couch_uri + "vd_events", timeout=10).raise_for_status()
    spool = tmp_path / "spool"
    base = ["-m", "votersdaily", "crawl"] if command == "votersdaily crawl" else ["-m", "scrapy", "crawl"]
    proc = run_cli(
        [sys.executable, *base, "house_votes", "-a", "url=" + ROLL314.as_uri()],
        couch_uri + "vd_events",
        env={"VOTERSDAILY_SPOOL_DIR": str(spool)},
    )
    assert one_line(proc) == (
        "%s: store URI '%svd_events' ends with the database 'vd_events': a store URI names the server "
        "(%s), the project names its databases itself" % (command, couch_uri, couch_uri)
    )
    assert not spool.exists()
    assert requests.get(couch_uri + "vd_events/_all_docs", timeout=10).json()["rows"] == []


def test_a_store_uri_with_a_path_couchdb_is_not_at_is_a_usage_error(cli_main, couch_uri, tmp_path):
    """Any other path where the server's ``/_session`` is not: one line naming the server, exit 2
    (was: the store's 404, as an unavailable store, exit 3)."""
    proc = cli_main("dump", "vd_log", store_uri=couch_uri + "couchdb/")
    assert one_line(proc).startswith(
        "votersdaily dump: the store at %scouchdb/ answered GET /_session: HTTP 404 " % couch_uri
    )
    assert one_line(proc).endswith(": a store URI names the server (%s), not a path on it" % couch_uri)


@pytest.mark.parametrize(
    "command",
    [("votersdaily", "crawl"), ("scrapy", "crawl"), ("votersdaily", "dump"), ("votersdaily", "views")],
)
@pytest.mark.parametrize(
    "what", ["a folder", "a file of the user's", "a path under a file", "another program's database"]
)
def test_a_store_uri_that_can_never_name_a_store_is_a_usage_error(tmp_path, command, what):
    """``VOTERSDAILY_STORE=sqlite:////srv/votersdaily`` (the data folder, not its file), a text file,
    or a path under a file: SQLite's error was a store outage, exit 3, and a crawl spooled a run log
    for a store that can never open (``scrapy crawl``: SQLite's traceback, exit 1; a read command said
    the file does not exist). Another program's SQLite database was opened as a store: even a read
    command that then refused added the store's tables to it and turned on WAL. One line, exit 2,
    and the user's files as they were, byte for byte."""
    folder, spool = tmp_path / "data", tmp_path / "spool"
    folder.mkdir()
    (folder / "mine.txt").write_text("the user's\n")
    with contextlib.closing(sqlite3.connect(folder / "app.db")) as app, app:
        app.execute("CREATE TABLE notes (body TEXT)")
        app.execute("INSERT INTO notes VALUES ('the user''s')")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    path, problem = {
        "a folder": (folder, "names a folder, not a file"),
        "a file of the user's": (
            folder / "mine.txt",
            "names %s, which is not an SQLite database" % (folder / "mine.txt"),
        ),
        "a path under a file": (
            folder / "mine.txt" / "votersdaily.db",
            "names a file under %s, which is not a folder" % (folder / "mine.txt"),
        ),
        "another program's database": (
            folder / "app.db",
            "names %s, an SQLite database of another program (its tables: notes), which the store "
            "never changes" % (folder / "app.db"),
        ),
    }[what]
    args = {
        "crawl": ["house_votes", "-a", "url=" + ROLL314.as_uri()],
        "dump": ["vd_events"],
        "views": ["push"],
    }
    proc = run_cli(
        [sys.executable, "-m", *command, *args[command[1]]],
        "sqlite:///%s" % path,
        env={"VOTERSDAILY_SPOOL_DIR": str(spool)},
    )
    prefix = "scrapy crawl" if command[0] == "scrapy" else "votersdaily %s" % command[1]
    assert one_line(proc) == (
        "%s: store URI 'sqlite:///%s' %s: use sqlite:///path/to/file.db or "
        "http://user:password@host:5984/ in $VOTERSDAILY_STORE or --store" % (prefix, path, problem)
    )
    assert not spool.exists() and {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_a_missing_input_file_is_a_usage_error_and_creates_no_store(cli_main, tmp_path):
    store = tmp_path / "store.db"
    for command in (("ingest", "load-catalog"), ("ingest", "enqueue")):
        proc = cli_main(*command, str(tmp_path / "works.jsonl"), store_uri="sqlite:///%s" % store)
        assert one_line(proc).startswith("votersdaily ingest: cannot read %s" % (tmp_path / "works.jsonl"))
    assert not store.exists()


def test_a_bad_value_from_the_environment_is_one_line_too(cli_main, tmp_path):
    """The environment wins over ``-s`` (votersdaily/plumbing/environment.py): it is checked alike."""
    store = tmp_path / "store.db"
    proc = cli_main(
        "crawl", "house_votes", store_uri="sqlite:///%s" % store, env={"VOTERSDAILY_REDIS_LEASE": "a minute"}
    )
    assert one_line(proc) == (
        "votersdaily crawl: environment variable VOTERSDAILY_REDIS_LEASE takes a number of at least 0, not 'a minute'"
    )
    assert not store.exists()


@pytest.mark.parametrize(
    "variable, meant",
    [("VOTERSDAILY_STOR", "VOTERSDAILY_STORE"), ("VOTERDAILY_STORE", "VOTERSDAILY_STORE")],
)
@pytest.mark.parametrize("command", ["votersdaily crawl", "scrapy crawl"])
def test_a_mistyped_environment_variable_is_named_not_ignored(tmp_path, command, variable, meant):
    """``VOTERSDAILY_STOR=<the store meant>`` used to crawl into the default store without a word."""
    store, meant_store = tmp_path / "store.db", tmp_path / "meant.db"
    base = (
        [sys.executable, "-m", "votersdaily", "crawl"]
        if command == "votersdaily crawl"
        else [sys.executable, "-m", "scrapy", "crawl"]
    )
    proc = run_cli(
        [*base, "house_votes", "-a", "url=" + ROLL314.as_uri()],
        "sqlite:///%s" % store,
        env={variable: "sqlite:///%s" % meant_store},
    )
    assert one_line(proc) == "%s: unknown environment variable %s; did you mean %s?" % (
        command,
        variable,
        meant,
    )
    assert not store.exists() and not meant_store.exists()


@pytest.mark.parametrize(
    "command",
    [
        ("dump", "vd_events"),
        ("export", "ics"),
        ("flush",),
        ("ingest", "enqueue", "--url", "https://example.org/a.pdf"),
        ("site", "build", "site"),
        ("views", "push"),
        ("where",),
    ],
    ids=" ".join,
)
def test_every_command_names_a_mistyped_environment_variable(cli_main, tmp_path, command):
    """Only the crawls checked the environment: ``VOTERSDAILY_STOR=<the store meant> votersdaily
    dump vd_events`` dumped the default store, ``ingest enqueue`` queued into it, ``where`` showed it,
    each exit 0. Every command now refuses a mistyped variable (and a value its setting cannot
    take) before any work."""
    store, meant_store = tmp_path / "store.db", tmp_path / "meant.db"
    proc = cli_main(
        *command,
        store_uri="sqlite:///%s" % store,
        env={"VOTERSDAILY_STOR": "sqlite:///%s" % meant_store, "VOTERSDAILY_HOME": str(tmp_path)},
        cwd=tmp_path,
    )
    assert (
        one_line(proc) == "votersdaily %s: unknown environment variable VOTERSDAILY_STOR; did you mean "
        "VOTERSDAILY_STORE?" % command[0]
    )
    assert proc.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_the_ingest_commands_write_where_the_environment_says_the_crawl_reads(cli_main, tmp_path):
    """``INGEST_REQUESTS_DB=staged_requests votersdaily ingest enqueue`` queued into ``ingest_requests``
    (the commands read the settings without the environment), where ``scrapy crawl ingest -a
    requests=store`` with the same environment never looks; the catalog alike."""
    uri = "sqlite:///%s" % (tmp_path / "store.db")
    works = tmp_path / "works.jsonl"
    works.write_text('{"doi": "10.1234/abc", "title": "A work"}\n')
    env = {"INGEST_REQUESTS_DB": "staged_requests", "INGEST_CATALOG_DB": "staged_catalog"}
    queued = cli_main("ingest", "enqueue", "--url", "https://example.org/a.pdf", store_uri=uri, env=env)
    loaded = cli_main("ingest", "load-catalog", str(works), store_uri=uri, env=env)
    assert (queued.returncode, loaded.returncode) == (0, 0), queued.stderr + loaded.stderr
    assert queued.stdout.startswith("queued 1 ingest requests in staged_requests of ")
    assert loaded.stdout.startswith("loaded 1 works into staged_catalog of ")
    store = open_store(uri)
    try:
        assert [store.has_db(db) for db in ("staged_requests", "staged_catalog")] == [True, True]
        assert [store.has_db(db) for db in ("ingest_requests", "ingest_catalog")] == [False, False]
    finally:
        store.close()


#: ``ingest <command>``: its one line.
WRONG_INGEST_DATABASES = {
    "enqueue --db ingest_request": "--db ingest_request is none of the project's databases; did you "
    "mean ingest_requests?",
    "load-catalog --db ingest_catalo": "--db ingest_catalo is none of the project's databases; did you "
    "mean ingest_catalog?",
    "enqueue --db vd_events": "--db vd_events is another of the project's databases: ingest requests go "
    "in ingest_requests (the INGEST_REQUESTS_DB setting) or a database of their own",
}


@pytest.mark.parametrize("command", sorted(WRONG_INGEST_DATABASES))
def test_an_ingest_database_the_crawl_would_never_read_is_refused(cli_main, couch_uri, tmp_path, command):
    """``ingest enqueue --db ingest_request`` created that database and queued there, where
    ``scrapy crawl ingest -a requests=store`` never looks (exit 0); ``--db vd_events`` put ingest
    requests among the events. Both are one line, exit 2, and nothing is created."""
    lines = tmp_path / "lines.jsonl"
    lines.write_text('{"doi": "10.1234/abc", "base_url": "https://example.org/a.pdf"}\n')
    before = requests.get(couch_uri + "_all_dbs", timeout=10).json()
    proc = cli_main("ingest", *command.split(), str(lines), store_uri=couch_uri)
    assert one_line(proc) == "votersdaily ingest: " + WRONG_INGEST_DATABASES[command]
    assert requests.get(couch_uri + "_all_dbs", timeout=10).json() == before


def test_an_ingest_database_of_its_own_is_taken(cli_main, couch_uri):
    """A name far from every project database is the operator's own (a crawl given
    ``-s INGEST_REQUESTS_DB=`` that name reads it)."""
    proc = cli_main(
        "ingest", "enqueue", "--url", "https://example.org/a.pdf", "--db", "night_queue", store_uri=couch_uri
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("queued 1 ingest requests in night_queue of ")


def test_site_build_takes_its_settings_from_the_environment(cli_main, tmp_path):
    """``VOTERSDAILY_SITE_TIMEZONE`` in the environment was not read: the site was built in the
    default zone (a zone that does not exist was not even noticed), exit 0."""
    proc = cli_main(
        "site",
        "build",
        str(tmp_path / "site"),
        store_uri="sqlite:///%s" % (tmp_path / "store.db"),
        env={"VOTERSDAILY_SITE_TIMEZONE": "America/New_Yrok"},
    )
    assert one_line(proc) == (
        "votersdaily site: unknown IANA time zone 'America/New_Yrok' for the site; did you mean America/New_York?"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("given", ["data", "/srv/h\udcff"], ids=["relative", "not-utf-8"])
@pytest.mark.parametrize("command", ["votersdaily crawl", "scrapy crawl", "votersdaily where"])
def test_a_relative_data_home_is_refused(tmp_path, command, given):
    """``VOTERSDAILY_HOME=data`` was under the working folder: each folder a command ran from had a
    data home of its own (a store, a spool, an archive), each said absolute. A folder whose name
    holds a byte that is no UTF-8 (``$'/srv/h\\xff'``) made ``scrapy crawl`` die of
    ``UnicodeEncodeError`` in a traceback after it made the store, exit 1 (audit, 2026-11-29). Each is
    refused, one line, exit 2, nothing written in the working folder."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    base = {
        "votersdaily crawl": ["-m", "votersdaily", "crawl", "house_votes", "-a", "url=" + ROLL314.as_uri()],
        "scrapy crawl": ["-m", "scrapy", "crawl", "house_votes", "-a", "url=" + ROLL314.as_uri()],
        "votersdaily where": ["-m", "votersdaily", "where"],
    }[command]
    proc = run_cli(
        [sys.executable, *base], "sqlite:///votersdaily.db", cwd=folder, env={"VOTERSDAILY_HOME": given}
    )
    assert one_line(proc) == (
        "%s: environment variable VOTERSDAILY_HOME takes an absolute folder named in UTF-8 "
        "(/srv/votersdaily, ~/votersdaily) (or None), not %r" % (command, given)
    )
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("senate_votes", "-a", "congress=abc"),
            "senate_votes cannot start with -a congress=abc: congress is not a whole number: 'abc'",
        ),
        (
            ("house_votes", "-a", "year=20x6"),
            "house_votes cannot start with -a year=20x6: year is not a whole number: '20x6'",
        ),
        (
            ("house_votes", "-a", "ulr=" + ROLL314.as_uri()),
            "house_votes takes no argument 'ulr'; it takes: dry_run, offline, reparse, since, until, url, year",
        ),
        (
            ("house_votes", "-a", "url=roll314.xml"),
            "house_votes cannot start with -a url=roll314.xml: url is not an http(s) or file: URL: 'roll314.xml'",
        ),
        (
            ("house_votes", "-a", "url="),
            "house_votes: -a url= is empty; give a URL, or leave it out for the live source",
        ),
        (
            ("house_votes", "-a", "offline=ture"),
            "house_votes cannot start with -a offline=ture: offline takes 1, true, yes, on, 0, false, no, "
            "off, not 'ture'; did you mean true?",
        ),
        (
            ("house_votes", "-a", "reparse=arhive"),
            "house_votes cannot start with -a reparse=arhive: reparse takes archive, not 'arhive'; "
            "did you mean archive?",
        ),
        (
            ("house_votes", "-a", "since=2024-01-01"),
            "house_votes cannot start with -a since=2024-01-01: since, until and dry_run are for "
            "-a reparse=archive",
        ),
        (  # fetched the working folder: IsADirectoryError, exit 1
            ("house_votes", "-a", "url=file://roll314.xml"),
            "house_votes cannot start with -a url=file://roll314.xml: url is not a file: URL of an absolute "
            "path (file:///…): 'file://roll314.xml'; did you mean %s?" % (REPO / "roll314.xml").as_uri(),
        ),
        (  # Scrapy's "Missing scheme in request url" traceback, exit 1
            ("house_votes", "-a", "url=file:roll314.xml"),
            "house_votes cannot start with -a url=file:roll314.xml: url is not a file: URL of an absolute "
            "path (file:///…): 'file:roll314.xml'; did you mean %s?" % (REPO / "roll314.xml").as_uri(),
        ),
        (  # read as left out: a live crawl
            ("house_votes", "-a", "reparse="),
            "house_votes cannot start with -a reparse=: reparse takes archive, not ''",
        ),
        (  # read as no bound: the whole archive
            ("house_votes", "-a", "reparse=archive", "-a", "since="),
            "house_votes cannot start with -a reparse=archive -a since=: since is empty: give a date "
            "(YYYY-MM-DD) or ISO 8601 instant, or leave it out",
        ),
        (
            ("senate_votes", "-a", "session=3"),
            "senate_votes cannot start with -a session=3: session takes 1, 2, not '3'",
        ),
        (
            ("federal_register", "-a", "max_pages=0"),
            "federal_register cannot start with -a max_pages=0: max_pages takes a whole number of at "
            "least 1, not 0",
        ),
        (
            ("federal_register", "-a", "follow=maybe"),
            "federal_register cannot start with -a follow=maybe: follow takes 1, true, yes, on, 0, false, "
            "no, off, not 'maybe'",
        ),
        (
            ("house_committee_meetings", "-a", "committees=RU00,ru0"),
            "house_committee_meetings cannot start with -a committees=RU00,ru0: committees takes AG00, "
            "AP00, AS00, BA00, BU00, ED00, FA00, GO00, HA00, HM00, IF00, IG00, II00, JU00, PW00, RU00, "
            "SM00, SO00, SY00, VR00, WM00, not 'ru0'; did you mean RU00?",
        ),
    ],
)
@pytest.mark.parametrize("command", ["votersdaily crawl", "scrapy crawl"])
def test_a_spider_argument_it_cannot_take_is_one_line_before_any_work(cli, tmp_path, command, args, message):
    """Before: a value a spider's __init__ cannot read was a 49-line traceback (Crawler.stats not set,
    "Unhandled error in Deferred"); a mistyped name (``ulr=``) or an empty url was ignored and the
    live source crawled instead; a URL without a scheme was a failed run in vd_log."""
    uri = "sqlite:///%s" % (tmp_path / "store.db")
    if command == "scrapy crawl":
        proc = run_cli([sys.executable, "-m", "scrapy", "crawl", *args], uri)
    else:
        proc = cli("crawl", *args, store_uri=uri)
    assert proc.returncode == 2
    assert proc.stderr == "%s: %s\n" % (command, message)
    assert not (tmp_path / "store.db").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("laundromat", "-a", "ulr=" + ROLL314.as_uri()),
            "laundromat takes no argument 'ulr'; it takes: seedlist, url",
        ),
        (
            ("laundromat_worker", "-a", "seedlst=seeds.txt"),
            "laundromat_worker takes no argument 'seedlst'; it takes: seedlist, url",
        ),
        (
            ("ingest", "-a", "url=http://example.org/a.pdf", "-a", "ingest_typ=html"),
            "ingest takes no argument 'ingest_typ'; it takes: force_recrawl, ingest_request_source, "
            "ingest_type, link_source, link_source_id, release_stage, requests, url",
        ),
        (
            ("ingest", "-a", "url=http://example.org/a.pdf", "-a", "ingest_type=pfd"),
            "ingest cannot start with -a ingest_type=pfd -a url=http://example.org/a.pdf: ingest_type "
            "takes pdf, xml, html, src, component, file, not 'pfd'; did you mean pdf?",
        ),
        (
            ("ingest_worker", "-a", "url=http://example.org/a.pdf", "-a", "force_recrawl=ture"),
            "ingest_worker cannot start with -a force_recrawl=ture -a url=http://example.org/a.pdf: "
            "force_recrawl takes 1, true, yes, on, 0, false, no, off, not 'ture'; did you mean true?",
        ),
        (
            ("ingest", "-a", "requests=store:"),
            "ingest cannot start with -a requests=store:: requests takes a JSON-lines file, store or "
            "store:<database>, not 'store:'",
        ),
    ],
)
def test_the_other_spiders_name_an_argument_they_do_not_take(tmp_path, args, message):
    """``scrapy crawl laundromat -a ulr=…`` ran (exit 0) with the argument ignored, and ``-a
    ingest_typ=html`` ingested the document as a PDF: only the event spiders checked their names.
    A value out of an argument's set (``-a ingest_type=pfd``) failed the run (exit 1): every request
    rejected in the run log."""
    store = tmp_path / "store.db"
    proc = run_cli([sys.executable, "-m", "scrapy", "crawl", *args], "sqlite:///%s" % store)
    assert one_line(proc) == "scrapy crawl: " + message
    assert not store.exists()


def test_requests_from_a_store_database_with_a_typo_name_the_one_meant(tmp_path):
    """``-a requests=store:ingest_requst`` failed the run with "the store has no database", leaving
    the operator to find the name; the line names the queue meant (as ``flush --db`` does)."""
    store = tmp_path / "store.db"
    proc = run_cli(
        [sys.executable, "-m", "scrapy", "crawl", "ingest", "-a", "requests=store:ingest_requst"],
        "sqlite:///%s" % store,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert (
        "bad ingest request at store:ingest_requst: the store has no database 'ingest_requst'; did you "
        "mean ingest_requests?" in proc.stderr
    ), proc.stderr[-3000:]


@pytest.mark.parametrize(
    ("spider", "url", "message"),
    [
        (
            "ingest",
            "htps://example.org/a.pdf",
            "ingest cannot start with -a url=htps://example.org/a.pdf: url is not an http(s) URL: "
            "'htps://example.org/a.pdf'; did you mean https://example.org/a.pdf?",
        ),
        (
            "ingest",
            "example.org/a.pdf",
            "ingest cannot start with -a url=example.org/a.pdf: url is not an http(s) URL: "
            "'example.org/a.pdf'; did you mean http(s)://example.org/a.pdf?",
        ),
        (
            "ingest",
            "file:///etc/hostname",
            "ingest cannot start with -a url=file:///etc/hostname: url is not an http(s) URL: "
            "'file:///etc/hostname'",
        ),
        ("ingest", " , ", "ingest: -a url= is empty; give a URL, or leave it out and give -a requests="),
        (
            "laundromat",
            "ftp://example.org/dump.nt",
            "laundromat cannot start with -a url=ftp://example.org/dump.nt: url is not an http(s) or file: "
            "URL: 'ftp://example.org/dump.nt'",
        ),
        (
            "laundromat",
            "localhost:8080/dump.nt",
            "laundromat cannot start with -a url=localhost:8080/dump.nt: url is not an http(s) or file: "
            "URL: 'localhost:8080/dump.nt'; did you mean http(s)://localhost:8080/dump.nt?",
        ),
        (
            "laundromat",
            " , ",
            "laundromat: -a url= is empty; give a URL, or leave it out to process the stale seeds in the store",
        ),
    ],
)
@pytest.mark.parametrize("command", ["scrapy crawl", "votersdaily enqueue"])
def test_a_url_that_is_none_is_refused_before_the_run(tmp_path, redis_server, command, spider, url, message):
    """The ingest's and the laundromat's ``-a url=`` (``enqueue``'s URLs) were checked only inside
    the run: a failed run in vd_log (exit 1), an empty one a run of nothing or of the store's stale
    seeds, and ``enqueue`` queued the good URLs beside it. A well-formed URL to a private address is
    still the address policy's, at run time (tests/ingest/test_crawl_services.py)."""
    store = tmp_path / "store.db"
    if command == "scrapy crawl":
        args = [sys.executable, "-m", "scrapy", "crawl", spider, "-a", "url=" + url]
    else:
        args = [sys.executable, "-m", "votersdaily", "enqueue", spider, url, "--redis-url", redis_server.url]
    proc = run_cli(args, "sqlite:///%s" % store, env={"LAUNDROMAT_OUTPUT_DIR": str(tmp_path / "out")})
    assert one_line(proc) == "%s: %s" % (command, message)
    assert not store.exists() and not (tmp_path / "out").exists()


REQUESTS_FILE_TAKES = "a requests file holds one ingest request (a JSON object) a line"


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ("missing.jsonl", "does not exist"),
        ("folder.jsonl", "is a folder, not a file"),
        ("x" * 300 + ".jsonl", "cannot be read: File name too long"),
        (
            "urls.txt",
            "line 1 is not JSON (Expecting value): 'https://example.org/a.pdf'; " + REQUESTS_FILE_TAKES,
        ),
        ("array.jsonl", "line 2 is a JSON array, not an object; " + REQUESTS_FILE_TAKES),
        ("latin1.jsonl", "line 1 is not UTF-8: "),
    ],
)
@pytest.mark.parametrize("command", ["scrapy crawl", "votersdaily enqueue"])
def test_a_requests_file_it_cannot_read_is_refused_before_the_run(
    tmp_path, redis_server, command, given, problem
):
    """``-a requests=FILE`` absent, a folder, unreadable, or no JSON-lines file at all (a list of
    URLs): before, a run started and failed (``RequestSourceError`` in vd_log, exit 1), or for
    ``enqueue`` nothing queued and exit 1. The file is relative to the folder the command runs from,
    and the message names it absolute. (Root reads a file without read permission: the test shows
    an unreadable name instead.)"""
    here = tmp_path / "here"
    here.mkdir()
    (here / "folder.jsonl").mkdir()
    (here / "urls.txt").write_text("https://example.org/a.pdf\n")
    (here / "array.jsonl").write_text("\n[1, 2]\n")
    (here / "latin1.jsonl").write_bytes(
        '{"base_url": "https://example.org/caf\u00e9.pdf"}\n'.encode("latin-1")
    )
    store = tmp_path / "store.db"
    if command == "scrapy crawl":
        args = [sys.executable, "-m", "scrapy", "crawl", "ingest", "-a", "requests=" + given]
    else:
        args = [sys.executable, "-m", "votersdaily", "enqueue", "ingest", "https://example.org/b.pdf"]
        args += ["-a", "requests=" + given, "--redis-url", redis_server.url]
    proc = run_cli(args, "sqlite:///%s" % store, cwd=here)
    line = one_line(proc)
    assert line.startswith("%s: ingest: -a requests=%s: %s %s" % (command, given, here / given, problem)), (
        line
    )
    assert not store.exists()


def test_enqueue_of_a_requests_file_that_is_not_there_names_it(cli, sqlite_uri, redis_server, tmp_path):
    """``enqueue ingest missing.jsonl`` queued the name as a URL (every request rejected, exit 1)."""
    missing = tmp_path / "missing.jsonl"
    proc = cli("enqueue", "ingest", str(missing), "--redis-url", redis_server.url, store_uri=sqlite_uri)
    assert one_line(proc) == "votersdaily enqueue: ingest: -a requests=%s: %s does not exist" % (
        missing,
        missing,
    )


@pytest.mark.parametrize("given", ["--redis-url", "VOTERSDAILY_REDIS_URL"])
def test_a_redis_url_whose_database_is_no_number_queues_nothing(cli, sqlite_uri, redis_server, given):
    """``redis://host:6379/l`` (for ``/1``): redis-py read it as database 0, so ``enqueue`` queued
    where the workers of database 1 never read, exit 0. It is refused before Redis is asked."""
    import redis

    url = redis_server.url.rpartition("/")[0] + "/l"
    args = ("--redis-url", url) if given == "--redis-url" else ()
    env = {"VOTERSDAILY_REDIS_URL": url} if given != "--redis-url" else {}
    proc = cli("enqueue", "ingest", "https://example.org/a.pdf", *args, store_uri=sqlite_uri, env=env)
    form = "a Redis URL: redis://[user:password@]host:port/<database number> (or rediss://, unix://)"
    assert one_line(proc) == (
        "votersdaily enqueue: %s is not %s" % (url, form)
        if given == "--redis-url"
        else "votersdaily enqueue: environment variable VOTERSDAILY_REDIS_URL takes %s (or None), not %r"
        % (form, url)
    )
    assert redis.Redis.from_url(redis_server.url).dbsize() == 0


def test_the_requests_file_read_is_the_one_named_wherever_the_run_goes_on(tmp_path, monkeypatch):
    """A relative ``-a requests=`` is read from where the command ran, not from a later folder;
    ``store`` and ``store:<db>`` are the store's requests, never a file of that name."""
    from votersdaily.ingest.spider import IngestSpider

    (tmp_path / "r.jsonl").write_text('{"base_url": "https://example.org/a.pdf"}\n')
    (tmp_path / "store").write_text("not requests\n")
    monkeypatch.chdir(tmp_path)
    assert IngestSpider(requests="r.jsonl").requests_source == str(tmp_path / "r.jsonl")
    assert IngestSpider(requests="store").requests_source == "store"
    assert IngestSpider(requests="store:mine").requests_source == "store:mine"


def test_all_and_spider_names_together_is_a_usage_error(cli_main, sqlite_uri):
    """``crawl --all house_votse`` ignored the name and crawled every live source."""
    proc = cli_main("crawl", "--all", "house_votse", store_uri=sqlite_uri)
    assert proc.returncode == 2
    assert proc.stderr == "votersdaily crawl: give --all or spider names, not both (house_votse)\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("enqueue", "ingest", "https://example.org/paper.pdf", "--redis-url", "localhost:6379"),
            "votersdaily enqueue: localhost:6379 is not a Redis URL: redis://[user:password@]host:port/<database "
            "number> (or rediss://, unix://)",
        ),
        (  # redis-py reads /l (for /1) as database 0: queued where no worker reads, exit 0
            ("enqueue", "ingest", "https://example.org/paper.pdf", "--redis-url", "redis://127.0.0.1:6379/l"),
            "votersdaily enqueue: redis://127.0.0.1:6379/l is not a Redis URL: redis://[user:password@]host:port/"
            "<database number> (or rediss://, unix://)",
        ),
        (
            ("scheduler", "--scrapyd", "127.0.0.1:6800", "--once"),
            "votersdaily scheduler: argument --scrapyd: the URL is not an http(s) URL: '127.0.0.1:6800'; did you mean "
            "http(s)://127.0.0.1:6800? (see --help)",
        ),
        (
            ("scheduler", "--scrapyd", "http://127.0.0.1:6800/", "--interval", "-5"),
            "votersdaily scheduler: argument --interval: not a number above 0: '-5' (see --help)",
        ),
        (
            ("scheduler", "--scrapyd", "http://127.0.0.1:6800/", "--hours", "house_votes=abc", "--once"),
            "votersdaily scheduler: --hours house_votes=abc: not a number above 0: 'abc'",
        ),
    ],
)
def test_a_service_url_or_number_that_cannot_be_one_is_a_usage_error(cli_main, sqlite_uri, args, message):
    """Before: a Redis URL without its scheme and a negative interval were tracebacks (exit 1); a
    scrapyd URL without its scheme was "scrapyd-unavailable" (exit 3); --hours said only "could not
    convert string to float"."""
    proc = cli_main(*args, store_uri=sqlite_uri)
    assert proc.returncode == 2
    assert proc.stderr == message + "\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("export", "ics", "--since="),
            "votersdaily export: argument --since: not a date or datetime: '' (YYYY-MM-DD or ISO 8601) (see --help)",
        ),
        (("export", "json", "--parser="), "votersdaily export: unknown parser ''; known: "),
        (
            ("dump", "vd_events", "--store="),
            "votersdaily dump: --store is empty: give a store URI, or leave --store out for $VOTERSDAILY_STORE",
        ),
        (
            ("flush", "--spool-dir="),
            "votersdaily flush: argument --spool-dir: empty: give a folder, or leave the option out for its default",
        ),
        (
            ("reparse", "--archive-dir="),
            "votersdaily reparse: argument --archive-dir: empty: give a folder, or leave the option out for its "
            "default",
        ),
        (
            ("flush", "--db="),
            "votersdaily flush: argument --db: empty: give a database, or leave the option out for its default",
        ),
        (
            ("scheduler", "--scrapyd", "http://127.0.0.1:1/", "--once", "--project="),  # a project of no name
            "votersdaily scheduler: argument --project: empty: give a scrapyd project, or leave the option out "
            "for its default",
        ),
        (
            ("site", "build", "site", "--timezone="),  # read as the setting's zone, exit 0
            "votersdaily site: unknown IANA time zone '' for the site",
        ),
        (
            ("reparse", "--since="),  # read as no bound: the whole archive was reparsed, exit 0
            "votersdaily reparse: --since is empty: give a date (YYYY-MM-DD) or ISO 8601 instant, or leave it out",
        ),
        (
            ("reparse", "--until= "),
            "votersdaily reparse: --until is empty: give a date (YYYY-MM-DD) or ISO 8601 instant, or leave it out",
        ),
        (
            ("ingest", "enqueue", "--db=", "--url", "https://example.org/a.pdf"),
            "votersdaily ingest: argument --db: empty: give a database, or leave the option out for its default",
        ),
        (
            ("ingest", "load-catalog", "--db=", "works.jsonl"),
            "votersdaily ingest: argument --db: empty: give a database, or leave the option out for its default",
        ),
    ],
)
def test_an_empty_value_is_not_everything(cli_main, sqlite_uri, args, message):
    """``--since "$FROM"``, ``--parser "$P"``, ``--store "$STORE"`` with the variable unset: before,
    every event, every spider's events, the default store, exit 0; ``--spool-dir ""`` and
    ``--archive-dir ""`` read the working folder ("nothing spooled in <cwd>", exit 0), ``--db ""``
    the default database."""
    proc = cli_main(*args, store_uri=sqlite_uri)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(message) and len(proc.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ("ingest", "enqueue", "--db", "Night Queue", "--url", "https://example.org/a.pdf"),
        ("ingest", "load-catalog", "--db", "Catalog", "works.jsonl"),
        ("flush", "--db", "vd events"),
    ],
)
def test_a_database_name_no_couchdb_can_hold_is_refused_on_every_store(cli_main, sqlite_uri, args):
    """``ingest enqueue --db "Night Queue"`` on the embedded store queued the requests there (exit
    0), in a database no CouchDB can hold, so they could never move to one; CouchDB itself refused it
    only later. Every ``--db`` now takes CouchDB's rule before anything is made."""
    proc = cli_main(*args, store_uri=sqlite_uri)
    name = args[args.index("--db") + 1]
    assert one_line(proc) == (
        "votersdaily %s: argument --db: %r is not a CouchDB database name: a lowercase letter, then "
        "lowercase letters, digits or _$()+-/ (see --help)" % (args[0], name)
    )
    assert proc.returncode == 2
    assert not Path(sqlite_uri.removeprefix("sqlite:///")).exists()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "htps://example.org/a.pdf",
            "the URL is not an http(s) URL: 'htps://example.org/a.pdf'; did you mean https://example.org/a.pdf?",
        ),
        ("", "the URL is not an http(s) URL: ''"),
    ],
)
def test_ingest_enqueue_of_a_url_that_is_none_creates_nothing(cli_main, sqlite_uri, url, message):
    """``ingest enqueue --url htps://…`` made the store and its database, queued nothing and exited 1
    as for a file's bad line: a mistyped argument is a usage error, before the store."""
    proc = cli_main("ingest", "enqueue", "--url", url, store_uri=sqlite_uri)
    assert one_line(proc) == "votersdaily ingest: argument --url: %s (see --help)" % message
    assert not Path(sqlite_uri.removeprefix("sqlite:///")).exists()


def osa_distance(a: str, b: str) -> int:
    """The whole table, no band and no early stop: what ``_typos_apart`` must agree with."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


def test_the_banded_typo_count_agrees_with_the_whole_table():
    rng = random.Random(20261127)
    for _ in range(5000):
        a = "".join(rng.choice("AB_C") for _ in range(rng.randint(0, 9)))
        b = list(a)
        for _ in range(rng.randint(0, 4)):
            k = rng.randrange(len(b) + 1)
            match rng.randrange(4):
                case 0 if k < len(b):
                    del b[k]
                case 1:
                    b.insert(k, rng.choice("AB_C"))
                case 2 if k < len(b):
                    b[k] = rng.choice("AB_C")
                case 3 if k + 1 < len(b):
                    b[k], b[k + 1] = b[k + 1], b[k]
        for limit in (0, 1, 2):
            assert _typos_apart(a, "".join(b), limit) == (osa_distance(a, "".join(b)) <= limit), (a, b, limit)


def test_a_scrapyd_job_refused_while_its_store_is_away_spools_its_run_log(cli_main, tmp_path):
    """A scrapyd job (``-a _job=``, as scrapyd runs ``scrapy crawl``) refused at the start while its
    store cannot take the run log (here: the embedded store does not exist yet, and is not created
    for it): the run log is spooled for that store, and ``flush`` delivers it once the store is there.
    tests/deploy/test_scrapyd.py runs the same through a real scrapyd into a reachable store."""
    store = tmp_path / "store.db"
    uri = "sqlite:///%s" % store
    env = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}
    job = [sys.executable, "-m", "scrapy", "crawl", "house_votes", "-a", "_job=j1"]
    proc = run_cli([*job, "-s", "VOTERSDAILY_BATCH_SIZ=3"], uri, env=env)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1] == (
        "scrapy crawl: job j1: its run log (BadSettingValue) is spooled to %s: the store %s did not "
        "take it (no store at %s)" % (tmp_path / "spool", uri, uri)
    )
    assert not store.exists()
    flushed = run_cli([sys.executable, "-m", "votersdaily", "flush"], uri, env=env)
    assert flushed.returncode == 0, flushed.stderr
    delivered = open_store(uri)
    try:
        (log,) = delivered.iter_docs("vd_log")
    finally:
        delivered.close()
    assert (log["parser_name"], log["result"], log["scrapyd_job"]) == ("house_votes", "BadSettingValue", "j1")
    assert (
        log["error_message"] == "unknown setting VOTERSDAILY_BATCH_SIZ; did you mean VOTERSDAILY_BATCH_SIZE?"
    )


@pytest.mark.parametrize("name", ["PLAYWRIGHT_LAUNCH_OPTIONS", "PLAYWRIGHT_CONTEXTS"])
def test_another_packages_setting_the_project_reads_is_checked_too(name):
    """scrapy-playwright's options, read by the rendering's confinement check: text that is no JSON
    object is refused in one line before the run, not a traceback when the check reads it."""
    settings = get_project_settings()
    with pytest.raises(BadSettingValue) as refused:
        assign(settings, name, "abc")
    assert str(refused.value) == "setting %s takes a JSON object, not 'abc'" % name
    assign(settings, name, '{"headless": true}')
    assert settings.getdict(name) == {"headless": True}
