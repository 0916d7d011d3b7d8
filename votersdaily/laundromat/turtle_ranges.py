"""A large Turtle or TriG document read by the compiled reader (:class:`.native.TurtleLines`) in two
ranges at once: the first by the cleaning worker, the second by a process it forks (the second core),
each into sorted runs of its own.

The cut is a line start near the middle where a statement of the top level seems to start (after a
line ending in "." or "}"); only the first range's reader can tell, and it does: it stops there only
when a statement of the top level starts exactly at that byte and no directive came after its first
statement. The second range's reader reads the prologue (the directives before the first statement),
then the statements from the cut on, in the state the first range ends in: the same prefixes and
base, outside any graph, on a new line. Anonymous blank nodes are numbered in the order of the whole
document: the second reader numbers its own from 0 and keeps their statements apart, and once the
first range's count is known they are renumbered (:func:`.native.renumbered`) and sorted here. It
gives up on a label that looks generated (the first range may have numbered the same label), and on
anything the reader gives up on. Whenever the second range is not read, or the first reader did not stop at
the cut, the first reader reads on to the end, alone: so the lines are those of one reading of the
whole document (tests/laundromat/test_turtle_ranges.py cuts the W3C suites' documents at every line)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import IO, TYPE_CHECKING, NamedTuple

from . import native
from .external_sort import SORT_BATCH, RunWriter
from .line_ranges import can_fork, run_forked

if TYPE_CHECKING:
    from .clean_types import CleanOptions
    from .external_sort import SortedSink

#: Bytes of final lines the compiled reader gives at a time.
TURTLE_BLOCK = 1 << 20
#: Bytes from the middle of the document a cut is looked for in.
CUT_WINDOW = 1 << 20
#: The end of a line that ends a statement of the top level, perhaps ("." or a graph's "}"), blank
#: lines after it, and a line starting with what a statement starts with: the cut is its start.
_CUT = re.compile(rb"[.}][ \t]*\r?\n(?:[ \t]*\r?\n)*(?=[^\s#])")


class RangeRead(NamedTuple):
    """What reading one range gave."""

    #: False: the reader gave up (nothing of the range is kept).
    read: bool
    statements: int
    named: bool
    #: Sorted run files of its lines.
    runs: list[str]
    #: A later range's statements with a node it numbered, to renumber (None: none).
    deferred: str | None = None
    #: Bytes of lines its last runs were sized for.
    run_size: int = 0


def cut_of(path: Path, size: int) -> int | None:
    """Where the document may be cut in two: the byte a line starts at after the middle that follows
    a line ending in "." or "}" (None: none in the CUT_WINDOW bytes after the middle)."""
    middle = size // 2
    with open(path, "rb") as f:
        window = os.pread(f.fileno(), CUT_WINDOW, middle)
    found = _CUT.search(window)
    return None if found is None else middle + found.end()


#: A later range gives up when more than this share of its lines (past DEFERRED_AFTER bytes of
#: them) have a node it numbered: those are renumbered and sorted by one process once both ranges
#: are read, which costs more than the first reader reading on (a document of `[ ... ]` objects).
DEFERRED_SHARE = 0.25
DEFERRED_AFTER = 4 << 20
#: Runs the lines of a document are written to at most (those of the ranges together; SORT_BATCH
#: and more merge in two passes, every line written and read once more).
RUNS = SORT_BATCH - 2


class Span(NamedTuple):
    """The bytes a reader reads: from ``start`` to ``stop``, or to the document's ``end`` once it
    reads past ``stop``."""

    start: int
    stop: int
    end: int


def fill(
    lines: native.TurtleLines,
    writer: RunWriter,
    span: Span,
    runs: int,
    options: CleanOptions,
    deferred: IO[bytes] | None = None,
) -> None:
    """The lines of the reader's span into ``writer``, in runs sized as it reads so that about
    ``runs`` of them hold them: the lines a document gives per byte vary (prefixed names written
    out). A run holds at least ``sorted_run_bytes``, at most ``run_bytes`` × 4 (a reader holds about
    three at a time). A later range's deferred statements go to ``deferred``. Raises
    TurtleUnsupported."""
    smallest, largest = options.sorted_run_bytes, options.run_bytes * 4
    given = apart = 0
    for block in lines:
        if deferred is not None and (statements := lines.take_deferred()):
            deferred.write(statements)
            apart += len(statements)
            if apart + given > DEFERRED_AFTER and apart > DEFERRED_SHARE * (apart + given + len(block)):
                raise native.TurtleUnsupported(
                    "a later range whose statements mostly have a node it numbered"
                )
        given += len(block)
        position = lines.position
        read = position - span.start
        if read > 0:  # the lines the whole span will give, at the rate so far
            expected = (
                (given + apart) * ((span.stop if position <= span.stop else span.end) - span.start) // read
            )
            writer.size = max(smallest, min(largest, -(-expected // runs)))
        writer.add(block)


def read_range(
    lines: native.TurtleLines,
    writer: RunWriter,
    span: Span,
    runs: int,
    options: CleanOptions,
    deferred: IO[bytes] | None = None,
) -> RangeRead:
    """The span's lines into ``writer``'s sorted runs (:func:`fill`; removed when the reader gives up)."""
    try:
        fill(lines, writer, span, runs, options, deferred)
    except native.TurtleUnsupported:
        writer.discard()
        return RangeRead(False, 0, False, [])
    return RangeRead(True, lines.statements, lines.named, writer.flush(), None, writer.size)


def _read_later_range(
    lines: native.TurtleLines, writer: RunWriter, span: Span, runs: int, options: CleanOptions
) -> RangeRead:
    """A later range (:func:`read_range`), its deferred statements in a file beside its runs."""
    deferred = writer.folder / ("turtle-deferred-%d" % span.start)
    with open(deferred, "wb") as apart:
        read = read_range(lines, writer, span, runs, options, apart)
        empty = apart.tell() == 0
    if not read.read or empty:
        deferred.unlink()
        return read
    return read._replace(deferred=str(deferred))


def _add_deferred(sink: SortedSink, second: RangeRead, offset: int) -> None:
    """The second range's deferred statements, renumbered after the ``offset`` blank nodes the
    first numbered, into the sink's sorted runs (as many as the second range's own would take)."""
    if second.deferred is None:
        return
    if sink.writer is not None:
        sink.writer.size = max(sink.writer.size, second.run_size)
    with open(second.deferred, "rb") as apart:
        rest = b""
        while chunk := apart.read(TURTLE_BLOCK):
            data = rest + chunk
            cut = data.rfind(b"\n") + 1
            data, rest = data[:cut], data[cut:]
            sink.add_lines(native.renumbered(data, offset), False, 0)
    Path(second.deferred).unlink()


def _read_one(
    path: Path,
    trig: bool,
    base_iri: str | None,
    sink: SortedSink,
    span: Span,
    held: list[tuple[native.TurtleLines, RunWriter]],
) -> RangeRead:
    """One range, read in this process (the first, whose reader and writer are ``held`` for reading
    on) or in a forked one."""
    start, stop, size = span
    options = sink.options
    writer = RunWriter(sink.tmp, "turtle-%d" % start, options.sorted_run_bytes, background=True)
    lines = native.TurtleLines(
        path, trig, base_iri, sink.skolem.prefix, TURTLE_BLOCK, start=start, stop=-1 if stop == size else stop
    )
    if start == 0:
        held.append((lines, writer))
        return read_range(lines, writer, span, RUNS // 2, options)
    try:
        return _read_later_range(lines, writer, span, RUNS // 2, options)
    finally:
        writer.close()
        lines.close()


def read_in_ranges(path: Path, trig: bool, base_iri: str | None, sink: SortedSink) -> bool | None:
    """The document's final lines into ``sink`` from two ranges read at once: True; False, with
    nothing added, when the reader gives up on the document (pyoxigraph then parses it); None when
    it is not cut (smaller than ``run_bytes``, no cut found, no fork): the caller reads it whole."""
    options, size = sink.options, path.stat().st_size
    if size < options.run_bytes or not can_fork(options.parse_workers):
        return None
    cut = cut_of(path, size)
    if cut is None:
        return None
    held: list[tuple[native.TurtleLines, RunWriter]] = []
    try:
        first, second = run_forked(
            _read_one,
            [
                (path, trig, base_iri, sink, Span(0, cut, size), held),
                (path, trig, base_iri, sink, Span(cut, size, size), []),
            ],
        )
        ((lines, writer),) = held
        if first.read and lines.at_cut and second.read:
            runs = first.runs + second.runs
            sink.add_runs(runs, first.statements + second.statements, first.named or second.named)
            _add_deferred(sink, second, lines.numbered)
            return True
        for run in [*second.runs, *([second.deferred] if second.deferred else [])]:
            Path(run).unlink(missing_ok=True)
        if not first.read:
            return False
        if lines.at_cut:  # the second range is not read: the first reader reads on
            lines.resume()
            rest = Span(cut, size, size)
            if not read_range(lines, writer, rest, max(1, RUNS - len(writer.paths)), options).read:
                return False
        sink.add_runs(writer.flush(), lines.statements, lines.named)
        return True
    finally:
        for lines, writer in held:
            writer.close()
            lines.close()
