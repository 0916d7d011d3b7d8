"""The compiled fast paths (votersdaily/laundromat/_ntscan.c, built by scripts/setup.sh) against the
pure-Python paths they stand in for: the same cleaned output, counts, errors and line numbers.

Inputs: every N-Triples and N-Quads file of the W3C RDF suites (../shared/conformance: positive and
negative syntax tests, the eval results of all five RDF 1.1 suites, the RDF 1.2 c14n tests), read in
place; variants derived from their lines by a one-byte change (each of the bytes the grammar
turns on, at every position); the benchmark's generated statements. The UTF-8 check is compared on
the same files and on one-byte corruptions of them, with chunk boundaries at every offset.

The compiled Turtle and TriG reader (_turtle.c) against pyoxigraph with rdf11.py and skolem.py: the
W3C Turtle and TriG documents (with and without their base) and variants of them with bytes
replaced, deleted or inserted, documents generated from the constructs that decide the order of
statements (nested blank nodes, collections, graphs), the grammar shapes above, the benchmark's
statements as Turtle and TriG. The other formats' serializer lines through the scanner: every W3C
Turtle, TriG, RDF/XML and JSON-LD (toRdf) document.
"""

from __future__ import annotations

import codecs
import heapq
import itertools
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyoxigraph as ox
import pytest

from benchmarks.laundromat import XSD, statement
from tests.laundromat.conformance import ROOT, load_manifest
from tests.support.services import REPO
from votersdaily.laundromat import (
    encodings,
    external_sort,
    native,
    rdf11,
    xml_ranges,
    xmlentities,
    xmlliterals,
)
from votersdaily.laundromat.clean_types import GENID_BASE, CleanResult, Messages
from votersdaily.laundromat.cleaning import CleanOptions, clean_file
from votersdaily.laundromat.skolem import Skolemiser

pytestmark = pytest.mark.skipif(not ROOT.exists(), reason="%s is absent (../shared/conformance)" % ROOT)

KEY = "0123456789abcdef0123456789abcdef"
#: Bytes the scanner's grammar decides on: delimiters, escapes, case, controls, UTF-8 lead and
#: continuation bytes (U+FFFE/U+FFFF are EF BF BE/BF), the characters IRIs may not hold.
PROBES = b' \t\r"\\<>_:.@^-#?/%Aaz09{}|`\x00\x7f\x80\xbe\xbf\xc3\xef\xf0\xff' + b"'u"


def _line_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*") if p.suffix in (".nt", ".nq") and p.is_file())


def _clean(
    path: Path,
    fmt: str,
    out: Path,
    use_native: bool,
    monkeypatch,
    base_iri: str | None = None,
    options: CleanOptions | None = None,
) -> tuple:
    with monkeypatch.context() as patch:
        if not use_native:
            patch.setattr(native, "_module", None)
        options = options or CleanOptions(parse_workers=1, run_bytes=1 << 30)
        result = clean_file(path, fmt, KEY, out, options=options, base_iri=base_iri)
    data = Path(result.path).read_bytes() if result.path else b""
    return (
        data,
        result.statements,
        result.unique,
        result.errors,
        result.warnings,
        result.messages,
        result.named_graphs,
    )


def _assert_same(path: Path, tmp_path: Path, monkeypatch) -> None:
    for fmt in ("N-Triples", "N-Quads"):
        fast = _clean(path, fmt, tmp_path / "fast", True, monkeypatch)
        slow = _clean(path, fmt, tmp_path / "slow", False, monkeypatch)
        assert fast == slow, (path, fmt)


def _assert_same_document(path: Path, fmt: str, tmp_path: Path, monkeypatch, base_iri: str | None) -> None:
    fast = _clean(path, fmt, tmp_path / "fast", True, monkeypatch, base_iri)
    slow = _clean(path, fmt, tmp_path / "slow", False, monkeypatch, base_iri)
    if fmt == "JSON-LD":
        # pyoxigraph's JSON-LD gives its statements in the order of their random blank node labels
        # and, of two inconsistent terms, names the first in a hash order: its messages differ from
        # one run to the next on either path, their kinds do not.
        fast, slow = ((*r[:5], sorted(m["kind"] for m in r[5]), *r[6:]) for r in (fast, slow))
    assert fast == slow, (path, fmt, base_iri)


@pytest.mark.parametrize(
    ("suite", "fmt"),
    [("rdf11/rdf-turtle", "Turtle"), ("rdf11/rdf-trig", "TriG"), ("rdf11/rdf-xml", "RDF/XML")],
)
def test_every_w3c_document_cleans_the_same(suite, fmt, tmp_path, monkeypatch):
    """The formats pyoxigraph parses whole (their serializer's lines through the compiled scanner,
    or the compiled parsers, when built): every test document of the suite, positive and negative,
    with its base IRI and (relative IRIs then fail) without one, cleans to the same bytes, counts
    and messages as the pure-Python path."""
    tests = [t for t in load_manifest(suite) if t.action.suffix != ".nt"]
    assert len(tests) > 100
    for test in tests:
        for base_iri in (test.base, None):
            _assert_same_document(test.action, fmt, tmp_path, monkeypatch, base_iri)


def test_every_w3c_json_ld_document_cleans_the_same(tmp_path, monkeypatch):
    """JSON-LD's statements come from pyoxigraph's dataset; the compiled scanner copies them when
    built: the toRdf documents of the JSON-LD 1.1 suite clean the same on both paths."""
    documents = sorted((REPO / "w3c-suites" / "json-ld-api-1.1" / "toRdf").glob("*-in.jsonld"))
    assert len(documents) > 300
    for path in documents:
        base_iri = "https://w3c.github.io/json-ld-api/tests/toRdf/" + path.name
        _assert_same_document(path, "JSON-LD", tmp_path, monkeypatch, base_iri)


def test_the_compiled_module_is_built():
    """CI builds it (scripts/setup.sh): the fast path must be what the tests and benchmarks measure."""
    assert native.available(), "votersdaily/laundromat/_ntscan.c is not built: run scripts/setup.sh"


def test_every_w3c_line_based_file_cleans_the_same(tmp_path, monkeypatch):
    files = _line_files()
    assert len(files) > 500
    copied = 0
    for path in files:
        _assert_same(path, tmp_path, monkeypatch)
        out = native.canonical_lines(path.read_bytes(), True, b"<g/").canonical
        copied += out.count(b"\n")
    assert copied > 1000  # the fast path did the work for most of these statements


def test_one_byte_variants_of_real_lines_clean_the_same(tmp_path, monkeypatch):
    """Each real statement line with one byte replaced by one of PROBES, one byte deleted, or one of
    PROBES inserted, at every position (derived variants): the fast path may only take a line
    pyoxigraph parses and writes back byte for byte, else it must leave the line (and its error,
    with its line number) to pyoxigraph."""
    lines = set()
    for path in _line_files():
        for line in path.read_bytes().split(b"\n"):
            if 20 < len(line) < 160 and line.rstrip().endswith(b"."):
                lines.add(line)
    rnd = random.Random(7)
    variants = []
    for line in sorted(lines):
        for at in range(len(line)):
            replaced, inserted = (bytes([PROBES[rnd.randrange(len(PROBES))]]) for _ in range(2))
            variants.append(line[:at] + replaced + line[at + 1 :])
            variants.append(line[:at] + line[at + 1 :])
            variants.append(line[:at] + inserted + line[at:])
    rnd.shuffle(variants)
    for start in range(0, len(variants), 20_000):
        path = tmp_path / ("variants-%d.nq" % start)
        path.write_bytes(b"\n".join(variants[start : start + 20_000]) + b"\n")
        _assert_same(path, tmp_path, monkeypatch)


def test_the_benchmark_statements_clean_the_same(tmp_path, monkeypatch):
    rnd = random.Random(3)
    path = tmp_path / "bench.nt"
    path.write_text("".join(statement(i, rnd) for i in range(30_000)), encoding="utf-8")
    _assert_same(path, tmp_path, monkeypatch)
    out, slow, numbers, _, lines, statements = native.canonical_lines(path.read_bytes(), False, b"<g/")
    assert out.count(b"\n") == statements > 25_000 and len(numbers) == slow.count(b"\n")
    assert lines == 30_000


def _shapes() -> list[bytes]:
    """Statements built from the pieces each part of the grammar turns on (language subtags, IRI
    authorities, paths, queries, fragments, blank node labels, literal escapes), valid or not."""
    subtags = b"en e eng engl latn gb GB Zz 123 1234 12345 123456789 x a1 abcdefghi".split()
    tags = [b"-".join(p) for n in (1, 2, 3) for p in itertools.product(subtags, repeat=n)]
    authorities = (
        b"//a // //a:80 //a: //a:x //a:8f //u@a //[::1] //a%41 //a%4 //a.b-c_d~e //a!$&'()*+,;=".split()
    )
    paths = [*b"/ /p //p /a/./b/../c /%7e /%G0 /a:b@c /a|b /\xc3\xa9 p :p".split(), b"", b"/a b"]
    tails = [*b"? ?q=1&r ?q?/ #f #f/? #f#g ?q#f #".split(), b""]
    iris = [
        b"<" + scheme + a + p + t + b">"
        for scheme in (b"http:", b"H+t.-p:", b"1x:", b":")
        for a in [*authorities, b""]
        for p in paths
        for t in tails
    ]
    labels = b"_:a _:1 _:-a _:a- _:a.b _:a..b _:a. _:a:b _:\xc3\xa9 _:".split()
    # As written in the file: escapes (canonical, or not: \' \u \U), an invalid \x, a lone backslash.
    escapes = [rb"x", rb"\t\b\n\r\f\"\\", rb"\'", rb"\x7f", b"\\", b"\r"]
    escapes += [
        b"\\u" + hex4
        for hex4 in b"0041 0000 0008 000A 000B 001F 0020 0022 005C 007E 007F 0080 00e9 D800 DFFF E000 FFFD FFFE FFFF 00G1 12".split()
    ]
    escapes += [
        b"\\U" + hex8 for hex8 in b"00000041 0001F600 0010FFFF 00110000 0000D800 0000FFFE 1234".split()
    ]
    raw = [b"\t", b"\x7f", "\u00e9\ufffd\U0001f600".encode(), "\ufffe".encode(), "\uffff".encode()]
    bodies = escapes + raw
    literals = [b'"' + body + b'"' for body in [b"", *bodies]]
    literals += [b'"x"@' + tag for tag in tags]
    literals += [b'"x"^^' + iri for iri in iris[::7]]
    literals += [b'"x"^^<http://www.w3.org/2001/XMLSchema#string>']
    literals += [b'"x"^^<http://www.w3.org/1999/02/22-rdf-syntax-ns#langString>']
    p = b"<http://example.org/p>"
    lines = [iri + b" " + p + b" " + iri + b" ." for iri in iris]
    lines += [label + b" " + p + b" " + label + b" " + label + b" ." for label in labels]
    lines += [b"<http://example.org/s> " + p + b" " + literal + b" ." for literal in literals]
    lines += [b"<http://example.org/s> " + p + b" " + literal + b" " + p + b" ." for literal in literals[::5]]
    return lines


def test_grammar_shapes_clean_the_same(tmp_path, monkeypatch):
    path = tmp_path / "shapes.nq"
    path.write_bytes(b"\n".join(_shapes()) + b"\n")
    _assert_same(path, tmp_path, monkeypatch)


def test_lines_the_fast_path_leaves_to_pyoxigraph(tmp_path, monkeypatch):
    """Statements valid but outside the scanner's grammar, and a line past the parser's token
    buffer: the scanner copies none of them; the cleaned output is pyoxigraph's."""
    lines = [
        b"<http://example.org/s>  <http://example.org/p> <http://example.org/o>.",  # spacing
        b"<http://example.org/s\\u00E9> <http://example.org/p> <http://example.org/o> .",  # UCHAR in an IRI
        b"<http://example.org/s> <http://example.org/p> <http://example.org/o> . # comment",
        b'<http://example.org/s> <http://example.org/p> "x"@en-gb-oed .',  # grandfathered
        b'<http://example.org/s> <http://example.org/p> "' + b"x" * native.MAX_FAST_LINE + b'" .',
    ]
    data = b"\n".join(lines) + b"\n"
    out, slow, numbers, named, _, statements = native.canonical_lines(data, False, b"<g/")
    assert out == b"" and statements == 0 and slow == data and not named
    assert list(numbers) == list(range(len(lines)))
    path = tmp_path / "doc.nt"
    path.write_bytes(data)
    _assert_same(path, tmp_path, monkeypatch)


def test_literals_the_scanner_writes_in_canonical_form(tmp_path, monkeypatch):
    """Escapes decoded and re-escaped, raw controls escaped, language tags in lower case: the
    scanner takes these lines and writes what pyoxigraph would."""
    s, p = b"<http://example.org/s>", b"<http://example.org/p>"
    literals = [
        rb'"caf\u00E9 \U0001F600 \u0022 \u005C \u0009 \u0001 \u007F \uFFFE \U0000FFFF"',
        b'"tab\tdel\x7f \xef\xbf\xbe"',
        b'"x"@EN-gb',
        b'"x"@de-Latn-CH',
        rb'"\u00e9"^^<http://example.org/dt#X>',
        b'"simple"^^<http://www.w3.org/2001/XMLSchema#string>',
    ]
    data = b"".join(s + b" " + p + b" " + literal + b" .\n" for literal in literals)
    out, slow, *_ = native.canonical_lines(data, False, b"<g/")
    assert slow == b"" and out != data
    assert (
        b'"x"@en-gb .' in out
        and b'"simple" .' in out
        and 'café 😀 \\" \\\\ \\t \\u0001 \\u007F \\uFFFE \\uFFFF'.encode() in out
    )
    path = tmp_path / "doc.nt"
    path.write_bytes(data)
    _assert_same(path, tmp_path, monkeypatch)


def test_blank_nodes_and_graph_labels_in_the_fast_path():
    data = (
        b"_:a.b <http://example.org/p> _:c <http://example.org/g> .\n<http://x/> <http://y/> <http://z/> .\n"
    )
    out, slow, _, named, lines, statements = native.canonical_lines(data, True, b"<https://g/K/")
    assert slow == b"" and named and lines == statements == 2
    assert out == (
        b"<https://g/K/a.b> <http://example.org/p> <https://g/K/c> <http://example.org/g> .\n"
        b"<http://x/> <http://y/> <http://z/> .\n"
    )
    # As N-Triples, a fourth term is not a statement of the format: left to pyoxigraph.
    assert native.canonical_lines(data, False, b"<g/").slow == data.split(b"\n")[0] + b"\n"


def _utf8_both(path: Path, monkeypatch) -> tuple:
    fast = encodings._utf8_chars(path, 0, path.stat().st_size)
    with monkeypatch.context() as patch:
        patch.setattr(native, "_module", None)
        slow = encodings._utf8_chars(path, 0, path.stat().st_size)
    return fast, slow


def test_the_utf8_check_agrees_with_python(tmp_path, monkeypatch):
    """Valid files, and one-byte corruptions of them (derived variants), with chunk boundaries that
    cut multi-byte sequences: valid or not, characters and line endings as Python's decoder says."""
    monkeypatch.setattr(encodings, "CHUNK", 7)
    rnd = random.Random(11)
    multibyte = [p for p in _line_files() if any(b >= 0x80 for b in p.read_bytes())]
    assert multibyte
    path = tmp_path / "doc"
    seen_invalid = 0
    for source in multibyte[:40]:
        data = source.read_bytes().replace(b"\n", b"\r\n", 3)
        variants = [data] + [
            data[:at]
            + bytes([rnd.choice(b"\x80\xbf\xc0\xc3\xe0\xed\xef\xf0\xf4\xf5\xff\r\n")])
            + data[at + 1 :]
            for at in rnd.sample(range(len(data)), min(len(data), 25))
        ]
        for variant in variants:
            path.write_bytes(variant)
            fast, slow = _utf8_both(path, monkeypatch)
            assert fast == slow, (source, variant)
            try:
                text = variant.decode("utf-8")
            except UnicodeDecodeError:
                seen_invalid += 1
                assert fast is None
            else:
                assert fast is not None and fast.chars == len(text) and fast.crlf == text.count("\r\n")
    assert seen_invalid > 50


@pytest.mark.parametrize(
    "data",
    [
        "\ud7ff\ue000\uffff\U00010000\U0010ffff".encode(),
        b"\xed\xa0\x80",  # a surrogate
        b"\xc0\xaf",  # overlong
        b"\xf4\x90\x80\x80",  # past U+10FFFF
        b"ok\xe2\x82",  # cut at the end
    ],
)
def test_the_utf8_check_on_sequence_boundaries(data, tmp_path, monkeypatch):
    try:
        expected: int | None = len(codecs.decode(data, "utf-8"))
    except UnicodeDecodeError:
        expected = None
    for chunk in (1, 2, 3, 5, 64):
        monkeypatch.setattr(encodings, "CHUNK", chunk)
        path = tmp_path / "doc"
        path.write_bytes(data)
        fast, slow = _utf8_both(path, monkeypatch)
        assert fast == slow
        assert (fast.chars if fast else None) == expected


def _lines_of_suites() -> list[bytes]:
    return [line for p in _line_files() for line in p.read_bytes().split(b"\n")]


def test_sorted_unique_is_byte_order_each_line_once():
    lines = _lines_of_suites()
    random.Random(5).shuffle(lines)
    block = b"\n".join(lines + lines[:500]) + b"\n"
    expected = b"".join(line + b"\n" for line in sorted(set(lines)))
    assert native.sorted_unique(block) == expected
    assert native.sorted_unique(b"") == b""
    assert native.sorted_unique(b"b\na\xff\na") == b"a\na\xff\nb\n"  # the last line had no newline


def _write_run(block: bytes, path: Path) -> int:
    """The lines of ``block`` written to ``path`` as a sorted run; how many."""
    with open(path, "wb", buffering=0) as f:
        return native.write_sorted_run(block, f.fileno())


def _run_text(runs: list[str]) -> bytes:
    """The lines of sorted runs (the merge of them), newline-terminated."""
    return _read_merger(runs, external_sort.GZIP_PIECE, b"\n")[0]


def _written_sorted(block: bytes, tmp_path: Path) -> bytes:
    """The lines of ``block`` written as a sorted run and read back; the run is front-coded."""
    count = _write_run(block, tmp_path / "run")
    written = _run_text([str(tmp_path / "run")])
    assert count == written.count(b"\n")
    assert (tmp_path / "run").stat().st_size < len(written) or not written  # what lines share, once
    return written


def test_the_sort_orders_by_bytes_across_its_8_byte_steps(tmp_path):
    """Lines of NUL, ``a`` and 0xFF bytes of every length around the sort's 8-byte steps (a line
    that is a prefix of another, one ending where another has a NUL, lines alike up to a step), each
    several times, shuffled: both the sorted bytes and the run written straight from the block
    are Python's byte order, each line once; so are the suites' lines written as a run."""
    rnd = random.Random(8)
    lines = [bytes(rnd.choice(b"\x00a\xff") for _ in range(rnd.randrange(18))) for _ in range(3000)]
    lines += [b"a" * n for n in range(18)] + [b"a" * n + b"\x00" for n in range(18)]
    lines *= 3
    rnd.shuffle(lines)
    block = b"\n".join(lines)  # the last line without its newline
    expected = b"".join(line + b"\n" for line in sorted(set(lines)))
    assert native.sorted_unique(block) == expected
    assert _written_sorted(block, tmp_path) == expected
    assert _written_sorted(b"", tmp_path) == b""
    suites = b"\n".join(_lines_of_suites()) + b"\n"
    assert _written_sorted(suites, tmp_path) == native.sorted_unique(suites)


def _sorted_runs(tmp_path: Path, rnd: random.Random, n: int, share: int) -> tuple[list[str], bytes]:
    """``n`` sorted run files (the first empty) of the suites' lines and lines longer than the
    merge's read and write buffers, each holding one in ``share`` of them; and all their lines,
    sorted, each once, newline-terminated."""
    lines = [*_lines_of_suites(), b"x" * (70 << 10), b"y" * (3 << 20), b"x" * (70 << 10) + b"z"]
    runs, every = [], set()
    for i in range(n):
        run = tmp_path / ("run-%d" % i)
        chosen = rnd.sample(lines, len(lines) // share) if i else []
        every.update(chosen)
        _write_run(b"\n".join(chosen) + b"\n" if chosen else b"", run)
        runs.append(str(run))
    return runs, b"".join(line + b"\n" for line in sorted(every))


def test_merge_runs_merges_any_number_of_runs_each_line_once(tmp_path):
    """Runs with shared lines, an empty run, lines longer than the merge's read and write buffers."""
    runs, expected = _sorted_runs(tmp_path, random.Random(9), 40, 10)
    out = tmp_path / "merged"
    with open(out, "wb") as f:
        written = native.merge_runs(runs, f.fileno())
    assert _run_text([str(out)]) == expected and written == expected.count(b"\n")
    with pytest.raises(OSError):
        native.merge_runs([str(tmp_path / "missing")], 1)


def _read_merger(runs: list[str], size: int, mark: bytes) -> tuple[bytes, bytes, list[int]]:
    """Everything a RunMerger of ``runs`` gives in pieces of ``size``: the bytes, the marked lines
    and the piece lengths; its counts checked against the bytes."""
    merger = native.run_merger(runs, mark)
    pieces, marked = [], []
    while piece := merger.read(size):
        pieces.append(piece)
        marked.append(merger.marked())
    assert merger.read(size) == b"" and merger.marked() == b""
    data = b"".join(pieces)
    assert (merger.lines_read, merger.bytes_read) == (data.count(b"\n"), len(data))
    merger.close()
    with pytest.raises(RuntimeError, match="closed"):
        merger.read(size)
    return data, b"".join(marked), [len(piece) for piece in pieces]


def test_run_merger_gives_the_merge_in_fixed_pieces(tmp_path):
    """The merge read in pieces (what the gzip is fed) is the runs' lines in order, each once, cut
    every ``size`` bytes, whatever the size: lines cut between pieces, lines longer than a piece and
    than the read buffer, an empty run. Its marked lines are those whose predicate holds the mark, in
    order (the suites' lines whose second field holds "#type>", and ``rdf:type`` itself). A run this
    module did not write (text, a run cut short) is an error, not lines."""
    runs, expected = _sorted_runs(tmp_path, random.Random(11), 12, 4)
    mark = b"#type>"
    marked = b"".join(
        line + b"\n"
        for line in expected.split(b"\n")[:-1]
        if len(line.split(b" ")) > 1 and mark in line.split(b" ")[1]
    )
    assert marked, "the suites have rdf:type statements"
    for size in (1, 7, 4096, external_sort.GZIP_PIECE):
        data, found, sizes = _read_merger(runs, size, mark)
        assert data == expected and found == marked, size
        assert all(n == size for n in sizes[:-1]) and 0 < sizes[-1] <= size
    assert _read_merger([], 5, mark) == (b"", b"", [])
    with pytest.raises(OSError):
        native.run_merger([str(tmp_path / "missing")], mark)
    with pytest.raises(ValueError, match="positive"):
        native.run_merger(runs, mark).read(0)
    whole = Path(runs[1]).read_bytes()
    for damaged in (b"<http://a.example/s> <http://a.example/p> <http://a.example/o> .\n", whole[:-1]):
        Path(runs[1]).write_bytes(damaged)
        with pytest.raises(OSError):
            _read_merger(runs, 4096, mark)


def _clean_by_every_sort(path: Path, tmp_path: Path, monkeypatch) -> list[CleanResult]:
    """The N-Triples document at ``path`` cleaned by ranges into small runs (more than SORT_BATCH of
    them for 40,000 statements: a two-pass merge) merged by the compiled path, by GNU sort and by
    the pure-Python merge."""
    options = CleanOptions(parse_workers=2, parse_chunk=16 << 10, run_bytes=1, sorted_run_bytes=16 << 10)
    results = []
    for mode in ("native", "gnu", "python"):
        with monkeypatch.context() as patch:
            if mode != "native":
                patch.setattr(external_sort.native, "available", lambda: False)
            if mode == "python":
                patch.setattr(external_sort.shutil, "which", lambda name: None)
            results.append(clean_file(path, "N-Triples", KEY, tmp_path / mode, options=options))
    return results


def test_data_dumps_are_the_same_on_every_path(tmp_path, monkeypatch):
    """A document naming more than MAX_DATA_DUMPS dumps (the VoID statement of tests/laundromat/
    sitedata.py, its object numbered; among the benchmark's statements) cleaned with the compiled
    runs' merge, GNU sort and the pure-Python merge: the same first MAX_DATA_DUMPS dumps, in the
    output's order."""
    rnd = random.Random(5)
    dumps = [
        "<http://example.org/ds> <http://rdfs.org/ns/void#dataDump> <http://example.org/dumps/%04d.nt> .\n"
        % i
        for i in range(external_sort.MAX_DATA_DUMPS + 200)
    ]
    text = [statement(i, rnd) for i in range(20_000)] + dumps
    rnd.shuffle(text)
    path = tmp_path / "doc.nt"
    path.write_text("".join(text), encoding="utf-8")
    found = [
        (result.key, result.void_data_dumps) for result in _clean_by_every_sort(path, tmp_path, monkeypatch)
    ]
    expected = ["http://example.org/dumps/%04d.nt" % i for i in range(external_sort.MAX_DATA_DUMPS)]
    assert found == [(found[0][0], expected)] * 3


def test_native_sort_cleans_as_gnu_sort_and_python(tmp_path, monkeypatch):
    """The benchmark's statements through the parallel path with small runs (more than SORT_BATCH of
    them: a two-pass merge), against GNU sort and the pure-Python merge: the same cleaned bytes."""
    rnd = random.Random(4)
    path = tmp_path / "bench.nt"
    path.write_text("".join(statement(i, rnd) for i in range(40_000)), encoding="utf-8")
    keys = {
        (result.key, result.unique, result.statements)
        for result in _clean_by_every_sort(path, tmp_path, monkeypatch)
    }
    assert len(keys) == 1 and next(iter(keys))[1] > 30_000


C14N = ROOT / "rdf12" / "rdf-n-triples" / "c14n"


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "ranges"])
def test_messages_carry_the_line_of_their_statement(tmp_path, monkeypatch, parallel):
    """A base direction and a triple term (RDF 1.2: the warning and the error RDF 1.1 output
    makes) after a comment and a plain statement: each message has its own statement's line on
    both paths, serial or by ranges (they gave the block's first line, the comment's). Derived
    from the RDF 1.2 c14n tests dirlangtagged_string.nt and triple-term-01.nt, their lines put
    after a comment and a statement, and repeated."""
    direction, triple_term = (
        next(
            line for line in (C14N / name).read_text(encoding="utf-8").split("\n") if line and line[0] != "#"
        )
        for name in ("dirlangtagged_string.nt", "triple-term-01.nt")
    )
    head = ["# a comment", '<http://a.example/s> <http://a.example/p> "x" .']
    lines = ([*head, direction, triple_term]) * 3
    path = tmp_path / "doc.nt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expected = [("warning", 3), ("error", 4), ("warning", 7), ("error", 8), ("warning", 11), ("error", 12)]
    options = CleanOptions(parse_workers=2, parse_chunk=64, run_bytes=1, sorted_run_bytes=64)
    for use_native in (True, False):
        with monkeypatch.context() as patch:
            if not use_native:
                patch.setattr(native, "_module", None)
            result = clean_file(
                path,
                "N-Triples",
                KEY,
                tmp_path / str(use_native),
                options=options if parallel else CleanOptions(parse_workers=1),
            )
        assert sorted((m["kind"], m["line"]) for m in result.messages) == sorted(expected), use_native


def _in_a_subprocess(code: str) -> subprocess.CompletedProcess:
    """``code`` run by a fresh interpreter in the checkout (a crash of the compiled module ends
    that process, not the test run)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def test_a_crafted_order_sorts_in_a_small_stack():
    """What the fuzzer found: the sort recursed into both the lesser and the greater part, so a
    crafted order (tests/laundromat/sort_adversary.py: 2,000 canonical lines that nested 660
    frames) overflowed a 32 KiB thread stack (and cost quadratic time). Now at most log2 n frames
    are nested, and a part whose pivots keep failing is heapsorted."""
    answer = _in_a_subprocess(
        """
        import threading
        from tests.laundromat.sort_adversary import crafted_lines
        from votersdaily.laundromat import native
        lines, nesting = crafted_lines(2000)
        assert nesting > 600, nesting
        block = b"\\n".join(lines) + b"\\n"
        threading.stack_size(32 << 10)
        got = []
        worker = threading.Thread(target=lambda: got.append(native.sorted_unique(block)))
        worker.start()
        worker.join()
        assert got == [b"".join(line + b"\\n" for line in sorted(set(lines)))]
        print("sorted")
        """
    )
    assert answer.returncode == 0 and answer.stdout == "sorted\n", (answer.returncode, answer.stderr[-2000:])


def test_merge_runs_takes_its_list_once(tmp_path):
    """What the fuzzer found: merge_runs read the list again after each path's ``__fspath__`` (Python
    code), so a list emptied meanwhile was read past its end. It takes a copy first: the paths it
    was given are merged."""
    answer = _in_a_subprocess(
        """
        import os, sys
        from votersdaily.laundromat import native
        folder = sys.argv[1] if len(sys.argv) > 1 else %r
        runs = []
        class Shrinking:
            def __init__(self, path):
                self.path = path
            def __fspath__(self):
                runs.clear()  # the caller's list, emptied while merge_runs goes through it
                return self.path
        for i in range(4):
            path = os.path.join(folder, "run-%%d" %% i)
            with open(path, "wb") as f:
                native.write_sorted_run(b"line %%d\\nz\\n" %% i, f.fileno())
            runs.append(Shrinking(path))
        out = os.path.join(folder, "merged")
        with open(out, "wb") as f:
            written = native.merge_runs(runs, f.fileno())
        merger = native.run_merger([out], b"-")
        print(written, merger.read(1 << 20))
        """
        % str(tmp_path)
    )
    assert answer.returncode == 0, (answer.returncode, answer.stderr[-2000:])
    assert answer.stdout == "5 %r\n" % b"line 0\nline 1\nline 2\nline 3\nz\n"


# -- a fuzzer held to the pure-Python paths --------------------------------------------------------

#: Terms the fuzzer puts in, by the position they may take: what it found (graph IRIs holding
#: "_:"), triple terms, base directions, escapes, labels and tags at the grammar's edges.
GRAPH_SPLICES = [b"<H:_:(>", b"<http://e/g_:x>", b"_:Z", b"_:a.b", "_:\u00e9".encode()]
OBJECT_SPLICES = [
    *GRAPH_SPLICES,
    b'"x"@EN-gb',
    b'"x"@ar--rtl',
    b'"x"^^<http://www.w3.org/2001/XMLSchema#string>',
    rb'"\u0000\U0001F600\t\\"',
    b"<<( <http://a/s> <http://a/p> <http://a/o> )>>",
]
SPLICES = [*OBJECT_SPLICES, b"# comment", b"\r", b""]


def _valid_terms(lines: list[bytes]) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """The terms of real lines that make a statement in each position: subjects, predicates, objects."""
    terms = {t for line in lines for t in line.split(b" ") if t[:1] in (b"<", b"_", b'"')}

    def fits(statement: bytes) -> bool:
        try:
            return len(list(ox.parse(statement, ox.RdfFormat.N_QUADS))) == 1
        except SyntaxError:
            return False

    s, p = b"<http://a/s>", b"<http://a/p>"
    subjects = sorted(t for t in terms if fits(t + b" " + p + b" " + s + b" ."))
    predicates = sorted(t for t in subjects if t[:1] == b"<")
    objects = sorted(t for t in terms if fits(s + b" " + p + b" " + t + b" ."))
    return subjects, predicates, objects


def _statement(rnd: random.Random, subjects, predicates, objects) -> bytes:
    """A statement (a quad one time in two) of real terms, one in three of them a splice."""

    def pick(real: list[bytes], splices: list[bytes]) -> bytes:
        return rnd.choice(splices if splices and rnd.random() < 0.3 else real)

    terms = [pick(subjects, GRAPH_SPLICES), pick(predicates, []), pick(objects, OBJECT_SPLICES)]
    if rnd.random() < 0.5:
        terms.append(pick(subjects, GRAPH_SPLICES))
    return b" ".join(terms) + b" ."


def _mutated(rnd: random.Random, line: bytes) -> bytes:
    """A line with one to three bytes replaced, inserted or deleted, or terms replaced by splices."""
    for _ in range(rnd.randint(1, 3)):
        kind = rnd.randrange(4)
        at = rnd.randrange(len(line) + 1)
        if kind == 0 and line:
            at = min(at, len(line) - 1)
            line = line[:at] + bytes([rnd.choice(PROBES)]) + line[at + 1 :]
        elif kind == 1:
            line = line[:at] + bytes([rnd.choice(PROBES)]) + line[at:]
        elif kind == 2 and line:
            line = line[:at] + line[at + 1 :]
        else:
            parts = line.split(b" ")
            parts[rnd.randrange(len(parts))] = rnd.choice(SPLICES)
            line = b" ".join(parts)
    return line


#: Seconds the fuzz test may run before it stops with what it has checked (it checks ROUNDS
#: documents when the machine is quiet).
FUZZ_SECONDS = 6.0
ROUNDS = 60


def test_fuzzed_documents_clean_sort_and_merge_the_same_on_both_paths(tmp_path, monkeypatch):
    """Seeded and bounded: documents of mutated real lines (the W3C N-Triples/N-Quads files, the
    benchmark's statements) cleaned by the compiled and the pure-Python paths give the same bytes,
    counts and messages; the sort, the merge and the UTF-8 check agree with Python on the same
    lines."""
    rnd = random.Random(27)
    lines = [line for path in _line_files() for line in path.read_bytes().split(b"\n") if line.strip()]
    lines += [statement(i, random.Random(i)).encode().rstrip(b"\n") for i in range(200)]
    pools = _valid_terms(lines)
    deadline = time.monotonic() + FUZZ_SECONDS
    rounds = 0
    for rounds in range(1, ROUNDS + 1):
        if rounds % 2:  # valid statements and comments: one block, whose messages must find their lines
            fuzzed = [b"# comment" if rnd.random() < 0.05 else _statement(rnd, *pools) for _ in range(150)]
        else:
            fuzzed = [
                _statement(rnd, *pools) if rnd.random() < 0.3 else _mutated(rnd, rnd.choice(lines))
                for _ in range(150)
            ]
        document = b"\n".join(fuzzed) + (b"\n" if rnd.random() < 0.9 else b"")
        path = tmp_path / "doc.nq"
        path.write_bytes(document)
        _assert_same(path, tmp_path, monkeypatch)
        valid = native.utf8_counts(document)[0]
        try:
            text = document.decode("utf-8")
        except UnicodeDecodeError as exc:
            assert valid == exc.start
        else:
            assert native.utf8_counts(document) == (
                len(document),
                len(text),
                text.count("\n"),
                text.count("\r"),
                text.count("\r\n"),
            )
        runs = [sorted(set(fuzzed[i::3])) for i in range(3)]
        for i, run in enumerate(runs):
            assert native.sorted_unique(b"".join(line + b"\n" for line in fuzzed[i::3])) == b"".join(
                line + b"\n" for line in run
            ), "a fuzzed line holds no newline, so each is one line"
            assert _written_sorted(b"".join(line + b"\n" for line in fuzzed[i::3]), tmp_path) == b"".join(
                line + b"\n" for line in run
            )
            _write_run(b"".join(line + b"\n" for line in run), tmp_path / ("run-%d" % i))
        with open(tmp_path / "merged", "wb") as f:
            written = native.merge_runs([str(tmp_path / ("run-%d" % i)) for i in range(3)], f.fileno())
        merged = b"".join(line + b"\n" for line in dict.fromkeys(heapq.merge(*runs)))
        assert _run_text([str(tmp_path / "merged")]) == merged
        assert written == merged.count(b"\n")
        in_pieces = _read_merger(
            [str(tmp_path / ("run-%d" % i)) for i in range(3)], rnd.randrange(1, 200), b"<"
        )
        assert in_pieces[0] == merged
        if time.monotonic() > deadline:
            break
    assert rounds >= 5
    print("%d fuzzed documents checked" % rounds)


# -- the compiled Turtle and TriG reader ----------------------------------------------------------

TURTLE_FORMATS = {"Turtle": ox.RdfFormat.TURTLE, "TriG": ox.RdfFormat.TRIG}


def _turtle_both(data: bytes, fmt: str, base_iri: str | None, tmp_path: Path) -> tuple:
    """The final lines of a Turtle or TriG document from the compiled reader (None when it gives
    up) and from pyoxigraph, rdf11.py and skolem.py (None when pyoxigraph finds an error), sorted,
    with the messages the Python path made (the compiled reader reads only what makes none)."""
    path = tmp_path / "doc"
    path.write_bytes(data)
    skolem = Skolemiser(GENID_BASE, KEY, relabel=True)
    try:
        lines = native.TurtleLines(path, fmt == "TriG", base_iri, skolem.prefix, 1 << 12)
        compiled = b"".join(sorted(b"".join(lines).splitlines(keepends=True)))
        named = lines.named
    except native.TurtleUnsupported:
        compiled = named = None
    messages = Messages(CleanResult(format=fmt), 100)
    try:
        block = ox.serialize(
            ox.parse(data, TURTLE_FORMATS[fmt], base_iri=base_iri), format=ox.RdfFormat.N_QUADS
        )
    except (SyntaxError, ValueError):
        return compiled, None
    python = rdf11.canonical_lines(block or b"", skolem, messages, None, dots=True)
    python = b"".join(sorted(python.splitlines(keepends=True)))
    if compiled is None:
        return None, python
    return (compiled, named, []), (python, rdf11.has_named_graph(python), messages.result.messages)


def _assert_turtle_twins(documents, tmp_path: Path) -> int:
    """Each (data, format, base) read alike by both paths when the compiled reader reads it; how many
    it read."""
    read = 0
    for data, fmt, base_iri in documents:
        compiled, python = _turtle_both(data, fmt, base_iri, tmp_path)
        if compiled is not None:
            read += 1
            assert compiled == python, (data, fmt, base_iri)
    return read


def test_the_turtle_reader_reads_the_grammar_shapes_as_pyoxigraph(tmp_path):
    """Each statement of the N-Triples grammar shapes (IRIs of every part, labels, escapes, language
    tags, datatypes; valid or not) as a Turtle and a TriG document, with and without a base."""
    documents = [
        (line + b"\n", fmt, base)
        for line in _shapes()[::6]
        for fmt, base in (("Turtle", "http://example.org/base/doc.ttl"), ("TriG", None))
    ]
    assert _assert_turtle_twins(documents, tmp_path) > 350


#: Pieces of Turtle the generated documents are made of: relative and prefixed IRIs (escapes,
#: percent-encodings, dots), literals of every form, labels that look generated, and the
#: constructs whose order of statements decides the numbers of anonymous blank nodes.
_IRIS = [
    *[
        "<http://ex.org/a>",
        "<b>",
        "<#c>",
        "ex:d",
        ":e",
        "ex:",
        "<//h/p>",
        "<?q>",
        "<>",
        "ex:a.b",
        "<g;x>",
        "<http://ex.org/p/q?r#s>",
    ],
    r"ex:x\.y",
    "ex:%41b",
    "<a:b>",
    "<../up>",
    "ex:a.",
]
_LITERALS = [
    *['"a"', "'b'", '"""c\nd"""', "'''e''f'''", '"x"@en', '"y"@EN-gb', '"x"@en-latn-us', '"z"^^xsd:integer'],
    *[
        '"w"^^<http://ex.org/dt>',
        '"s"^^xsd:string',
        "1",
        "-2.5",
        "3e4",
        "1.e5",
        "+.5",
        "true",
        "false",
        '""',
        "''",
    ],
    r'"\u00e9\t"',
    r'"\U0001F600"',
    r'"q\"r"',
    '"\x01\x7f"',
    '"""a""b"""',
    '"lang"@en-',
]
_LABELS = ["_:a", "_:b1", "_:b2", "_:x.y", "_:0123456789abcdef0", "_:fedcba9876543210", "_:B1"]


def _turtle_document(rnd: random.Random, trig: bool) -> bytes:
    def obj(depth: int) -> str:
        r = rnd.random()
        if depth < 4 and r < 0.2:
            return "[ " + po(depth + 1) + " ]"
        if depth < 4 and r < 0.3:
            return "( " + " ".join(obj(depth + 1) for _ in range(rnd.randrange(4))) + " )"
        if r < 0.35:
            return "[]"
        return rnd.choice(_LITERALS if r < 0.6 else _LABELS if r < 0.75 else _IRIS)

    def po(depth: int) -> str:
        parts = [
            rnd.choice(["a", *_IRIS]) + " " + " , ".join(obj(depth) for _ in range(rnd.randrange(1, 3)))
            for _ in range(rnd.randrange(1, 3))
        ]
        return " ; ".join(parts) + rnd.choice(["", " ;"])

    def triples() -> str:
        r = rnd.random()
        if r < 0.2:
            return "[ " + po(1) + " ]" + rnd.choice(["", " " + po(0)])
        if r < 0.3:
            return "( " + " ".join(obj(1) for _ in range(rnd.randrange(1, 3))) + " ) " + po(0)
        return rnd.choice(["[]", *_LABELS, *_IRIS]) + " " + po(0)

    out = ["@prefix ex: <http://ex.org/ns#> .", "PREFIX : <http://ex.org/e/>"]
    out += ["@prefix xsd: <http://www.w3.org/2001/XMLSchema#> ."]
    if rnd.random() < 0.3:
        out.append("@base <http://base.org/x/y> .")
    for _ in range(rnd.randrange(1, 6)):
        if trig and rnd.random() < 0.5:
            label = rnd.choice(["", "<g1> ", "GRAPH ex:g ", "[] ", "_:g ", "GRAPH [] "])
            body = " . ".join(triples() for _ in range(rnd.randrange(3)))
            out.append(label + "{ " + body + rnd.choice(["", " ."]) + " }")
        else:
            out.append(triples() + " .")
    return ("\n".join(out) + "\n").encode("utf-8")


def test_generated_turtle_documents_read_as_pyoxigraph_reads_them(tmp_path):
    """Documents made of nested blank node property lists, collections and graphs: the statements
    and the numbers of their anonymous blank nodes (the order pyoxigraph gives them in) alike."""
    rnd = random.Random(11)
    documents = []
    for _ in range(2000):
        fmt = rnd.choice(list(TURTLE_FORMATS))
        base = rnd.choice(["http://base.org/dir/file.ttl", None, "file:///tmp/a.ttl"])
        documents.append((_turtle_document(rnd, fmt == "TriG"), fmt, base))
    assert _assert_turtle_twins(documents, tmp_path) > 250


def test_variants_of_w3c_turtle_documents_read_as_pyoxigraph_reads_them(tmp_path):
    """The W3C Turtle and TriG documents with one to three bytes replaced, deleted or inserted
    (derived variants): the compiled reader reads only what pyoxigraph reads, to the same lines."""
    probes = PROBES + b"\n()[],;eE+"
    documents = [
        (t.action.read_bytes(), fmt, t.base)
        for suite, fmt in (("rdf11/rdf-turtle", "Turtle"), ("rdf11/rdf-trig", "TriG"))
        for t in load_manifest(suite)
        if t.action.suffix != ".nt"
    ]
    rnd = random.Random(5)
    variants = []
    for _ in range(6000):
        data, fmt, base = rnd.choice(documents)
        variants.append((_variant(rnd, data, probes), fmt, base))
    assert _assert_turtle_twins(variants, tmp_path) > 600


def _variant(rnd: random.Random, document: bytes, probes: bytes) -> bytes:
    """``document`` with one to three bytes replaced, deleted or inserted (each inserted or new byte
    one of ``probes``)."""
    data = bytearray(document)
    for _ in range(rnd.choice([1, 1, 2, 3])):
        at, probe = rnd.randrange(len(data) + 1), probes[rnd.randrange(len(probes))]
        op = rnd.randrange(3) if at < len(data) else 2
        if op == 0:
            data[at] = probe
        elif op == 1:
            del data[at]
        else:
            data.insert(at, probe)
    return bytes(data)


def test_the_benchmark_statements_as_turtle_clean_the_same(tmp_path, monkeypatch):
    """The benchmark's statements written as Turtle (prefixes, abbreviations) and as TriG: read by
    the compiled reader, cleaned to the same bytes as by pyoxigraph."""
    rnd = random.Random(4)
    nt = "".join(statement(i, rnd) for i in range(20_000)).encode("utf-8")
    prefixes = {"r": "http://example.org/resource/", "v": "http://example.org/vocab#", "xsd": XSD}
    for fmt, oxf in TURTLE_FORMATS.items():
        path = tmp_path / ("bench." + fmt.lower())
        quads = ox.parse(nt, ox.RdfFormat.N_TRIPLES)
        if fmt == "TriG":
            quads = (
                ox.Quad(q.subject, q.predicate, q.object, ox.NamedNode("http://example.org/g")) for q in quads
            )
        path.write_bytes(ox.serialize(quads, format=oxf, prefixes=prefixes))
        lines = native.TurtleLines(path, fmt == "TriG", None, b"<g/", 1 << 20)
        assert sum(block.count(b"\n") for block in lines) == lines.statements == 20_000
        _assert_same_document(path, fmt, tmp_path, monkeypatch, None)


def test_the_turtle_reader_gives_up_where_serd_would_read_on(tmp_path):
    """What a lenient reader (serd 0.30, Debian's libserd) takes without a word is an error here, so
    pyoxigraph reports it: an empty anonymous subject without properties, a surrogate escape, a NUL."""
    for data, fmt in [
        (b"[] .\n", "Turtle"),
        (b"<g> { [] . <a> <b> <c> }\n", "TriG"),
        (b'<http://a/s> <http://a/p> "\\ud800" .\n', "Turtle"),
        (b"<http://a/s> <http://a/p> <http://a/o> .\x00\n", "Turtle"),
        (b"<http://a/s> <http://a/p> [ = <http://a/x> ] .\n", "Turtle"),
    ]:
        compiled, python = _turtle_both(data, fmt, None, tmp_path)
        assert compiled is None and python is None, data


def test_the_turtle_reader_leaves_long_lines_to_pyoxigraph(tmp_path):
    """pyoxigraph holds a token's line in a 16 MiB buffer and refuses a token past it: a line of
    8 MiB or more is left to it (which reads this one), a shorter one is read."""
    for size, read in ((9 << 20, False), (1 << 20, True)):
        data = b'<http://a/s> <http://a/p> """' + b"x\ny" * (size // 3) + b'""" .\n'
        compiled, python = _turtle_both(data, "Turtle", None, tmp_path)
        assert (compiled is not None) == read and python is not None
        assert compiled is None or compiled == python


# -- RDF/XML in ranges ----------------------------------------------------------------------------

#: Ranges cut at every top-level element of any document (the sizes that decide it made tiny).
IN_RANGES = CleanOptions(parse_workers=2, run_bytes=1, parse_chunk=1)


def test_w3c_rdf_xml_documents_cut_at_every_element_clean_the_same(tmp_path, monkeypatch):
    """Each W3C RDF/XML document cut at each of its top-level elements (when it can be), the ranges
    parsed by two processes, cleans as the whole document parsed by pyoxigraph in Python does: the
    same statements, blank node numbers, errors and messages (a range with an error gives the
    document back whole)."""
    cut = 0
    for test in load_manifest("rdf11/rdf-xml"):
        if test.action.suffix != ".rdf":
            continue
        fast = _clean(test.action, "RDF/XML", tmp_path / "fast", True, monkeypatch, test.base, IN_RANGES)
        slow = _clean(test.action, "RDF/XML", tmp_path / "slow", False, monkeypatch, test.base)
        assert fast == slow, test
        root = xml_ranges._root(test.action.read_bytes()[: xml_ranges.HEAD_BYTES])
        cut += bool(root is not None and native.xml_cuts(test.action, root.end(), 1))
    assert cut > 30


def _benchmark_rdf_xml(path: Path, count: int) -> None:
    rnd = random.Random(6)
    nt = "".join(statement(i, rnd) for i in range(count)).encode("utf-8")
    prefixes = {"r": "http://example.org/resource/", "v": "http://example.org/vocab#"}
    path.write_bytes(
        ox.serialize(ox.parse(nt, ox.RdfFormat.N_TRIPLES), format=ox.RdfFormat.RDF_XML, prefixes=prefixes)
    )


def test_the_benchmark_statements_as_rdf_xml_in_ranges_clean_the_same(tmp_path, monkeypatch):
    path = tmp_path / "bench.rdf"
    _benchmark_rdf_xml(path, 20_000)
    options = CleanOptions(parse_workers=2, run_bytes=1 << 16, parse_chunk=1 << 12)
    fast = _clean(path, "RDF/XML", tmp_path / "fast", True, monkeypatch, None, options)
    slow = _clean(path, "RDF/XML", tmp_path / "slow", False, monkeypatch)
    assert fast == slow and fast[1] == 20_000
    root = xml_ranges._root(path.read_bytes()[: xml_ranges.HEAD_BYTES])
    assert root is not None and len(native.xml_cuts(path, root.end(), 1 << 16) or []) > 20


def test_rdf_xml_ranges_give_the_document_back_on_an_error_or_an_id(tmp_path, monkeypatch):
    """An element with an error in a middle range (derived from the benchmark's document): the
    whole document is parsed, so what is kept and said is what one parse keeps and says. An rdf:ID
    (unique in a document) keeps the document whole."""
    path = tmp_path / "bench.rdf"
    _benchmark_rdf_xml(path, 5_000)
    data = path.read_bytes()
    middle = data.index(b"<rdf:Description", len(data) // 2)
    options = CleanOptions(parse_workers=2, run_bytes=1 << 12, parse_chunk=1 << 10)
    for variant in (
        data[:middle] + b"<rdf:Description><broken>" + data[middle:],
        data[:middle] + b'<rdf:Description rdf:ID="x"><v:p>1</v:p></rdf:Description>' + data[middle:],
    ):
        path.write_bytes(variant)
        fast = _clean(
            path, "RDF/XML", tmp_path / "fast", True, monkeypatch, "http://example.org/doc", options
        )
        slow = _clean(path, "RDF/XML", tmp_path / "slow", False, monkeypatch, "http://example.org/doc")
        assert fast == slow
    assert native.xml_cuts(path, data.index(b">", data.index(b"<rdf:RDF")) + 1, 1) is None
    assert fast[3] == 0 and slow[1] == 5_001


def test_the_turtle_reader_leaves_a_huge_statement_to_pyoxigraph(tmp_path):
    """The reader holds a statement whole (pyoxigraph streams it): one statement of more than 64 MiB
    (one subject, many objects) is left to pyoxigraph, so the reader's memory stays bounded."""
    objects = b", ".join([b'"%d ' % i + b"y" * 200 + b'"' for i in range(330_000)])
    compiled, python = _turtle_both(
        b"<http://a/s> <http://a/p> " + objects + b" .\n", "Turtle", None, tmp_path
    )
    assert compiled is None and python is not None and python.count(b"\n") == 330_000


# -- the compiled RDF/XML reader ------------------------------------------------------------------


def _assert_rdfxml_twins(documents: list[bytes], base_iri: str | None = None) -> int:
    """Each document the compiled RDF/XML reader reads gives pyoxigraph's N-Quads to the byte (and
    pyoxigraph finds no error in it); how many it read."""
    read = 0
    for data in documents:
        compiled = native.rdfxml_lines(data)
        if compiled is None:
            continue
        read += 1
        try:
            python = ox.serialize(
                ox.parse(data, ox.RdfFormat.RDF_XML, base_iri=base_iri), format=ox.RdfFormat.N_QUADS
            )
        except (SyntaxError, ValueError) as exc:
            python = exc
        assert compiled == python, data
    return read


def _rdfxml_documents() -> list[bytes]:
    return [t.action.read_bytes() for t in load_manifest("rdf11/rdf-xml") if t.action.suffix == ".rdf"]


def test_the_rdf_xml_reader_reads_w3c_documents_as_pyoxigraph():
    """Every W3C RDF/XML document, positive and negative, with and without a base: what the reader
    reads (the flat ones) is pyoxigraph's N-Quads, in its order; the rest it leaves."""
    documents = _rdfxml_documents()
    assert len(documents) > 150
    for base_iri in ("http://example.org/base/doc.rdf", None):
        assert _assert_rdfxml_twins(documents, base_iri) > 15


def test_variants_of_rdf_xml_documents_read_as_pyoxigraph_reads_them(tmp_path):
    """The W3C documents the reader reads and the benchmark's statements as RDF/XML with one to
    three bytes replaced, deleted or inserted (derived variants): the reader reads only what
    pyoxigraph reads, to the same bytes."""
    path = tmp_path / "bench.rdf"
    _benchmark_rdf_xml(path, 300)
    documents = [d for d in _rdfxml_documents() if native.rdfxml_lines(d) is not None]
    documents.append(path.read_bytes())
    probes = PROBES + b"&;#x=/!?[]-'\n"
    rnd = random.Random(7)
    variants = [_variant(rnd, rnd.choice(documents), probes) for _ in range(4000)]
    assert _assert_rdfxml_twins(variants, "http://example.org/base/doc.rdf") > 800


#: Pieces of RDF/XML the generated documents are made of: each form the reader reads, and forms
#: next to them that it must leave (or that are errors).
_XML_SUBJECTS = [
    b'rdf:about="http://ex.org/s"',
    b"rdf:about='http://ex.org/s?q#f'",
    b'rdf:about = "http://ex.org:80/s"',
    b'rdf:about="rel"',
    b'rdf:about=""',
    b'rdf:about="http://ex.org/a/../b"',
    b'rdf:about="http://ex.org/a b"',
    b'rdf:about="http://ex.org/&amp;"',
    b'rdf:about="http://ex.org/\xc3\xa9"',
    b'rdf:about="HTTP://ex.org/S"',
    b'rdf:nodeID="b1"',
    b'rdf:nodeID="abcdef0123456789"',
    b'rdf:nodeID="1b"',
    b'rdf:nodeID="a.b"',
    b'rdf:ID="i"',
    b'rdf:about="http://ex.org/s" rdf:nodeID="b"',
    b'rdf:about="http://ex.org/s" xml:lang="en"',
    b'rdf:about="http://ex.org/s" e:attr="v"',
    b"",
]
_XML_NODES = [b"rdf:Description", b"e:Thing", b"rdf:Bag", b"f:T", b"rdf:li"]
_XML_PROPERTIES = [
    b"e:p",
    b"f:q",
    b"rdf:type",
    b"rdf:value",
    b"rdf:_3",
    b"rdf:li",
    b"rdf:about",
    b"g:p",
    b"p",
]
_XML_ATTRIBUTES = [
    b"",
    b' rdf:resource="http://ex.org/o"',
    b' rdf:resource="o"',
    b' rdf:nodeID="n1"',
    b' rdf:datatype="http://www.w3.org/2001/XMLSchema#integer"',
    b' rdf:datatype="http://www.w3.org/2001/XMLSchema#string"',
    b' rdf:datatype="http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"',
    b' rdf:datatype="http://www.w3.org/1999/02/22-rdf-syntax-ns#XMLLiteral"',
    b' xml:lang="en"',
    b' xml:lang="EN-gb"',
    b' xml:lang="zh-Hant-TW"',
    b' xml:lang="x-klingon"',
    b' xml:lang=""',
    b' xml:lang="en" rdf:datatype="http://ex.org/d"',
    b' rdf:parseType="Resource"',
    b' rdf:parseType="Literal"',
    b' xmlns:e="http://other.org/ns#"',
    b' xmlns="http://default.org/"',
    b' e:a="v"',
    b' rdf:resource="http://ex.org/o" rdf:resource="http://ex.org/o"',
]
_XML_TEXTS = [
    b"text",
    b"",
    b"  ",
    b"a &amp; b &lt;c&gt; &quot;q&quot; &apos;",
    b"&#233;&#xe9;&#x1F600;&#9;&#10;&#13;&#x0;&#xD800;&#xFFFE;&#1;&#X41;",
    b"&nbsp;",
    b'\t\n\r\n\r"\\\x7f',
    b"\x01",
    "\u00e9\ufffd\ufffe\uffff\U0001f600".encode(),
    b"\xc3",
    b"a]]>b",
    b"a]b",
    b"<![CDATA[x]]>",
    b"<!-- c -->x",
    b"<e:nested>x</e:nested>",
    b"<?pi x?>",
]
_XML_HEADS = [
    b'<?xml version="1.0"?>\n',
    b"<?xml version='1.0' encoding='UTF-8'?>",
    b'<?xml version="1.0" encoding="ISO-8859-1"?>\n',
    b"",
    b"<!-- head -->\n",
    b'<!DOCTYPE rdf:RDF [<!ENTITY e "http://ex.org/">]>\n',
    b"\xef\xbb\xbf",
]
_XML_ROOTS = [
    b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:e="http://ex.org/ns#">',
    b"<rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'\n  xmlns:e='http://ex.org/ns#' >",
    b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:e="http://ex.org/ns#" xml:lang="fr">',
    b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:e="rel/">',
    b'<rdf:RDF xmlns:rdf="http://example.org/not-rdf#" xmlns:e="http://ex.org/ns#">',
]


def _xml_pick(rnd: random.Random, pieces: list[bytes], readable: int) -> bytes:
    """One of ``pieces``, mostly one of the first ``readable`` (forms the reader reads)."""
    return rnd.choice(pieces[:readable] if rnd.random() < 0.9 else pieces)


def _xml_property(rnd: random.Random) -> bytes:
    name = _xml_pick(rnd, _XML_PROPERTIES, 5)
    attrs = _xml_pick(rnd, _XML_ATTRIBUTES, 11) + (b' xmlns:f="http://f.org/"' if rnd.random() < 0.5 else b"")
    if rnd.random() < 0.3 or b"rdf:resource" in attrs or b"rdf:nodeID" in attrs:
        return b"<%s%s%s/>" % (name, attrs, rnd.choice([b"", b" ", b"\n"]))
    end = name if rnd.random() < 0.97 else b"e:other"
    return b"<%s%s>%s</%s%s>" % (name, attrs, _xml_pick(rnd, _XML_TEXTS, 10), end, rnd.choice([b"", b" "]))


def _xml_document(rnd: random.Random) -> bytes:
    nodes = []
    for _ in range(rnd.randrange(1, 4)):
        name = _xml_pick(rnd, _XML_NODES, 2)
        subject = _xml_pick(rnd, _XML_SUBJECTS, 3) if rnd.random() < 0.7 else _XML_SUBJECTS[10]
        between = _xml_pick(
            rnd, [b"\n    ", b"\n    <!-- a - b -->", b"<!---->", b"<!-- a -- b -->", b"x"], 3
        )
        props = between.join(_xml_property(rnd) for _ in range(rnd.randrange(0, 4)))
        if not props and rnd.random() < 0.5:
            nodes.append(b"<%s %s/>" % (name, subject))
        else:
            nodes.append(b"<%s %s>\n    %s\n  </%s>" % (name, subject, props, name))
    head = _xml_pick(rnd, _XML_HEADS, 2)
    root = _xml_pick(rnd, _XML_ROOTS, 2)
    tail = _xml_pick(rnd, [b"</rdf:RDF>\n", b"</rdf:RDF>", b"</rdf:RDF><!-- end -->", b"</rdf:RDF>x", b""], 3)
    return head + root + b"\n  " + b"\n  ".join(nodes) + b"\n" + tail


def test_generated_rdf_xml_documents_read_as_pyoxigraph_reads_them():
    """Documents generated from the forms the reader reads and the forms beside them it must leave
    (nesting, parseType, rdf:li, rdf:ID, relative IRIs, entities, CDATA, bad references, encodings):
    what it reads is pyoxigraph's N-Quads to the byte, and it reads the flat shapes."""
    rnd = random.Random(8)
    documents = [_xml_document(rnd) for _ in range(6000)]
    assert _assert_rdfxml_twins(documents, "http://example.org/base/doc.rdf") > 1000
    assert _assert_rdfxml_twins(documents, None) > 1000


def test_the_benchmark_statements_as_rdf_xml_are_read_by_the_compiled_reader(tmp_path, monkeypatch):
    """The benchmark's statements as RDF/XML (pyoxigraph's serializer; the benchmark's own file is
    rapper's, the same flat shape): read by the compiled reader whole, cleaned to the same bytes as by
    pyoxigraph alone."""
    path = tmp_path / "bench.rdf"
    _benchmark_rdf_xml(path, 20_000)
    lines = native.rdfxml_lines(path.read_bytes())
    assert lines is not None and lines.count(b"\n") == 20_000
    assert _assert_rdfxml_twins([path.read_bytes()]) == 1
    _assert_same_document(path, "RDF/XML", tmp_path, monkeypatch, "http://example.org/doc.rdf")


def test_file_contains_finds_what_python_finds(tmp_path):
    """The one-pass search the RDF/XML checks use: at, before and after each start, at the file's
    end, in an empty file, past the end."""
    path = tmp_path / "doc"
    for data in (b"", b"!", b"ab!cd", b"x" * 5000 + b"parseType", b"parseTyp", b"<!ENTITY" + b"y" * 70_000):
        path.write_bytes(data)
        for needle in (b"!", b"parseType", b"y"):
            for start in sorted({0, 1, 2, len(data) - 1, len(data), len(data) + 3, len(data) // 2}):
                expected = needle in data[max(start, 0) :]
                assert native.file_contains(path, start, needle) is expected, (data[:20], needle, start)
    # across the windows the search gives the pages of (16 MiB): a needle on, before and after an edge
    window = 16 << 20
    for at in (window - 9, window - 4, window, window + 1, 2 * window - 5):
        path.write_bytes(b"x" * at + b"parseType" + b"x" * 100)
        assert native.file_contains(path, 0, b"parseType"), at
        assert native.file_contains(path, at, b"parseType") and not native.file_contains(
            path, at + 1, b"parseType"
        )


def test_the_rdf_xml_checks_decide_alike_with_the_compiled_search(tmp_path, monkeypatch):
    """The late-entity check and the XML-literal check skip their pass when the compiled search finds
    no "!" or "parseType": on every W3C RDF/XML document and variants of them with a DOCTYPE, an
    entity declaration or a parseType put at random places (derived variants), they decide as their
    pure-Python passes do."""
    rnd = random.Random(9)
    documents = _rdfxml_documents()
    pieces = [
        b"<!ENTITY e 'v'>",
        b"<!DOCTYPE rdf:RDF>",
        b"<!doctype x [<!entity y 'z'>]>",
        b" rdf:parseType='Literal'",
    ]
    variants = list(documents)
    for _ in range(300):
        data = rnd.choice(documents)
        at = rnd.randrange(len(data) + 1)
        variants.append(data[:at] + rnd.choice(pieces) + data[at:])
    path = tmp_path / "doc.rdf"

    def decisions() -> tuple:
        late = []
        for start, seen in ((0, False), (len(data) // 2, True), (len(data), False)):
            try:
                xmlentities._refuse_late_entities(path, start, seen_doctype=seen)
                late.append(None)
            except xmlentities.EntityRefused as exc:
                late.append(str(exc))
        return xmlliterals._has_literal(path), late

    refused = literal = 0
    for data in variants:
        path.write_bytes(data)
        compiled = decisions()
        with monkeypatch.context() as patch:
            patch.setattr(native, "_module", None)
            python = decisions()
        assert compiled == python, data
        literal += compiled[0]
        refused += any(compiled[1])
    assert literal > 50 and refused > 50


def test_file_contains_gives_back_the_pages_it_read(tmp_path):
    """A search through a 256 MiB document (sparse: its pages are read as zeros) leaves the process's
    peak RSS far below the document's size: the pages read leave the RSS every 16 MiB, so the
    laundromat's tree stays under its bound however large the document (the 10M-statement RDF/XML
    benchmark's 2 GB file stood in it whole before)."""
    path = tmp_path / "sparse.rdf"
    with open(path, "wb") as f:
        f.truncate(256 << 20)
    proc = _in_a_subprocess(
        """
        import resource
        from votersdaily.laundromat import native
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert native.file_contains(%r, 0, b"!") is False
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
        """
        % str(path)
    )
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) < 64, proc.stdout
