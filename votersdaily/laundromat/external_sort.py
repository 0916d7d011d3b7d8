"""Sorting and de-duplicating a document's lines in bounded memory (in memory, through GNU ``sort``,
or by merging sorted runs), then writing the gzip and its content key."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import heapq
import importlib
import os
import shutil
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import IO

from . import formats as F
from .clean_types import LINE_BASED, CleaningError, CleanOptions, CleanResult, Messages
from .rdf11 import CANONICAL, canonical_lines, has_named_graph
from .skolem import Skolemiser

isal_zlib: ModuleType | None
try:
    isal_zlib = importlib.import_module("isal.isal_zlib")
except ImportError:  # optional: zlib is used instead
    isal_zlib = None

VOID_DATA_DUMP = b"<http://rdfs.org/ns/void#dataDump>"
#: Sorted runs ``sort`` merges at once: enough for one merge pass at any size we sort (a second pass
#: would write the whole document to disk once more before the first line comes out).
SORT_BATCH = 256


def pipe_of(stream: IO[bytes] | None) -> IO[bytes]:
    """A pipe of a ``sort`` started with ``subprocess.PIPE`` (``Popen`` types its pipes Optional)."""
    if stream is None:
        raise CleaningError("sort was started without this pipe")
    return stream


class SortedSink:
    """Collects canonical lines; sorts and deduplicates them in bounded memory; writes the gzip.

    Small documents are sorted in memory. Past ``run_bytes`` the lines stream into an external
    ``LC_ALL=C sort -u -S <sort_memory>`` (GNU coreutils, spilling to disk itself), which sorts
    while parsing goes on (with parallel parsing workers: one sort each, merged by ``sort -m -u``);
    without ``sort``, sorted runs are merged in Python.
    """

    def __init__(
        self, result: CleanResult, skolem: Skolemiser, messages: Messages, options: CleanOptions, tmp: Path
    ):
        self.result = result
        self.skolem = skolem
        self.messages = messages
        self.options = options
        self.tmp = tmp
        self.blocks: list[bytes] = []
        self.size = 0
        self.sorter: subprocess.Popen | None = None
        #: The sorts feeding ``sorter`` (``sort -m``) when parsing workers each have their own.
        self.parts: list[subprocess.Popen] = []
        self.runs: list[Path] = []
        #: Whether a statement in a named graph was seen (only quad formats can have one).
        self.named = False
        self.check_graphs = result.format in (F.N_QUADS, F.TRIG, F.JSON_LD)
        #: Whether the format resolves IRIs (their dot segments are removed). Not JSON-LD: it keeps
        #: absolute and vocabulary-relative IRIs as written (JSON-LD 1.1 API §5.2), and its parser
        #: resolves relative ones against the base that cleaning has freed of dot segments.
        self.dots = result.format not in LINE_BASED and result.format != F.JSON_LD

    def add_block(self, block: bytes, line_no: int | None = None) -> None:
        """A block of serializer output (newline-terminated canonical lines)."""
        if not block:
            return
        self.add_lines(canonical_lines(block, self.skolem, self.messages, line_no, self.dots))

    def add_lines(self, block: bytes) -> None:
        """A block of final (skolemised) lines."""
        if not block:
            return
        if self.check_graphs and not self.named:
            self.named = has_named_graph(block)
        self.result.statements += block.count(b"\n")
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

    def _sort_process(self, args: list[str], **popen) -> subprocess.Popen:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, env=dict(os.environ, LC_ALL="C"), **popen)
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

    def start_sorters(self, n: int) -> list[subprocess.Popen] | None:
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
        """Every unique line in byte order, newline-terminated, in blocks of whole lines."""
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

    def _from_sorter(self) -> Iterator[bytes]:
        proc = self.sorter
        if proc is None:
            raise CleaningError("no sort was started")
        stdout = pipe_of(proc.stdout)
        for writer in [proc.stdin] + [part.stdin for part in self.parts]:
            if writer is not None and not writer.closed:
                writer.close()
        try:
            rest = b""
            while True:
                chunk = stdout.read(1 << 20)
                if not chunk:
                    break
                data = rest + chunk
                cut = data.rfind(b"\n") + 1
                data, rest = data[:cut], data[cut:]
                if data:
                    yield data
        finally:
            stdout.close()
            for sorter in [*self.parts, proc]:
                if sorter.wait() != 0:
                    raise CleaningError("sort failed with status %d" % sorter.returncode)

    def abort(self) -> None:
        for sorter in self.parts + ([self.sorter] if self.sorter is not None else []):
            if sorter.poll() is None:
                sorter.kill()
                sorter.wait()

    def write(self, out_dir: Path) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp_path = self.tmp / "clean.gz"
        digest = hashlib.md5()
        compressor = _gzip_compressor(self.options.gzip_level)
        unique = raw_bytes = 0
        dumps: list[str] = []
        with open(tmp_path, "wb") as out:
            for block in self.merged():
                unique += block.count(b"\n")
                raw_bytes += len(block)
                if VOID_DATA_DUMP in block and len(dumps) < 1000:
                    for line in block.split(b"\n"):
                        if VOID_DATA_DUMP in line:
                            dumps.extend(_data_dump(line))
                data = compressor.compress(block)
                if data:
                    digest.update(data)
                    out.write(data)
            tail = compressor.flush()
            digest.update(tail)
            out.write(tail)
        named = self.named
        key = digest.hexdigest()
        final = out_dir / ("%s.%s.gz" % (key, "nq" if named else "nt"))
        os.replace(tmp_path, final)
        r = self.result
        r.key, r.path, r.unique, r.duplicates = key, str(final), unique, r.statements - unique
        r.bytes, r.uncompressed_bytes, r.named_graphs, r.void_data_dumps = (
            final.stat().st_size,
            raw_bytes,
            named,
            dumps,
        )


def _gzip_compressor(level: int):
    """A gzip stream compressor: ISA-L (``isal``, several times faster than zlib at levels 0-3) when
    installed, else zlib. Either way the output is ordinary gzip."""
    if isal_zlib is not None and level <= isal_zlib.ISAL_BEST_COMPRESSION:
        return isal_zlib.compressobj(level, isal_zlib.DEFLATED, 31)
    return zlib.compressobj(level, zlib.DEFLATED, 31)


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
