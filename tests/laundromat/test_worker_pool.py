"""The laundromat's own worker processes: a step past its time has its worker killed (and only that
one), a step's exception comes back as itself, a worker that dies is reported, not waited for."""

from __future__ import annotations

import asyncio
import atexit
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.laundromat.sitedata import NT_Z
from votersdaily.laundromat import worker_pool
from votersdaily.laundromat.worker_pool import MALLOC_TUNABLES, StepTimeout, WorkerDied, WorkerPool


@pytest.fixture(autouse=True)
def no_worker_ahead():
    """Each test starts and ends without a worker started ahead (one a failed test left behind)."""
    worker_pool.drop_ahead()
    yield
    worker_pool.drop_ahead()


def _with_pool(size: int, scenario) -> WorkerPool:
    """Run ``scenario(pool)`` on a new pool of ``size`` workers, closed afterwards."""
    return pool_run(WorkerPool(size), scenario)


def pool_run(pool: WorkerPool, scenario) -> WorkerPool:
    """Run ``scenario(pool)``, then close ``pool``."""

    async def run() -> None:
        try:
            await scenario(pool)
        finally:
            pool.close()

    asyncio.run(run())
    return pool


def test_a_step_past_its_time_is_killed_alone():
    async def scenario(pool: WorkerPool) -> None:
        other_pid = await pool.run(os.getpid)
        other = asyncio.ensure_future(pool.run(time.sleep, 3))
        await asyncio.sleep(0)  # it takes the worker that already ran a step
        started = time.monotonic()
        with pytest.raises(StepTimeout):
            await pool.run(time.sleep, 60, timeout=0.5)  # a second worker, killed at its limit
        assert time.monotonic() - started < 30
        assert await other is None  # the other document's step went on to its end
        assert len(pool.idle) == 1 and await pool.run(os.getpid) == other_pid

    pool = _with_pool(2, scenario)
    assert not pool.idle and not pool.busy


def _start_a_process_and_sleep(pid_file: str) -> None:
    """A step that starts a process of its own (as a large document's forked parsers and sorts)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    Path(pid_file).write_text(str(child.pid))
    time.sleep(120)


def _gone(pid: int) -> bool:
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie has ended
    except FileNotFoundError:
        return True


def test_a_killed_step_takes_the_processes_it_started_with_it(tmp_path):
    pid_file = tmp_path / "child.pid"

    async def scenario(pool: WorkerPool) -> None:
        with pytest.raises(StepTimeout):
            await pool.run(_start_a_process_and_sleep, str(pid_file), timeout=3)

    _with_pool(1, scenario)
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child), "the step's own process outlived the killed worker"


def test_a_step_error_comes_back_as_itself_and_the_worker_is_kept():
    async def scenario(pool: WorkerPool) -> None:
        pid = await pool.run(os.getpid)
        with pytest.raises(ValueError, match="invalid literal"):
            await pool.run(int, "not a number")
        assert await pool.run(os.getpid) == pid

    _with_pool(1, scenario)


def test_a_worker_that_dies_is_reported():
    async def scenario(pool: WorkerPool) -> None:
        pid = await pool.run(os.getpid)
        with pytest.raises(WorkerDied):
            await pool.run(os.kill, pid, signal.SIGKILL)
        assert not pool.idle  # a dead worker is not reused
        assert await pool.run(os.getpid) != pid

    _with_pool(1, scenario)


def test_a_worker_keeps_freed_buffers_for_the_next_range(monkeypatch):
    """Workers run with glibc's allocator keeping freed buffers (MALLOC_TUNABLES), before a caller's
    own tunables, which win; the setting reaches the worker's own environment."""
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")

    async def scenario(pool: WorkerPool) -> None:
        tunables = await pool.run(os.getenv, "GLIBC_TUNABLES")
        assert tunables == MALLOC_TUNABLES + ":glibc.malloc.arena_max=2"

    _with_pool(1, scenario)


def test_a_worker_started_ahead_is_the_first_pools_own():
    """``scrapy crawl laundromat`` starts its first cleaning worker before the spider's module is
    imported; the spider's pool takes that worker instead of starting another."""
    worker_pool.start_ahead(preload=())
    worker_pool.start_ahead(preload=())  # one at a time
    (ahead,) = worker_pool._ahead
    pool = WorkerPool(1)
    pool.warm()
    assert worker_pool._ahead == [] and pool.idle == [ahead]

    async def scenario(pool: WorkerPool) -> None:
        assert await pool.run(os.getpid) == ahead.process.pid

    pool_run(pool, scenario)
    assert not ahead.alive()  # the pool closed it


@pytest.mark.parametrize("differs", ["modules", "environment"])
def test_a_worker_started_ahead_for_other_modules_or_environment_is_stopped_not_adopted(monkeypatch, differs):
    worker_pool.start_ahead(preload=("json",) if differs == "modules" else ())
    (ahead,) = worker_pool._ahead
    if differs == "environment":  # another crawl of the same process (the tests'), its own environment
        monkeypatch.setenv("VOTERSDAILY_TEST_AHEAD", "1")
    pool = WorkerPool(1)
    pool.warm()
    try:
        assert pool.idle and pool.idle[0] is not ahead
        assert ahead.process.wait(5) is not None and worker_pool._ahead == []
    finally:
        pool.close()


def test_a_worker_started_ahead_that_no_crawl_took_is_stopped():
    worker_pool.start_ahead(preload=())
    (ahead,) = worker_pool._ahead
    worker_pool.drop_ahead()
    assert worker_pool._ahead == [] and ahead.process.returncode is not None


def _record_workers(monkeypatch) -> list[worker_pool.Worker]:
    """The workers started from now on, in order."""
    started: list[worker_pool.Worker] = []

    class Recorded(worker_pool.Worker):
        def __init__(self, preload: tuple[str, ...] = ()) -> None:
            super().__init__(preload)
            started.append(self)

    monkeypatch.setattr(worker_pool, "Worker", Recorded)
    return started


def test_a_laundromat_crawl_cleans_with_the_worker_it_started_ahead(crawl, sqlite_uri, tmp_path, monkeypatch):
    """One worker for a one-document crawl: the one started as the command read its options."""
    started = _record_workers(monkeypatch)
    data = tmp_path / "z.nt"
    data.write_text(NT_Z, encoding="utf-8")
    proc = crawl("laundromat", data, sqlite_uri, "-s", "LAUNDROMAT_OUTPUT_DIR=%s" % (tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "cleaned %s" % (tmp_path / "out" / "cleaned") in proc.stderr
    (worker,) = started
    assert worker.preload == worker_pool.WORKER_MODULES and worker.process.returncode == 0


def test_a_laundromat_crawl_refused_at_its_options_leaves_no_worker(crawl, sqlite_uri, monkeypatch):
    """``scrapy crawl laundromat`` starts a worker ahead as it reads its options; it goes with a
    crawl refused there (exit status 2)."""
    started = _record_workers(monkeypatch)
    proc = crawl("laundromat", [], sqlite_uri, "-s", "LAUNDROMAT_GZIP_LEVEL=fast")
    assert proc.returncode == 2, proc.stderr
    assert "LAUNDROMAT_GZIP_LEVEL" in proc.stderr
    (ahead,) = started
    assert ahead.preload == worker_pool.WORKER_MODULES
    assert worker_pool._ahead == [] and ahead.process.returncode is not None


def test_a_worker_told_to_stop_ends_at_once_with_success(capfd):
    """A stopped worker leaves without Python's end (collections, module teardown: 30-40 ms after a
    large document; the steps closed their files): exit status 0, and nothing registered to run at
    its exit runs."""
    pool = WorkerPool(1)
    workers = []

    async def scenario(pool: WorkerPool) -> None:
        await pool.run(atexit.register, print, "the worker ran Python's own end")
        workers.extend(pool.idle)

    pool_run(pool, scenario)
    (worker,) = workers
    assert worker.process.returncode == 0
    assert "Python's own end" not in capfd.readouterr().out
