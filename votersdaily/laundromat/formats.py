"""Guessing the RDF serialisation of a document from its start, its Content-Type and its file extension.

All three are recorded, with every disagreement between them (content that fits a broader format
than the one declared, a Content-Type and an extension that differ; content that fits a format
the declared one contains is no disagreement). The sniffed format wins when the start of the
document decides it; line-based documents are N-Triples (or N-Quads when a line has a graph
term); the Turtle family is TriG only when it has graph blocks. The guess is the most specific
format that fits, so a Turtle file that is plain N-Triples is guessed as N-Triples (same graph).

When no line ends inside the window (a first statement longer than it, such as a 50 MB literal)
and what it holds starts an N-Triples or N-Quads statement, the content cannot tell the line-based
formats from Turtle: the Content-Type and the extension decide (a line-based one first), else
N-Triples. A line-based parse loses only a statement it cannot read; Turtle's stops at the first.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

JSON_LD = "JSON-LD"
N_QUADS = "N-Quads"
N_TRIPLES = "N-Triples"
RDF_XML = "RDF/XML"
RDFA = "RDFa"
TRIG = "TriG"
TURTLE = "Turtle"
FORMATS = (JSON_LD, N_QUADS, N_TRIPLES, RDF_XML, RDFA, TRIG, TURTLE)
#: Formats read line by line (one bad statement costs only its line), then the rest of the family.
LINE_BASED = (N_TRIPLES, N_QUADS)
TERSE = (*LINE_BASED, TURTLE, TRIG)
SNIFF_CHARS = 10_000

MEDIA_TYPES = {
    "application/n-triples": N_TRIPLES,
    "application/ntriples": N_TRIPLES,
    "text/ntriples": N_TRIPLES,
    "application/n-quads": N_QUADS,
    "text/x-nquads": N_QUADS,
    "text/nquads": N_QUADS,
    "text/turtle": TURTLE,
    "application/x-turtle": TURTLE,
    "application/turtle": TURTLE,
    "text/n3": TURTLE,
    "text/rdf+n3": TURTLE,
    "application/trig": TRIG,
    "application/x-trig": TRIG,
    "application/rdf+xml": RDF_XML,
    "text/rdf+xml": RDF_XML,
    "application/rdf": RDF_XML,
    "application/ld+json": JSON_LD,
    "application/json": JSON_LD,
    "text/html": RDFA,
    "application/xhtml+xml": RDFA,
}
EXTENSIONS = {
    ".nt": N_TRIPLES,
    ".ntriples": N_TRIPLES,
    ".nq": N_QUADS,
    ".nquads": N_QUADS,
    ".ttl": TURTLE,
    ".turtle": TURTLE,
    ".n3": TURTLE,
    ".trig": TRIG,
    ".rdf": RDF_XML,
    ".owl": RDF_XML,
    ".rdfs": RDF_XML,
    ".xml": RDF_XML,
    ".jsonld": JSON_LD,
    ".json": JSON_LD,
    ".html": RDFA,
    ".htm": RDFA,
    ".xhtml": RDFA,
}

_IRI = r"<(?:[^<>\"{}|^`\\\s]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})*>"
_BNODE = r"_:[^\s<>\"]+"
_LITERAL = r"\"(?:[^\"\\\n\r]|\\.)*\"(?:@[A-Za-z][A-Za-z0-9\-]*|\s*\^\^\s*" + _IRI + r")?"
_TERM = "(?:%s|%s)" % (_IRI, _BNODE)
_LINE = re.compile(
    r"^\s*%s\s*%s\s*(?:%s|%s)\s*(%s)?\s*\.\s*(?:#.*)?$" % (_TERM, _IRI, _TERM, _LITERAL, _TERM)
)
_TURTLE_HINT = re.compile(r"(?im)^\s*(?:@prefix|@base|prefix\s+[\w\-.]*:|base\s*<)")
_STRINGS = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')
_IRIS = re.compile(r"<[^<>\s]*>")
_COMMENTS = re.compile(r"#[^\n]*")
_GRAPH_KW = re.compile(r"(?i)(?:^|\s)GRAPH\s")


@dataclass
class Guess:
    format: str | None
    sniffed: str | None
    content_type: str | None
    content_type_format: str | None
    extension: str | None
    extension_format: str | None
    disagreements: list[str] = field(default_factory=list)
    #: Why the document is not RDF (``format`` is None then): what the content, Content-Type and
    #: extension showed.
    not_rdf: str | None = None

    def as_record(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "not_rdf": self.not_rdf,
            "format_sniffed": self.sniffed,
            "format_content_type": self.content_type_format,
            "format_extension": self.extension_format,
            "content_type": self.content_type,
            "extension": self.extension,
            "format_disagreements": self.disagreements,
        }


def format_of_media_type(content_type: str | None) -> str | None:
    if not content_type:
        return None
    return MEDIA_TYPES.get(content_type.split(";")[0].strip().lower())


def extension_of(name: str | None) -> str | None:
    if not name:
        return None
    base = posixpath.basename(name.split("?")[0].split("#")[0])
    for compressed in (".gz", ".bz2", ".xz", ".zip"):
        if base.lower().endswith(compressed):
            base = base[: -len(compressed)]
    ext = posixpath.splitext(base)[1].lower()
    return ext or None


def sniff(head: str) -> str | None:
    """The format the first characters of a (UTF-8 decoded) document show, or None."""
    text = head.lstrip("\ufeff \t\r\n")
    if not text:
        return None
    if not_rdf_content(text):
        return None
    if text[0] == "<" and _is_markup(text):
        return _sniff_markup(text)
    if text[0] in "{[" and _looks_json(text):
        return JSON_LD
    return _sniff_terse(text)


#: Signatures of common non-RDF files (after recoding, their first bytes are still these characters).
_SIGNATURES = {"%PDF-": "a PDF document", "PK\x03\x04": "a zip archive", "GIF8": "a GIF image"}
#: C0 control characters no text format uses (NUL included): many of them mean binary data.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f]")


def not_rdf_content(text: str) -> str | None:
    """What the start of a document shows it is when that is no RDF serialisation (a PDF, binary
    data), else None."""
    for signature, kind in _SIGNATURES.items():
        if text.startswith(signature):
            return "content starts with %r: %s" % (signature, kind)
    # (Literals may hold control characters: the suites' "all controls" tests.)
    controls = len(_CONTROL.findall(_STRINGS.sub('""', text[:SNIFF_CHARS])))
    if controls >= 32 and controls * 100 > min(len(text), SNIFF_CHARS):
        return "content is binary (%d control characters in the first %d)" % (
            controls,
            min(len(text), SNIFF_CHARS),
        )
    return None


_START_TAG = re.compile(r"^<([A-Za-z_][\w.\-]*(?::[\w.\-]+)?)(\s[^>]*)?/?>")
_BARE_TAGS = {"html", "head", "body", "rdf:rdf", "rdf:description"}


def _is_markup(text: str) -> bool:
    """``<?xml``, ``<!DOCTYPE``, or a start tag (``<name attr=…>``: IRIs have no spaces)."""
    if text.startswith(("<?", "<!")):
        return True
    match = _START_TAG.match(text)
    return match is not None and (match.group(2) is not None or match.group(1).lower() in _BARE_TAGS)


def _sniff_markup(text: str) -> str | None:
    lower = text[:4096].lower()
    body = re.sub(r"<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<!doctype[^>]*>", "", lower).lstrip()
    if (
        body.startswith("<html")
        or "<!doctype html" in lower
        or body.startswith("<head")
        or body.startswith("<body")
    ):
        return RDFA
    if body.startswith("<"):
        return RDF_XML
    return None


def _looks_json(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except (ValueError, RecursionError):  # deep nesting ("[[[[…") is JSON the decoder will not nest into
        pass
    rest = text[1:].lstrip()
    if not rest:
        return False
    if text[0] == "{":
        return rest[0] in '"}'
    return rest[0] in '{"[0123456789-'  # "[ ]" / "[ :p" start Turtle blank nodes


def statement_cut_off(head: str) -> bool:
    """Whether no line ends inside the window ``head`` (comments aside) and what it holds starts an
    N-Triples or N-Quads statement: the parser's only complaint is the end of the text."""
    if len(head) < SNIFF_CHARS:
        return False
    before, _, last = head.lstrip("\ufeff").rpartition("\n")
    if not last.strip() or any(ln.strip() and not ln.lstrip().startswith("#") for ln in before.split("\n")):
        return False
    import pyoxigraph as ox  # the workers sniff; the crawl imports this module without it

    try:
        for _ in ox.parse(last.encode("utf-8"), ox.RdfFormat.N_QUADS):
            pass
    except SyntaxError as exc:
        return (exc.end_lineno or exc.lineno) == 1 and (exc.end_offset or 0) > len(last)
    return True


def _sniff_terse(text: str) -> str | None:
    lines = [ln for ln in text.split("\n") if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        return None  # only comments: nothing to tell
    if statement_cut_off(text):
        return N_TRIPLES  # as far as the window shows (guess_format weighs what is declared)
    # A cut-off last line of the sniffed head says nothing.
    sample = lines[:-1] if len(text) >= SNIFF_CHARS and len(lines) > 1 else lines
    sample = sample[:200]
    stripped = _COMMENTS.sub("", _IRIS.sub("<>", _STRINGS.sub('""', text)))
    if "{" in stripped or _GRAPH_KW.search(stripped):
        terse = TRIG
    else:
        if sample and not _TURTLE_HINT.search(text):
            matches = [_LINE.match(ln) for ln in sample]
            good = [m for m in matches if m]
            if len(good) * 2 >= len(sample):
                return N_QUADS if any(m.group(1) for m in good) else N_TRIPLES
        terse = TURTLE
    # Plain text is neither: the Turtle family needs a directive or a statement before any error.
    return terse if _TURTLE_HINT.search(text) or _parses_as(text, terse) else None


#: Any base: relative IRIs are fine while sniffing.
_SNIFF_BASE = "http://example.invalid/"


def _parses_as(text: str, fmt: str) -> bool:
    """True when the head gives a statement as ``fmt`` (Turtle or TriG) before any error, or its only
    error is in a line the sniffing window cut off (plain text gives an error first)."""
    import pyoxigraph as ox  # the workers sniff; the crawl imports this module without it

    oxf = ox.RdfFormat.TRIG if fmt == TRIG else ox.RdfFormat.TURTLE
    try:
        for _ in ox.parse(text, oxf, base_iri=_SNIFF_BASE):
            return True
        return True  # valid and empty (only directives)
    except SyntaxError as exc:
        return len(text) >= SNIFF_CHARS and exc.lineno is not None and exc.lineno >= text.count("\n")


def guess_format(head: str, content_type: str | None = None, name: str | None = None) -> Guess:
    """Sniff ``head`` and weigh it against ``content_type`` and the extension of ``name``."""
    sniffed = sniff(head)
    ct_format = format_of_media_type(content_type)
    extension = extension_of(name)
    ext_format = EXTENSIONS.get(extension) if extension else None
    chosen = sniffed or ct_format or ext_format
    if sniffed == N_TRIPLES and statement_cut_off(head):
        declared = [f for f in (ct_format, ext_format) if f in TERSE]
        chosen = next((f for f in declared if f in LINE_BASED), declared[0] if declared else N_TRIPLES)
    not_rdf = None
    if chosen is None:
        not_rdf = _not_rdf_evidence(head, content_type, extension)
        if not_rdf is None:
            chosen = N_TRIPLES  # empty, or only comments: nothing to tell, nothing to lose
    disagreements = []
    seen = [
        (k, v) for k, v in (("content", sniffed), ("content-type", ct_format), ("extension", ext_format)) if v
    ]
    for i, (kind_a, fmt_a) in enumerate(seen):
        for kind_b, fmt_b in seen[i + 1 :]:
            if fmt_a != fmt_b and not (kind_a == "content" and fmt_b in _SUPERSETS.get(fmt_a, ())):
                disagreements.append("%s says %s, %s says %s" % (kind_a, fmt_a, kind_b, fmt_b))
    return Guess(chosen, sniffed, content_type, ct_format, extension, ext_format, disagreements, not_rdf)


def _not_rdf_evidence(head: str, content_type: str | None, extension: str | None) -> str | None:
    """Why a document nothing showed a format for is not RDF; None when it is empty (or only comments)."""
    text = head.lstrip("\ufeff \t\r\n")
    if not text or all(not ln.strip() or ln.lstrip().startswith("#") for ln in text.split("\n")):
        return None
    evidence = [
        not_rdf_content(text)
        or "content parses as no RDF serialisation (first line %r)" % text.split("\n")[0][:80]
    ]
    evidence.append("content-type %s" % (content_type or "absent"))
    evidence.append("extension %s" % (extension or "absent"))
    return "; ".join(evidence)


#: The formats whose grammar contains a format's (N-Triples is also Turtle, ...): content that fits
#: one of them is what was declared.
_SUPERSETS = {N_TRIPLES: {N_QUADS, TURTLE, TRIG}, N_QUADS: {TRIG}, TURTLE: {TRIG}}
