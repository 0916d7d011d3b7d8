"""XML literals of RDF/XML in exclusive canonical XML (votersdaily/laundromat/xmlliterals.py), and
the other literal forms the laundromat writes, against RDF 1.1's rules.

Inputs: the W3C RDF/XML tests whose expected N-Triples hold an rdf:XMLLiteral, read in place from
../shared/conformance (the manifest comments six of them out since RDF 1.1 made XML literals
non-normative; their expected results are still the spec's), and variants derived from real suite
files, each saying what was changed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest
from lxml import etree

from tests.laundromat.conformance import (
    ROOT,
    canonical_quads,
    deskolemise,
    non_canonical_lines,
    read_clean_file,
    read_cleaned,
)
from tests.support.services import REPO
from votersdaily.laundromat.cleaning import CleanOptions, clean_file
from votersdaily.laundromat.steps import launder_file
from votersdaily.laundromat.xmlliterals import canonical_xml_literals

pytestmark = pytest.mark.skipif(not ROOT.exists(), reason="%s is absent (../shared/conformance)" % ROOT)

RDF_XML = ROOT / "rdf11" / "rdf-xml"
BASE = "https://w3c.github.io/rdf-tests/rdf/rdf11/rdf-xml/"
XML_LITERAL = "http://www.w3.org/1999/02/22-rdf-syntax-ns#XMLLiteral"
KEY = "0" * 32


def _clean(path: Path, fmt: str, out: Path, base: str | None = None):
    result = clean_file(path, fmt, KEY, out, base_iri=base, options=CleanOptions(gzip_level=1))
    return result, read_clean_file(result.path).decode("utf-8")


def _variant(tmp_path: Path, source: Path, old: str, new: str, name: str = "doc.rdf") -> Path:
    """A variant of a real suite file with one part replaced (the test says which)."""
    text = source.read_text(encoding="utf-8")
    assert old in text, (source, old)
    path = tmp_path / name
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


def _literal_values(output: str) -> list[str]:
    """The values of the XML literals in cleaned output."""
    values = []
    for quad in ox.parse(output.encode("utf-8"), ox.RdfFormat.N_QUADS):
        obj = quad.object
        if isinstance(obj, ox.Literal) and obj.datatype.value == XML_LITERAL:
            values.append(obj.value)
    return values


def test_every_w3c_xml_literal_test_gives_the_expected_graph(tmp_path):
    """Nine tests (three active, six commented out in the manifest): before canonicalisation the
    laundromat matched three (the literals without an element)."""
    tests = sorted(nt for nt in RDF_XML.rglob("*.nt") if XML_LITERAL in nt.read_text(encoding="utf-8"))
    assert len(tests) == 9
    wrong = []
    for nt in tests:
        rdf = nt.with_suffix(".rdf")
        rel = rdf.relative_to(RDF_XML).as_posix()
        record = launder_file(rdf, KEY, tmp_path / rel, fmt="RDF/XML", base_iri=BASE + rel)
        data = read_cleaned(record)
        expected = canonical_quads(nt.read_bytes(), ox.RdfFormat.N_TRIPLES)
        if (
            canonical_quads(deskolemise(data), ox.RdfFormat.N_QUADS) != expected
            or record["clean"]["messages"]
        ):
            wrong.append((rel, _literal_values(data.decode("utf-8")), record["clean"]["messages"][:1]))
    assert wrong == []


def test_an_empty_xhtml_p_is_one_declaration_and_an_end_tag(tmp_path):
    """The issue's case: an empty XHTML ``p`` in a literal whose ancestors declare rdf:, a prefix and
    the XHTML default namespace. Derived from rdfms-xml-literal-namespaces/test001.rdf (its
    ``html:h1`` content replaced by ``<p xmlns="…xhtml"/>``): pyoxigraph wrote the default
    namespace twice, which is not XML."""
    source = RDF_XML / "rdfms-xml-literal-namespaces" / "test001.rdf"
    path = _variant(
        tmp_path,
        source,
        "<html:h1>\n        <b>John</b>\n      </html:h1>",
        '<p xmlns="http://www.w3.org/1999/xhtml"/>',
    )
    result, output = _clean(path, "RDF/XML", tmp_path / "out", BASE + "test001.rdf")
    (value,) = _literal_values(output)
    assert value == '\n      <p xmlns="http://www.w3.org/1999/xhtml"></p>\n   '
    etree.fromstring("<w>%s</w>" % value)  # well-formed
    assert result.errors == 0 and non_canonical_lines(output.encode("utf-8")) == []


def test_canonical_form_keeps_comments_sorts_attributes_and_escapes(tmp_path):
    """Derived from xml-canon/test001.rdf (its ``<br />`` replaced): comments and processing
    instructions kept, attributes sorted by namespace then name, CDATA as text, a carriage return
    from a character reference written ``&#xD;``, prefixes declared where they are used."""
    source = RDF_XML / "xml-canon" / "test001.rdf"
    content = (
        '<eg:q z="1" eg:b="2" a="&lt;&amp;&quot;" xmlns:unused="http://unused/">x&#xD;<![CDATA[<y>]]>'
        "<!-- kept --><?pi data?></eg:q>"
    )
    path = _variant(tmp_path, source, "<br />", content)
    _, output = _clean(path, "RDF/XML", tmp_path / "out")
    assert _literal_values(output) == [
        '<eg:q xmlns:eg="http://example.org/" a="&lt;&amp;&quot;" z="1" eg:b="2">x&#xD;&lt;y&gt;'
        "<!-- kept --><?pi data?></eg:q>"
    ]


def test_only_property_elements_are_xml_literals(tmp_path):
    """Derived from xml-canon/test001.rdf: a literal inside ``rdf:parseType="Resource"`` and one of a
    node inside ``rdf:parseType="Collection"`` are canonicalised; ``rdf:parseType="Literal"`` text
    inside a literal's content is content; on a node element it is left to the parser (which
    ignores it), and the node's properties stay properties."""
    source = RDF_XML / "xml-canon" / "test001.rdf"
    literal = '<eg:l rdf:parseType="Literal"><br /><eg:inner rdf:parseType="Literal"/></eg:l>'
    body = (
        '<eg:r rdf:parseType="Resource">%s</eg:r>'
        '<eg:c rdf:parseType="Collection"><rdf:Description rdf:about="http://example.org/n">%s'
        "</rdf:Description></eg:c>" % (literal, literal)
    )
    path = _variant(tmp_path, source, '<eg:prop rdf:parseType="Literal"><br /></eg:prop>', body)
    _, output = _clean(path, "RDF/XML", tmp_path / "out")
    assert (
        _literal_values(output)
        == [
            '<br></br><eg:inner xmlns:eg="http://example.org/" '
            'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" rdf:parseType="Literal"></eg:inner>'
        ]
        * 2
    )
    node = _variant(
        tmp_path,
        source,
        '<rdf:Description rdf:about="http://www.example.org/a">',
        '<rdf:Description rdf:about="http://www.example.org/a" rdf:parseType="Literal">',
        "node.rdf",
    )
    copy, stop = canonical_xml_literals(node, tmp_path / "copy.rdf")
    assert stop is None
    assert 'rdf:about="http://www.example.org/a" rdf:parseType="Literal">' in copy.read_text(encoding="utf-8")
    assert _clean(node, "RDF/XML", tmp_path / "node")[1] == (
        '<http://www.example.org/a> <http://example.org/prop> "<br></br>"^^<%s> .\n' % XML_LITERAL
    )


def test_typed_xml_literals_keep_their_lexical_form(tmp_path):
    """``rdf:datatype="…#XMLLiteral"`` is a typed literal the document wrote: kept as written, like
    every other lexical form (derived from xml-canon/test001.rdf)."""
    source = RDF_XML / "xml-canon" / "test001.rdf"
    path = _variant(
        tmp_path,
        source,
        '<eg:prop rdf:parseType="Literal"><br /></eg:prop>',
        '<eg:prop rdf:datatype="%s">&lt;br /&gt;</eg:prop>' % XML_LITERAL,
    )
    assert _literal_values(_clean(path, "RDF/XML", tmp_path / "out")[1]) == ["<br />"]
    assert canonical_xml_literals(path, tmp_path / "copy.rdf") == (path, None)  # nothing to rewrite


def test_a_literal_with_attributes_the_grammar_forbids_ends_the_document(tmp_path):
    """error001.rdf (rdf:resource beside it): one error with its line, nothing invented. A variant
    with content (derived: ``/>`` made ``><b/></…>``), which pyoxigraph read as a literal,
    dropping rdf:resource silently; and one with a statement before it, which is kept."""
    error001 = RDF_XML / "rdfms-empty-property-elements" / "error001.rdf"
    result, output = _clean(error001, "RDF/XML", tmp_path / "e1", BASE + "error001.rdf")
    assert output == "" and result.errors == 1
    assert result.messages[0] == {
        "kind": "error",
        "message": 'rdf:parseType="Literal" does not allow rdf:resource beside it (RDF 1.1 XML Syntax §7.2.17)',
        "line": 29,
        "column": 3,
    }
    variant = _variant(
        tmp_path,
        error001,
        '<random:someProperty rdf:parseType="Literal"',
        '<random:before>kept</random:before>\n  <random:someProperty rdf:parseType="Literal"',
    )
    variant.write_text(
        variant.read_text(encoding="utf-8").replace(" />", "><b/></random:someProperty>"), encoding="utf-8"
    )
    result, output = _clean(variant, "RDF/XML", tmp_path / "e2")
    assert output == '<http://random.ioctl.org/#bar> <http://random.ioctl.org/#before> "kept" .\n'
    assert result.errors == 1 and result.messages[0]["line"] == 30


def test_xml_that_is_not_well_formed_is_left_to_the_parser(tmp_path):
    """Derived from xml-canon/test001.rdf: a literal, then a character reference XML 1.0 forbids
    (``&#x1;``, which pyoxigraph accepts), then another literal: the first is canonical, the rest is
    the parser's, and a warning says from where."""
    source = RDF_XML / "xml-canon" / "test001.rdf"
    literal = '<eg:prop rdf:parseType="Literal"><br /></eg:prop>'
    path = _variant(
        tmp_path,
        source,
        literal,
        literal + "<eg:text>a&#x1;b</eg:text>" + literal.replace("prop", "second"),
    )
    result, output = _clean(path, "RDF/XML", tmp_path / "out")
    assert '"<br></br>"^^' in output and '"a\\u0001b"' in output
    assert result.errors == 0
    (warning,) = [m for m in result.messages if m["kind"] == "warning"]
    assert warning["message"].startswith(
        "XML literals from here on are not canonicalised: not well-formed XML"
    )
    assert warning["line"] == 24


# -- the other literal forms ----------------------------------------------------------------------

X_STRING = "http://www.w3.org/2001/XMLSchema#string"
C14N = ROOT / "rdf12" / "rdf-n-triples" / "c14n"


def _forms() -> list[tuple[str, Path, str, str, str]]:
    """(name, source, format, old, new): real suite files with an upper-case language tag, an
    xsd:string datatype and control characters put in (derived variants)."""
    turtle = ROOT / "rdf11" / "rdf-turtle" / "langtagged_LONG_with_subtag.ttl"
    controls = C14N / "literal_all_controls.nt"
    line = controls.read_text(encoding="utf-8").strip().split("\n")[-1]
    xmllang = RDF_XML / "rdfms-xmllang" / "test003.rdf"
    return [
        ("turtle", turtle, "Turtle", "@en-UK .", '@EN-UK, "s"^^<%s>, "c\\u0001\\u007F\\t" .' % X_STRING),
        ("trig", turtle, "TriG", ':a :b """Cheers"""@en-UK .', '{ :a :b "x"@EN-UK, "s"^^<%s> . }' % X_STRING),
        ("n-triples", controls, "N-Triples", line, line + "\n" + line.replace(" .", "^^<%s> ." % X_STRING)),
        ("n-quads", controls, "N-Quads", line, line.replace(" .", "@EN-gb <http://a.example/g> .")),
        (
            "rdf-xml",
            xmllang,
            "RDF/XML",
            "<eg:property>chat</eg:property>",
            '<eg:property xml:lang="FR-CA">chat</eg:property>'
            '<eg:s rdf:datatype="%s">s</eg:s><eg:c>c&#x9;&#x7F;</eg:c>' % X_STRING,
        ),
    ]


@pytest.mark.parametrize("name, source, fmt, old, new", _forms(), ids=[f[0] for f in _forms()])
def test_literal_forms_are_canonical_in_every_format(name, source, fmt, old, new, tmp_path):
    """Language tags in lower case, no ^^xsd:string, escapes as canonical N-Triples writes them
    (checked by a pattern written out in tests/laundromat/conformance.py, not by the parser)."""
    path = _variant(tmp_path, source, old, new, "doc")
    result, output = _clean(path, fmt, tmp_path / "out", "http://example.org/")
    assert result.errors == 0 and output
    assert non_canonical_lines(output.encode("utf-8")) == []
    assert "@" not in output or any(tag in output for tag in ('"@en-uk', '"@fr-ca', '"@en-gb'))


JSON_LD = REPO / "w3c-suites" / "json-ld-api-1.1" / "toRdf"
RDFA = REPO / "w3c-suites" / "rdfa-1.1-xml"


@pytest.mark.skipif(not JSON_LD.exists(), reason="%s is absent: run scripts/setup.sh" % JSON_LD)
def test_literal_forms_are_canonical_in_json_ld_and_rdfa(tmp_path):
    """Derived from JSON-LD toRdf di10 (its base direction dropped, an xsd:string value and control
    characters added) and RDFa 0012.xml (its language tag upper-cased)."""
    doc = json.loads((JSON_LD / "di10-in.jsonld").read_text(encoding="utf-8"))
    label = doc["http://example.org/label"]
    del label["@direction"]
    label["@language"] = "EN-US"
    doc["http://example.org/s"] = [{"@value": "s", "@type": X_STRING}, "c\u0001\u007f\t"]
    path = tmp_path / "doc.jsonld"
    path.write_text(json.dumps(doc), encoding="utf-8")
    result, output = _clean(path, "JSON-LD", tmp_path / "jsonld")
    assert result.errors == 0 and non_canonical_lines(output.encode("utf-8")) == []
    assert '"en-US"@en-us .' in output and '"s" .' in output and '"c\\u0001\\u007F\\t" .' in output
    rdfa = RDFA / "0012.xml"
    if not rdfa.exists():
        pytest.skip("%s is absent: run scripts/setup.sh" % rdfa)
    text = rdfa.read_text(encoding="utf-8")
    assert 'xml:lang="fr"' in text
    path = tmp_path / "0012.xml"
    path.write_text(text.replace('xml:lang="fr"', 'xml:lang="EN-GB"'), encoding="utf-8")
    result, output = _clean(path, "RDFa", tmp_path / "rdfa", "http://rdfa.info/test-suite/0012.xml")
    assert result.errors == 0 and "@en-gb" in output and non_canonical_lines(output.encode("utf-8")) == []
