"""The laundromat's own worker processes: a step past its time has its worker killed (and only that
one), a step's exception comes back as itself, a worker that dies is reported, not waited for."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from votersdaily.laundromat.worker_pool import StepTimeout, WorkerDied, WorkerPool


def _with_pool(size: int, scenario) -> WorkerPool:
    """Run ``scenario(pool)`` on a new pool of ``size`` workers, closed afterwards."""
    pool = WorkerPool(size)

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
