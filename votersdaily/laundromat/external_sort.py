"""Sorting and de-duplicating a document's lines in bounded memory, then writing the gzip and its
content key.

With the compiled path (:mod:`.native`): lines are sorted in runs of ``sorted_run_bytes`` (by each
parsing worker for its own lines), written to files, and merged in one pass by a k-way merge that
writes straight into the gzip stream (a thread; the merge runs without the GIL). Without it: in
memory, through GNU ``sort``, or by merging Python-sorted runs. All give the same bytes: lines in
unsigned byte order (``LC_ALL=C``), each once."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import heapq
import importlib
import os
import queue
import shutil
import subprocess
import threading
import zlib
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import IO, Any, Protocol

from . import formats as F
from . import native
from .clean_types import LINE_BASED, CleaningError, CleanOptions, CleanResult, Messages
from .rdf11 import CANONICAL, canonical_lines, has_named_graph
from .skolem import Skolemiser

isal_zlib: ModuleType | None
try:
    isal_zlib = importlib.import_module("isal.isal_zlib")
except ImportError:  # optional: zlib is used instead
    isal_zlib = None

VOID_DATA_DUMP = b"<http://rdfs.org/ns/void#dataDump>"
#: Data dumps a cleaned document names that are recorded (the first, in the output's order).
MAX_DATA_DUMPS = 1000
#: Bytes given to the gzip compressor per call (the same cut for any content: see ContentGzip).
GZIP_PIECE = 1 << 20
#: Sorted runs merged at once (by ``sort`` or the compiled merge): enough for one merge pass at any
#: size we sort (a second pass writes the whole document to disk once more before the first line).
SORT_BATCH = 256


def pipe_of(stream: IO[bytes] | None) -> IO[bytes]:
    """A pipe of a ``sort`` started with ``subprocess.PIPE`` (``Popen`` types its pipes Optional)."""
    if stream is None:
        raise CleaningError("sort was started without this pipe")
    return stream


class LineWriter(Protocol):
    """Where a parsing worker's final lines go: sorted runs, or the pipe of an external sort."""

    def add(self, block: bytes) -> None: ...

    def flush(self) -> list[str]:
        """Finish; the sorted run files written (for the merge)."""
        ...


class PipeWriter:
    """Final lines into a pipe (an external ``sort``'s input)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def add(self, block: bytes) -> None:
        view = memoryview(block)
        while view:
            view = view[os.write(self.fd, view) :]

    def flush(self) -> list[str]:
        return []


class RunWriter:
    """Final lines in, sorted unique runs out: files of about ``size`` bytes of lines in ``folder``,
    sorted by the compiled path. Each parsing worker has its own; so has a sink. With
    ``background``, each run is sorted and written by a thread (the sort and the write run without
    the GIL) while the caller parses on: one run at a time, so memory stays bounded."""

    def __init__(self, folder: Path, name: str, size: int, *, background: bool = False) -> None:
        self.folder, self.name, self.size = folder, name, size
        self.blocks: list[bytes] = []
        self.pending = 0
        self.paths: list[str] = []
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="sorted-runs") if background else None
        self._writing: Future[None] | None = None

    def add(self, block: bytes) -> None:
        self.blocks.append(block)
        self.pending += len(block)
        if self.pending >= self.size:
            self._write_run()

    def take(self) -> bytes:
        """The lines not yet written, sorted and unique (and forgotten here)."""
        return native.sorted_unique(self.take_unsorted())

    def take_unsorted(self) -> bytes:
        """The lines not yet written, as added (and forgotten here)."""
        data = b"".join(self.blocks)
        self.blocks, self.pending = [], 0
        return data

    def _write_run(self) -> None:
        path = self.folder / ("%s-%05d" % (self.name, len(self.paths)))
        self.paths.append(str(path))
        data, self.blocks, self.pending = b"".join(self.blocks), [], 0
        if self._executor is None:
            _write_sorted(data, path)
            return
        self._wait()
        self._writing = self._executor.submit(_write_sorted, data, path)

    def _wait(self) -> None:
        if self._writing is not None:
            writing, self._writing = self._writing, None
            writing.result()

    def flush(self) -> list[str]:
        """Write what is pending as a run; every run written so far."""
        if self.blocks:
            self._write_run()
        self._wait()
        return self.paths

    def discard(self) -> None:
        """Forget what is pending and remove the runs written."""
        self.blocks, self.pending = [], 0
        with contextlib.suppress(Exception):  # a failed write leaves nothing to keep
            self._wait()
        for path in self.paths:
            Path(path).unlink(missing_ok=True)
        self.paths = []

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown()


def _write_sorted(data: bytes, path: Path) -> None:
    with open(path, "wb", buffering=0) as f:
        native.write_sorted_run(data, f.fileno())


class SortedSink:
    """Collects canonical lines; sorts and deduplicates them in bounded memory; writes the gzip.

    With the compiled path (:mod:`.native`): lines go to :class:`RunWriter` (sorted in memory while
    they fit one run, else written as sorted runs; parallel parsing workers add runs of their own to
    ``runs``), merged k ways into the gzip. Without it: small documents are sorted in memory; past
    ``run_bytes`` the lines stream into an external ``LC_ALL=C sort -u -S <sort_memory>`` (GNU
    coreutils, spilling to disk itself), which sorts while parsing goes on (with parallel parsing
    workers: one sort each, merged by ``sort -m -u``); without ``sort``, sorted runs are merged in
    Python.
    """

    def __init__(
        self, result: CleanResult, skolem: Skolemiser, messages: Messages, options: CleanOptions, tmp: Path
    ) -> None:
        self.result = result
        self.skolem = skolem
        self.messages = messages
        self.options = options
        self.tmp = tmp
        self.blocks: list[bytes] = []
        self.size = 0
        self.sorter: subprocess.Popen[bytes] | None = None
        #: The sorts feeding ``sorter`` (``sort -m``) when parsing workers each have their own.
        self.parts: list[subprocess.Popen[bytes]] = []
        self.runs: list[Path] = []
        #: Whether a statement in a named graph was seen (only quad formats can have one).
        self.named = False
        self.check_graphs = result.format in (F.N_QUADS, F.TRIG, F.JSON_LD)
        #: Whether the format resolves IRIs (their dot segments are removed). Not JSON-LD: it keeps
        #: absolute and vocabulary-relative IRIs as written (JSON-LD 1.1 API §5.2), and its parser
        #: resolves relative ones against the base that cleaning has freed of dot segments.
        self.dots = result.format not in LINE_BASED and result.format != F.JSON_LD
        #: With the compiled path: every line goes to sorted runs (kept in memory while small), each
        #: sorted and written by a thread while the parser goes on.
        self.writer = (
            RunWriter(tmp, "run", options.sorted_run_bytes, background=True) if native.available() else None
        )

    def add_block(self, block: bytes, line_no: int | None = None) -> None:
        """A block of serializer output (newline-terminated canonical lines). With the compiled
        path, the lines that are final already but for their blank nodes are copied in C; the others
        (and the messages they make) go through :func:`.rdf11.canonical_lines` in order."""
        if not block:
            return
        if not native.available():
            self.add_lines(canonical_lines(block, self.skolem, self.messages, line_no, self.dots))
            return
        skolem = self.skolem
        scanned = native.canonical_lines(block, True, skolem.prefix, relabel=skolem.relabel, dots=self.dots)
        self.add_lines(scanned.canonical, scanned.named, scanned.statements)
        if scanned.slow:
            self.add_lines(canonical_lines(scanned.slow, skolem, self.messages, line_no, self.dots))

    def add_runs(self, runs: list[str], statements: int, named: bool) -> None:
        """Sorted unique run files of final lines (``statements`` lines in all) for the merge."""
        self.runs.extend(Path(run) for run in runs)
        self.result.statements += statements
        self.named = self.named or named

    def add_lines(self, block: bytes, named: bool | None = None, statements: int | None = None) -> None:
        """A block of final (skolemised) lines; ``named``: whether one has a graph label, and
        ``statements``: how many lines it has (None: not known, found here)."""
        if not block:
            return
        if named:
            self.named = True
        elif named is None and self.check_graphs and not self.named:
            self.named = has_named_graph(block)
        self.result.statements += block.count(b"\n") if statements is None else statements
        if self.writer is not None:
            self.writer.add(block)
            return
        if self.sorter is not None:
            pipe_of(self.sorter.stdin).write(block)
            return
        self.blocks.append(block)
        self.size += len(block)
        if self.size >= self.options.run_bytes:
            self._spill()

    def _sorted_unique(self) -> list[bytes]:
        lines = sorted(set(b"".join(self.blocks).split(b"\n")[:-1]))
        self.blocks, self.size = [], 0
        return lines

    def _sort_process(self, args: list[str], **popen: Any) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, env=dict(os.environ, LC_ALL="C"), **popen)  # noqa: S603 - sort(1) with fixed options
        for pipe in (proc.stdin, proc.stdout):
            if pipe is None:  # stdin not piped (the merging sort)
                continue
            with contextlib.suppress(OSError):  # bigger pipes: fewer wake-ups of both sides
                fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
        return proc

    def _sort_args(self) -> list[str] | None:
        """``LC_ALL=C sort -u`` with a fixed buffer (None when there is no ``sort``)."""
        sort = shutil.which("sort")
        if sort is None:
            return None
        memory = self.options.sort_memory
        return [
            sort,
            "-u",
            "-S",
            memory,
            "--parallel=%d" % self.options.sort_threads,
            "--batch-size=%d" % SORT_BATCH,
            "-T",
            str(self.tmp),
        ]

    def start_sorter(self) -> bool:
        """Send every line from now on to ``LC_ALL=C sort -u`` (False when there is no ``sort``)."""
        args = self._sort_args()
        if args is None:
            return False
        self.sorter = self._sort_process(args, stdin=subprocess.PIPE)
        stdin = pipe_of(self.sorter.stdin)
        for block in self.blocks:
            stdin.write(block)
        self.blocks, self.size = [], 0
        return True

    def start_sorters(self, n: int) -> list[subprocess.Popen[bytes]] | None:
        """``n`` sorts, one per parsing worker, whose outputs ``sort -m -u`` merges: the final merges
        run in parallel and no worker waits for another's write. None when there is no ``sort``."""
        args = self._sort_args()
        if args is None or self.blocks:
            return None
        parts = [self._sort_process(args, stdin=subprocess.PIPE) for _ in range(n)]
        fds = [pipe_of(part.stdout).fileno() for part in parts]
        self.sorter = self._sort_process(
            args[:1] + ["-m", "-u", "-T", str(self.tmp)] + ["/dev/fd/%d" % fd for fd in fds],
            stdin=subprocess.DEVNULL,
            pass_fds=fds,
        )
        for part in parts:
            pipe_of(part.stdout).close()  # the merging sort holds them now
        self.parts = parts
        return parts

    def _spill(self) -> None:
        if self.start_sorter():
            return
        lines = self._sorted_unique()
        path = self.tmp / ("run-%05d" % len(self.runs))
        with open(path, "wb") as f:
            f.write(b"\n".join(lines))
            f.write(b"\n")
        self.runs.append(path)

    def merged(self) -> Iterator[bytes]:
        """Every unique line in byte order, newline-terminated, in blocks of whole lines (the
        compiled path's runs: in the merge's pieces, which cut lines; :meth:`write` takes those)."""
        if self.writer is not None:
            runs = self._compiled_runs()
            if runs is not None:
                yield from (piece for piece, _, _ in self._merged_pieces(runs))
            elif data := self.writer.take():
                yield data
            return
        if self.sorter is not None:
            yield from self._from_sorter()
            return
        if self.runs:
            if self.blocks:
                self._spill()
            yield from _heap_merge(self.runs)
            return
        lines = self._sorted_unique()
        for i in range(0, len(lines), 65536):
            yield b"\n".join(lines[i : i + 65536]) + b"\n"

    def _compiled_runs(self) -> list[str] | None:
        """With the compiled path, when lines were written as sorted runs (None: they fit one run,
        sorted in memory; or no compiled path): the runs to merge, at most SORT_BATCH (more are
        merged in passes first: a second pass writes the whole document to disk once more)."""
        if self.writer is None or (not self.runs and not self.writer.paths):
            return None
        runs = [*map(str, self.runs), *self.writer.flush()]
        passes = 0
        while len(runs) > SORT_BATCH:
            passes += 1
            merged: list[str] = []
            for start in range(0, len(runs), SORT_BATCH):
                path = self.tmp / ("merged-%d-%05d" % (passes, len(merged)))
                with open(path, "wb") as out:
                    native.merge_runs(runs[start : start + SORT_BATCH], out.fileno())
                for done in runs[start : start + SORT_BATCH]:
                    Path(done).unlink()
                merged.append(str(path))
            runs = merged
        return runs

    def _merged_pieces(self, runs: list[str]) -> Iterator[tuple[bytes, bytes, int]]:
        """The compiled k-way merge of sorted run files in pieces of GZIP_PIECE bytes (the last
        shorter), each with its lines that name a ``void:dataDump`` and the lines merged so far
        (a line cut between two pieces counted with the first). A thread merges (without the
        GIL) while the caller compresses and hashes the piece before: the pieces are the cuts the
        compressor takes, so no line blocks are cut, joined and cut again on the way."""
        merger = native.run_merger(runs, VOID_DATA_DUMP)
        pieces: queue.Queue[tuple[bytes, bytes, int] | None] = queue.Queue(maxsize=2)
        stop = threading.Event()
        failed: list[BaseException] = []

        def merge() -> None:
            try:
                while not stop.is_set() and (piece := merger.read(GZIP_PIECE)):
                    pieces.put((piece, merger.marked(), merger.lines_read))
            except BaseException as exc:  # reported below, by the reading side
                failed.append(exc)
            finally:
                pieces.put(None)

        thread = threading.Thread(target=merge, name="merge-sorted-runs", daemon=True)
        thread.start()
        try:
            while (item := pieces.get()) is not None:
                yield item
        finally:
            stop.set()  # a reader that stopped early: the merge ends at its next piece
            while thread.is_alive():
                with contextlib.suppress(queue.Empty):
                    pieces.get(timeout=0.1)  # room for the piece it may be putting
            thread.join()
            merger.close()
        if failed:
            raise CleaningError("merging the sorted runs failed: %s" % failed[0])

    def _from_sorter(self) -> Iterator[bytes]:
        proc = self.sorter
        if proc is None:
            raise CleaningError("no sort was started")
        stdout = pipe_of(proc.stdout)
        for writer in [proc.stdin] + [part.stdin for part in self.parts]:
            if writer is not None and not writer.closed:
                writer.close()
        try:
            yield from _whole_lines(stdout)
        finally:
            stdout.close()
            for sorter in [*self.parts, proc]:
                if sorter.wait() != 0:
                    raise CleaningError("sort failed with status %d" % sorter.returncode)

    def abort(self) -> None:
        """Stop what still runs (sorts, the thread writing runs); called whether cleaning ended or failed."""
        if self.writer is not None:
            self.writer.close()
        for sorter in self.parts + ([self.sorter] if self.sorter is not None else []):
            if sorter.poll() is None:
                sorter.kill()
                sorter.wait()

    def write(self, out_dir: Path) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp_path = self.tmp / "clean.gz"
        unique = raw_bytes = 0
        dumps: list[str] = []
        with open(tmp_path, "wb") as out:
            gzip = ContentGzip(out, self.options.gzip_level)
            runs = self._compiled_runs()
            if runs is not None:
                for piece, marked, lines_so_far in self._merged_pieces(runs):
                    unique = lines_so_far
                    _add_data_dumps(dumps, marked)
                    gzip.add(piece)
                    raw_bytes += len(piece)
            else:
                for block in self.merged():
                    unique += block.count(b"\n")
                    raw_bytes += len(block)
                    _add_data_dumps(dumps, block)
                    gzip.add(block)
            key = gzip.finish()
        named = self.named
        final = out_dir / ("%s.%s.gz" % (key, "nq" if named else "nt"))
        tmp_path.replace(final)
        r = self.result
        r.key, r.path, r.unique, r.duplicates = key, str(final), unique, r.statements - unique
        r.bytes, r.uncompressed_bytes, r.named_graphs, r.void_data_dumps = (
            final.stat().st_size,
            raw_bytes,
            named,
            dumps,
        )


class ContentGzip:
    """The gzip of a stream of blocks, and its MD5 (the cleaned file's key). The compressor is fed
    pieces of exactly GZIP_PIECE bytes whatever the blocks are, so the gzip bytes, and the key,
    depend on the content only (a deflate stream depends on how its input was cut into calls)."""

    def __init__(self, out: IO[bytes], level: int) -> None:
        self.out = out
        self.compressor = _gzip_compressor(level)
        self.digest = hashlib.md5(usedforsecurity=False)
        self.pending = bytearray()

    def add(self, block: bytes) -> None:
        view = memoryview(block)
        if self.pending:
            fill = GZIP_PIECE - len(self.pending)
            self.pending += view[:fill]
            view = view[fill:]
            if len(self.pending) < GZIP_PIECE:
                return
            self._compress(self.pending)
            self.pending = bytearray()
        while len(view) >= GZIP_PIECE:
            self._compress(view[:GZIP_PIECE])
            view = view[GZIP_PIECE:]
        self.pending += view

    def _compress(self, piece: bytes | bytearray | memoryview) -> None:
        data = self.compressor.compress(piece)
        if data:
            self.digest.update(data)
            self.out.write(data)

    def finish(self) -> str:
        """Write the rest; the MD5 of the gzip stream (hex)."""
        if self.pending:
            self._compress(self.pending)
        tail = self.compressor.flush()
        self.digest.update(tail)
        self.out.write(tail)
        return self.digest.hexdigest()


def _whole_lines(stream: IO[bytes]) -> Iterator[bytes]:
    """The lines of ``stream`` in blocks of about 1 MiB, each block whole newline-terminated lines."""
    rest = b""
    while chunk := stream.read(1 << 20):
        data = rest + chunk
        cut = data.rfind(b"\n") + 1
        data, rest = data[:cut], data[cut:]
        if data:
            yield data
    if rest:
        yield rest + b"\n"


def _gzip_compressor(level: int) -> Any:
    """A gzip stream compressor: ISA-L (``isal``, several times faster than zlib at levels 0-3) when
    installed, else zlib. Either way the output is ordinary gzip."""
    if isal_zlib is not None and level <= isal_zlib.ISAL_BEST_COMPRESSION:
        return isal_zlib.compressobj(level, isal_zlib.DEFLATED, 31)
    return zlib.compressobj(level, zlib.DEFLATED, 31)


def _add_data_dumps(dumps: list[str], lines: bytes) -> None:
    """The ``void:dataDump`` objects of ``lines`` (newline-terminated, in the output's order) added
    to ``dumps``, the first MAX_DATA_DUMPS of the document in all."""
    if VOID_DATA_DUMP not in lines:
        return
    for line in lines.split(b"\n"):
        if len(dumps) >= MAX_DATA_DUMPS:
            return
        if VOID_DATA_DUMP in line:
            dumps.extend(_data_dump(line))


def _data_dump(line: bytes) -> list[str]:
    match = CANONICAL.match(line)
    if match and match.group(2).startswith(b"<") and VOID_DATA_DUMP in line.split(b" ", 2)[1]:
        return [match.group(2)[1:-1].decode("utf-8")]
    return []


def _heap_merge(runs: list[Path]) -> Iterator[bytes]:
    """Merge sorted run files without ``sort`` (slower; for systems without GNU coreutils)."""
    files = [open(p, "rb") for p in runs]
    try:
        last, block = None, []
        for line in heapq.merge(*files):
            if line != last:
                block.append(line)
                last = line
                if len(block) >= 65536:
                    yield b"".join(block)
                    block = []
        if block:
            yield b"".join(block)
    finally:
        for f in files:
            f.close()
