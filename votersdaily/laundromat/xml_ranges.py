"""A large RDF/XML document parsed in ranges at once: cut between the top-level node elements of its
``rdf:RDF`` root (where :func:`.native.xml_cuts` finds them), each range parsed by pyoxigraph in a
worker (this process and a forked one) as a document of its own: the document's prolog and root
start tag (its namespaces, ``xml:base`` and ``xml:lang`` with it), the range, the root's end tag.

The ranges give the statements the whole document gives, in the same order: a node element's
statements depend only on it and on what it inherits from the root. The one rule that spans
elements, that an ``rdf:ID`` is used once, is why a document with an attribute named ``ID`` is not
cut. The final lines are made as for the whole document: those the compiled scanner copies go to
each worker's sorted runs, the others (blank nodes the parser invented, numbered in order of first
appearance; dot segments; RDF 1.2 terms) through :mod:`.rdf11` here, range after range, so the
numbers and messages are those of one parse. A range with any error gives the document back to
the caller, which parses it whole, so its messages and what it keeps are those of one parse too.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pyoxigraph as ox

from . import native
from .clean_types import Messages
from .external_sort import RunWriter, SortedSink
from .line_ranges import can_fork, run_forked
from .rdf11 import canonical_lines

#: The prolog (XML declaration, comments, processing instructions) and the root's start tag: group 1
#: its name, group 2 its attributes. A DOCTYPE is not matched: such a document is parsed whole.
_ROOT = re.compile(
    rb"""\A(?:\s+|<\?(?:[^?]|\?(?!>))*\?>|<!--(?:[^-]|-(?!->))*-->)*"""
    rb"""<(rdf:RDF|RDF)((?:\s+[^\s=/<>]+\s*=\s*(?:"[^"<]*"|'[^'<]*'))*)\s*>"""
)
_RDF_NAMESPACE = rb"""\s%s\s*=\s*(["'])http://www\.w3\.org/1999/02/22-rdf-syntax-ns#\1"""
#: Bytes of the document the prolog and root start tag are looked for in.
HEAD_BYTES = 1 << 16
#: Ranges a document is cut into, or more of ``sorted_run_bytes`` each (each worker holds its range,
#: its statements and their run at once: the memory of the tree does not grow with the document).
RANGES = 16
#: Statements serialised at a time.
BATCH = 10_000


def _root(head: bytes) -> re.Match[bytes] | None:
    """The root start tag when it is ``rdf:RDF`` in the RDF namespace (declared on it)."""
    root = _ROOT.match(head)
    if root is None:
        return None
    declaration = b"xmlns:rdf" if root.group(1) == b"rdf:RDF" else b"xmlns"
    return root if re.search(_RDF_NAMESPACE % declaration, root.group(2)) else None


class _Document(NamedTuple):
    """What each worker needs of the document: where it is, its ranges (start, end), the root's start
    and end tags that wrap a range, and how to read and skolemise it."""

    path: str
    bounds: list[tuple[int, int]]
    root_tag: bytes
    end_tag: bytes
    base_iri: str | None
    prefix: bytes


#: A parsed range: its index, the statements copied to the worker's runs, the file of its other
#: lines (None: none), whether it had an error.
_Range = tuple[int, int, str | None, bool]


def _parse_ranges(
    doc: _Document, counter: Any, output: RunWriter, tmp: Path
) -> tuple[list[_Range], list[str]]:
    """Parse the next untaken range until none is left; the ranges parsed and the runs written."""
    path, bounds, root_tag, end_tag, base_iri, prefix = doc
    done: list[_Range] = []
    with open(path, "rb") as f:
        while True:
            with counter.get_lock():
                index = counter.value
                counter.value = index + 1
            if index >= len(bounds):
                return done, output.flush()
            start, end = bounds[index]
            document = b"".join(
                [
                    root_tag if index else b"",
                    os.pread(f.fileno(), end - start, start),
                    end_tag if index < len(bounds) - 1 else b"",
                ]
            )
            statements, others = 0, []
            try:
                for block in _serialized(document, base_iri):
                    scanned = native.canonical_lines(block, True, prefix, relabel=True, dots=True)
                    output.add(scanned.canonical)
                    statements += scanned.statements
                    if scanned.slow:
                        others.append(scanned.slow)
            except (SyntaxError, MemoryError, ValueError):
                done.append((index, 0, None, True))
                continue
            other_path = None
            if others:
                other_path = str(tmp / ("xml-others-%05d" % index))
                Path(other_path).write_bytes(b"".join(others))
            done.append((index, statements, other_path, False))


def _serialized(document: bytes, base_iri: str | None) -> Iterator[bytes]:
    """Blocks of the N-Quads pyoxigraph gives for a range: the compiled reader's when the range is
    plain RDF/XML it reads (the same bytes, without a Python object per statement), else pyoxigraph's."""
    lines = native.rdfxml_lines(document)
    if lines is not None:
        yield lines
        return
    quads = ox.parse(document, ox.RdfFormat.RDF_XML, base_iri=base_iri)
    while block := ox.serialize(itertools.islice(quads, BATCH), format=ox.RdfFormat.N_QUADS):
        yield block


def parse_rdfxml_in_ranges(
    path: Path, base_iri: str | None, sink: SortedSink, messages: Messages, workers: int
) -> bool:
    """The document's statements into ``sink`` from ranges parsed at once: True; False, with
    nothing added, when it is not cut (small, not an ``rdf:RDF`` root, not plain markup, an ``ID``
    attribute, no compiled path, no fork) or a range has an error: the caller parses it whole."""
    options, size = sink.options, path.stat().st_size
    if not native.available() or size < options.run_bytes or size == 0 or not can_fork(workers):
        return False
    span = min(max(size // RANGES, options.parse_chunk), options.sorted_run_bytes)
    with open(path, "rb") as f:
        root = _root(f.read(HEAD_BYTES))
    cuts = native.xml_cuts(path, root.end(), span) if root is not None else None
    if root is None or not cuts:
        return False
    starts = [0, *cuts]
    bounds = list(zip(starts, [*cuts, size], strict=True))
    counter = multiprocessing.get_context("fork").Value("q", 0)
    outputs = [RunWriter(sink.tmp, "x%d" % i, options.sorted_run_bytes) for i in range(workers)]
    doc = _Document(
        str(path), bounds, root.group(0), b"</" + root.group(1) + b">", base_iri, sink.skolem.prefix
    )
    done: list[_Range] = []
    runs: list[str] = []
    for ranges, written in run_forked(
        _parse_ranges, [(doc, counter, output, sink.tmp) for output in outputs]
    ):
        done.extend(ranges)
        runs.extend(written)
    done.sort()
    if any(failed for *_, failed in done):
        for leftover in [*runs, *(other for _, _, other, _ in done if other)]:
            Path(leftover).unlink(missing_ok=True)
        return False
    sink.add_runs(runs, sum(statements for _, statements, _, _ in done), False)
    for _, _, other, _ in done:
        if other is not None:
            other_path = Path(other)
            sink.add_lines(canonical_lines(other_path.read_bytes(), sink.skolem, messages, None, sink.dots))
            other_path.unlink()
    return True
