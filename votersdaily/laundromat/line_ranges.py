"""N-Triples and N-Quads, read in chunks of whole lines: one bad statement costs only its own line;
a large document is parsed by ranges in parallel (forked workers, each into its own sort)."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pyoxigraph as ox

from . import native
from .clean_types import OX_FORMATS, CleaningError, CleanResult, Messages, serialize_quads
from .external_sort import SortedSink, pipe_of
from .rdf11 import canonical_lines, has_named_graph
from .skolem import Skolemiser


def parse_lines(
    data: bytes, oxf, skolem: Skolemiser, messages: Messages, line_offset: int
) -> tuple[bytes, bool]:
    """The final lines of a block of whole N-Triples/N-Quads lines, and whether one has a graph label.
    Lines already in canonical form are copied by the compiled scanner (:mod:`.native`) when it is
    built; the others are parsed and serialised by pyoxigraph."""
    if native.available() and not skolem.relabel:
        quads = oxf == ox.RdfFormat.N_QUADS
        out, slow, numbers, named = native.canonical_lines(data, quads, skolem.prefix)
        if not slow:
            return out, named
        rest = _parse_pyoxigraph(slow, oxf, skolem, messages, lambda i: line_offset + numbers[i - 1] + 1)
        return out + rest, named or (quads and has_named_graph(rest))
    out = _parse_pyoxigraph(data, oxf, skolem, messages, lambda i: line_offset + i)
    return out, oxf == ox.RdfFormat.N_QUADS and has_named_graph(out)


def _parse_pyoxigraph(data: bytes, oxf, skolem: Skolemiser, messages: Messages, line_no) -> bytes:
    """The final lines of whole N-Triples/N-Quads lines through pyoxigraph; ``line_no(i)`` is the
    document's line number of the block's ``i``-th line (from 1). A block with an error is parsed
    again line by line, so one bad statement costs only its own line (a line longer than the
    parser's token buffer too: it raises MemoryError)."""
    try:
        return canonical_lines(serialize_quads(ox.parse(data, oxf)), skolem, messages, line_no(1))
    except (SyntaxError, MemoryError):
        pass
    out = []
    for i, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            out.append(canonical_lines(serialize_quads(ox.parse(line, oxf)), skolem, messages, line_no(i)))
        except SyntaxError as exc:
            messages.add("error", str(exc), line_no(i), exc.offset)
        except MemoryError as exc:
            messages.add("error", "statement of %d bytes dropped: %s" % (len(line), exc), line_no(i))
    return b"".join(out)


def _line_count(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def parse_line_based(path: Path, fmt: str, sink: SortedSink, messages: Messages, chunk_bytes: int) -> None:
    oxf = OX_FORMATS[fmt]
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
                sink.add_lines(*parse_lines(data, oxf, sink.skolem, messages, line_offset))
                line_offset += _line_count(data)
            if not chunk:
                break


# -- line-based documents in parallel ------------------------------------------------------------
#
# A large N-Triples/N-Quads document is cut into ``parse_chunk`` byte ranges; each forked worker takes the
# next range (the lines that start in it), parses, serialises and skolemises it, and writes the lines
# straight into its own external sort; ``sort -m -u`` merges the workers' sorted outputs. Workers
# report counts and messages per range; line numbers are made absolute afterwards.


def _read_range(f, index: int, span: int, size: int) -> bytes:
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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _parse_ranges(
    path: str,
    fmt: str,
    skolem: Skolemiser,
    cap: int,
    counter,
    n_ranges: int,
    span: int,
    fd: int,
) -> list[tuple]:
    """Parse the next untaken byte range until none is left, writing the final lines to ``fd``
    (a sort's input); per range: its index, lines, statements, errors, warnings, messages, and
    whether a named graph was seen so far."""
    oxf = OX_FORMATS[fmt]
    size = os.path.getsize(path)
    done: list[tuple] = []
    named = False
    with open(path, "rb") as f:
        while True:
            with counter.get_lock():
                index = counter.value
                counter.value = index + 1
            if index >= n_ranges:
                return done
            data = _read_range(f, index, span, size)
            local = CleanResult(format=fmt)
            out, in_graph = parse_lines(data, oxf, skolem, Messages(local, cap), 0) if data else (b"", False)
            if out:
                named = named or in_graph
                _write_all(fd, out)
            done.append(
                (
                    index,
                    _line_count(data),
                    out.count(b"\n"),
                    local.errors,
                    local.warnings,
                    local.messages,
                    named,
                )
            )


def _range_worker(*args, conn) -> None:
    """:func:`_parse_ranges` in a forked process; the answer (or the error) goes back on ``conn``."""
    try:
        conn.send(_parse_ranges(*args))
    except BaseException as exc:  # reported to the parent, which fails the document
        conn.send(("error", "%s: %s" % (type(exc).__name__, exc)))
    finally:
        conn.close()


def can_fork(workers: int) -> bool:
    return (
        workers > 1
        and "fork" in multiprocessing.get_all_start_methods()
        and not multiprocessing.current_process().daemon
    )


def parse_line_based_parallel(
    path: Path, fmt: str, sink: SortedSink, messages: Messages, workers: int
) -> None:
    span = sink.options.parse_chunk
    sorters = sink.start_sorters(workers)
    if sorters is None:
        parse_line_based(path, fmt, sink, messages, span)
        return
    ctx = multiprocessing.get_context("fork")
    n_ranges = max(1, -(-path.stat().st_size // span))
    counter = ctx.Value("q", 0)
    shared = (str(path), fmt, sink.skolem, messages.cap, counter, n_ranges, span)
    jobs = []
    # This process parses too (with the first sort): one process fewer holding a copy of its memory.
    for sorter in sorters[1:]:
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(
            target=_range_worker,
            daemon=True,
            args=(*shared, pipe_of(sorter.stdin).fileno()),
            kwargs={"conn": send},
        )
        proc.start()
        send.close()
        jobs.append((recv, proc))
    for sorter in sorters[1:]:
        pipe_of(sorter.stdin).close()  # the workers hold it: each sort ends when the workers are done
    done, failure = [], None
    try:
        done.extend(_parse_ranges(*shared, pipe_of(sorters[0].stdin).fileno()))
    except Exception as exc:  # the workers are still collected below
        failure = "%s: %s" % (type(exc).__name__, exc)
    finally:
        pipe_of(sorters[0].stdin).close()
    for recv, proc in jobs:
        try:
            answer = recv.recv()
        except EOFError:
            answer = ("error", "a parsing worker died (exit code %s)" % proc.exitcode)
        recv.close()
        proc.join()
        if isinstance(answer, tuple):
            failure = answer[1]
        else:
            done.extend(answer)
    if failure is not None:
        raise CleaningError("parsing failed: %s" % failure)
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
