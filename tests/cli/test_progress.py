"""Progress and quiet, and the run log's source (its ``input``: listing, offline, replay or given)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import recording
from tests.support.services import REPO, TEST_ARCHIVE_DIR, run_cli
from votersdaily.spiders.house_votes import HouseVotesSpider
from votersdaily.store import open_store

pytestmark = pytest.mark.slow  # CLI crawl subprocesses, on a pseudo-terminal

ROLL314 = recording("gov/house_roll_call/roll314.xml")


def test_clean_crawl_prints_progress_and_where_the_data_went_and_no_warning(tmp_path):
    uri = "sqlite:///%s" % (tmp_path / "store.db")
    # From a folder without scrapy.cfg, as an installed package runs.
    args = [sys.executable, "-m", "votersdaily", "crawl", "--offline", "house_votes", "senate_votes"]
    proc = run_cli(args, uri, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.splitlines()
    assert len(err) == 4, proc.stderr  # nothing but progress: no warning from the project's code
    assert err[0].startswith("[1/2] ") and err[1].startswith("[2/2] ")
    done = sorted(line.split()[1] for line in err[:2])
    assert done == ["house_votes:", "senate_votes:"]
    rolls = len(HouseVotesSpider.recordings)  # one event per recorded roll call
    assert ": success, %d inserted, 0 updated, %d items, " % (rolls, rolls) in "\n".join(err[:2])
    assert err[2] == "events and run logs are in %s" % uri
    archive = Path(os.environ.get("VOTERSDAILY_ARCHIVE_DIR") or TEST_ARCHIVE_DIR).resolve()
    assert err[3] == "the parsed source documents are archived in %s" % archive


def test_messages_are_printed_once(tmp_path):
    uri = "sqlite:///%s" % (tmp_path / "store.db")
    args = [sys.executable, "-m", "votersdaily", "crawl", "--offline", "house_votes", "--log-level", "INFO"]
    proc = run_cli(args, uri, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    opened = [line for line in proc.stderr.splitlines() if "Spider opened" in line]
    assert len(opened) == 1, proc.stderr  # one log handler, not the CLI's and Scrapy's both


def test_live_count_on_a_terminal(tmp_path):
    env = dict(os.environ, VOTERSDAILY_STORE="sqlite:///%s" % (tmp_path / "store.db"))
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "votersdaily", "crawl", "--offline", "house_votes"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=follower,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(120) == 0
    os.close(leader)
    shown = b"".join(chunks).decode()
    assert "\r0 of 1 spiders finished, " in shown
    assert "[1/1] house_votes: success" in shown


def test_run_log_source_is_the_start_document_not_robots_txt(crawl, site, sqlite_uri):
    url = site.route("/evs/roll314.xml", ROLL314.read_bytes(), content_type="text/xml")
    proc = crawl("house_votes", url, sqlite_uri)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert site.hits.get("/robots.txt") == 1  # Scrapy fetched robots.txt first
    store = open_store(sqlite_uri)
    try:
        (log,) = list(store.iter_docs("vd_log"))
    finally:
        store.close()
    assert log["source_url"] == url
    assert log["source_text"] == ROLL314.read_bytes().decode("utf-8")
    assert log["responses"] == 2  # robots.txt and the document


def test_laundromat_run_says_where_its_files_went(crawl, site, sqlite_uri, tmp_path):
    body = b'<http://example.org/r> <http://example.org/p> "1" .\n'
    url = site.route("/dump.nt", body, content_type="application/n-triples")
    out = tmp_path / "out"
    proc = crawl("laundromat", url, sqlite_uri, "-s", "LAUNDROMAT_OUTPUT_DIR=%s" % out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "data in %s and %s" % (sqlite_uri, out) in proc.stderr
    store = open_store(sqlite_uri)
    try:
        (log,) = list(store.iter_docs("vd_log"))
    finally:
        store.close()
    assert log["outputs"] == {"LAUNDROMAT_OUTPUT_DIR": str(out)}
    assert list((out / "cleaned").glob("*.gz"))
