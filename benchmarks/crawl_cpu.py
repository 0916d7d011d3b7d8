"""``python3 -m benchmarks.crawl_cpu <scrapy arguments>``: ``scrapy`` with the crawl process's own CPU
written to ``$BENCH_CRAWL_CPU`` (JSON) when it ends, for the benchmarks that say where a crawl's time goes.

The process tree's CPU (what ``RUSAGE_CHILDREN`` gives a benchmark) mixes the crawl process with its
extraction, renderer and store processes and their start-up; this counts the crawl process alone
from the first reactor turn after ``spider_opened`` (Scrapy's ``start_time``; the handlers of the signal,
such as starting the extraction pool, are start-up) to ``spider_closed``: ``reactor`` is the reactor
thread's CPU, ``process`` all the crawl process's threads' (store hand-off, blobs, libmagic), ``reactor_waited``
the reactor thread's time runnable but waiting for a core (the other processes had both).
It changes nothing in the crawl: its receivers hang on PyDispatcher's global registry for every sender.
With ``$BENCH_CRAWL_PROFILE`` set, the reactor thread is also profiled (cProfile) in that window only,
into that file: its call counts hardly move with the machine's load, as the CPU times do.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
from typing import Any

# Nothing else at the top: the extraction processes import this module as their ``__mp_main__``
# (as they imported ``scrapy.__main__`` under ``python -m scrapy``), so it costs them nothing more.

#: Environment variable naming the JSON file written at exit.
OUTPUT_ENV = "BENCH_CRAWL_CPU"
#: Environment variable naming the crawl window's profile (pstats) of the reactor thread.
PROFILE_ENV = "BENCH_CRAWL_PROFILE"


class CrawlCpu:
    """The crawl window's CPU of this process and of its reactor thread."""

    def __init__(self, profile: str | None = None) -> None:
        self.start: tuple[float, float, float] | None = None
        self.end: tuple[float, float, float] | None = None
        self.profile_path = profile
        self.profile = None
        if profile:
            import cProfile

            self.profile = cProfile.Profile()

    @staticmethod
    def now() -> tuple[float, float, float]:
        """(process CPU, this thread's CPU, this thread's time runnable but waiting for a core)."""
        return time.process_time(), time.thread_time(), _runqueue_wait()

    def opened(self, **kwargs: Any) -> None:
        from twisted.internet import reactor

        # after every spider_opened handler: they are the crawl's start-up, not its work
        reactor.callLater(0, self._started)  # type: ignore[attr-defined]

    def _started(self) -> None:
        self.start = self.now()
        if self.profile is not None:
            self.profile.enable()

    def closed(self, **kwargs: Any) -> None:
        if self.end is None:
            if self.profile is not None:
                self.profile.disable()
            self.end = self.now()

    def write(self, path: str) -> None:
        if self.start is None or self.end is None:
            return
        figures = {
            "process": self.end[0] - self.start[0],
            "reactor": self.end[1] - self.start[1],
            "reactor_waited": self.end[2] - self.start[2],
        }
        with open(path, "w", encoding="utf-8") as out:
            json.dump(figures, out)
        if self.profile is not None and self.profile_path:
            self.profile.dump_stats(self.profile_path)


def _runqueue_wait() -> float:
    """Seconds this thread has spent runnable but waiting for a core (the scheduler's
    ``/proc/thread-self/schedstat``, second field); 0.0 where the kernel does not keep it."""
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as stat:
            return int(stat.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def main() -> None:
    from pydispatch import dispatcher
    from scrapy import signals

    meter = CrawlCpu(os.environ.get(PROFILE_ENV))
    dispatcher.connect(meter.opened, signal=signals.spider_opened, sender=dispatcher.Any, weak=False)
    dispatcher.connect(meter.closed, signal=signals.spider_closed, sender=dispatcher.Any, weak=False)
    path = os.environ.get(OUTPUT_ENV)
    if path:
        atexit.register(meter.write, path)
    from scrapy.cmdline import execute

    sys.argv[0] = "scrapy"
    execute()


if __name__ == "__main__":
    main()
