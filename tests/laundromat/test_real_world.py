"""Real documents (read in place from ../shared) and variants derived from them, through recode →
guess → clean: non-UTF-8 HTML and RDF/XML keep their text, Protégé-style entities are expanded,
nothing the document says is rewritten or lost silently. Each derived variant says what was changed.
"""

from __future__ import annotations

import gzip

import pyoxigraph as ox
import pytest

from tests.laundromat.conformance import ROOT, load_manifest
from tests.support.services import shared_dir
from votersdaily.laundromat.cleaning import CleanOptions, clean_file
from votersdaily.laundromat.steps import launder_file
from votersdaily.laundromat.uris import remove_dot_segments
from votersdaily.laundromat.xmlentities import MAX_EXPANSION_BYTES

KEY = "0123456789abcdef0123456789abcdef"
PLOS = shared_dir() / "fixtures" / "inplace" / "scholarly" / "plos_one_article.html"
PLOS_BASE = "https://journals.plos.org/plosone/article?id=10.1371/journal.pone.0213978"
RDF_XML = ROOT / "rdf11" / "rdf-xml"
needs_shared = pytest.mark.skipif(not PLOS.exists() or not ROOT.exists(), reason="../shared is absent")


def _output(record: dict) -> str:
    with gzip.open(record["clean"]["path"], "rb") as f:
        return f.read().decode("utf-8")


@needs_shared
@pytest.mark.parametrize("charset", ["Shift_JIS", "EUC-JP"])
def test_non_utf8_rdfa_keeps_its_text_in_literals_and_iris(tmp_path, charset):
    """The PLOS ONE article page (real RDFa: Open Graph properties), derived: ``松本`` put in its
    og:title, its og:url made a ``<link property href>`` (an IRI object) ending in ``松本``, its meta
    charset moved to ``charset``, and the page encoded so. No HTTP charset: the meta is the only
    declaration, and it no longer holds after recoding."""
    html = PLOS.read_text(encoding="utf-8")
    variant = (
        html.replace("charset=utf-8", "charset=" + charset, 1)
        .replace('og:title" content="', 'og:title" content="松本 ', 1)
        .replace(
            '<meta property="og:url" content="https://journals.plos.org/plosone/article?id=10.1371/journal.pone.0213978"/>',
            '<link property="og:url" href="https://journals.plos.org/plosone/article?id=松本"/>',
        )
    )
    assert variant.count("松本") == 2 and "charset=" + charset in variant
    path = tmp_path / "article.html"
    path.write_bytes(variant.encode(charset, "xmlcharrefreplace"))
    record = launder_file(path, KEY, tmp_path / "out", content_type="text/html", base_iri=PLOS_BASE)
    assert record["format"] == "RDFa" and record["number_of_replacements"] == 0
    assert record["declarations_rewritten"] == [{"declaration": "meta", "was": charset}]
    out = _output(record)
    assert '<http://ogp.me/ns#title> "松本 Assessment on reticuloendotheliosis' in out
    assert "<http://ogp.me/ns#url> <https://journals.plos.org/plosone/article?id=松本> ." in out
    assert "æ" not in out and "\ufffd" not in out
    # The same statements as the real UTF-8 page with the same two changes.
    utf8 = tmp_path / "utf8.html"
    utf8.write_text(variant.replace("charset=" + charset, "charset=utf-8", 1), encoding="utf-8")
    same = launder_file(utf8, KEY, tmp_path / "utf8", content_type="text/html", base_iri=PLOS_BASE)
    assert same["clean"]["key"] == record["clean"]["key"]


@needs_shared
def test_rdfa_keeps_lexical_forms_and_loses_only_a_bad_statement(tmp_path):
    """The PLOS ONE page, derived: two typed values (``007`` as xsd:integer, a dateTime in ``Z``)
    added at the start of its body, and then a link whose IRI is not one (a space in it): the
    bad statement alone is dropped, with the reason; the output is that of the page without it."""
    html = PLOS.read_text(encoding="utf-8")
    body = html.index(">", html.index("<body")) + 1
    typed = (
        '<span about="http://example.org/n" property="http://example.org/count" '
        'datatype="http://www.w3.org/2001/XMLSchema#integer" content="007"></span>'
        '<span about="http://example.org/n" property="http://example.org/at" '
        'datatype="http://www.w3.org/2001/XMLSchema#dateTime" content="2020-01-01T00:00:00Z"></span>'
    )
    bad = '<a about="http://example.org/n" rel="http://example.org/link" href="http://example.org/a b">r</a>'
    records = {}
    for name, added in (("good", typed), ("bad", typed + bad)):
        path = tmp_path / (name + ".html")
        path.write_text(html[:body] + added + html[body:], encoding="utf-8")
        records[name] = launder_file(path, KEY, tmp_path / name, content_type="text/html", base_iri=PLOS_BASE)
    out = _output(records["bad"])
    assert (
        '<http://example.org/n> <http://example.org/count> "007"^^<http://www.w3.org/2001/XMLSchema#integer> .'
        in out
    )
    assert '"2020-01-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .' in out
    good, bad_clean = records["good"]["clean"], records["bad"]["clean"]
    assert good["number_of_errors"] == 0 and bad_clean["number_of_errors"] == 1
    assert "http://example.org/a b" in bad_clean["messages"][0]["message"]
    assert bad_clean["key"] == good["key"] and good["number_of_statements"] == 7 + 2


@pytest.mark.skipif(not ROOT.exists(), reason="../shared/conformance is absent")
@pytest.mark.parametrize(
    "declared,codec,bom",
    [("ISO-8859-1", "latin-1", b""), ("windows-1252", "cp1252", b""), ("UTF-16", "utf-16-le", b"\xff\xfe")],
)
def test_non_utf8_rdfxml_is_parsed(tmp_path, declared, codec, bom):
    """W3C rdf-charmod-uris/test001 (an IRI with ``é``), derived: its XML declaration says
    ``declared`` and the file is encoded so. After recoding the declaration says UTF-8."""
    original = RDF_XML / "rdf-charmod-uris" / "test001.rdf"
    text = original.read_text(encoding="utf-8")
    assert text.startswith('<?xml version="1.0" encoding="utf-8"?>')
    path = tmp_path / "test001.rdf"
    path.write_bytes(bom + text.replace('encoding="utf-8"', 'encoding="%s"' % declared, 1).encode(codec))
    record = launder_file(path, KEY, tmp_path / "out", base_iri="http://example.org/")
    assert record["declarations_rewritten"] == [{"declaration": "xml", "was": declared}]
    reference = launder_file(original, KEY, tmp_path / "ref", base_iri="http://example.org/")
    assert record["clean"]["number_of_errors"] == 0 and record["clean"]["number_of_statements"] == 1
    assert record["clean"]["key"] == reference["clean"]["key"]
    assert "<http://example.org/#André>" in _output(record)


def _with_entities(text: str) -> str | None:
    """An RDF/XML suite document as Protégé/the OWL API write them: the RDF and example.org
    namespaces declared as internal entities in a DOCTYPE and every quoted use replaced by ``&name;``."""
    names = {"rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#", "eg": "http://example.org/"}
    if "<!DOCTYPE" in text or not any('"%s' % iri in text for iri in names.values()):
        return None
    doctype = "<!DOCTYPE rdf:RDF [\n%s\n]>\n" % "\n".join(
        '    <!ENTITY %s "%s" >' % (name, iri) for name, iri in names.items()
    )
    for name, iri in names.items():
        text = text.replace('"%s' % iri, '"&%s;' % name)
    if text.startswith("<?xml"):
        end = text.index("?>") + 2
        return text[:end] + "\n" + doctype + text[end:]
    return doctype + text


@pytest.mark.skipif(not ROOT.exists(), reason="../shared/conformance is absent")
def test_protege_style_entities_are_expanded(tmp_path):
    """Every RDF/XML eval test of the W3C suite, derived with namespace entities (see
    ``_with_entities``), cleans to exactly the output of the original document."""
    checked, different = 0, []
    for test in load_manifest("rdf11/rdf-xml"):
        if test.kind != "Eval":
            continue
        variant = _with_entities(test.action.read_text(encoding="utf-8"))
        if variant is None:
            continue
        path = tmp_path / (test.id + ".rdf")
        path.write_text(variant, encoding="utf-8")
        options = CleanOptions(gzip_level=1)
        got = clean_file(path, "RDF/XML", KEY, tmp_path / "v", base_iri=test.base, options=options)
        want = clean_file(test.action, "RDF/XML", KEY, tmp_path / "o", base_iri=test.base, options=options)
        checked += 1
        if (got.key, got.errors) != (want.key, want.errors):
            different.append((test.id, got.messages[:1]))
    assert checked >= 50 and different == []


ENTITY_HEAD = b'<?xml version="1.0"?>\n<!DOCTYPE rdf:RDF [\n%s\n]>\n'
BODY = (
    b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://example.org/">'
    b'<rdf:Description rdf:about="http://example.org/s"><ex:p>%s</ex:p></rdf:Description></rdf:RDF>\n'
)


@pytest.mark.parametrize(
    "declarations,body,reason",
    [
        (b'<!ENTITY x SYSTEM "file:///etc/passwd">', b"&x;", "external or parameter entity"),
        (b'<!ENTITY x PUBLIC "-//x" "http://127.0.0.1:9/x">', b"&x;", "external or parameter entity"),
        (b'<!ENTITY % p "x"> %p;', b"v", "external or parameter entity"),
        (b'<!ENTITY a "lol"><!ENTITY b "&a;&a;">', b"&b;", "refers to other entities"),
        (b'<!ENTITY a "&a;">', b"&a;", "refers to other entities"),
        (b'<!ENTITY big "%s">' % (b"x" * 1000), b"&big;" * (MAX_EXPANSION_BYTES // 1000 + 1), "exceeds"),
    ],
    ids=["system", "public", "parameter", "nested", "recursive", "quadratic"],
)
def test_hostile_entities_stay_refused(tmp_path, declarations, body, reason):
    path = tmp_path / "hostile.rdf"
    path.write_bytes(ENTITY_HEAD % declarations + BODY % body)
    result = clean_file(path, "RDF/XML", KEY, tmp_path / "out")
    assert result.errors == 1 and reason in result.messages[0]["message"], result.messages
    assert result.statements == 0


XHTML = (
    b'<?xml version="1.0"?>\n<!DOCTYPE html [\n%s\n]>\n<html xmlns="http://www.w3.org/1999/xhtml"><body>'
    b'<p about="http://example.org/s" property="http://example.org/p">%s</p></body></html>\n'
)
NOT_EXPANDED = "declares entities (not expanded): its RDFa is read as HTML"
LAUGHS = b'<!ENTITY a0 "lol">' + b"".join(
    b'<!ENTITY a%d "%s">' % (i, b"&a%d;" % (i - 1) * 10) for i in range(1, 10)
)


@pytest.mark.parametrize(
    "declarations,body,literal,warnings",
    [
        (b'<!ENTITY x SYSTEM "file:///etc/passwd">', b"&x;", '"&x;"', [NOT_EXPANDED]),
        (LAUGHS, b"&a9;", '"&a9;"', [NOT_EXPANDED]),
    ],
    ids=["system", "billion-laughs"],
)
def test_xhtml_entities_reach_no_rdfa(tmp_path, declarations, body, literal, warnings):
    """XHTML's RDFa is read by an XML parser, but never with entities: a document declaring some
    is read as HTML, where an entity reference is text (no file read, no expansion)."""
    path = tmp_path / "hostile.xhtml"
    path.write_bytes(XHTML % (declarations, body))
    result = clean_file(path, "RDFa", KEY, tmp_path / "out")
    assert _lines_of(result.path) == ["<http://example.org/s> <http://example.org/p> %s ." % literal]
    assert [m["message"] for m in result.messages] == warnings


def test_xhtml_with_html_entities_keeps_their_text(tmp_path):
    """An XHTML+RDFa page with HTML's named entities (defined only in the DTD, which is not read): an
    XML parser would drop them silently, so the page is read as HTML."""
    path = tmp_path / "page.xhtml"
    path.write_bytes(
        XHTML.replace(b"<!DOCTYPE html [\n%s\n]>", b"%s")
        % (
            b'<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML+RDFa 1.1//EN" "http://www.w3.org/MarkUp/DTD/xhtml-rdfa-2.dtd">',
            b"caf&eacute;&nbsp;au lait",
        )
    )
    result = clean_file(path, "RDFa", KEY, tmp_path / "out")
    assert _lines_of(result.path) == [
        '<http://example.org/s> <http://example.org/p> "caf\u00e9\u00a0au lait" .'
    ]
    assert result.messages == []


def test_dot_segments_are_removed_when_iris_are_resolved(tmp_path):
    """RFC 3986 §5.2.4, its own examples; and a Turtle document resolved against a base with dot
    segments, holding an absolute IRI with dot segments (N-Triples and JSON-LD keep IRIs as written)."""
    assert remove_dot_segments("/a/b/c/./../../g") == "/a/g"
    assert remove_dot_segments("mid/content=5/../6") == "mid/6"
    assert remove_dot_segments("/a/b/..") == "/a/"
    path = tmp_path / "doc.ttl"
    path.write_bytes(b"<s> <p> <d>, <../e>, <http://x.org/./y/../z>, <g?x=./../y> .\n")
    result = clean_file(path, "Turtle", KEY, tmp_path / "out", base_iri="http://ex.org/a/./b/../c")
    assert sorted(_lines_of(result.path)) == sorted(
        "<http://ex.org/a/s> <http://ex.org/a/p> <%s> ." % o
        for o in ("http://ex.org/a/d", "http://ex.org/e", "http://x.org/z", "http://ex.org/a/g?x=./../y")
    )
    # JSON-LD keeps absolute IRIs as written (JSON-LD 1.1 API §5.2.2); relative ones are resolved.
    jsonld = tmp_path / "doc.jsonld"
    jsonld.write_bytes(b'{"@id": "http://x.org/./y/../z", "http://ex.org/p": {"@id": "../e"}}')
    assert _lines_of(
        clean_file(jsonld, "JSON-LD", KEY, tmp_path / "jl", base_iri="http://ex.org/a/./b/../c").path
    ) == ["<http://x.org/./y/../z> <http://ex.org/p> <http://ex.org/e> ."]
    nt = tmp_path / "doc.nt"
    nt.write_bytes(b"<http://x.org/./y/../z> <http://ex.org/p> <http://ex.org/o> .\n")
    assert _lines_of(clean_file(nt, "N-Triples", KEY, tmp_path / "nt").path) == [
        "<http://x.org/./y/../z> <http://ex.org/p> <http://ex.org/o> ."
    ]


def _lines_of(path: str) -> list[str]:
    with gzip.open(path, "rb") as f:
        return f.read().decode("utf-8").split("\n")[:-1]


@pytest.mark.parametrize(
    "body,fmt",
    [
        (
            b'<http://ex.org/s> <http://ex.org/p> "x"@ar--rtl .\n<http://ex.org/s> <http://ex.org/q> "y"@en .\n',
            "N-Triples",
        ),
        (
            b'{"@context": {"@vocab": "http://ex.org/", "@language": "ar", "@direction": "rtl"}, '
            b'"@id": "http://ex.org/s", "p": "x", "q": {"@value": "y", "@language": "en"}}',
            "JSON-LD",
        ),
    ],
    ids=["n-triples", "json-ld"],
)
def test_base_direction_never_reaches_the_output(tmp_path, body, fmt):
    path = tmp_path / "doc"
    path.write_bytes(body)
    result = clean_file(path, fmt, KEY, tmp_path / "out")
    assert _lines_of(result.path) == [
        '<http://ex.org/s> <http://ex.org/p> "x"@ar .',
        '<http://ex.org/s> <http://ex.org/q> "y"@en .',
    ]
    assert result.errors == 0 and result.warnings == 1
    assert result.messages[0]["message"] == "base direction rtl dropped (the output is RDF 1.1)"


def test_a_lossy_guess_is_recorded(tmp_path):
    """A tiny JSON-LD document with one bad byte: JSON is UTF-8, so it is decoded as UTF-8 with the
    byte recorded as a replacement (not guessed as cp1250); a non-JSON document the detector has to
    guess records that the encoding is a guess and where UTF-8 failed."""
    path = tmp_path / "tiny.jsonld"
    path.write_bytes(b'{"@id": "http://ex.org/s", "http://ex.org/p": "caf\xe9"}')
    record = launder_file(path, KEY, tmp_path / "out")
    assert (record["encoding"], record["encoding_source"]) == ("utf-8", "json")
    assert record["number_of_replacements"] == 1 and record["replacements"] == [{"offset": 50, "bytes": "e9"}]
    text = tmp_path / "tiny.nt"
    text.write_bytes(b'<http://ex.org/s> <http://ex.org/p> "caf\xe9 \xe0 la cr\xe8me br\xfbl\xe9e" .\n')
    record = launder_file(text, KEY, tmp_path / "nt")
    assert record["encoding_source"] == "detector" and record["encoding_note"].startswith(
        "not UTF-8 (byte 40); "
    )


def test_one_unreadable_statement_costs_only_itself():
    """RDFa's statements reach pyoxigraph as N-Triples in no fixed order: a relative IRI (a page
    without a base) in one of them used to end parsing there, dropping a random share of the rest."""
    from votersdaily.laundromat.clean_types import CleanResult, Messages
    from votersdaily.laundromat.readers import quads_per_statement

    result = CleanResult(format="RDFa")
    data = (
        b"<http://example.org/a> <http://example.org/p> <http://example.org/o> .\n"
        b"<relative/page> <http://example.org/p> <http://example.org/o> .\n"
        b'<http://example.org/b> <http://example.org/p> "kept" .\n'
    )
    quads = quads_per_statement(data, ox.RdfFormat.N_TRIPLES, Messages(result, 10))
    assert [str(q.subject) for q in quads] == ["<http://example.org/a>", "<http://example.org/b>"]
    assert result.errors == 1 and result.messages[0]["line"] == 2
    assert "relative/page" in result.messages[0]["message"]
