"""Shared fixtures: real stores (embedded SQLite and PouchDB Server, or a real CouchDB: ``couchdb``), a
local site, crawl runners."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from tests.support.inprocess import (
    can_run_in_process,
    crawl_in_process,
    install_session_reactor,
    stop_session_reactor,
)
from tests.support.processes import stop_leftover_crawls
from tests.support.services import (
    COUCHDB_ENV,
    REPO,
    ExternalCouchDB,
    LocalSite,
    PouchDBServer,
    cli_environment,
    run_cli,
    shared_dir,
    worker_db_prefix,
)
from votersdaily.recordings import HERE as RECORDINGS
from votersdaily.store.names import PREFIX_ENV

SHARED = shared_dir()
#: ``subprocess`` runs every ``crawl`` fixture call as ``scrapy crawl`` in a subprocess (see ``crawl``).
CRAWL_MODE = os.environ.get("VOTERSDAILY_TEST_CRAWL", "in-process")


@pytest.fixture(autouse=True)
def _no_background_crawl_outlives_its_test():
    """A crawl a test started in the background (``start_crawl``) and left running, because the test
    failed or timed out first, is stopped: it would write into the next test's store."""
    yield
    stop_leftover_crawls()


# Before any test module can import Twisted's default reactor: the one the project's settings ask for.
install_session_reactor()

#: The switch to a real CouchDB (CONTRIBUTING.md): every store the tests open, in this process and in the
#: commands and crawls it starts, names its databases under this process's prefix on that server.
EXTERNAL_COUCHDB = os.environ.get(COUCHDB_ENV) or None
if EXTERNAL_COUCHDB is not None:
    os.environ[PREFIX_ENV] = worker_db_prefix()


def pytest_sessionfinish(session, exitstatus):
    stop_session_reactor()


#: Workers for a run (pyproject's ``-n auto``, pytest-xdist): most of a test's wall time is waiting on
#: subprocesses, servers and polls, so twice the cores of a 2-core machine pays off (CONTRIBUTING.md
#: has the figures). ``-n N`` on the command line or ``PYTEST_XDIST_AUTO_NUM_WORKERS`` overrides it.
WORKERS = 4


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config):
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(os.environ["PYTEST_XDIST_AUTO_NUM_WORKERS"])
    files = {arg.split("::")[0] for arg in config.args}
    if config.args and (
        all("::" in arg for arg in config.args) or (len(files) == 1 and Path(*files).is_file())
    ):
        # Named tests or one file: starting workers (each collecting again) costs more than it saves.
        return 0
    return WORKERS


#: Fixture scopes whose value one worker builds once for many tests: the tests sharing one run on the
#: same worker (``--dist loadgroup``), so a module's 15 s crawl is not repeated by every worker.
SHARED_SCOPES = {"class", "module", "package"}


#: Files whose tests start a cluster of crawl processes (distributed workers racing for one queue): a
#: file's tests run one at a time on one worker, so at most two clusters compete for the cores and
#: stretch each other's leases (one group for both made a 500 s queue on one worker under load).
ONE_CLUSTER_AT_A_TIME = (
    "tests/distributed/test_distributed.py",
    "tests/distributed/test_faults.py",
    "tests/distributed/test_persistence.py",
    "tests/distributed/test_benchmark.py",
)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        if "couchdb" in item.fixturenames:  # `-m couchdb`: the tests the real-CouchDB switch concerns
            item.add_marker(pytest.mark.couchdb)
        cluster_file = item.nodeid.split("::")[0]
        if cluster_file in ONE_CLUSTER_AT_A_TIME:
            item.add_marker(pytest.mark.xdist_group(cluster_file))
            continue
        shared = sorted(
            defs[-1].baseid or item.module.__name__
            for defs in item._fixtureinfo.name2fixturedefs.values()
            if defs and defs[-1].scope in SHARED_SCOPES
        )
        if shared:
            item.add_marker(pytest.mark.xdist_group(shared[0]))


@pytest.fixture(scope="session")
def pouchdb(tmp_path_factory):
    """One real PouchDB Server (in memory) for the session, on a free loopback port."""
    server = PouchDBServer(tmp_path_factory.mktemp("pouchdb")).start()
    yield server
    server.stop()


@pytest.fixture
def durable_pouch(tmp_path):
    """A PouchDB Server on disk, so a stop and restart on the same port keeps the data."""
    server = PouchDBServer(tmp_path / "pouch", in_memory=False).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def couchdb(request):
    """The CouchDB-compatible server of the store, view, crawl, reparse, reschedule, feed and CLI tests:
    the session's PouchDB Server, or with ``$VOTERSDAILY_TEST_COUCHDB`` the real CouchDB it names (this
    process's databases under its own prefix, dropped at the end)."""
    if EXTERNAL_COUCHDB is None:
        yield request.getfixturevalue("pouchdb")
        return
    server = ExternalCouchDB(EXTERNAL_COUCHDB, os.environ[PREFIX_ENV]).start()
    yield server
    server.stop()


@pytest.fixture
def couch_uri(couchdb):
    couchdb.reset()
    return couchdb.url


@pytest.fixture
def sqlite_uri(tmp_path):
    return "sqlite:///%s" % (tmp_path / "store.db")


@pytest.fixture(params=["embedded", pytest.param("couchdb", marks=pytest.mark.couchdb)])
def store_uri(request, tmp_path):
    """A fresh, empty store of each backend (the same behaviour suite runs on both)."""
    if request.param == "embedded":
        return "sqlite:///%s" % (tmp_path / "store.db")
    return request.getfixturevalue("couch_uri")


@pytest.fixture
def store(store_uri):
    from votersdaily.store import open_store

    s = open_store(store_uri)
    yield s
    s.close()


@pytest.fixture
def site():
    s = LocalSite().start()
    yield s
    s.stop()


@pytest.fixture
def frozen_now(monkeypatch):
    """Freeze the framework clock (also for crawl subprocesses, through the environment)."""
    value = "2026-10-02T18:00:00Z"
    monkeypatch.setenv("VOTERSDAILY_FROZEN_NOW", value)
    return value


@pytest.fixture
def dateutil_today(monkeypatch):
    """Set the day dateutil completes a date from when it is given no default: its own clock
    (``datetime.now``, not the framework's). A reading that depends on the day changes with it."""
    import datetime as real
    import types

    import dateutil.parser._parser as dateutil_internals

    def set_today(day: real.datetime) -> None:
        class Today(real.datetime):
            @classmethod
            def now(cls, tz=None):
                return day

        view = types.SimpleNamespace(**{**vars(real), "datetime": Today})
        monkeypatch.setattr(dateutil_internals, "datetime", view)

    return set_today


def recording(name: str) -> Path:
    """A recorded response shipped with the project (votersdaily/recordings/<name>)."""
    return RECORDINGS / name


def shared_file(rel: str) -> Path:
    """A third-party file read in place from ../shared; skips the test when it is absent."""
    path = SHARED / rel
    if not path.exists():
        pytest.skip("%s is not available (the shared folder is not beside this checkout)" % path)
    return path


@pytest.fixture
def crawl():
    """``crawl(spider, urls, store_uri, *extra)``: ``scrapy crawl`` as a user runs it, answered as a
    ``CompletedProcess`` (the log in ``stderr``).

    It runs inside the test process (tests/support/inprocess.py: no interpreter start-up per crawl) unless
    ``extra`` uses an option only the command line has, it is called from a thread other than the test's
    (concurrent crawls, each with its own environment), ``subprocess=True`` asks for a real process
    (crash and kill tests), or ``VOTERSDAILY_TEST_CRAWL=subprocess`` sends every crawl to a subprocess
    (to check the two agree). ``within``: a command the crawl's process runs under (a subprocess, e.g.
    tests/support/tmpfs.py's mount namespace of full filesystems).
    """

    def _crawl(
        spider: str,
        urls,
        store_uri: str,
        *extra: str,
        env: dict | None = None,
        subprocess: bool = False,
        within: list[str] | None = None,
    ):
        argv = [spider, "-s", "LOG_LEVEL=INFO"]
        if urls:
            if isinstance(urls, (str, Path)):
                urls = [urls]
            argv += ["-a", "url=" + ",".join(u if isinstance(u, str) else u.resolve().as_uri() for u in urls)]
        argv += list(extra)
        if (
            subprocess
            or within
            or CRAWL_MODE == "subprocess"
            or not can_run_in_process(argv)
            # Concurrent crawls (tests racing two runs) each need their own process and environment.
            or threading.current_thread() is not threading.main_thread()
        ):
            return run_cli(
                [*(within or ()), sys.executable, "-m", "scrapy", "crawl", *argv], store_uri, env=env
            )
        return crawl_in_process(argv, cli_environment(store_uri, env))

    return _crawl


@pytest.fixture
def cli():
    def _cli(*args: str, store_uri: str, env: dict | None = None, timeout: float = 300):
        return run_cli([sys.executable, "-m", "votersdaily", *args], store_uri, env=env, timeout=timeout)

    return _cli


__all__ = ["REPO", "recording", "shared_file"]
