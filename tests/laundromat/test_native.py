"""The compiled fast paths (votersdaily/laundromat/_ntscan.c, built by scripts/setup.sh) against the
pure-Python paths they stand in for: the same cleaned output, counts, errors and line numbers.

Inputs: every N-Triples and N-Quads file of the W3C RDF suites (../shared/conformance: positive and
negative syntax tests, the eval results of all five RDF 1.1 suites, the RDF 1.2 c14n tests), read in
place; variants derived from their lines by a one-byte change (each of the bytes the grammar
turns on, at every position); the benchmark's generated statements. The UTF-8 check is compared on
the same files and on one-byte corruptions of them, with chunk boundaries at every offset.
"""

from __future__ import annotations

import codecs
import heapq
import itertools
import os
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyoxigraph as ox
import pytest

from benchmarks.laundromat import statement
from tests.laundromat.conformance import ROOT
from tests.support.services import REPO
from votersdaily.laundromat import encodings, external_sort, native
from votersdaily.laundromat.cleaning import CleanOptions, clean_file

pytestmark = pytest.mark.skipif(not ROOT.exists(), reason="%s is absent (../shared/conformance)" % ROOT)

KEY = "0123456789abcdef0123456789abcdef"
#: Bytes the scanner's grammar decides on: delimiters, escapes, case, controls, UTF-8 lead and
#: continuation bytes (U+FFFE/U+FFFF are EF BF BE/BF), the characters IRIs may not hold.
PROBES = b' \t\r"\\<>_:.@^-#?/%Aaz09{}|`\x00\x7f\x80\xbe\xbf\xc3\xef\xf0\xff' + b"'u"


def _line_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*") if p.suffix in (".nt", ".nq") and p.is_file())


def _clean(path: Path, fmt: str, out: Path, use_native: bool, monkeypatch) -> tuple:
    with monkeypatch.context() as patch:
        if not use_native:
            patch.setattr(native, "_module", None)
        options = CleanOptions(parse_workers=1, run_bytes=1 << 30)
        result = clean_file(path, fmt, KEY, out, options=options)
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


def test_merge_runs_merges_any_number_of_runs_each_line_once(tmp_path):
    """Runs with shared lines, an empty run, lines longer than the merge's read and write buffers."""
    rnd = random.Random(9)
    lines = [*_lines_of_suites(), b"x" * (70 << 10), b"y" * (3 << 20), b"x" * (70 << 10) + b"z"]
    runs = []
    for i in range(40):
        run = tmp_path / ("run-%d" % i)
        run.write_bytes(
            native.sorted_unique(b"\n".join(rnd.sample(lines, len(lines) // 10)) + b"\n") if i else b""
        )
        runs.append(str(run))
    read_fd, write_fd = os.pipe()
    out = tmp_path / "merged"
    with open(out, "wb") as f:
        written = native.merge_runs(runs, f.fileno())
    os.close(read_fd)
    os.close(write_fd)
    expected = sorted({line for run in runs for line in Path(run).read_bytes().split(b"\n")[:-1]})
    assert out.read_bytes() == b"".join(line + b"\n" for line in expected) and written == len(expected)
    with pytest.raises(OSError):
        native.merge_runs([str(tmp_path / "missing")], 1)


def test_native_sort_cleans_as_gnu_sort_and_python(tmp_path, monkeypatch):
    """The benchmark's statements through the parallel path with small runs (more than SORT_BATCH of
    them: a two-pass merge), against GNU sort and the pure-Python merge: the same cleaned bytes."""
    rnd = random.Random(4)
    path = tmp_path / "bench.nt"
    path.write_text("".join(statement(i, rnd) for i in range(40_000)), encoding="utf-8")
    options = CleanOptions(parse_workers=2, parse_chunk=16 << 10, run_bytes=1, sorted_run_bytes=16 << 10)
    keys = set()
    for mode in ("native", "gnu", "python"):
        with monkeypatch.context() as patch:
            if mode != "native":
                patch.setattr(external_sort.native, "available", lambda: False)
            if mode == "python":
                patch.setattr(external_sort.shutil, "which", lambda name: None)
            result = clean_file(path, "N-Triples", KEY, tmp_path / mode, options=options)
        keys.add((result.key, result.unique, result.statements))
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
                f.write(b"line %%d\\nz\\n" %% i)
            runs.append(Shrinking(path))
        out = os.path.join(folder, "merged")
        with open(out, "wb") as f:
            written = native.merge_runs(runs, f.fileno())
        print(written, open(out, "rb").read())
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
            (tmp_path / ("run-%d" % i)).write_bytes(b"".join(line + b"\n" for line in run))
        with open(tmp_path / "merged", "wb") as f:
            written = native.merge_runs([str(tmp_path / ("run-%d" % i)) for i in range(3)], f.fileno())
        merged = list(dict.fromkeys(heapq.merge(*runs)))
        assert (tmp_path / "merged").read_bytes() == b"".join(line + b"\n" for line in merged)
        assert written == len(merged)
        if time.monotonic() > deadline:
            break
    assert rounds >= 5
    print("%d fuzzed documents checked" % rounds)
