"""scripts/pouchdb_server.py, the documented way to start PouchDB Server by hand
(docs/events.md, Pointing it at CouchDB):
its state stays in its own folder, a taken port is refused before anything starts."""

from __future__ import annotations

import subprocess
import sys
import urllib.request

import pytest

from tests.support.services import POUCHDB_BIN, REPO, free_port

SCRIPT = REPO / "scripts" / "pouchdb_server.py"


def run(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def test_the_server_keeps_its_files_to_its_folder_and_a_taken_port_is_refused(tmp_path):
    if not POUCHDB_BIN.exists():
        pytest.skip("PouchDB Server is not installed (scripts/setup.sh runs npm ci)")
    work, state = tmp_path / "work", tmp_path / "state"
    work.mkdir()
    port = str(free_port())
    started = run("--port", port, "--dir", str(state), cwd=work)
    try:
        assert started.returncode == 0, started.stderr
        assert "PouchDB Server at http://127.0.0.1:%s/" % port in started.stdout
        with urllib.request.urlopen("http://127.0.0.1:%s/" % port, timeout=5) as answer:
            assert b"Welcome" in answer.read()
        assert list(work.iterdir()) == [], "nothing in the working folder"
        assert {"config.json", "log.txt", "pid"} <= {p.name for p in state.iterdir()}
        # The port is taken: refused at once, saying by what, and the running server is untouched.
        again = run("--port", port, "--dir", str(tmp_path / "second"), cwd=work)
        assert again.returncode == 1
        assert "127.0.0.1:%s is in use by a CouchDB-compatible server" % port in again.stderr
        assert not (tmp_path / "second").exists()
    finally:
        stopped = run("--stop", "--dir", str(state), cwd=work)
    assert stopped.returncode == 0, stopped.stderr
    assert not (state / "pid").exists()


def test_stop_never_kills_what_a_stale_pid_file_names(tmp_path):
    """A pid file outlives its server (a reboot, a kill -9) and its number is given to another
    program: before, ``--stop`` sent SIGTERM to that program's whole process group."""
    other = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )  # another program, the leader of its own group (as the server was)
    try:
        state = tmp_path / "state"
        state.mkdir()
        (state / ".made-by-pouchdb_server").touch()
        (state / "pid").write_text("%d 5984\n" % other.pid)
        stopped = run("--stop", "--dir", str(state), cwd=tmp_path)
        assert stopped.returncode == 1
        assert stopped.stderr.startswith(
            "pouchdb_server: the server started from %s is not running (pid %d is " % (state, other.pid)
        )
        assert other.poll() is None, "the other program is still running"
        assert not (state / "pid").exists()
    finally:
        other.kill()
        other.wait()


def test_a_folder_of_someone_elses_files_is_never_used_nor_its_pid_file_read(tmp_path):
    """The server writes ``config.json`` and ``log.txt`` where it runs, and the script its ``pid``:
    given a folder of the user's (holding files of those names), it rewrote all three. Now refused
    before anything starts, and ``--stop`` reads no ``pid`` there; every file as it was."""
    if not POUCHDB_BIN.exists():
        pytest.skip("PouchDB Server is not installed (scripts/setup.sh runs npm ci)")
    mine = tmp_path / "mine"
    mine.mkdir()
    files = {"pid": "my notes\n", "config.json": '{"mine": true}\n', "log.txt": "my log\n"}
    for name, text in files.items():
        (mine / name).write_text(text)
    started = run("--port", str(free_port()), "--dir", str(mine), cwd=tmp_path)
    assert started.returncode == 1
    assert started.stderr.startswith("pouchdb_server: %s is not a folder this script made" % mine)
    (mine / "pid").write_text("%d 5984\n" % 2**22)  # numbers a --stop could act on
    files["pid"] = (mine / "pid").read_text()
    stopped = run("--stop", "--dir", str(mine), cwd=tmp_path)
    assert stopped.returncode == 1 and "no server started from %s" % mine in stopped.stderr
    assert {p.name: p.read_text() for p in mine.iterdir()} == files
