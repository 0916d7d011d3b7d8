"""The extraction pool survives the death of a worker process (as an OOM kill: SIGKILL), with real
worker processes: the pool is replaced, the interrupted calls run once more, and only a call that
kills its process twice fails."""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest
from scrapy.statscollectors import MemoryStatsCollector

from votersdaily.ingest.workers import CALLS_PER_PROCESS, ExtractionCrashed, ExtractPool


def killed_by_oom(marker: str) -> int:
    """Dies by SIGKILL the first time (``marker`` does not exist yet), then answers its pid."""
    path = Path(marker)
    if not path.exists():
        path.write_text("died once")
        os.kill(os.getpid(), signal.SIGKILL)
    return os.getpid()


#: The number of write(2) on this machine (x86_64, aarch64), as /proc/<pid>/task/<tid>/syscall shows it.
WRITE_SYSCALL = {"x86_64": 1, "aarch64": 64}.get(platform.machine())


class _DiesWhileSent(bytes):
    """Bytes whose process is killed (as by the OOM killer) once its main thread is inside the
    write(2) that sends them: half-way through the pipe to the crawl (or, when answers go through a
    file, half-way into the file)."""

    def __reduce__(self):  # type: ignore[override]
        import threading
        import time

        syscall = Path("/proc/self/task/%d/syscall" % threading.main_thread().native_id)

        def kill_mid_write() -> None:
            while syscall.read_text().split()[0] != str(WRITE_SYSCALL):
                time.sleep(0.0005)
            os.kill(os.getpid(), signal.SIGKILL)

        threading.Thread(target=kill_mid_write, daemon=True).start()
        return (bytes, (bytes(self),))


def killed_while_answering(size: int) -> bytes:
    """Answers ``size`` bytes and dies half-way through sending them."""
    return _DiesWhileSent(b"x" * size)


def large_answer(size: int) -> bytes:
    return b"x" * size


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


@pytest.mark.skipif(WRITE_SYSCALL is None, reason="needs Linux on x86_64 or aarch64 (/proc/<pid>/syscall)")
def test_a_process_killed_while_it_answers_never_hangs_the_pool(pool):
    """A process killed half-way through writing a large answer to the executor's pipe left the
    executor reading the rest of the message for ever: the ingest hung (two hours, seen here). Large
    answers now go through a file and only its name by the pipe, so a death is a death: the call is
    retried, then fails alone, and the pool goes on."""

    async def scenario():
        with contextlib.suppress(ExtractionCrashed):  # or the answer, had it reached its file in time
            await asyncio.wait_for(pool.run(killed_while_answering, 32 << 20), 120)
        return await asyncio.wait_for(pool.run(large_answer, 1 << 20), 60)

    assert asyncio.run(scenario()) == b"x" * (1 << 20)
    folders = [Path(folder) for folder in pool._answers]
    pool.close()
    assert not [
        f for f in folders if f.exists()
    ]  # the half-written answers of the killed processes went with them


def test_answers_of_every_size_and_errors_come_back_whole(pool):
    async def scenario():
        sizes = [0, 100, 3000, 5000, 1 << 20]
        values = await asyncio.gather(*(pool.run(large_answer, n) for n in sizes))
        with pytest.raises(ValueError, match="no such"):
            await pool.run(int, "no such number" * 1000)
        return values, sizes

    values, sizes = asyncio.run(scenario())
    assert [len(v) for v in values] == sizes


def niceness() -> int:
    return os.nice(0)


def test_the_extraction_processes_run_below_the_crawl_so_its_reactor_goes_first():
    """INGEST_EXTRACT_NICE: the niceness is added to the crawl's (capped at 19, the kernel's least);
    0 leaves the processes at the crawl's own priority."""
    ours = os.nice(0)
    for added in (3, 0):
        pool = ExtractPool(1, SimpleNamespace(stats=_Stats()), niceness=added)
        pool.start()
        try:
            assert asyncio.run(pool.run(niceness)) == min(ours + added, 19)
        finally:
            pool.close()


def frozen_and_collected() -> tuple[int, int]:
    """(objects in the collector's permanent generation, objects a collection found unreachable)."""
    import gc

    class Cycle:
        pass

    first = Cycle()
    first.other = Cycle()  # type: ignore[attr-defined]
    first.other.other = first  # type: ignore[attr-defined]
    del first
    return gc.get_freeze_count(), gc.collect()


def test_the_extraction_processes_leave_their_preloaded_objects_out_of_collections():
    """Each extraction process freezes what it was forked with (the preloaded trafilatura, htmldate,
    lxml, pypdf) so collections walk only what its documents make; a cycle a document makes is
    still collected."""
    from votersdaily.ingest import workers

    pool = ExtractPool(1, SimpleNamespace(stats=_Stats()))
    pool.start()
    try:
        frozen, collected = asyncio.run(pool.run(frozen_and_collected))
    finally:
        pool.close()
    assert frozen > 10_000, "the preloaded modules' objects (%s) are frozen" % workers.PRELOAD
    assert collected >= 2


def test_the_fork_servers_preload_imports_neither_scrapy_nor_twisted():
    """The extraction processes never need Scrapy or Twisted: importing them cost the fork server
    0.4 s of CPU at each crawl's start, before the first page could be read."""
    import subprocess
    import sys

    from votersdaily.ingest import workers

    code = (
        "import sys\n"
        "for name in %r:\n"
        "    __import__(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('scrapy', 'twisted')))\n"
        % [m for m in workers.PRELOAD if m != "__main__"]
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.parametrize("guarded", [True, False], ids=["guarded script", "script without the guard"])
def test_a_crawl_started_as_a_script_is_imported_by_no_process_of_ours(tmp_path, guarded):
    """multiprocessing imports the main script again in every process it starts (``__mp_main__``).
    Neither the fork server nor the extraction processes need it (they run module-level functions),
    and a script without the ``if __name__ == "__main__":`` guard (Scrapy's "run from a script"
    example has none) would run again in each of them: it is imported by the crawl alone, guarded or
    not. The store's process too: ``tests/store/test_store_process.py``."""
    import subprocess
    import sys

    from tests.support.services import REPO

    log = tmp_path / "imports.log"
    work = (
        "import asyncio\n"
        "from votersdaily.ingest.workers import ExtractPool\n"
        "pool = ExtractPool(2)\n"
        "pool.start()\n"
        "async def calls():\n"
        "    return await asyncio.gather(*(pool.run(os.getpid) for _ in range(8)))\n"
        "pids = asyncio.run(asyncio.wait_for(calls(), 120))\n"
        "pool.close()\n"
        "print(os.getpid(), *sorted(set(pids)))\n"
    )
    if guarded:
        work = "if __name__ == '__main__':\n" + "".join("    " + line + "\n" for line in work.splitlines())
    script = tmp_path / "crawl_script.py"
    script.write_text(
        "import os\nwith open(%r, 'a') as out:\n    out.write('%%d\\n' %% os.getpid())\n" % str(log) + work
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True, timeout=300, env=env
    )
    crawl, *extraction = (int(pid) for pid in out.stdout.split())
    assert extraction and crawl not in extraction
    assert [int(line) for line in log.read_text().split()] == [crawl]


def test_large_answers_wait_in_memory_and_on_disk_when_memory_is_full(tmp_path):
    """Answers too large for the pipe go through a folder in memory (``/dev/shm``: no journal, no disk
    locks); one the memory folder has no room for (a real small tmpfs standing for a full
    ``/dev/shm``) goes through the disk folder whole, and nothing half-written stays behind."""
    from tests.support.tmpfs import small_tmpfs
    from votersdaily.ingest import workers

    folders, locks, unmade = workers._answer_folders()
    try:
        assert unmade == []
        assert len(folders) == len(locks) == (2 if Path(workers.MEMORY_FOLDER).is_dir() else 1)
        assert all(Path(f).is_dir() for f in folders)
        if len(folders) == 2:
            assert Path(folders[0]).parent == Path(workers.MEMORY_FOLDER)
    finally:
        for folder, fd in zip(folders, locks, strict=True):
            os.close(fd)
            (Path(folder) / workers.OWNER_LOCK).unlink()
            Path(folder).rmdir()
    pool = ExtractPool(1, SimpleNamespace(stats=_Stats()))
    with small_tmpfs(tmp_path / "memory", size="256k") as memory:
        disk = tmp_path / "disk"
        disk.mkdir()
        pool._answers = (str(memory), str(disk))  # before the processes start (before: after, so
        pool.start()  # they wrote to the pool's own folders and the small tmpfs was never used)
        try:

            async def both() -> list[bytes]:
                return await asyncio.gather(
                    pool.run(large_answer, 100 << 10), pool.run(large_answer, 1 << 20)
                )

            small, large = asyncio.run(asyncio.wait_for(both(), 120))
            assert (small, large) == (b"x" * (100 << 10), b"x" * (1 << 20))
            assert not list(memory.iterdir()) and not list(disk.iterdir())
            assert pool.crawler.stats.get_stats() == {}  # the disk took what memory could not
        finally:
            pool.close()


def test_an_answer_no_folder_takes_comes_by_the_socket_and_the_folders_are_said_once(tmp_path, caplog):
    """Both answer folders full (real small tmpfs mounts, filled): before, the process died writing
    the answer (ENOSPC), died again when the call was run once more, and the document failed with
    ``ExtractionCrashed`` ("killed, e.g. by the OOM killer, or crashed"). Now the answer comes whole
    by the socket, the folders are said once, and no process dies."""
    from tests.support.tmpfs import fill, small_tmpfs

    pool = ExtractPool(1, SimpleNamespace(stats=_Stats()))
    with (
        small_tmpfs(tmp_path / "memory", size="64k") as memory,
        small_tmpfs(tmp_path / "disk", size="64k") as disk,
    ):
        fill(memory)
        fill(disk, leave=16 << 10)  # room for small files, not for the answer
        pool._answers = (str(memory), str(disk))  # before the processes start: they are given them
        pool.start()
        try:

            async def three() -> list[bytes]:
                return await asyncio.gather(*(pool.run(large_answer, 1 << 20) for _ in range(3)))

            answers = asyncio.run(asyncio.wait_for(three(), 120))
        finally:
            pool.close()
    assert answers == [b"x" * (1 << 20)] * 3
    print("STATS", pool.crawler.stats.get_stats(), [r.getMessage() for r in caplog.records])
    said = [r.getMessage() for r in caplog.records if "cannot take extraction answers" in r.getMessage()]
    assert said == [
        "the ingest's answer folders %s (No space left on device) and %s (No space left on device) cannot "
        "take extraction answers: answers over 64 KiB go to the crawl by the socket instead, which holds "
        "each extraction process until the crawl has read its answer" % (memory, disk)
    ]
    stats = pool.crawler.stats.get_stats()
    assert stats == {"ingest/extract/answer_folder_unwritable": 1}, stats


def exits_with_status_3() -> None:
    os._exit(3)


def test_a_process_that_dies_is_said_to_be_killed_or_to_have_exited_as_it_did(pool):
    """Before, every death was "killed, e.g. by the OOM killer, or crashed": the OOM killer was blamed
    for a process that exited on an error of its own (a full answer folder was one)."""

    async def scenario() -> list[str]:
        messages = []
        for func in (always_killed, exits_with_status_3):
            with pytest.raises(ExtractionCrashed) as raised:
                await pool.run(func)
            messages.append(str(raised.value))
        return messages

    assert asyncio.run(asyncio.wait_for(scenario(), 120)) == [
        "the extraction process died twice running always_killed (killed by SIGKILL, e.g. by the OOM killer)",
        "the extraction process died twice running exits_with_status_3 (it exited with status 3: an error "
        "outside the call, its traceback on standard error)",
    ]


def started_then_slow(marker: str, seconds: float) -> int:
    """Says it started (a line in ``marker``), then works ``seconds`` (the first time only: a call
    run once more answers at once); answers its pid."""
    import time

    path = Path(marker)
    first = not path.exists()
    with path.open("a") as out:
        out.write("%d\n" % os.getpid())
    if first:
        time.sleep(seconds)
    return os.getpid()


async def _started(marker: Path, lines: int) -> None:
    while not marker.exists() or len(marker.read_text().split()) < lines:
        await asyncio.sleep(0.01)


def test_a_process_killed_from_outside_mid_call_is_replaced_and_only_its_call_retried(tmp_path):
    """A real SIGKILL (as the OOM killer's) of a process running a call with another queued behind
    it: a new process runs the interrupted call once more and the queued one, which had not
    started, once; one death, one retry, nothing failed."""
    pool = ExtractPool(1, SimpleNamespace(stats=_Stats()))
    pool.start()
    marker = tmp_path / "started"
    try:

        async def scenario() -> tuple[int, list[int]]:
            (victim,) = pool.pids()
            running = asyncio.ensure_future(pool.run(started_then_slow, str(marker), 30))
            queued = asyncio.ensure_future(pool.run(slow_pid, 0))
            await asyncio.wait_for(_started(marker, 1), 60)
            os.kill(victim, signal.SIGKILL)
            answers = await asyncio.wait_for(asyncio.gather(running, queued), 60)
            return victim, [*answers, *pool.pids()]

        victim, (retried_pid, queued_pid, replacement) = asyncio.run(scenario())
    finally:
        pool.close()
    started = [int(pid) for pid in marker.read_text().split()]
    assert started == [victim, replacement] and retried_pid == queued_pid == replacement != victim
    stats = pool.crawler.stats.get_stats()
    assert stats["ingest/extract/process_died"] == 1 and stats["ingest/extract/retried"] == 1, stats
    assert "ingest/extract/crashed" not in stats


def test_a_process_killed_while_idle_costs_no_call(tmp_path):
    """The OOM killer may pick an idle process: it is replaced and no call is retried or failed."""
    pool = ExtractPool(2, SimpleNamespace(stats=_Stats()))
    pool.start()
    try:

        async def scenario() -> list[int]:
            first = await pool.run(slow_pid, 0)
            os.kill(first, signal.SIGKILL)
            while first in pool.pids():  # the loop reads the ended socket
                await asyncio.sleep(0.01)
            return await asyncio.gather(*(pool.run(slow_pid, 0) for _ in range(6)))

        pids = asyncio.run(asyncio.wait_for(scenario(), 120))
    finally:
        pool.close()
    assert len(pids) == 6 and all(pids)
    stats = pool.crawler.stats.get_stats()
    assert stats["ingest/extract/process_died"] == 1, stats
    assert "ingest/extract/retried" not in stats and "ingest/extract/crashed" not in stats


def length_and_digest(blob: bytes) -> tuple[int, str]:
    import hashlib

    return len(blob), hashlib.sha256(blob).hexdigest()


def test_large_arguments_and_many_calls_at_once_arrive_whole_and_answered_in_order():
    """A call's arguments larger than the socket takes at once (a large PDF) reach the process whole
    while the loop sends them piece by piece; many calls in flight each get their own answer."""
    import hashlib

    blobs = [os.urandom(n) for n in (0, 1, 5000, 3 << 20, 9 << 20)] + [b"%d" % i for i in range(40)]
    pool = ExtractPool(2, SimpleNamespace(stats=_Stats()))
    pool.start()
    try:

        async def scenario() -> list[tuple[int, str]]:
            return await asyncio.gather(*(pool.run(length_and_digest, blob) for blob in blobs))

        answers = asyncio.run(asyncio.wait_for(scenario(), 120))
    finally:
        pool.close()
    assert answers == [(len(b), hashlib.sha256(b).hexdigest()) for b in blobs]


def test_closing_with_a_call_under_way_ends_every_process_and_leaves_nothing(tmp_path):
    """close() while a process works on a call: the call is cancelled, every process ends (none
    waits on its socket for ever), and the answers' folders are gone."""
    pool = ExtractPool(2, SimpleNamespace(stats=_Stats()))
    pool.start()
    marker = tmp_path / "started"

    async def scenario() -> None:
        call = asyncio.ensure_future(pool.run(started_then_slow, str(marker), 60))
        await asyncio.wait_for(_started(marker, 1), 60)
        pool.close()
        with pytest.raises(asyncio.CancelledError):  # its caller is told, not left waiting
            await asyncio.wait_for(call, 10)

    pids, folders = pool.pids(), [Path(folder) for folder in pool._answers or ()]
    asyncio.run(scenario())
    assert len(pids) == 2 and not [pid for pid in pids if Path("/proc/%d" % pid).exists()]  # ended and reaped
    assert folders and not [folder for folder in folders if folder.exists()]


def answers_half_then_dies(marker: str) -> bytes:
    """The first time (no ``marker`` yet): writes the start of an answer message to its socket, the
    length saying more is coming, and dies (SIGKILL) before the rest; then answers."""
    import socket
    import stat

    from votersdaily.ingest import workers

    path = Path(marker)
    if path.exists():
        return b"answered whole"
    written = 0
    for entry in Path("/proc/self/fd").iterdir():
        fd = int(entry.name)
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                with socket.socket(fileno=os.dup(fd)) as channel:
                    if channel.family == socket.AF_UNIX and channel.type == socket.SOCK_STREAM:
                        os.write(fd, workers._LENGTH.pack(40_000) + b"x" * 1000)
                        written += 1
    path.write_text("sockets written to: %d" % written)
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


def test_an_answer_cut_short_on_the_socket_is_a_death_never_a_wait(pool, tmp_path):
    """A process that dies having sent part of an answer (its length, some of its bytes): the pool
    reads the socket's end as the death it is (no reader waits for the rest), and the call runs once
    more, whole."""

    async def scenario() -> bytes:
        return await asyncio.wait_for(pool.run(answers_half_then_dies, str(tmp_path / "marker")), 60)

    assert asyncio.run(scenario()) == b"answered whole"
    assert (tmp_path / "marker").read_text() == "sockets written to: 1"  # its channel to the crawl
    stats = pool.crawler.stats.get_stats()
    assert stats["ingest/extract/process_died"] == 1 and stats["ingest/extract/retried"] == 1, stats


class _NeedsTwoArguments(Exception):
    """An exception pickle cannot rebuild (its ``__init__`` wants two arguments, ``args`` holds one)."""

    def __init__(self, what: str, why: str) -> None:
        super().__init__("%s: %s" % (what, why))


def raises_what_cannot_be_rebuilt() -> None:
    raise _NeedsTwoArguments("this", "that")


def test_an_answer_the_crawl_cannot_read_fails_its_call_alone(pool):
    """An answer that travels whole but cannot be unpickled in the crawl (an exception class whose
    constructor wants other arguments): that call fails with the reason, and the same process
    answers the next calls."""

    async def scenario() -> list[int]:
        with pytest.raises(RuntimeError, match="answer of raises_what_cannot_be_rebuilt could not be read"):
            await asyncio.wait_for(pool.run(raises_what_cannot_be_rebuilt), 60)
        return await asyncio.wait_for(asyncio.gather(*(pool.run(slow_pid, 0) for _ in range(4))), 60)

    pids = asyncio.run(scenario())
    assert (
        set(pids) <= set(pool.pids()) and "ingest/extract/process_died" not in pool.crawler.stats.get_stats()
    )


def test_a_call_cancelled_while_it_waits_is_never_run(tmp_path):
    """A caller that goes (cancelled: the ingest's time ran out) before any process had room for its
    call: no process runs it."""
    pool = ExtractPool(1, SimpleNamespace(stats=_Stats()))
    pool.start()
    marker = tmp_path / "started"
    try:

        async def scenario() -> None:
            busy = [asyncio.ensure_future(pool.run(slow_pid, 0.3)) for _ in range(CALLS_PER_PROCESS)]  # full
            waiting = asyncio.ensure_future(pool.run(started_then_slow, str(marker), 0))
            await asyncio.sleep(0.05)
            waiting.cancel()
            await asyncio.wait_for(asyncio.gather(*busy), 60)
            await asyncio.wait_for(pool.run(slow_pid, 0), 60)  # after the cancelled one's turn

        asyncio.run(scenario())
    finally:
        pool.close()
    assert not marker.exists()


def test_an_answer_is_pickled_once_in_the_extraction_process(monkeypatch, tmp_path):
    """The extraction process pickles an answer once (to tell its size, then to send those bytes:
    a PDF's answer is 2.7 KB, 6 us a pickle) and the crawl reads it whole; an answer too large for
    the socket is read from its file; a call that cannot be read is answered with why."""
    import pickle

    from votersdaily.ingest import workers

    real = pickle.dumps
    pickled: list[object] = []
    monkeypatch.setattr(pickle, "dumps", lambda value, *args: pickled.append(value) or real(value, *args))
    message = real((workers._answer, large_answer, (100,)), pickle.HIGHEST_PROTOCOL)
    answer = pickle.loads(workers._handle(message, (str(tmp_path),)))
    assert answer == workers._Answer(value=b"x" * 100) and pickled == [answer]
    message = real((workers._answer, large_answer, (1 << 20,)), pickle.HIGHEST_PROTOCOL)
    answer = pickle.loads(workers._handle(message, (str(tmp_path),)))
    assert answer.path and workers._unpack(answer) == b"x" * (1 << 20) and not any(tmp_path.iterdir())
    answer = pickle.loads(workers._handle(b"not a pickle", (str(tmp_path),)))
    assert "the call could not be read" in str(answer.error)


#: A crawl process as the kernel sees it: a pool started in a script (its answer folders under the
#: folders the test gives), which says where they are and then waits to be ended.
POOL_HOLDER = """
import sys, tempfile, time
from types import SimpleNamespace
from votersdaily.ingest import workers
if __name__ == "__main__":
    workers.MEMORY_FOLDER, tempfile.tempdir = sys.argv[1], sys.argv[2]
    pool = workers.ExtractPool(1, None)
    pool.start()
    print(*pool._answers, flush=True)
    time.sleep(600)
"""


def test_answer_folders_a_killed_crawl_left_are_removed_and_no_other(tmp_path, monkeypatch):
    """A crawl killed outright (SIGKILL, as the OOM killer does) cannot remove its answer folders, and
    the memory one holds RAM until the next boot: the next pool started removes them. A living
    crawl's (its pool holds its folders' owner lock), one without an owner file (another version's or
    another tool's), another user's and this pool's own stay."""
    import multiprocessing.util
    import shutil
    import subprocess
    import sys
    import tempfile

    from tests.support.services import REPO
    from votersdaily.ingest import workers

    # Short paths: multiprocessing's fork server puts its socket under the temporary folder, and a
    # socket's path (108 bytes) would not fit under pytest-xdist's tmp_path.
    top = Path(tempfile.mkdtemp(prefix="vd-", dir="/tmp"))
    memory, disk = top / "shm", top / "tmp"
    memory.mkdir()
    disk.mkdir()
    script = tmp_path / "holder.py"
    script.write_text(POOL_HOLDER)
    env = dict(os.environ, PYTHONPATH=str(REPO))

    def crawl() -> tuple[subprocess.Popen, list[Path]]:
        proc = subprocess.Popen(
            [sys.executable, str(script), str(memory), str(disk)], stdout=subprocess.PIPE, text=True, env=env
        )
        assert proc.stdout is not None
        return proc, [Path(folder) for folder in proc.stdout.readline().split()]

    killed, killed_folders = crawl()
    living, living_folders = crawl()
    try:
        assert [f.parent for f in killed_folders] == [memory, disk]
        (killed_folders[0] / "answer-in-flight").write_bytes(b"x" * 4096)  # what was in RAM
        killed.kill()
        killed.wait(60)
        foreign = Path(tempfile.mkdtemp(prefix=workers.ANSWER_FOLDER_PREFIX, dir=memory))  # no owner file
        others = []
        if os.getuid() == 0:  # another user's folder, its lock free too
            others.append(Path(tempfile.mkdtemp(prefix=workers.ANSWER_FOLDER_PREFIX, dir=disk)))
            fd = workers._hold_owner_lock(str(others[0]))
            os.close(fd)
            os.chown(others[0], 65534, 65534)
        monkeypatch.setattr(workers, "MEMORY_FOLDER", str(memory))
        # multiprocessing makes its folder (the fork server's socket) once a process, under the
        # temporary folder of that moment, and removes it at exit: made here under `disk`, it would
        # go with `top` below, and every later test of this process that starts a pool would fail.
        multiprocessing.util.get_temp_dir()
        monkeypatch.setattr(tempfile, "tempdir", str(disk))
        pool = ExtractPool(1, SimpleNamespace(stats=_Stats()))
        pool.start()
        try:
            own = [Path(folder) for folder in pool._answers or ()]
            assert not [f for f in killed_folders if f.exists()]
            left = sorted([*memory.glob("votersdaily-*"), *disk.glob("votersdaily-*")])
            assert left == sorted([*living_folders, foreign, *others, *own])
        finally:
            pool.close()
        assert not [f for f in own if f.exists()]
        assert all(f.exists() for f in living_folders)
    finally:
        for proc in (killed, living):
            proc.kill()
            proc.wait(60)
        shutil.rmtree(top)


def modules_the_first_calls_import(hops: list[tuple[bytes, str, str, str]]) -> list[str]:
    """The modules an extraction process imports while it examines its first ``hops`` (body, URL,
    content type, ingest type), each the terminal document of its ingest."""
    import sys

    from votersdaily.ingest.config import IngestConfig
    from votersdaily.ingest.process import examine_hop

    before = set(sys.modules)
    for body, url, content_type, ingest_type in hops:
        examine_hop(body, url, content_type, ingest_type, [url], IngestConfig())
    return sorted(set(sys.modules) - before)


def test_the_fork_server_preloads_what_the_first_documents_would_import():
    """Each extraction process is forked with everything its first landing page, PDF (its page-0
    thumbnail handed to a warm renderer) and HTML article need: an import in the first calls was
    paid once per process (8 ms of the first PDF's CPU, twice a crawl), where the fork server
    pays it once. Recorded documents: the scholarly landing page and article, the dummy PDF."""
    from tests.ingest.conftest import scholarly

    hops = [
        (scholarly("genders_g58_fairlie.html").read_bytes(), "https://example.org/g58", "text/html", "pdf"),
        (scholarly("dummy.pdf").read_bytes(), "https://example.org/dummy.pdf", "application/pdf", "pdf"),
        (scholarly("elife_article.html").read_bytes(), "https://example.org/elife", "text/html", "html"),
    ]
    pool = ExtractPool(1, SimpleNamespace(stats=_Stats()))
    pool.start()
    try:
        imported = asyncio.run(asyncio.wait_for(pool.run(modules_the_first_calls_import, hops), 120))
    finally:
        pool.close()
    assert imported == []


@pytest.mark.parametrize("crawling", [True, False], ids=["a crawl", "enqueue (no crawl)"])
def test_a_crawl_starts_the_fork_server_as_it_creates_the_spider(crawling):
    """The fork server starts when a crawl creates the ingest spider, so its imports overlap the
    crawl's own start-up instead of the first fetches; a crawler that does not crawl (``enqueue``
    runs only ``start()``) starts none. A fresh interpreter: the fork server is one a process."""
    import subprocess
    import sys

    from tests.support.services import REPO

    code = (
        "from multiprocessing import forkserver\n"
        "from scrapy.utils.test import get_crawler\n"
        "from votersdaily.ingest.spider import IngestSpider\n"
        "crawler = get_crawler(IngestSpider)\n"
        "crawler.crawling = %r\n"
        "spider = IngestSpider.from_crawler(crawler, url='https://example.org/paper.pdf')\n"
        "print(forkserver._forkserver._forkserver_pid is not None, spider.extract.pids())\n" % crawling
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120, env=env
    )
    assert out.stdout.split() == [str(crawling), "[]"], out.stderr[-2000:]
