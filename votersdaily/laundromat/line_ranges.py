"""N-Triples and N-Quads, read in chunks of whole lines: one bad statement costs only its own line;
a large document is parsed by ranges in parallel (forked workers, each into its own sort)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

import pyoxigraph as ox

from . import native
from .clean_types import CleaningError, CleanResult, Messages, ox_format, serialize_quads
from .external_sort import SORT_BATCH, LineWriter, PipeWriter, RunWriter, SortedSink, pipe_of
from .rdf11 import canonical_lines, has_named_graph, records_messages
from .skolem import Skolemiser

if TYPE_CHECKING:
    from collections.abc import Callable
    from multiprocessing.connection import Connection


class ParsedLines(NamedTuple):
    """The final lines of a block of whole N-Triples/N-Quads lines, with what is known of them."""

    lines: bytes
    #: Whether one has a graph label.
    named: bool
    #: Lines of the input block.
    input_lines: int
    #: Statements in ``lines``.
    statements: int


def parse_lines(
    data: bytes, oxf: ox.RdfFormat, skolem: Skolemiser, messages: Messages, line_offset: int
) -> ParsedLines:
    """The final lines of a block of whole N-Triples/N-Quads lines. Lines already in canonical form
    are copied by the compiled scanner (:mod:`.native`) when it is built; the others are parsed and
    serialised by pyoxigraph."""
    quads = oxf == ox.RdfFormat.N_QUADS
    if native.available() and not skolem.relabel:
        scanned = native.canonical_lines(data, quads, skolem.prefix)
        if not scanned.slow:
            return ParsedLines(scanned.canonical, scanned.named, scanned.lines, scanned.statements)
        numbers = scanned.slow_line_numbers
        rest = _parse_pyoxigraph(
            scanned.slow, oxf, skolem, messages, lambda i: line_offset + numbers[i - 1] + 1
        )
        return ParsedLines(
            scanned.canonical + rest,
            scanned.named or (quads and has_named_graph(rest)),
            scanned.lines,
            scanned.statements + rest.count(b"\n"),
        )
    out = _parse_pyoxigraph(data, oxf, skolem, messages, lambda i: line_offset + i)
    return ParsedLines(out, quads and has_named_graph(out), _line_count(data), out.count(b"\n"))


def _parse_pyoxigraph(
    data: bytes, oxf: ox.RdfFormat, skolem: Skolemiser, messages: Messages, line_no: Callable[[int], int]
) -> bytes:
    """The final lines of whole N-Triples/N-Quads lines through pyoxigraph; ``line_no(i)`` is the
    document's line number of the block's ``i``-th line (from 1). A block with an error is parsed
    again line by line, so one bad statement costs only its own line (a line longer than the
    parser's token buffer too: it raises MemoryError); so is a block with a statement that makes a
    message (a triple term, a base direction), so the message has that statement's line."""
    try:
        block = serialize_quads(ox.parse(data, oxf))
        if not records_messages(block):
            return canonical_lines(block, skolem, messages, None)
    except (SyntaxError, MemoryError):
        pass
    out = []
    for i, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            out.append(canonical_lines(serialize_quads(ox.parse(line, oxf)), skolem, messages, line_no(i)))
        except SyntaxError as exc:
            messages.syntax(exc, line_no(i))
        except MemoryError as exc:
            messages.add("error", "statement of %d bytes dropped: %s" % (len(line), exc), line_no(i))
    return b"".join(out)


def _line_count(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def parse_line_based(path: Path, fmt: str, sink: SortedSink, messages: Messages, chunk_bytes: int) -> None:
    oxf = ox_format(fmt)
    line_offset = 0
    with open(path, "rb") as f:
        rest = b""
        while True:
            chunk = f.read(chunk_bytes)
            data = rest + chunk
            if chunk:
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    rest = data
                    continue
                data, rest = data[:cut], data[cut:]
            else:
                rest = b""
            if data:
                parsed = parse_lines(data, oxf, sink.skolem, messages, line_offset)
                sink.add_lines(parsed.lines, parsed.named, parsed.statements)
                line_offset += parsed.input_lines
            if not chunk:
                break


# -- line-based documents in parallel ------------------------------------------------------------
#
# A large N-Triples/N-Quads document is cut into ``parse_chunk`` byte ranges; each forked worker takes the
# next range (the lines that start in it), parses, serialises and skolemises it, and writes the lines
# straight into its own external sort; ``sort -m -u`` merges the workers' sorted outputs. Workers
# report counts and messages per range; line numbers are made absolute afterwards.


def _read_range(f: BinaryIO, index: int, span: int, size: int) -> bytes:
    """The whole lines that start in byte range ``index`` (of ``span`` bytes each) of the file."""
    start, end = index * span, min((index + 1) * span, size)
    if index:
        f.seek(start - 1)
        data = f.read(end - start + 1)
        newline = data.find(b"\n")
        if newline < 0:
            return b""  # no line starts here: the previous range's last line runs through it
        data = data[newline + 1 :]
    else:
        f.seek(0)
        data = f.read(end)
    if end < size and data and not data.endswith(b"\n"):
        parts = [data]
        while True:
            more = f.read(1 << 16)
            newline = more.find(b"\n")
            if newline >= 0:
                parts.append(more[: newline + 1])
                break
            parts.append(more)
            if not more:
                break
        data = b"".join(parts)
    return data


def _parse_ranges(
    path: str,
    fmt: str,
    skolem: Skolemiser,
    cap: int,
    counter: Any,
    n_ranges: int,
    span: int,
    out: LineWriter,
) -> tuple[list[tuple[Any, ...]], list[str]]:
    """Parse the next untaken byte range until none is left, writing the final lines to ``out``;
    per range: its index, lines, statements, errors, warnings, messages, and whether a named graph
    was seen so far; and the sorted runs written."""
    oxf = ox_format(fmt)
    size = Path(path).stat().st_size
    done: list[tuple[Any, ...]] = []
    named = False
    with open(path, "rb") as f:
        while True:
            with counter.get_lock():
                index = counter.value
                counter.value = index + 1
            if index >= n_ranges:
                return done, out.flush()
            data = _read_range(f, index, span, size)
            local = CleanResult(format=fmt)
            parsed = (
                parse_lines(data, oxf, skolem, Messages(local, cap), 0)
                if data
                else ParsedLines(b"", False, 0, 0)
            )
            if parsed.lines:
                named = named or parsed.named
                out.add(parsed.lines)
            done.append(
                (
                    index,
                    parsed.input_lines,
                    parsed.statements,
                    local.errors,
                    local.warnings,
                    local.messages,
                    named,
                )
            )


def _forked(work: Callable[..., Any], job: tuple[Any, ...], conn: Connection) -> None:
    """``work(*job)`` in a forked process; the answer (or the error) goes back on ``conn``."""
    try:
        conn.send(("done", work(*job)))
    except BaseException as exc:  # reported to the parent, which fails the document
        conn.send(("error", "%s: %s" % (type(exc).__name__, exc)))
    finally:
        conn.close()


def run_forked(
    work: Callable[..., Any],
    jobs: list[tuple[Any, ...]],
    after_fork: Callable[[], None] | None = None,
    after_work: Callable[[], None] | None = None,
) -> list[Any]:
    """``work(*job)`` for each job: the first in this process (one process fewer holding a copy of
    its memory), each other in a process forked for it, all at once; their answers, in order. The
    hooks run after the forks and after this process's own work. A failure anywhere raises
    :class:`CleaningError`, once every worker is collected."""
    ctx = multiprocessing.get_context("fork")
    workers = []
    for job in jobs[1:]:
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_forked, daemon=True, args=(work, job, send))
        proc.start()
        send.close()
        workers.append((recv, proc))
    if after_fork is not None:
        after_fork()
    answers, failure = [], None
    try:
        answers.append(work(*jobs[0]))
    except Exception as exc:  # the workers are still collected below
        failure = "%s: %s" % (type(exc).__name__, exc)
    finally:
        if after_work is not None:
            after_work()
    for recv, proc in workers:
        try:
            answer = recv.recv()
        except EOFError:
            answer = ("error", "a parsing worker died (exit code %s)" % proc.exitcode)
        recv.close()
        proc.join()
        if answer[0] == "error":
            failure = answer[1]
        else:
            answers.append(answer[1])
    if failure is not None:
        raise CleaningError("parsing failed: %s" % failure)
    return answers


def can_fork(workers: int) -> bool:
    return (
        workers > 1
        and "fork" in multiprocessing.get_all_start_methods()
        and not multiprocessing.current_process().daemon
    )


def parse_line_based_parallel(
    path: Path, fmt: str, sink: SortedSink, messages: Messages, workers: int
) -> None:
    """Each worker (this process, and ``workers - 1`` forked ones) sorts its own lines: into runs
    of the compiled path, else into its own ``sort`` (merged by ``sort -m -u``)."""
    span = sink.options.parse_chunk
    sorters = None
    outputs: list[LineWriter]
    if sink.writer is not None:
        # A range's lines make one sorted run: ranges large enough for one merge pass, bounded.
        runs_at_most = -(-path.stat().st_size // (SORT_BATCH - workers))
        span = max(span, min(max(sink.options.sorted_run_bytes, runs_at_most), sink.options.run_bytes * 4))
        outputs = [RunWriter(sink.tmp, "w%d" % i, sink.options.sorted_run_bytes) for i in range(workers)]
    else:
        sorters = sink.start_sorters(workers)
        if sorters is None:
            parse_line_based(path, fmt, sink, messages, span)
            return
        outputs = [PipeWriter(pipe_of(sorter.stdin).fileno()) for sorter in sorters]
    n_ranges = max(1, -(-path.stat().st_size // span))
    counter = multiprocessing.get_context("fork").Value("q", 0)
    shared = (str(path), fmt, sink.skolem, messages.cap, counter, n_ranges, span)

    def workers_forked() -> None:  # the workers hold them: each sort ends when the workers are done
        for sorter in (sorters or [])[1:]:
            pipe_of(sorter.stdin).close()

    def work_done() -> None:
        if sorters:
            pipe_of(sorters[0].stdin).close()

    done, runs = [], []
    for ranges, written in run_forked(
        _parse_ranges, [(*shared, output) for output in outputs], workers_forked, work_done
    ):
        done.extend(ranges)
        runs.extend(written)
    sink.runs.extend(Path(run) for run in runs)
    result, line_offset = sink.result, 0
    for _, lines, statements, errors, warnings, found, named in sorted(done):
        result.statements += statements
        result.errors += errors
        result.warnings += warnings
        for message in found:
            if len(result.messages) < messages.cap:
                if "line" in message:
                    message["line"] += line_offset
                result.messages.append(message)
        sink.named = sink.named or named
        line_offset += lines
