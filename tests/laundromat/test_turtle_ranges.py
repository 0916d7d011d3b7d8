"""A Turtle or TriG document read by the compiled reader in two ranges (votersdaily/laundromat/
turtle_ranges.py) gives the lines of one reading of the whole document, or gives up where that
reading gives up: the W3C Turtle and TriG documents (positive and negative, read in place from
../shared/conformance) and generated documents (tests/laundromat/test_native.py's grammar of blank
nodes, collections, graphs and directives) cut at every line start, the two ranges read one after
the other in this process; the benchmark's statements as Turtle and TriG, cleaned end to end in two
processes, to the bytes pyoxigraph's path gives."""

from __future__ import annotations

import random
import shutil
import tempfile
from pathlib import Path

import pyoxigraph as ox
import pytest

from benchmarks.laundromat import XSD, statement
from tests.laundromat.conformance import ROOT, load_manifest
from tests.laundromat.test_native import KEY, TURTLE_FORMATS, _clean, _turtle_document
from votersdaily.laundromat import native, readers, turtle_ranges
from votersdaily.laundromat.clean_types import GENID_BASE, CleanOptions, CleanResult, Messages
from votersdaily.laundromat.external_sort import RunWriter, SortedSink
from votersdaily.laundromat.skolem import Skolemiser

pytestmark = [
    pytest.mark.skipif(not ROOT.exists(), reason="%s is absent (../shared/conformance)" % ROOT),
    pytest.mark.skipif(not native.available(), reason="the compiled module is not built (scripts/setup.sh)"),
]

#: Any document is cut (run_bytes 1), in two ranges.
IN_RANGES = CleanOptions(parse_workers=2, run_bytes=1)


def _read(path: Path, fmt: str, base_iri: str | None, tmp: Path, cut: int | None) -> tuple | None:
    """The document's final lines (sorted, each once), statements and whether one is named, read
    whole (``cut`` None) or in two ranges cut at ``cut``, the second read after the first in this
    process; None when the reader gives up (and then no run is left). With a cut, also whether the
    two ranges were used (rather than the first reader reading on), and whether the second
    numbered anonymous nodes (its statements with them renumbered here)."""
    folder = Path(tempfile.mkdtemp(dir=tmp))
    result = CleanResult(format=fmt)
    sink = SortedSink(
        result, Skolemiser(GENID_BASE, KEY, relabel=True), Messages(result, 10), IN_RANGES, folder
    )
    used = []
    try:
        if cut is None:
            writer = RunWriter(folder, "whole", IN_RANGES.sorted_run_bytes)
            lines = native.TurtleLines(path, fmt == "TriG", base_iri, sink.skolem.prefix, 1 << 12)
            size = path.stat().st_size
            span = turtle_ranges.Span(0, size, size)
            read = turtle_ranges.read_range(lines, writer, span, turtle_ranges.RUNS, IN_RANGES)
            if not read.read:
                return None
            sink.add_runs(read.runs, read.statements, read.named)
        else:

            def in_sequence(work, jobs):
                answers = [work(*job) for job in jobs]
                ((first, _),) = jobs[0][5]  # the first range's reader, held for reading on
                used.extend([first.at_cut and answers[1].read, answers[1].deferred is not None])
                return answers

            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(turtle_ranges, "cut_of", lambda path, size: cut)
                patch.setattr(turtle_ranges, "run_forked", in_sequence)
                if not turtle_ranges.read_in_ranges(path, fmt == "TriG", base_iri, sink):
                    assert not list(folder.iterdir()), "a reader that gave up left its runs"
                    return None
        return b"".join(sink.merged()), result.statements, sink.named, *used
    finally:
        sink.abort()
        shutil.rmtree(folder)


def _line_starts(data: bytes) -> list[int]:
    return [i + 1 for i, byte in enumerate(data[:-1]) if byte == ord("\n")]


def _assert_every_cut_reads_as_whole(documents, tmp_path: Path) -> tuple[int, int, int]:
    """Each (data, format, base) cut at every line start: as read whole. How many cuts used both
    ranges, how many the first reader read on from, and how many renumbered the second's nodes."""
    path, both, alone, renumbered = tmp_path / "doc", 0, 0, 0
    runs = tmp_path / "runs"
    runs.mkdir()
    for data, fmt, base_iri in documents:
        path.write_bytes(data)
        whole = _read(path, fmt, base_iri, runs, None)
        for cut in _line_starts(data):
            ranges = _read(path, fmt, base_iri, runs, cut)
            if whole is None or ranges is None:
                assert ranges is None and whole is None, (data, fmt, base_iri, cut)
                continue
            assert ranges[:3] == whole, (data, fmt, base_iri, cut)
            both, alone = both + ranges[3], alone + (not ranges[3])
            renumbered += ranges[3] and ranges[4]
    return both, alone, renumbered


def test_w3c_documents_cut_at_every_line_read_as_whole(tmp_path):
    """Every W3C Turtle and TriG document (syntax tests, positive and negative, and evaluation
    tests, with their base), cut at every line start: the lines read whole, or none where the
    reader gives up on the whole document."""
    documents = [
        (t.action.read_bytes(), fmt, t.base)
        for suite, fmt in (("rdf11/rdf-turtle", "Turtle"), ("rdf11/rdf-trig", "TriG"))
        for t in load_manifest(suite)
        if t.action.suffix != ".nt"
    ]
    both, alone, renumbered = _assert_every_cut_reads_as_whole(documents, tmp_path)
    assert both > 350 and alone > 450 and renumbered > 50, (both, alone, renumbered)


@pytest.mark.parametrize(("suite", "fmt"), [("rdf11/rdf-turtle", "Turtle"), ("rdf11/rdf-trig", "TriG")])
def test_every_w3c_document_in_two_processes_cleans_as_pyoxigraph(suite, fmt, tmp_path, monkeypatch):
    """Every W3C Turtle and TriG document, positive and negative, with its base, cleaned end to end
    with a cut near its middle (the second range in a forked process): the bytes, counts and
    messages of pyoxigraph's path."""
    tests = [t for t in load_manifest(suite) if t.action.suffix != ".nt"]
    assert len(tests) > 100
    in_two, reads = 0, _first_range_reads(monkeypatch)
    for test in tests:
        reads.clear()
        fast = _clean(test.action, fmt, tmp_path / "fast", True, monkeypatch, test.base, IN_RANGES)
        slow = _clean(test.action, fmt, tmp_path / "slow", False, monkeypatch, test.base)
        assert fast == slow, test
        in_two += reads == [(True, True)]  # the first range stopped at the cut, and was not resumed
    assert in_two > 40, in_two


def _first_range_reads(monkeypatch) -> list[tuple[bool, bool]]:
    """What each read of this process's reader gives from now on: (at_cut, read)."""
    reads = []
    real = turtle_ranges.read_range

    def spy(lines, *args):
        answer = real(lines, *args)
        reads.append((lines.at_cut, answer.read))
        return answer

    monkeypatch.setattr(turtle_ranges, "read_range", spy)
    return reads


def test_generated_documents_cut_at_every_line_read_as_whole(tmp_path):
    """Generated documents (directives after statements, anonymous nodes and labels that look
    generated on either side of the cut, graphs, multi-line strings) cut at every line start."""
    rnd = random.Random(29)
    documents = []
    for _ in range(400):
        fmt = rnd.choice(list(TURTLE_FORMATS))
        data = _turtle_document(rnd, fmt == "TriG")
        lines = data.split(b"\n")
        if (
            rnd.random() < 0.3
        ):  # a directive after the statements (the cut must be after it, or the reader reads on)
            lines.insert(rnd.randrange(3, len(lines)), b"@prefix ex: <http://ex.org/other#> .")
        documents.append((b"\n".join(lines), fmt, rnd.choice(["http://base.org/dir/file.ttl", None])))
    both, alone, renumbered = _assert_every_cut_reads_as_whole(documents, tmp_path)
    assert both > 60 and alone > 140 and renumbered > 40, (both, alone, renumbered)


def test_a_range_stops_only_where_a_statement_of_the_top_level_starts(tmp_path):
    """The first reader stops at its end only at a statement's start outside any graph, with no
    directive after its first statement; else it reads on, and the lines are those of the whole."""
    path = tmp_path / "doc.trig"
    data = (
        b"@prefix ex: <http://ex.org/> .\n"
        b"ex:a ex:p ex:b .\n"
        b'ex:c ex:p """x\n'
        b'ex:d ex:p ex:e .\n"""\n'
        b".\n"
        b"ex:g {\n"
        b"ex:f ex:p ex:g .\n"
        b"}\n"
        b"@prefix ex: <http://ex.org/2/> .\n"
        b"ex:h ex:p ex:i .\n"
    )
    path.write_bytes(data)
    whole = b"".join(native.TurtleLines(path, True, None, b"<g/", 64))
    stops = {}
    for cut in _line_starts(data):
        lines = native.TurtleLines(path, True, None, b"<g/", 64, stop=cut)
        first = b"".join(lines)
        stops[data[cut:].split(b"\n")[0]] = lines.at_cut
        if lines.at_cut:
            lines.resume()
            first += b"".join(lines)
        assert first == whole, cut
    assert stops == {
        b"ex:a ex:p ex:b .": True,
        b'ex:c ex:p """x': True,
        b"ex:d ex:p ex:e .": False,  # inside a string
        b'"""': False,
        b".": False,
        b"ex:g {": True,
        b"ex:f ex:p ex:g .": False,  # inside a graph
        b"}": False,
        b"@prefix ex: <http://ex.org/2/> .": True,
        b"ex:h ex:p ex:i .": False,  # after a directive that follows a statement
    }


def test_a_later_range_numbers_anonymous_nodes_apart_and_gives_up_on_generated_labels(tmp_path):
    """Anonymous nodes and labels that look generated are numbered in the order of the whole
    document: a later range numbers its anonymous nodes from 0 and gives their statements apart,
    marked, for renumbered() to add the count before it; it gives up on a label that looks
    generated (the first range may have numbered the same label)."""
    path = tmp_path / "doc.ttl"
    head = b"<http://a/s> <http://a/p> <http://a/o> .\n"
    for tail, final, deferred in [
        (b"<http://a/s> <http://a/p> [ <http://a/q> [] ] .\n", b"", True),
        (b"<http://a/s> <http://a/p> _:b1 .\n", b"<http://a/s> <http://a/p> <g/b1> .\n", False),
        (b"<http://a/s> <http://a/p> _:0123456789abcdef .\n", None, False),
    ]:
        path.write_bytes(head + tail)
        lines = native.TurtleLines(path, False, None, b"<g/", 64, start=len(head))
        if final is None:
            with pytest.raises(native.TurtleUnsupported, match="looks generated in a later range"):
                b"".join(lines)
            continue
        given, apart = b"", b""
        for block in lines:
            given += block
            apart += lines.take_deferred()
        assert given == final
        if deferred:
            assert apart == (
                b"<g/-anon\x010> <http://a/q> <g/-anon\x011> .\n<http://a/s> <http://a/p> <g/-anon\x010> .\n"
            )
            assert native.renumbered(apart, 5) == (
                b"<g/-anon5> <http://a/q> <g/-anon6> .\n<http://a/s> <http://a/p> <g/-anon5> .\n"
            )
        else:
            assert apart == b""


def test_a_later_range_mostly_of_anonymous_nodes_is_left_to_the_first_reader(tmp_path, monkeypatch):
    """Statements with a node the second range numbered are renumbered and sorted by one process
    after both ranges: when they are more than DEFERRED_SHARE of its lines, the second range gives up
    and the first reader reads on (the same lines either way)."""
    path = tmp_path / "doc.ttl"
    rows = [b"@prefix ex: <http://ex.org/> ."]
    rows += [b"ex:s%d ex:p %s ." % (i, b"[ ex:q %d ]" % i if i % 2 else b"ex:o") for i in range(400)]
    data = b"\n".join(rows) + b"\n"
    path.write_bytes(data)
    cut = _line_starts(data)[200]
    whole = _read(path, "Turtle", None, tmp_path, None)
    monkeypatch.setattr(turtle_ranges, "TURTLE_BLOCK", 256)
    for after, both in ((1 << 30, True), (1024, False)):
        monkeypatch.setattr(turtle_ranges, "DEFERRED_AFTER", after)
        ranges = _read(path, "Turtle", None, tmp_path, cut)
        assert ranges[:3] == whole and ranges[3] == both, after


def _benchmark_document(fmt: str, tmp_path: Path, statements: int) -> Path:
    """The benchmark's statements as Turtle (prefixes, abbreviations) or as TriG, in one named graph."""
    rnd = random.Random(29)
    nt = "".join(statement(i, rnd) for i in range(statements)).encode("utf-8")
    prefixes = {"r": "http://example.org/resource/", "v": "http://example.org/vocab#", "xsd": XSD}
    quads = ox.parse(nt, ox.RdfFormat.N_TRIPLES)
    if fmt == "TriG":
        quads = (
            ox.Quad(q.subject, q.predicate, q.object, ox.NamedNode("http://example.org/g")) for q in quads
        )
    path = tmp_path / ("bench." + fmt.lower())
    path.write_bytes(ox.serialize(quads, format=TURTLE_FORMATS[fmt], prefixes=prefixes))
    return path


@pytest.mark.parametrize("fmt", list(TURTLE_FORMATS))
def test_the_benchmark_statements_in_two_processes_clean_as_pyoxigraph(fmt, tmp_path, monkeypatch):
    """The benchmark's statements as Turtle (and TriG, in one named graph: never cut, its ranges
    would start inside the graph) cleaned end to end, the first range here and the second in a
    forked process: the bytes, counts and messages of pyoxigraph's path."""
    path = _benchmark_document(fmt, tmp_path, 20_000)
    read = _first_range_reads(monkeypatch)
    fast = _clean(path, fmt, tmp_path / "fast", True, monkeypatch, options=IN_RANGES)
    slow = _clean(path, fmt, tmp_path / "slow", False, monkeypatch)
    assert fast == slow
    # Turtle: the first range stopped at the cut and the second was read (in the fork); the TriG
    # document's cut is inside its graph: the first reader read on.
    assert read == [(fmt == "Turtle", True)], read


@pytest.mark.parametrize("workers", [1, 2])
def test_the_runs_of_a_document_merge_in_one_pass(workers, tmp_path, monkeypatch):
    """Runs are sized for the document (twice its size in lines), so they merge in one pass: with
    runs of sorted_run_bytes (256 bytes here, the reader's blocks too) the benchmark's 4,000
    statements made about 1,900 runs, merged in two passes. Read whole and in two ranges, to
    pyoxigraph's bytes."""
    path = _benchmark_document("Turtle", tmp_path, 4_000)
    merges, passes = [], []
    real, real_pass = native.run_merger, native.merge_runs
    monkeypatch.setattr(native, "run_merger", lambda runs, mark: merges.append(len(runs)) or real(runs, mark))
    monkeypatch.setattr(
        native, "merge_runs", lambda runs, fd: passes.append(len(runs)) or real_pass(runs, fd)
    )
    monkeypatch.setattr(turtle_ranges, "TURTLE_BLOCK", 256)
    monkeypatch.setattr(readers, "TURTLE_BLOCK", 256)
    options = CleanOptions(parse_workers=workers, run_bytes=64 << 10, sorted_run_bytes=256)
    fast = _clean(path, "Turtle", tmp_path / "fast", True, monkeypatch, options=options)
    slow = _clean(path, "Turtle", tmp_path / "slow", False, monkeypatch)
    assert fast == slow
    assert len(merges) == 1 and 100 < merges[0] <= 256 and not passes, (merges, passes)
