"""CPU-bound ingest work (trafilatura, pypdf, libmagic, lxml) in worker processes.

Under the GIL a worker *thread* running trafilatura stalls the reactor as much as running it
inline: the profile of the benchmark showed the reactor thread and the extraction threads taking
turns on one core. Worker processes put the extraction on the other cores while the reactor keeps
downloading. ``INGEST_EXTRACT_PROCESSES = 0`` falls back to the reactor's thread pool.

A worker process can die under a call (the kernel's OOM killer, a crash in a C library): the
executor is then broken for every call, so it is replaced by a new one and each interrupted call
runs once more; a call that kills its process twice raises :class:`ExtractionCrashed`, for the
spider to fail that one request with a clear status.

A process can also die while it answers. The executor reads an answer as one message from a pipe,
and a message cut short leaves its reader waiting for the rest for ever: no death is noticed, the
crawl hangs (seen here: an ingest waited two hours after one SIGKILL). So an answer travels whole or
not at all: one that fits an atomic pipe write (``PIPE_BUF``) goes by the pipe, a larger one is
written to a file in the pool's own folder (in memory when the machine has ``/dev/shm``) and only its
name goes by the pipe (:func:`_answer`, :meth:`ExtractPool.run`).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import logging
import multiprocessing
import os
import pickle
import shutil
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from votersdaily.defaults import DEFAULTS

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: Imported by the fork server once, so forked workers start warm (trafilatura takes ~0.7 s). Neither
#: Scrapy nor Twisted: an extraction process never needs them, and they cost the fork server 0.2 s of
#: CPU at each crawl's start, before the first page could be read. First, the crawl's main script
#: (:mod:`.forkserver_main`).
PRELOAD = [
    "votersdaily.ingest.forkserver_main",
    "votersdaily.ingest.process",
    "votersdaily.ingest.htmlbody",
    "votersdaily.ingest.pdf",
]


class ExtractionCrashed(RuntimeError):
    """The extraction process died under the same call twice (killed, or crashed)."""


def default_processes() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _start_worker(worker_pid: int, niceness: int) -> None:
    """Initialiser of every extraction process: it ends with the crawl process (:func:`_die_with`),
    runs ``niceness`` below it (INGEST_EXTRACT_NICE), so the reactor goes first, and leaves what
    it was forked with out of the garbage collector (:func:`_freeze_preloaded`)."""
    _die_with(worker_pid)
    if niceness:
        os.nice(niceness)
    _freeze_preloaded()


def _freeze_preloaded() -> None:
    """Move the objects the process was forked with (the preloaded trafilatura, htmldate, lxml,
    pypdf: some 70,000) to the collector's permanent generation, as the crawl process does
    (:mod:`votersdaily.gc_freeze`): they live as long as the process, yet each older-generation
    collection walked them all again (a recorded PDF's extraction spent a quarter of its CPU
    in collections). Pages of the fork server's memory the collector no longer writes to stay
    shared. What each document makes is collected as before."""
    gc.freeze()


def _die_with(worker_pid: int) -> None:
    """An extraction process ends when its worker ends, even by SIGKILL.

    Its parent is the fork server, not the worker, and it holds the write ends of its call queue, so
    left alone it would wait on that queue for ever (and keep the fork server and the resource
    tracker alive with it). Two guards: ``PR_SET_PDEATHSIG`` kills it when the fork server dies, and
    a thread waiting on the worker's pidfd kills it when the worker dies (the fork server and the
    resource tracker then see their last client gone and exit)."""
    import ctypes
    import signal
    import threading

    with contextlib.suppress(OSError, AttributeError):  # not Linux: the watcher below still ends it
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    threading.Thread(target=_watch, args=(worker_pid,), name="die-with-worker", daemon=True).start()


def _watch(pid: int) -> None:
    """Kill this process once process ``pid`` has exited (its pidfd turns readable). Without
    pidfd_open (Linux before 5.3) nothing is watched: the supervisor's process group is the guard."""
    import select
    import signal

    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        fd = None  # already gone
    except (OSError, AttributeError):
        return
    if fd is not None:
        select.select([fd], [], [])
    os.kill(os.getpid(), signal.SIGKILL)


#: prctl(2) option: the signal this process gets when its parent dies.
_PR_SET_PDEATHSIG = 1


def _warm() -> int:
    """The import is the warm-up (a worker the fork server did not preload)."""
    for module in PRELOAD:
        importlib.import_module(module)
    return os.getpid()


#: The largest answer sent by the pipe itself: a write of at most PIPE_BUF bytes (4096 on Linux, the
#: least POSIX allows is 512: ``select.PIPE_BUF``) is atomic, and the executor adds its own framing
#: (a 4-byte length, the pickled result item around the answer) to ours.
INLINE_ANSWER_BYTES = 3072


@dataclass(frozen=True)
class _Answer:
    """What a worker process sends back: the call's value or its exception, inline or as a file."""

    value: Any = None
    error: BaseException | None = None
    path: str | None = None


def _answer(folders: tuple[str, ...], func: Callable[..., Any], *args: Any) -> _Answer:
    """Run ``func(*args)`` in the worker process and package the outcome so that it reaches the
    crawl whole or not at all (module docstring): a large one in a file of the first of ``folders``
    that takes it whole."""
    try:
        outcome = _Answer(value=func(*args))
    except Exception as exc:
        outcome = _Answer(error=exc)
    try:
        data = pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # an unpicklable value or exception: say what it was
        outcome = _Answer(
            error=RuntimeError("%s answered what cannot be sent back: %r" % (func.__name__, exc))
        )
        data = pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL)
    if len(data) <= INLINE_ANSWER_BYTES:
        return outcome
    for folder in folders[:-1]:
        with contextlib.suppress(OSError):  # a full memory folder: the next one
            return _Answer(path=_write_answer(folder, data))
    return _Answer(path=_write_answer(folders[-1], data))


def _write_answer(folder: str, data: bytes) -> str:
    """A file of ``folder`` holding ``data`` whole, or none (a write the disk cut short is removed)."""
    fd, path = tempfile.mkstemp(dir=folder, suffix=".answer")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
    except OSError:
        Path(path).unlink()
        raise
    return path


#: Where large answers wait first: a folder in memory (tmpfs: the crawl and the extraction
#: processes create, read and remove a file per answer there without a journal or a disk, and
#: without the disk's directory locks that stalled the reactor); then the temporary folder.
MEMORY_FOLDER = "/dev/shm"  # noqa: S108 - a private folder made in it, removed at close


def _answer_folders() -> tuple[str, ...]:
    """The folders of one pool's answers, made now: the memory one when there is one, then one on
    the temporary folder's disk (for answers the memory folder has no room for)."""
    folders = []
    if Path(MEMORY_FOLDER).is_dir():
        with contextlib.suppress(OSError):  # not writable here: the disk alone
            folders.append(tempfile.mkdtemp(prefix="votersdaily-extract-", dir=MEMORY_FOLDER))
    folders.append(tempfile.mkdtemp(prefix="votersdaily-extract-"))
    return tuple(folders)


def _unpack(answer: _Answer) -> Any:
    """The value of a worker's answer (read from its file, which is removed), or its exception."""
    if answer.path is not None:
        path = Path(answer.path)
        try:
            answer = pickle.loads(path.read_bytes())  # noqa: S301 - written by our own worker (above)
        finally:
            path.unlink(missing_ok=True)
    if answer.error is not None:
        raise answer.error
    return answer.value


@contextlib.contextmanager
def naming_the_main_script() -> Iterator[None]:
    """Name the crawl's main script (the path multiprocessing gives each process it starts, if it is
    a script) to the fork server this block starts (:mod:`.forkserver_main`)."""
    from multiprocessing import spawn

    from .forkserver_main import MAIN_SCRIPT_ENV

    script = spawn.get_preparation_data("extract").get("init_main_from_path")
    if not script:
        yield
        return
    os.environ[MAIN_SCRIPT_ENV] = script
    try:
        yield
    finally:
        os.environ.pop(MAIN_SCRIPT_ENV, None)


class ExtractPool:
    """``await pool.run(func, *args)``: ``func`` (a module-level function, picklable arguments)
    runs in a worker process, or in a thread when ``processes`` is 0."""

    def __init__(
        self, processes: int, crawler: Crawler | None = None, niceness: int = DEFAULTS["INGEST_EXTRACT_NICE"]
    ) -> None:
        self.processes = processes
        self.niceness = niceness
        self.crawler = crawler  # its stats count the deaths (they exist once the crawl starts)
        self._executor: ProcessPoolExecutor | None = None
        #: Where answers too large for one atomic pipe write wait for the crawl (made at start).
        self._answers: tuple[str, ...] | None = None

    def start(self, *args: Any, **kwargs: Any) -> None:
        """Start the workers now, so the first pages do not wait for them (a signal handler too)."""
        if self.processes <= 0 or self._executor is not None:
            return
        # Not "fork": the crawl process has threads (store writers, DNS) a fork would copy mid-state.
        if self._answers is None:
            self._answers = _answer_folders()
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        self._executor = ProcessPoolExecutor(
            self.processes,
            mp_context=context,
            initializer=_start_worker,
            initargs=(os.getpid(), self.niceness),
        )
        with naming_the_main_script():  # the first submit starts the fork server
            for _ in range(self.processes):
                self._executor.submit(_warm)

    async def run(self, func: Callable[..., Any], *args: Any) -> Any:
        if self.processes <= 0:
            from votersdaily.blocking import run_in_thread  # here: the fork server never needs Scrapy

            return await run_in_thread(func, *args)
        for attempt in (1, 2):
            if self._executor is None:
                self.start()
            executor, answers = self._executor, self._answers
            assert executor is not None and answers is not None, "start() makes them"  # noqa: S101 - invariant
            try:
                answer = await asyncio.wrap_future(executor.submit(_answer, answers, func, *args))
            except BrokenProcessPool:
                self._replace(executor)
                if attempt == 2:
                    self._count("ingest/extract/crashed")
                    raise ExtractionCrashed(
                        "the extraction process died twice running %s (killed, e.g. by the OOM "
                        "killer, or crashed)" % func.__name__
                    ) from None
                self._count("ingest/extract/retried")
                logger.warning("an extraction process died under %s: running it once more", func.__name__)
            else:
                return _unpack(answer)
        raise AssertionError("unreachable: the second attempt returns or raises")  # pragma: no cover

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        """Every call running on the broken executor lands here: the first one replaces it."""
        if self._executor is not broken:
            return
        self._count("ingest/extract/process_died")
        logger.warning(
            "an extraction process of the ingest died (killed, e.g. by the OOM killer, or crashed): "
            "starting %d new ones",
            self.processes,
        )
        self._executor = None
        broken.shutdown(wait=False, cancel_futures=True)
        self.start()

    def _count(self, key: str) -> None:
        if self.crawler is not None:
            self.crawler.stats.inc_value(key)

    def close(self, *args: Any, **kwargs: Any) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
        if self._answers is not None:  # the folders start() made, with answers nobody took
            for folder in self._answers:
                shutil.rmtree(folder, ignore_errors=True)
            self._answers = None
