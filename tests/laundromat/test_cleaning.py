"""The cleaning stage on documents written for these tests (format parser input, not a source's format):
the parallel range parser against the serial one, blank node labels that look like the parser's own,
JSON-LD and RDFa from HTML, and the in-memory size cap.

Expected values come from the documents as written here (statements, errors and their lines,
hand-written expected graphs), never from the cleaner's output.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pyoxigraph as ox
import pytest

from tests.laundromat.conformance import ROOT, canonical_quads, deskolemise, non_canonical_lines
from votersdaily.laundromat import cleaning, native, xmlentities
from votersdaily.laundromat.cleaning import CleanOptions, clean_file
from votersdaily.laundromat.steps import launder_file

KEY = "0123456789abcdef0123456789abcdef"
GENID = re.compile(rb"<https://lodlaundromat\.org/\.well-known/genid/[0-9a-f]{32}/([^>]*)>")


def _lines(path: str) -> list[bytes]:
    with gzip.open(path, "rb") as f:
        return f.read().split(b"\n")[:-1]


def _document(n: int) -> tuple[bytes, list[bytes], list[int]]:
    """N-Triples text (canonical good lines, duplicates, bad lines, a comment, blank lines); the good
    lines (with repeats) and the 1-based numbers of the bad lines."""
    out, good, bad = [], [], []
    for i in range(n):
        if i % 97 == 50:
            out.append(b'<http://ex.org/s%d> <http://ex.org/p> "unterminated .' % i)
            bad.append(len(out))
            continue
        if i == 10:
            out.append(b"# a comment line")
            continue
        if i == 11:
            out.append(b"")
            continue
        if i % 10 == 9:
            line = good[i // 2]  # a duplicate of an earlier statement
        elif i % 5 == 0:
            line = b'_:b%d <http://ex.org/p> "%d with _:x . inside" .' % (i % 50, i)
        elif i % 5 == 1:
            line = "<http://ex.org/s%d> <http://ex.org/q> _:é%d .".encode() % (i, i % 3)
        elif i % 5 == 2:
            line = b'<http://ex.org/s%d> <http://ex.org/r> "caf\xc3\xa9 %d"@fr .' % (i, i)
        else:
            line = b'_:c%d <http://ex.org/p> "%d"^^<http://www.w3.org/2001/XMLSchema#integer> .' % (i % 7, i)
        out.append(line)
        good.append(line)
    return b"\n".join(out) + b"\n", good, bad


def test_parallel_ranges_match_serial_and_the_document(tmp_path, monkeypatch):
    calls = []
    parallel_path = cleaning.parse_line_based_parallel
    monkeypatch.setattr(
        cleaning, "parse_line_based_parallel", lambda *a: calls.append(a) or parallel_path(*a)
    )
    text, good, bad = _document(4000)
    assert len(bad) < 100  # every error message is kept (cap 100)
    path = tmp_path / "doc.nt"
    path.write_bytes(text)
    serial = clean_file(
        path, "N-Triples", KEY, tmp_path / "serial", options=CleanOptions(parse_workers=1, run_bytes=1 << 30)
    )
    parallel = clean_file(
        path,
        "N-Triples",
        KEY,
        tmp_path / "parallel",
        options=CleanOptions(parse_workers=2, parse_chunk=4096, run_bytes=1, sort_memory="64K"),
    )
    assert len(calls) == 1  # the second run went through the forked range workers
    assert len(text) > 20 * 4096  # many ranges, lines cut at range boundaries
    for result in (serial, parallel):
        assert result.statements == len(good)
        assert result.unique == len(set(good))
        assert result.duplicates == len(good) - len(set(good))
        assert result.errors == len(bad)
        assert [m["line"] for m in result.messages] == bad
        assert all(m["kind"] == "error" for m in result.messages)
    assert Path(serial.path).read_bytes() == Path(parallel.path).read_bytes()
    assert serial.key == parallel.key
    lines = _lines(parallel.path)
    assert lines == sorted(set(lines))
    expected = canonical_quads(b"\n".join(good) + b"\n", ox.RdfFormat.N_TRIPLES)
    assert canonical_quads(deskolemise(b"\n".join(lines) + b"\n"), ox.RdfFormat.N_QUADS) == expected
    # "_:" inside a literal is text, not a blank node; a non-ASCII label is percent-encoded.
    assert any(b'"0 with _:x . inside"' in line for line in lines)
    assert any(line.endswith(b"/%C3%A90> .") for line in lines)


TURTLE_HEX_LABELS = b"""@prefix ex: <http://example.org/> .
_:0123456789abcdef ex:p _:0123456789abcdef0123 .
_:0123456789abcdef0123 ex:p _:0123456789abcdef .
_:fedcba9876543210fedcba9876543210 ex:q [ ex:r _:0123456789abcdef ] .
ex:s ex:p _:plain , [ ex:r ex:o ] .
"""


def test_hex_looking_labels_keep_their_identity(tmp_path):
    """Labels shaped like the parser's generated ones are numbered with the anonymous nodes; equal
    labels must stay equal and distinct labels distinct, deterministically."""
    path = tmp_path / "hex.ttl"
    path.write_bytes(TURTLE_HEX_LABELS)
    first = clean_file(path, "Turtle", KEY, tmp_path / "a")
    second = clean_file(path, "Turtle", KEY, tmp_path / "b")
    assert first.errors == 0 and first.statements == 7
    assert first.key == second.key  # the random labels of [] do not leak into the output
    data = b"\n".join(_lines(first.path)) + b"\n"
    labels = set(GENID.findall(data))
    # 0123456789abcdef, ...0123, fedcba..., plain and the two [] nodes: six distinct nodes.
    assert len(labels) == 6 and b"plain" in labels
    expected = canonical_quads(TURTLE_HEX_LABELS, ox.RdfFormat.TURTLE)
    assert canonical_quads(deskolemise(data), ox.RdfFormat.N_QUADS) == expected


def test_nt_labels_that_differ_only_in_zeros_or_case_stay_distinct(tmp_path):
    path = tmp_path / "labels.nt"
    path.write_bytes(
        b"_:00ab <http://ex.org/p> _:ab .\n_:ab <http://ex.org/p> _:AB .\n"
        b"_:abcdef0123456789 <http://ex.org/p> _:ABCDEF0123456789 .\n"
    )
    result = clean_file(path, "N-Triples", KEY, tmp_path / "out")
    labels = GENID.findall(b"\n".join(_lines(result.path)))
    assert sorted(set(labels)) == [b"00ab", b"AB", b"ABCDEF0123456789", b"ab", b"abcdef0123456789"]


JSON_LD = b"""{
  "@context": {
    "name": "http://xmlns.com/foaf/0.1/name",
    "knows": {"@id": "http://xmlns.com/foaf/0.1/knows", "@type": "@id"},
    "age": {"@id": "http://xmlns.com/foaf/0.1/age", "@type": "http://www.w3.org/2001/XMLSchema#integer"},
    "ex": "http://example.org/"
  },
  "@graph": [
    {"@id": "ex:alice", "name": "Alice", "age": "42", "knows": {"name": "Bob", "knows": "ex:alice"}},
    {"@id": "ex:g1", "@graph": {"@id": "ex:carol", "name": {"@value": "Carol", "@language": "EN-GB"}}},
    {"@id": "relative", "name": "resolved against the base"}
  ]
}
"""
#: JSON-LD 1.1 toRdf of the document above, by hand (language tags are lower-cased by the cleaner).
JSON_LD_EXPECTED = b"""<http://example.org/alice> <http://xmlns.com/foaf/0.1/name> "Alice" .
<http://example.org/alice> <http://xmlns.com/foaf/0.1/age> "42"^^<http://www.w3.org/2001/XMLSchema#integer> .
<http://example.org/alice> <http://xmlns.com/foaf/0.1/knows> _:bob .
_:bob <http://xmlns.com/foaf/0.1/name> "Bob" .
_:bob <http://xmlns.com/foaf/0.1/knows> <http://example.org/alice> .
<http://example.org/carol> <http://xmlns.com/foaf/0.1/name> "Carol"@en-gb <http://example.org/g1> .
<http://example.org/base/relative> <http://xmlns.com/foaf/0.1/name> "resolved against the base" .
"""

HTML_RDFA = b"""<!DOCTYPE html>
<html lang="en">
<head><title>RDFa test</title></head>
<body vocab="http://schema.org/">
  <div typeof="Person" resource="http://example.org/people#alice">
    <span property="name">Alice Example</span>
    <a property="url" href="http://example.org/alice">home</a>
    <div property="address" typeof="PostalAddress">
      <span property="addressLocality">Springfield</span>
    </div>
  </div>
  <p about="http://example.org/doc" property="http://purl.org/dc/terms/title" lang="fr">Le titre</p>
</body>
</html>
"""
#: RDFa 1.1 Core processing of the page above, by hand (@vocab also yields rdfa:usesVocabulary;
#: plain literals take the inherited HTML @lang).
HTML_RDFA_EXPECTED = b"""<http://example.org/base/page> <http://www.w3.org/ns/rdfa#usesVocabulary> <http://schema.org/> .
<http://example.org/people#alice> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://schema.org/Person> .
<http://example.org/people#alice> <http://schema.org/name> "Alice Example"@en .
<http://example.org/people#alice> <http://schema.org/url> <http://example.org/alice> .
<http://example.org/people#alice> <http://schema.org/address> _:addr .
_:addr <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://schema.org/PostalAddress> .
_:addr <http://schema.org/addressLocality> "Springfield"@en .
<http://example.org/doc> <http://purl.org/dc/terms/title> "Le titre"@fr .
"""


@pytest.mark.parametrize(
    "body,fmt,expected,named",
    [
        (JSON_LD, "JSON-LD", JSON_LD_EXPECTED, True),
        (HTML_RDFA, "RDFa", HTML_RDFA_EXPECTED, False),
    ],
    ids=["json-ld", "rdfa"],
)
def test_in_memory_formats_guessed_and_cleaned(tmp_path, body, fmt, expected, named):
    path = tmp_path / "page"  # no extension, no Content-Type: the content decides
    path.write_bytes(body)
    record = launder_file(path, KEY, tmp_path / "out", base_iri="http://example.org/base/page")
    assert record["format"] == fmt
    clean = record["clean"]
    assert clean["number_of_errors"] == 0, clean["messages"]
    assert clean["named_graphs"] is named and clean["path"].endswith(".nq.gz" if named else ".nt.gz")
    lines = _lines(clean["path"])
    assert lines == sorted(set(lines)) and len(lines) == expected.count(b"\n")
    assert canonical_quads(deskolemise(b"\n".join(lines) + b"\n"), ox.RdfFormat.N_QUADS) == canonical_quads(
        expected, ox.RdfFormat.N_QUADS
    )
    # Deterministic: blank nodes come out under the same names every time.
    again = launder_file(path, KEY, tmp_path / "again", base_iri="http://example.org/base/page")
    assert again["clean"]["key"] == clean["key"]


@pytest.mark.parametrize("body,fmt", [(JSON_LD, "JSON-LD"), (HTML_RDFA, "RDFa")], ids=["json-ld", "rdfa"])
def test_in_memory_formats_have_a_size_cap(tmp_path, body, fmt):
    path = tmp_path / "big"
    path.write_bytes(body)
    base = "http://example.org/base/page"
    result = clean_file(
        path,
        fmt,
        KEY,
        tmp_path / "out",
        base_iri=base,
        options=CleanOptions(max_in_memory_bytes=len(body) - 1),
    )
    assert result.errors == 1 and "larger than %d bytes" % (len(body) - 1) in result.messages[0]["message"]
    assert result.statements == 0 and _lines(result.path) == []
    fits = clean_file(
        path, fmt, KEY, tmp_path / "fits", base_iri=base, options=CleanOptions(max_in_memory_bytes=len(body))
    )
    assert fits.errors == 0 and fits.statements > 0


def test_jsonld_remote_context_is_not_fetched(tmp_path):
    path = tmp_path / "remote.jsonld"
    path.write_bytes(
        b'{"@context": "http://127.0.0.1:9/context.jsonld", "@id": "http://ex.org/x", "name": "x"}'
    )
    result = clean_file(path, "JSON-LD", KEY, tmp_path / "out")
    assert result.errors == 1 and "remote context" in result.messages[0]["message"]
    assert result.statements == 0


LAUGHS = b"""<?xml version="1.0"?>
<!--%s-->
<!DOCTYPE rdf:RDF [
<!ENTITY lol "lol">
<!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
]>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://example.org/">
  <rdf:Description rdf:about="http://example.org/s"><ex:p>&lol2;</ex:p></rdf:Description>
</rdf:RDF>
"""
#: The DOCTYPE after the root element's start: not XML, but the parser reads (and expands) it.
LAUGHS_IN_ROOT = b"""<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://example.org/">
<!--%s-->
<!doctype rdf:RDF [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
  <rdf:Description rdf:about="http://example.org/s"><ex:p>&lol1;</ex:p></rdf:Description>
</rdf:RDF>
"""


@pytest.mark.parametrize("template", [LAUGHS, LAUGHS_IN_ROOT], ids=["prolog", "in-root"])
@pytest.mark.parametrize("padding", [0, 70_000], ids=["unpadded", "padded-70k"])
def test_rdfxml_entities_are_refused_wherever_the_doctype_is(tmp_path, template, padding):
    """Billion laughs (three levels, small): refused as an error, nothing expanded, however long
    the comment before the DOCTYPE (the old check only read the first 64 KiB)."""
    body = template % (b"x" * padding)
    assert b"lol" * 10 in b"".join(q.object.value.encode() for q in ox.parse(body, ox.RdfFormat.RDF_XML))
    path = tmp_path / "laughs.rdf"
    path.write_bytes(body)
    result = clean_file(path, "RDF/XML", KEY, tmp_path / "out")
    assert result.errors == 1 and "entity expansion is refused" in result.messages[0]["message"]
    assert result.statements == 0 and _lines(result.path) == []
    # The DOCTYPE and the declaration are found across read boundaries too.
    for chunk in (7, 8, 9, 64, 4096):
        with pytest.raises(xmlentities.EntityRefused):
            xmlentities._refuse_late_entities(path, 0, seen_doctype=False, chunk_bytes=chunk)


def test_rdfxml_with_a_doctype_but_no_entities_is_cleaned(tmp_path):
    path = tmp_path / "plain.rdf"
    path.write_bytes(
        b'<?xml version="1.0"?>\n<!--%s-->\n<!DOCTYPE rdf:RDF>\n' % (b"x" * 70_000)
        + LAUGHS.split(b"]>\n", 1)[1].replace(b"&lol2;", b"lol")
    )
    result = clean_file(path, "RDF/XML", KEY, tmp_path / "out")
    assert result.errors == 0 and result.statements == 1


NQUADS_BLANK_POSITIONS = (
    b"_:s <http://ex.org/p> _:o <http://ex.org/g> .\n"
    b"_:s <http://ex.org/p> _:o _:g .\n"
    b"<http://ex.org/s> <http://ex.org/p> _:o .\n"
    b'<http://ex.org/s> <http://ex.org/p> "x" _:g .\n'
    b'<http://ex.org/s> <http://ex.org/p> "_:a <http://ex.org/p> _:b <http://ex.org/g> ." <http://ex.org/g> .\n'
    b'<http://ex.org/s> <http://ex.org/p> "q> _:c _:d ." .\n'
    b'<http://ex.org/s> <http://ex.org/p> "ends _:e" .\n'
    b'<http://ex.org/s> <http://ex.org/p> "_:f"@en _:g .\n'
)


def test_blank_nodes_in_every_position_and_none_inside_literals(tmp_path):
    path = tmp_path / "blanks.nq"
    path.write_bytes(NQUADS_BLANK_POSITIONS)
    result = clean_file(path, "N-Quads", KEY, tmp_path / "out")
    assert result.errors == 0 and result.statements == 8
    data = b"\n".join(_lines(result.path)) + b"\n"
    assert sorted(set(GENID.findall(data))) == [b"g", b"o", b"s"]
    for literal in (
        b'"_:a <http://ex.org/p> _:b <http://ex.org/g> ."',
        b'"q> _:c _:d ."',
        b'"ends _:e"',
        b'"_:f"@en',
    ):
        assert literal in data
    assert canonical_quads(deskolemise(data), ox.RdfFormat.N_QUADS) == canonical_quads(
        NQUADS_BLANK_POSITIONS, ox.RdfFormat.N_QUADS
    )


W3C = ROOT / "rdf11"


@pytest.mark.skipif(not ROOT.exists(), reason="%s is absent (../shared/conformance)" % ROOT)
@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "pyoxigraph"])
def test_a_blank_node_before_a_graph_iri_holding_underscore_colon_is_skolemised(
    tmp_path, monkeypatch, compiled
):
    """What the fuzzer found: the object ``_:Z`` of ``<e:> <h:> _:Z <H:_:(> .`` stayed a blank node
    on the pyoxigraph path (the compiled one skolemised it), so one document had two content keys.
    Derived from nq-syntax-bnode-03.nq (its graph ``_:g`` made ``<H:_:(>``, and the fuzzer's line
    added) and from TriG's labeled_blank_node_object.trig (its graph IRI given ``_:x``)."""
    if not compiled:
        monkeypatch.setattr(native, "_module", None)
    elif not native.available():
        pytest.skip("the compiled module is not built")
    nquads = (W3C / "rdf-n-quads" / "nq-syntax-bnode-03.nq").read_text(encoding="utf-8")
    assert nquads == "<http://example/s> <http://example/p> _:o _:g ."
    path = tmp_path / "doc.nq"
    path.write_text(nquads.replace("_:g", "<H:_:(>") + "\n<e:> <h:> _:Z <H:_:(> .\n", encoding="utf-8")
    trig = (W3C / "rdf-trig" / "labeled_blank_node_object.trig").read_text(encoding="utf-8")
    assert "<http://example/graph>" in trig
    trig_path = tmp_path / "doc.trig"
    trig_path.write_text(
        trig.replace("<http://example/graph>", "<http://example/graph_:x>"), encoding="utf-8"
    )
    for doc, fmt, graph in ((path, "N-Quads", b"<H:_:(>"), (trig_path, "TriG", b"<http://example/graph_:x>")):
        result = clean_file(doc, fmt, KEY, tmp_path / fmt)
        data = b"\n".join(_lines(result.path)) + b"\n"
        assert result.errors == 0 and non_canonical_lines(data) == [], data
        assert all(GENID.search(line) for line in data.split(b"\n")[:-1] if graph in line)


@pytest.mark.skipif(not ROOT.exists(), reason="%s is absent (../shared/conformance)" % ROOT)
@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "pyoxigraph"])
def test_a_parse_message_gives_one_line_number(tmp_path, monkeypatch, compiled):
    """A bad statement on line 6 was recorded with ``"line": 6`` and the text "Parser error at line
    1 …" (the line parsed on its own): the position is in the fields alone. Derived: five W3C
    N-Triples statements, then nt-syntax-bad-string-01.nt's line; and turtle-syntax-bad-struct-01.ttl
    after two comment lines (its error on the line after its own comment: 4)."""
    if not compiled:
        monkeypatch.setattr(native, "_module", None)
    good = [
        (W3C / "rdf-n-triples" / name).read_text(encoding="utf-8").strip()
        for name in (
            "nt-syntax-string-01.nt",
            "nt-syntax-string-02.nt",
            "literal.nt",
            "literal_true.nt",
            "literal_false.nt",
        )
    ]
    bad = (W3C / "rdf-n-triples" / "nt-syntax-bad-string-01.nt").read_text(encoding="utf-8").strip()
    path = tmp_path / "doc.nt"
    path.write_text("\n".join([*good, bad]) + "\n", encoding="utf-8")
    result = clean_file(path, "N-Triples", KEY, tmp_path / "nt")
    (message,) = result.messages
    assert message["line"] == 6 and message["column"] == 39
    assert "line" not in message["message"] and message["message"] == "Unexpected end of file"
    turtle = tmp_path / "doc.ttl"
    turtle.write_text(
        "# one\n# two\n"
        + (W3C / "rdf-turtle" / "turtle-syntax-bad-struct-01.ttl").read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    result = clean_file(turtle, "Turtle", KEY, tmp_path / "ttl")
    error = result.messages[0]
    assert error["kind"] == "error" and error["line"] == 4 and "line" not in error["message"], error
