"""The extraction pool survives the death of a worker process (as an OOM kill: SIGKILL), with real
worker processes: the pool is replaced, the interrupted calls run once more, and only a call that
kills its process twice fails."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest
from scrapy.statscollectors import MemoryStatsCollector

from votersdaily.ingest.workers import ExtractionCrashed, ExtractPool


def killed_by_oom(marker: str) -> int:
    """Dies by SIGKILL the first time (``marker`` does not exist yet), then answers its pid."""
    path = Path(marker)
    if not path.exists():
        path.write_text("died once")
        os.kill(os.getpid(), signal.SIGKILL)
    return os.getpid()


def always_killed() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def slow_pid(seconds: float) -> int:
    import time

    time.sleep(seconds)
    return os.getpid()


class _Stats(MemoryStatsCollector):
    def __init__(self):
        self._stats = {}


@pytest.fixture
def pool():
    p = ExtractPool(2, SimpleNamespace(stats=_Stats()))
    p.start()
    yield p
    p.close()


def test_a_killed_process_is_replaced_and_its_call_retried(pool, tmp_path):
    async def scenario():
        # a call sharing the broken executor is interrupted too, and retried as well
        bystander = asyncio.ensure_future(pool.run(slow_pid, 0.5))
        await asyncio.sleep(0.1)
        pid = await pool.run(killed_by_oom, str(tmp_path / "marker"))
        return pid, await bystander, await pool.run(slow_pid, 0)

    pid, bystander, after = asyncio.run(scenario())
    assert (tmp_path / "marker").exists(), "the first attempt died"
    assert pid != os.getpid() and bystander > 0 and after > 0
    stats = pool.crawler.stats.get_stats()
    assert stats["ingest/extract/process_died"] == 1, stats
    assert stats["ingest/extract/retried"] >= 1 and "ingest/extract/crashed" not in stats


def test_a_call_that_kills_its_process_twice_fails_alone(pool):
    async def scenario():
        with pytest.raises(ExtractionCrashed, match="died twice running always_killed"):
            await pool.run(always_killed)
        return await asyncio.gather(*(pool.run(slow_pid, 0) for _ in range(4)))

    pids = asyncio.run(scenario())
    assert len(pids) == 4 and all(pids)
    stats = pool.crawler.stats.get_stats()
    assert (stats["ingest/extract/process_died"], stats["ingest/extract/crashed"]) == (2, 1), stats
