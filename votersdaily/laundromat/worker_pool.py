"""Worker processes the laundromat owns: each runs one step at a time, and one that passes a
document's time limit is killed alone, with the processes its step started (parsers in Rust or C
cannot be interrupted otherwise), while the other workers go on.

Each worker is a fresh interpreter (``python -m votersdaily.laundromat.worker_pool <fd>``: the crawl
process runs threads and a reactor, which a fork would copy half-way; unlike multiprocessing's
``spawn`` it needs no resource-tracker process beside it) that talks over a socket pair, and is
kept for the next step; :meth:`WorkerPool.warm` starts one while the crawl is still starting and
downloading, so its imports are not paid after the download. ``scrapy crawl laundromat`` starts it
earlier still (:func:`start_ahead`, before the spider's module is imported and Scrapy builds the
crawler), and the pool adopts it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

#: glibc's allocator tunables for a worker: buffers of a few MiB (a range of a document, its lines,
#: their sorted run) are allocated and freed range after range; given back to the system each time
#: (glibc's defaults), their pages were faulted in and zeroed again for every range. Below 32 MiB they
#: come from the heap, which keeps up to 128 MiB freed for the next (the worker's peak is what it
#: is either way). Put before a caller's own GLIBC_TUNABLES, which win.
MALLOC_TUNABLES = "glibc.malloc.mmap_threshold=%d:glibc.malloc.trim_threshold=%d" % (32 << 20, 128 << 20)

#: What a cleaning worker imports before its first step: the steps' own imports (cleaning, recoding),
#: done while the crawl starts. Named here, not imported: the crawl imports none of them.
WORKER_MODULES = (
    "votersdaily.laundromat.steps",
    "votersdaily.laundromat.cleaning",
    "votersdaily.laundromat.encodings",
)


def worker_environment() -> dict[str, str]:
    """A worker's environment: the crawl's, with its import path (a checkout run without installing
    the package) and :data:`MALLOC_TUNABLES`."""
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    theirs = environment.pop("GLIBC_TUNABLES", "")
    environment["GLIBC_TUNABLES"] = MALLOC_TUNABLES + (":" + theirs if theirs else "")
    return environment


class WorkerDied(Exception):
    """The worker running a step ended without an answer (killed by the system, crashed)."""


class StepTimeout(Exception):
    """The step ran past the time it was given; its worker was killed."""


class StepFailed(Exception):
    """A step raised an exception that cannot travel back to the crawl (not picklable)."""


def _serve(conn: Connection) -> None:
    """A worker's loop: run each ``(fn, args)`` received, answer ``("ok", result)`` or
    ``("error", exception)``; ``None`` or a closed pipe ends it."""
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        fn, args = job
        try:
            answer: tuple[str, Any] = ("ok", fn(*args))
        except BaseException as exc:  # every failure goes back to the crawl, which fails the record
            answer = ("error", exc)
        try:
            conn.send(answer)
        except OSError:  # the crawl is gone
            return
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            error = answer[1] if answer[0] == "error" else exc
            conn.send(("error", StepFailed("%s: %s" % (type(error).__name__, error))))


class Worker:
    def __init__(self, preload: tuple[str, ...] = ()) -> None:
        """``preload``: modules the worker imports before it waits for its first step."""
        self.preload = preload
        self.environment = worker_environment()
        ours, theirs = socket.socketpair()
        with ours, theirs:
            self.process = subprocess.Popen(  # noqa: S603 - this interpreter running this module
                [sys.executable, "-m", __name__, str(theirs.fileno()), *preload],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                env=self.environment,
            )
            self.conn = Connection(os.dup(ours.fileno()))

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        """Run ``fn(*args)`` in the worker and wait for its answer (blocking: run in a thread)."""
        try:
            self.conn.send((fn, args))
            kind, value = self.conn.recv()
        except (EOFError, OSError):  # it died before or while running the step (or never started)
            self.conn.close()
            # Its pipe closes a moment before the process is reaped: wait for it, so that it is
            # never taken for alive (and reused) and its exit code is known.
            try:
                code = self.process.wait(5)
            except subprocess.TimeoutExpired:  # alive but deaf: end it
                self.kill()
                code = self.process.returncode
            raise WorkerDied("the worker process ended (exit code %s)" % code) from None
        if kind == "error":
            raise value
        return value

    def kill(self) -> None:
        """End the worker now, with the processes its step started (the forked parsers of a large
        document, external sorts), which would otherwise go on as orphans; the thread waiting for
        its answer closes the pipe."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGSTOP)  # no new child while its children are found
        for pid in _descendants(self.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.kill()
        self.process.wait()

    def stop(self, timeout: float = 5.0) -> None:
        """Let the worker end; kill it if it does not within ``timeout``."""
        with contextlib.suppress(OSError):
            self.conn.send(None)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        self.conn.close()

    def alive(self) -> bool:
        return self.process.poll() is None


#: The worker :func:`start_ahead` started, until a pool adopts it (:meth:`WorkerPool.warm`).
_ahead: list[Worker] = []


def start_ahead(preload: tuple[str, ...] = WORKER_MODULES) -> None:
    """Start a worker now for the first pool that warms up in this process: a command that knows
    its crawl cleans documents starts it before the spider's module is imported and the crawler is
    built, so that the worker's interpreter and imports (0.1-0.2 s) overlap theirs instead of
    the crawl waiting for them at its first document. One no pool adopted is stopped by
    :func:`drop_ahead`, at the latest as the process exits."""
    if not _ahead:
        _ahead.append(Worker(preload))
        atexit.register(drop_ahead)


def drop_ahead() -> None:
    """Stop the worker :func:`start_ahead` started if no pool adopted it (the crawl failed before
    its spider was made, or took none)."""
    while _ahead:
        _ahead.pop().kill()


def _adopt(preload: tuple[str, ...]) -> Worker | None:
    """The worker started ahead, if it imports ``preload``, was started with the environment a
    worker started now would have (a process running several crawls, the tests') and is alive;
    else it is stopped."""
    if not _ahead:
        return None
    worker = _ahead.pop()
    if worker.preload == preload and worker.environment == worker_environment() and worker.alive():
        return worker
    worker.kill()
    return None


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (Linux ``/proc``; none where it cannot be read)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        try:
            tasks = list(Path("/proc/%d/task" % current).iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                with open(task / "children") as f:
                    children = [int(child) for child in f.read().split()]
            except (OSError, ValueError):
                continue
            found += children
            todo += children
    return found


class WorkerPool:
    """Up to ``size`` workers; a worker is busy with one step, idle ones wait for the next."""

    def __init__(self, size: int, preload: tuple[str, ...] = ()) -> None:
        self.size = max(1, size)
        #: Modules each worker imports as it starts (the steps' parsers), before its first step.
        self.preload = preload
        self.idle: list[Worker] = []
        self.busy: set[Worker] = set()

    def warm(self) -> None:
        """Start one worker ahead of its first step (its imports overlap the crawl's start), or
        adopt the one :func:`start_ahead` started."""
        if not self.idle and not self.busy:
            self.idle.append(_adopt(self.preload) or Worker(self.preload))

    async def run(self, fn: Callable[..., Any], *args: Any, timeout: float | None = None) -> Any:
        """``fn(*args)`` in a worker; past ``timeout`` seconds the worker is killed and
        :class:`StepTimeout` raised. The caller keeps at most ``size`` steps running."""
        import asyncio  # the crawl's side only: a worker runs this module without it (0.03 s)

        worker = self.idle.pop() if self.idle else Worker(self.preload)
        self.busy.add(worker)
        answer = asyncio.ensure_future(asyncio.to_thread(worker.call, fn, args))
        try:
            try:
                await asyncio.wait_for(asyncio.shield(answer), timeout)
            except TimeoutError:
                if not answer.done():  # ours: not the step's own TimeoutError (a socket's)
                    worker.kill()  # the thread waiting for its answer gets WorkerDied and ends
                    await asyncio.gather(answer, return_exceptions=True)
                    raise StepTimeout("the step ran longer than %.1f s" % (timeout or 0)) from None
            return answer.result()
        finally:
            self.busy.discard(worker)
            if not answer.done():  # the crawl stopped waiting (shutting down): the step is abandoned
                answer.add_done_callback(lambda done: done.exception())
                worker.kill()
            elif worker.alive():
                self.idle.append(worker)

    def close(self) -> None:
        for worker in [*self.idle, *self.busy]:
            worker.stop()
        self.idle, self.busy = [], set()


if __name__ == "__main__":  # a worker: its classes come from the package, as the crawl unpickles them
    import importlib

    from votersdaily.laundromat.worker_pool import _serve as serve

    for module in sys.argv[2:]:
        importlib.import_module(module)
    serve(Connection(int(sys.argv[1])))
    # The crawl waits for this process to end (as does whoever reads its stderr). Python's own end
    # (collections, module teardown, freeing the heap of the last document) took 30-40 ms after a
    # 2M-statement document; every step closed its files and joined its threads and processes.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
