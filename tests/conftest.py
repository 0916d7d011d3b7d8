"""Shared fixtures: real stores (embedded SQLite and PouchDB Server), a local site, crawl runners."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.services import REPO, LocalSite, PouchDBServer, run_cli
from votersdaily.recordings import HERE as RECORDINGS
from votersdaily.recordings import shared_dir

SHARED = shared_dir()


@pytest.fixture(scope="session")
def pouchdb(tmp_path_factory):
    """One real PouchDB Server (in memory) for the session, on a free loopback port."""
    server = PouchDBServer(tmp_path_factory.mktemp("pouchdb")).start()
    yield server
    server.stop()


@pytest.fixture
def couch_uri(pouchdb):
    pouchdb.reset()
    return pouchdb.url


@pytest.fixture
def sqlite_uri(tmp_path):
    return "sqlite:///%s" % (tmp_path / "store.db")


@pytest.fixture(params=["embedded", "couchdb"])
def store_uri(request, tmp_path):
    """A fresh, empty store of each backend (the same behaviour suite runs on both)."""
    if request.param == "embedded":
        return "sqlite:///%s" % (tmp_path / "store.db")
    server = request.getfixturevalue("pouchdb")
    server.reset()
    return server.url


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
    """``crawl(spider, urls, store_uri, *extra)``: ``scrapy crawl`` in a subprocess, as a user runs it."""

    def _crawl(spider: str, urls, store_uri: str, *extra: str, env: dict | None = None):
        args = [sys.executable, "-m", "scrapy", "crawl", spider, "-s", "LOG_LEVEL=INFO"]
        if urls:
            if isinstance(urls, (str, Path)):
                urls = [urls]
            args += ["-a", "url=" + ",".join(u if isinstance(u, str) else u.resolve().as_uri() for u in urls)]
        args += list(extra)
        return run_cli(args, store_uri, env=env)

    return _crawl


@pytest.fixture
def cli():
    def _cli(*args: str, store_uri: str, env: dict | None = None, timeout: float = 300):
        return run_cli([sys.executable, "-m", "votersdaily", *args], store_uri, env=env, timeout=timeout)

    return _cli


__all__ = ["REPO", "recording", "shared_file"]
