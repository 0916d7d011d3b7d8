"""CPU-bound ingest work (trafilatura, pypdf, libmagic, lxml) in worker processes.

Under the GIL a worker *thread* running trafilatura stalls the reactor as much as running it
inline: the profile of the benchmark showed the reactor thread and the extraction threads taking
turns on one core. Worker processes put the extraction on the other cores while the reactor keeps
downloading. ``INGEST_EXTRACT_PROCESSES = 0`` falls back to the reactor's thread pool.

Each process is fed over a socket of its own that the crawl's event loop reads itself
(:class:`ExtractPool`): an answer wakes the reactor once, with no thread between (concurrent.futures'
pool had a feeder and a manager thread on every call's way, each waiting for Python's lock behind
the busy reactor: 10-13 ms a hop each way, and a fifth of the crawl process's CPU).

A worker process can die under a call (the kernel's OOM killer, a crash in a C library): its socket
ends, a new process replaces it and the call it was running runs once more (the calls queued behind
it had not started and simply go to the next free process); a call that kills its process twice
raises :class:`ExtractionCrashed`, for the spider to fail that one request with a clear status.

A process can also die while it answers. A message cut short is no answer: it is a death (the socket
ended before the message did), never a reader waiting for the rest for ever (seen here with
concurrent.futures' pool: an ingest waited two hours after one SIGKILL). An answer of up to
:data:`INLINE_ANSWER_BYTES` goes by the socket, a larger one is written to a file in the pool's own
folder (in memory when the machine has ``/dev/shm``) and only its name goes by the socket
(:func:`_answer`, :meth:`ExtractPool.run`); when no folder takes it (full), by the socket all the
same: a full folder is the folder's fault, never the document's.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import gc
import logging
import multiprocessing
import os
import pickle
import shutil
import signal
import socket
import struct
import tempfile
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from votersdaily.defaults import DEFAULTS
from votersdaily.plumbing.processes import without_the_main_script

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: Imported by the fork server once, so forked workers start warm (trafilatura takes ~0.7 s). Neither
#: Scrapy nor Twisted: an extraction process never needs them, and they cost the fork server 0.2 s of
#: CPU at each crawl's start, before the first page could be read. Nor the crawl's main script
#: (:mod:`votersdaily.plumbing.processes`).
PRELOAD = [
    "votersdaily.ingest.process",
    "votersdaily.ingest.htmlbody",
    "votersdaily.ingest.pdf",
    # What the first PDF's call imported in each process otherwise (8 ms of its CPU, twice a
    # crawl): pypdf's stream filters, the codecs of its text strings, and the compiled page-0
    # module (poppler's libraries linked), whose version a process checks before handing a PDF to
    # its warm renderer. A module that cannot be imported (not built) is skipped.
    "pypdf.filters",
    "encodings.utf_16_be",
    "encodings.charmap",
    # w3lib before 2.5 encodes a URL's host name with Python's IDNA codec (the first landing page's
    # links); 2.5 does not, and the codec is small.
    "encodings.idna",
    "votersdaily.ingest._page0",
]


class ExtractionCrashed(RuntimeError):
    """The extraction process died under the same call twice (killed, or crashed)."""


class NoTemporaryFolder(OSError):
    """No temporary folder takes the fork server's socket, which every extraction process is started
    through: the crawl cannot extract, and fetches nothing. The run log's result."""


#: The longest path a Unix socket may have (Linux's ``sun_path`` is 108 bytes, the last a NUL).
UNIX_SOCKET_PATH_MAX = 107
#: What every refusal of a temporary folder says of the crawl.
_NOTHING_FETCHED = "nothing was fetched, the requests wait for the next run"


def _fork_server_folder() -> None:
    """multiprocessing's folder for the fork server's socket, made now (once a process), or
    :class:`NoTemporaryFolder` naming the folders tried (Python's ``tempfile`` tries ``$TMPDIR``,
    ``/tmp``, ``/var/tmp``, ``/usr/tmp`` and the working folder, each full, read-only or missing), or
    the folder whose path leaves the socket in it no room (binding it would raise "AF_UNIX path too
    long" out of the fork server's start)."""
    from multiprocessing import connection, util

    try:
        folder = util.get_temp_dir()
    except OSError as exc:
        where = "%s: %s" % (exc.filename, exc.strerror) if exc.filename else exc.strerror or str(exc)
        raise NoTemporaryFolder(
            "the ingest's extraction processes have no temporary folder (%s; full, read-only or missing): "
            "%s; make room there, or point TMPDIR at a folder with room" % (where, _NOTHING_FETCHED),
        ) from exc
    # The socket multiprocessing names for the fork server: <folder>/listener-XXXXXXXX (nothing made).
    address = connection.arbitrary_address("AF_UNIX")  # type: ignore[attr-defined]  # not in typeshed
    over = len(os.fsencode(address)) - UNIX_SOCKET_PATH_MAX
    if over > 0:
        parent = str(Path(folder).parent)  # multiprocessing's folder is made in the temporary folder
        raise NoTemporaryFolder(
            "the ingest's extraction processes have no temporary folder (%s: its path is too long for the "
            "fork server's socket in it, %d bytes over the %d a Unix socket's path takes): %s; point TMPDIR "
            "at a folder whose path is at most %d bytes"
            % (parent, over, UNIX_SOCKET_PATH_MAX, _NOTHING_FETCHED, len(os.fsencode(parent)) - over)
        )


def default_processes() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class _ThisProcess:
    #: Set in an extraction process (:func:`_start_worker`).
    extracts = False


def in_extraction_process() -> bool:
    """Whether this is an extraction process: where a crash in a C library under a call costs that
    call's process, which the pool replaces (:mod:`.pdftext` reads poppler's text in process there)."""
    return _ThisProcess.extracts


def _start_worker(worker_pid: int, niceness: int) -> None:
    """Initialiser of every extraction process: it ends with the crawl process (:func:`_die_with`),
    runs ``niceness`` below it (INGEST_EXTRACT_NICE), so the reactor goes first, and leaves what
    it was forked with out of the garbage collector (:func:`_freeze_preloaded`)."""
    _ThisProcess.extracts = True
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
    import threading

    with contextlib.suppress(OSError, AttributeError):  # not Linux: the watcher below still ends it
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    threading.Thread(target=_watch, args=(worker_pid,), name="die-with-worker", daemon=True).start()


def _watch(pid: int) -> None:
    """Kill this process once process ``pid`` has exited (its pidfd turns readable). Without
    pidfd_open (Linux before 5.3) nothing is watched: the supervisor's process group is the guard."""
    import select

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


#: The largest answer sent by the socket itself (a message cut short is a death, whatever its size):
#: less than a socket's buffer holds (Linux gives a Unix socket about 200 KiB), so the process writes
#: it at once and takes its next call, never waiting for a busy reactor to read it piece by piece.
#: A larger one waits in a file (an HTML page's answer, its TEI and text, is 10-40 KiB: by the socket,
#: the reactor reads it with no file to open and remove).
INLINE_ANSWER_BYTES = 64 << 10


@dataclass(frozen=True)
class _Answer:
    """What a worker process sends back: the call's value or its exception, inline or as a file;
    ``unwritable``: (folder, why) for each answer folder that could not take this large answer,
    which came inline instead."""

    value: Any = None
    error: BaseException | None = None
    path: str | None = None
    unwritable: tuple[tuple[str, str], ...] = ()


def _answer(folders: tuple[str, ...], func: Callable[..., Any], *args: Any) -> _Answer:
    """Run ``func(*args)`` in the worker process and package the outcome so that it reaches the
    crawl whole or not at all (module docstring): a large one in a file of the first of ``folders``
    that takes it whole, or by the socket when none does (full, removed: the process then waits
    until the crawl has read it, where a file let it take its next call at once)."""
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
    if len(data) > INLINE_ANSWER_BYTES:
        unwritable = []
        for folder in folders:
            try:
                return _Answer(path=_write_answer(folder, data))
            except OSError as exc:  # a full memory folder: the next one
                unwritable.append((folder, exc.strerror or str(exc)))
        if unwritable:  # the crawl says which folders are full (ExtractPool.run)
            outcome = replace(outcome, unwritable=tuple(unwritable))
            data = pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL)
    _LastPickled.answer, _LastPickled.data = outcome, data
    return outcome


class _LastPickled:
    """The answer :func:`_answer` last pickled to tell its size, and its bytes: :func:`_handle` sends
    those, not a second pickle of the same answer."""

    answer: _Answer | None = None
    data: bytes = b""


def _pickled(answer: Any) -> bytes:
    """``answer`` pickled: the bytes :func:`_answer` made of it, else made now."""
    last, _LastPickled.answer = _LastPickled.answer, None
    data, _LastPickled.data = _LastPickled.data, b""
    return data if last is answer else pickle.dumps(answer, pickle.HIGHEST_PROTOCOL)


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


#: What answer folders are called (in the memory folder and the temporary folder).
ANSWER_FOLDER_PREFIX = "votersdaily-extract-"
#: The file in an answer folder its pool holds locked while it lives: the kernel lets the lock go when
#: the crawl process ends however it ends (a SIGKILL, the OOM killer), so a folder whose lock can be
#: taken belongs to no living crawl, whatever process namespace the crawl ran in.
OWNER_LOCK = ".owner"


def _answer_folders() -> tuple[tuple[str, ...], list[int], list[tuple[str, str]]]:
    """The folders of one pool's answers, made now: the memory one when there is one, then one on
    the temporary folder's disk (for answers the memory folder has no room for); with the descriptors
    of their held owner locks, and (parent, why) for each that could not be made (full, read-only:
    the answers it would have taken go by the socket). Folders a killed crawl left (its answers in
    memory, RAM until the next boot) are removed first."""
    parents = [tempfile.gettempdir()]
    if Path(MEMORY_FOLDER).is_dir():
        parents.insert(0, MEMORY_FOLDER)
    folders: list[str] = []
    locks: list[int] = []
    unmade: list[tuple[str, str]] = []
    for parent in parents:
        remove_abandoned_answer_folders(parent)
        folder = ""
        try:
            folder = tempfile.mkdtemp(prefix=ANSWER_FOLDER_PREFIX, dir=parent)
            locks.append(_hold_owner_lock(folder))
        except OSError as exc:
            if folder:  # made, but no room for its owner file: ours to remove
                shutil.rmtree(folder, ignore_errors=True)
            unmade.append((parent, exc.strerror or str(exc)))
            continue
        folders.append(folder)
    return tuple(folders), locks, unmade


def _hold_owner_lock(folder: str) -> int:
    """Lock the folder's owner file for this process's life; the file appears already locked
    (written under another name, locked, renamed), so no sweep ever takes a starting pool's."""
    claim = Path(folder) / (OWNER_LOCK + ".new")
    fd = os.open(claim, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        claim.rename(Path(folder) / OWNER_LOCK)
    except OSError:
        os.close(fd)
        raise
    return fd


def remove_abandoned_answer_folders(parent: str) -> list[str]:
    """Remove the answer folders in ``parent`` that belong to no living crawl: this user's, made by a
    pool (they hold its owner file) whose lock is free. Anything else, a folder without the owner file
    included (another version's, another tool's), is left. Returns the folders removed."""
    removed = []
    with contextlib.suppress(OSError):
        for folder in Path(parent).glob(ANSWER_FOLDER_PREFIX + "*"):
            with contextlib.suppress(OSError):
                if folder.is_symlink() or folder.lstat().st_uid != os.getuid():
                    continue
                fd = os.open(folder / OWNER_LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # OSError: its crawl lives
                    shutil.rmtree(folder, ignore_errors=True)
                    removed.append(str(folder))
                finally:
                    os.close(fd)
    if removed:
        logger.info("removed %d answer folder(s) that killed crawls left in %s", len(removed), parent)
    return removed


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


def _how_it_ended(process: BaseProcess) -> str:
    """How an extraction process whose socket ended went, for the person: the signal that killed it
    (SIGKILL: the kernel's OOM killer, or a ``kill -9``), or its exit status (an error outside any call,
    its traceback on standard error). It closed the socket as it exited: it is waited for a moment."""
    process.join(_EXIT_WAIT)
    code = process.exitcode
    if code is None:
        return "its socket closed while it still runs"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else "signal %d" % -code
        return "killed by %s%s" % (name, ", e.g. by the OOM killer" if -code == signal.SIGKILL else "")
    return "it exited with status %d: an error outside the call, its traceback on standard error" % code


#: Seconds a process whose socket ended is given to exit (it closes the socket as it exits).
_EXIT_WAIT = 1.0


#: Calls handed to one extraction process at once: it runs them one after the other, taking the next
#: as soon as it has written an answer, not a turn of the crawl's event loop later. A busy crawl's
#: turns take 10-15 ms, two or three calls' time: with 2 the processes sat idle between turns (busy
#: 20-40 % of the PDF benchmark's window while calls waited 0.3-0.5 s). More holds calls behind a
#: long one in the same process while another may be free.
CALLS_PER_PROCESS = 4
#: A message's length, before it: 8 bytes, network order (a PDF body may pass 4 GiB-1 one day).
_LENGTH = struct.Struct("!Q")
#: Bytes read from a process's socket at a time.
_READ_BYTES = 1 << 16


def _serve(channel: socket.socket, folders: tuple[str, ...], crawl_pid: int, niceness: int) -> None:
    """An extraction process's loop: a call from ``channel`` (``(packager, func, args)``, pickled),
    its answer back (:func:`_answer`), until the crawl closes its end."""
    _start_worker(crawl_pid, niceness)
    channel.setblocking(True)
    with channel:
        while (message := _receive(channel)) is not None:
            data = _handle(message, folders)
            try:
                channel.sendall(_LENGTH.pack(len(data)) + data)
            except OSError:  # the crawl closed (or died): nobody waits for the answer
                return


def _handle(message: bytes | bytearray, folders: tuple[str, ...]) -> bytes:
    """One call's message (``(packager, func, args)``, pickled) in, its answer's pickle out."""
    try:
        packager, func, args = pickle.loads(message)  # noqa: S301 - sent by the crawl that made us
    except Exception as exc:  # a value whose class this process cannot load: said to the caller
        return pickle.dumps(
            _Answer(error=RuntimeError("the call could not be read: %r" % exc)), pickle.HIGHEST_PROTOCOL
        )
    return _pickled(packager(folders, func, *args))


def _receive(channel: socket.socket) -> bytearray | None:
    """One whole message from a blocking ``channel``; None at its end."""
    head = _read_exact(channel, _LENGTH.size)
    if head is None:
        return None
    return _read_exact(channel, _LENGTH.unpack(head)[0])


def _read_exact(channel: socket.socket, size: int) -> bytearray | None:
    buffer = bytearray(size)
    with memoryview(buffer) as view:
        got = 0
        while got < size:
            n = channel.recv_into(view[got:])
            if not n:
                return None
            got += n
    return buffer


@dataclass(eq=False)
class _Call:
    """A call waiting for its answer: its message, the caller's future, the deaths it was under."""

    name: str
    message: bytes
    future: asyncio.Future[Any]
    deaths: int = 0


class _Process:
    """One extraction process and the crawl's end of its socket: the calls sent to it and not answered
    yet, oldest first (the first is the one it runs), and what it has sent of the next answer."""

    def __init__(self, process: BaseProcess, channel: socket.socket) -> None:
        self.process = process
        self.channel = channel
        self.fd = channel.fileno()
        self.calls: deque[_Call] = deque()
        self.inbox = bytearray()
        self.outbox = bytearray()
        #: The event loop watching its socket, or None.
        self.loop: asyncio.AbstractEventLoop | None = None

    def watch(self, loop: asyncio.AbstractEventLoop, readable: Callable[[_Process], None]) -> None:
        """Have ``loop`` call ``readable(self)`` whenever its socket has bytes (or has ended)."""
        self.unwatch()
        loop.add_reader(self.fd, readable, self)
        self.loop = loop

    def unwatch(self) -> None:
        loop, self.loop = self.loop, None
        if loop is not None and not loop.is_closed():
            loop.remove_reader(self.fd)
            loop.remove_writer(self.fd)


def _forkserver_context() -> multiprocessing.context.ForkServerContext:
    """multiprocessing's fork server context, told to preload :data:`PRELOAD` when it starts."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


class ExtractPool:
    """``await pool.run(func, *args)``: ``func`` (a module-level function, picklable arguments)
    runs in a worker process, or in a thread when ``processes`` is 0.

    Each process has a socket of its own that the running event loop (the crawl's reactor) reads
    itself: an answer wakes the loop once and resolves its call there, with no thread between
    (concurrent.futures' pool put a feeder and a manager thread, each waiting for Python's lock
    behind the reactor, on every call's way). Calls are handed to the least busy process,
    :data:`CALLS_PER_PROCESS` at once; the rest wait in the pool, in order. Not thread-safe: every
    call comes from the one event loop (a later ``asyncio.run`` of a test takes the sockets over)."""

    def __init__(
        self, processes: int, crawler: Crawler | None = None, niceness: int = DEFAULTS["INGEST_EXTRACT_NICE"]
    ) -> None:
        self.processes = processes
        self.niceness = niceness
        self.crawler = crawler  # its stats count the deaths (they exist once the crawl starts)
        self._live: list[_Process] = []
        #: Calls no process has room for yet, in order.
        self._waiting: deque[_Call] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Where answers too large for the socket wait for the crawl (made at start).
        self._answers: tuple[str, ...] | None = None
        #: The held owner locks of those folders (released, and the folders removed, at close).
        self._answer_locks: list[int] = []
        #: Answer folders (or the folders they were to be made in) said to be unable to take answers.
        self._said_unwritable: set[str] = set()
        #: Why no process can start (:class:`NoTemporaryFolder`), once :meth:`prepare` found it.
        self._no_folder: NoTemporaryFolder | None = None

    def prepare(self) -> None:
        """Start the fork server now, as a crawl creates its spider, for a crawler that crawls (not
        ``enqueue``'s, which only runs ``start()``): its imports of :data:`PRELOAD` (some 0.25 s of
        CPU) then overlap the crawl's own start-up on the other core (engine, middlewares, store:
        0.3-1 s here before ``spider_opened``), where at ``spider_opened`` they competed with the
        first fetches and the first pages waited for them (the first call 0.35-0.45 s after it).
        :meth:`start` forks the processes from it at ``spider_opened``."""
        from votersdaily.scrapy_internals import is_crawling

        if self.processes <= 0 or self.crawler is None or not is_crawling(self.crawler):
            return
        from multiprocessing import forkserver

        try:
            _fork_server_folder()
        except NoTemporaryFolder as exc:  # raised by start(), where the crawl can stop before it fetches
            self._no_folder = exc
            return
        _forkserver_context()
        with without_the_main_script():  # the fork server never imports the main script
            forkserver.ensure_running()

    def start(self) -> None:
        """Start the processes now, so the first pages do not wait for them. Raises
        :class:`NoTemporaryFolder` when none can start."""
        if self.processes <= 0 or self._live:
            return
        if self._no_folder is not None:
            raise self._no_folder
        _fork_server_folder()
        if self._answers is None:
            self._answers, self._answer_locks, unmade = _answer_folders()
            self._say_unwritable(unmade)
        with without_the_main_script():  # the first process starts the fork server
            for _ in range(self.processes):
                self._live.append(self._spawn())

    def _say_unwritable(self, folders: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> None:
        """Answer folders that cannot take answers (full, read-only: (folder, why)), each said once:
        the answers they would have taken go by the socket, and the documents are not the worse for it."""
        new = [(folder, why) for folder, why in folders if folder not in self._said_unwritable]
        if not new:
            return
        self._said_unwritable.update(folder for folder, _ in new)
        self._count("ingest/extract/answer_folder_unwritable")
        logger.warning(
            "the ingest's answer folder%s %s cannot take extraction answers: answers over %d KiB go to "
            "the crawl by the socket instead, which holds each extraction process until the crawl has "
            "read its answer",
            "s" if len(new) > 1 else "",
            " and ".join("%s (%s)" % pair for pair in new),
            INLINE_ANSWER_BYTES >> 10,
        )

    def _spawn(self) -> _Process:
        """A new extraction process, forked by the fork server (which imported :data:`PRELOAD`).
        Not "fork": the crawl process has threads (store writers, DNS) a fork would copy mid-state."""
        assert self._answers is not None, "start() makes them"  # noqa: S101 - invariant
        context = _forkserver_context()
        ours, theirs = socket.socketpair()
        with theirs:
            process = context.Process(
                target=_serve,
                args=(theirs, self._answers, os.getpid(), self.niceness),
                name="votersdaily-extract",
                daemon=True,  # ended by the crawl process's exit, should close() not have run
            )
            try:
                process.start()
            except BaseException:
                ours.close()
                raise
        ours.setblocking(False)
        worker = _Process(process, ours)
        if self._loop is not None and not self._loop.is_closed():
            worker.watch(self._loop, self._readable)
        return worker

    async def run(self, func: Callable[..., Any], *args: Any) -> Any:
        if self.processes <= 0:
            from votersdaily.blocking import run_in_thread  # here: the fork server never needs Scrapy

            return await run_in_thread(func, *args)
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._attach(loop)
        if not self._live:
            self.start()
        data = pickle.dumps((_answer, func, args), pickle.HIGHEST_PROTOCOL)
        call = _Call(func.__name__, _LENGTH.pack(len(data)) + data, loop.create_future())
        self._waiting.append(call)
        self._dispatch()
        answer = await call.future
        if answer.unwritable:
            self._say_unwritable(answer.unwritable)
        return _unpack(answer)

    def _attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Watch every process's socket from ``loop`` (the crawl's; a test's next ``asyncio.run``)."""
        self._loop = loop
        for worker in self._live:
            worker.watch(loop, self._readable)

    def _dispatch(self) -> None:
        """Hand the waiting calls, oldest first, to the processes with room, least busy first."""
        while self._waiting:
            room = [w for w in self._live if len(w.calls) < CALLS_PER_PROCESS]
            if not room:
                return
            call = self._waiting.popleft()
            if call.future.done():  # its caller has gone (cancelled): no process spends time on it
                continue
            worker = min(room, key=lambda w: len(w.calls))
            worker.calls.append(call)
            self._send(worker, call.message)

    def _send(self, worker: _Process, data: bytes) -> None:
        """Write what the socket takes now; the rest when it takes more (the loop says when)."""
        if worker.outbox:
            worker.outbox += data
            return
        try:
            sent = worker.channel.send(data)
        except BlockingIOError:
            sent = 0
        except OSError:  # the process ended: its socket's end says so to _readable
            return
        if sent < len(data):
            worker.outbox += memoryview(data)[sent:]
            if worker.loop is not None:
                worker.loop.add_writer(worker.fd, self._writable, worker)

    def _writable(self, worker: _Process) -> None:
        try:
            sent = worker.channel.send(worker.outbox)
        except BlockingIOError:
            return
        except OSError:
            sent = len(worker.outbox)  # ended: _readable replaces it
        del worker.outbox[:sent]
        if not worker.outbox and worker.loop is not None:
            worker.loop.remove_writer(worker.fd)

    def _readable(self, worker: _Process) -> None:
        """Answers from ``worker``: each resolves its call; an ended socket is a dead process."""
        try:
            chunk = worker.channel.recv(_READ_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._died(worker)
            return
        inbox = worker.inbox
        inbox += chunk
        while len(inbox) >= _LENGTH.size:
            end = _LENGTH.size + _LENGTH.unpack_from(inbox)[0]
            if len(inbox) < end:
                break
            message = inbox[_LENGTH.size : end]
            del inbox[:end]
            call = worker.calls.popleft()
            if call.future.done():  # cancelled meanwhile
                continue
            try:
                call.future.set_result(pickle.loads(message))  # noqa: S301 - from our own process
            except Exception as exc:  # e.g. an exception whose class cannot be rebuilt from its args
                call.future.set_exception(
                    RuntimeError("the answer of %s could not be read: %r" % (call.name, exc))
                )
        self._dispatch()

    def _died(self, worker: _Process) -> None:
        """A process ended under its calls (the OOM killer, a crash; an answer cut short is no answer):
        a new one replaces it; the call it was running runs once more, or fails with
        :class:`ExtractionCrashed` if it was under a death before; the calls queued behind it
        had not started and go first to the next free process."""
        self._count("ingest/extract/process_died")
        how = _how_it_ended(worker.process)
        logger.warning("an extraction process of the ingest died (%s): starting a new one", how)
        self._retire(worker, kill=True)
        self._live.remove(worker)
        calls = worker.calls
        if calls:
            running = calls[0]
            running.deaths += 1
            if running.deaths >= 2:
                calls.popleft()
                self._count("ingest/extract/crashed")
                if not running.future.done():
                    running.future.set_exception(
                        ExtractionCrashed(
                            "the extraction process died twice running %s (%s)" % (running.name, how)
                        )
                    )
            else:
                self._count("ingest/extract/retried")
                logger.warning("an extraction process died under %s: running it once more", running.name)
        self._waiting.extendleft(reversed(calls))
        try:
            self._live.append(self._spawn())
        except Exception as exc:  # no process can be started (no memory, no fork server)
            logger.error("no new extraction process could be started: %s", exc)
            if not self._live:  # nobody will run the waiting calls: their callers are told
                waiting, self._waiting = self._waiting, deque()
                for call in waiting:
                    if not call.future.done():
                        call.future.set_exception(
                            ExtractionCrashed("no extraction process could be started: %s" % exc)
                        )
        self._dispatch()

    @staticmethod
    def _retire(worker: _Process, kill: bool) -> None:
        """Stop watching ``worker`` and close our end (an idle process then ends on its own);
        ``kill``: end it now (it may be in a call nobody waits for)."""
        worker.unwatch()
        worker.channel.close()
        if kill and worker.process.exitcode is None:
            with contextlib.suppress(OSError, ValueError):  # ended meanwhile
                worker.process.kill()

    def pids(self) -> list[int]:
        """The extraction processes' ids (tests send them real signals)."""
        return [worker.process.pid for worker in self._live if worker.process.pid is not None]

    def _count(self, key: str) -> None:
        if self.crawler is not None:
            self.crawler.stats.inc_value(key)

    def close(self, *args: Any, **kwargs: Any) -> None:
        """End the processes (one under a call at once: its caller is cancelled, as the calls still
        waiting) and remove the answers' folders, with answers nobody took."""
        live, self._live = self._live, []
        unanswered = [*self._waiting, *(call for worker in live for call in worker.calls)]
        self._waiting.clear()
        for worker in live:
            self._retire(worker, kill=bool(worker.calls))
        for call in unanswered:
            if not call.future.get_loop().is_closed():
                call.future.cancel()
        for worker in live:
            worker.process.join()
        if self._answers is not None:
            for folder in self._answers:
                shutil.rmtree(folder, ignore_errors=True)
            self._answers = None
        for fd in self._answer_locks:
            os.close(fd)
        self._answer_locks = []
