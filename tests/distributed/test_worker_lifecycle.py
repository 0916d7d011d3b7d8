"""A Redis-fed ingest worker's life as an operator runs it: told by its environment when to stop, and
killed with its whole process tree."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.distributed.workloads import descendants
from tests.support.processes import start_crawl

pytestmark = pytest.mark.slow  # separate processes: Redis, workers, killed and restarted services


def _worker(tmp_path: Path, store_uri: str, redis_url: str, *settings: str, **env: str) -> subprocess.Popen:
    return start_crawl(
        "ingest_worker",
        store_uri,
        "LOG_LEVEL=INFO",
        *settings,
        log=tmp_path / "worker.log",
        env={"VOTERSDAILY_REDIS_URL": redis_url, **env},
    )


def test_idle_close_from_the_environment_stops_the_worker(redis_server, sqlite_uri, tmp_path):
    """`VOTERSDAILY_REDIS_IDLE_CLOSE=30 scrapy crawl ingest_worker`, as documented, used to be ignored
    (only `-s` was read: the worker sat idle for 12 minutes)."""
    worker = _worker(
        tmp_path, sqlite_uri, redis_server.url, "INGEST_EXTRACT_PROCESSES=0", VOTERSDAILY_REDIS_IDLE_CLOSE="1"
    )
    try:
        assert worker.wait(90) == 0, (tmp_path / "worker.log").read_text()[-3000:]
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
    assert "Spider closed (finished)" in (tmp_path / "worker.log").read_text()


def _start_time(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/<pid>/stat), None once it is gone or a zombie."""
    try:
        fields = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def test_a_killed_worker_takes_its_forkserver_tracker_and_extraction_processes_along(
    redis_server, sqlite_uri, tmp_path
):
    """SIGKILL of the worker alone (as the OOM killer does): its fork server, resource tracker and
    extraction processes (about 73 MB each) used to live on until killed by hand."""
    worker = _worker(tmp_path, sqlite_uri, redis_server.url, "INGEST_EXTRACT_PROCESSES=2")
    try:
        deadline = time.monotonic() + 60
        tree: list[int] = []
        while time.monotonic() < deadline and len(tree) < 4:  # tracker, fork server, 2 extraction
            time.sleep(0.5)
            tree = descendants(worker.pid)
        assert len(tree) >= 4, (tree, (tmp_path / "worker.log").read_text()[-3000:])
        started = {pid: _start_time(pid) for pid in tree}
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
    deadline = time.monotonic() + 15
    alive = dict(started)
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = {pid: t for pid, t in alive.items() if t is not None and _start_time(pid) == t}
    survivors = {pid: Path("/proc/%d/cmdline" % pid).read_bytes()[:120] for pid in alive}
    for pid in alive:  # a failing run leaves nothing behind either
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not survivors, "still running 15 s after the worker was killed: %s" % survivors
