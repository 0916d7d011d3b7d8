"""CPU-bound ingest work (trafilatura, pypdf, libmagic, lxml) in worker processes.

Under the GIL a worker *thread* running trafilatura stalls the reactor as much as running it
inline: the profile of the benchmark showed the reactor thread and the extraction threads taking
turns on one core. Worker processes put the extraction on the other cores while the reactor keeps
downloading. ``INGEST_EXTRACT_PROCESSES = 0`` falls back to the reactor's thread pool.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import threads

logger = logging.getLogger(__name__)

#: Imported by the fork server once, so forked workers start warm (trafilatura takes ~0.7 s).
PRELOAD = ["votersdaily.ingest.process"]


def default_processes() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _warm() -> int:
    import votersdaily.ingest.process  # noqa: F401 - the import is the warm-up

    return os.getpid()


class ExtractPool:
    """``await pool.run(func, *args)``: ``func`` (a module-level function, picklable arguments)
    runs in a worker process, or in a thread when ``processes`` is 0."""

    def __init__(self, processes: int):
        self.processes = processes
        self._executor: ProcessPoolExecutor | None = None

    def start(self, *args, **kwargs) -> None:
        """Start the workers now, so the first pages do not wait for them (a signal handler too)."""
        if self.processes <= 0 or self._executor is not None:
            return
        # Not "fork": the crawl process has threads (store writers, DNS) a fork would copy mid-state.
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        self._executor = ProcessPoolExecutor(self.processes, mp_context=context)
        for _ in range(self.processes):
            self._executor.submit(_warm)

    async def run(self, func: Callable, *args) -> Any:
        if self.processes <= 0:
            return await maybe_deferred_to_future(threads.deferToThread(func, *args))
        if self._executor is None:
            self.start()
        return await asyncio.wrap_future(self._executor.submit(func, *args))

    def close(self, *args, **kwargs) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
