"""XML literals of RDF/XML in their canonical form, written before the parser reads the document.

RDF 1.1 XML Syntax (§2.8, §7.2.17 parseTypeLiteralPropertyElt) makes the value of an
``rdf:parseType="Literal"`` property element the Exclusive XML Canonicalization (with comments, an
empty InclusiveNamespaces PrefixList) of its content: each top-level element declares only the
namespaces it visibly uses, attributes are sorted, ``<br/>`` is ``<br></br>``, comments are kept.
pyoxigraph copies the content instead, with every in-scope namespace declared on each top-level
element (the default one twice when the element declares it too: not even well-formed), comments
dropped, and it refuses an empty one.

So each such element is rewritten, in a copy of the document, as the typed literal it stands for:
``<p rdf:parseType="Literal" rdf:ID="x">content</p>`` becomes
``<p rdf:datatype="…#XMLLiteral" rdf:ID="x">canonical content, escaped</p>``, and the parser reads
the canonical value as written. The document is read once by expat (in C; only documents that have
such an element), which gives the byte offset of every tag, the namespaces in scope and the RDF/XML
grammar's node/property alternation, so only property elements are rewritten; lxml canonicalises
the content. Everything else is copied byte for byte.

The grammar allows only ``rdf:ID`` (and ``xml:*``) beside ``rdf:parseType="Literal"``: an element
with other attributes (``rdf:resource``, property attributes, which the parser would drop
silently) ends the document there, as the parser's first error would. Where expat finds the XML
not well-formed, the rest is copied as it is and the parser judges it, as it judges every other
document (a warning says that XML literals past that point are not rewritten).
"""

from __future__ import annotations

import mmap
import re
import xml.parsers.expat
from pathlib import Path
from typing import BinaryIO, NamedTuple

from . import native

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
XML = "http://www.w3.org/XML/1998/namespace"
XML_LITERAL = RDF + "XMLLiteral"
#: Bytes expat is given at a time.
CHUNK = 1 << 20
#: A document has an ``rdf:parseType="Literal"`` (or a parseType value spelled with references).
_MAYBE_LITERAL = re.compile(rb"""parseType\s*=\s*(?:"(?:Literal|[^"]*&)|'(?:Literal|[^']*&))""")
#: Longest match of _MAYBE_LITERAL's start held over a chunk boundary.
_OVERLAP = 64
#: One attribute of a start tag: group 1 its qualified name.
_ATTRIBUTE = re.compile(rb"""\s([^\s=/>]+)\s*=\s*(?:"[^"]*"|'[^']*')""")
_WRAPPER_NS = "urn:votersdaily:xml-literal"

# What the children of an element are in the RDF/XML grammar.
_NODES, _PROPERTIES, _OPAQUE = 0, 1, 2


class LiteralStop(NamedTuple):
    """Where and why the rewriting stopped: ``error``: the copy ends there (the document's first
    error, in effect); ``warning``: the rest is copied as it is."""

    kind: str
    message: str
    line: int
    column: int


class _Stop(Exception):
    def __init__(self, stop: LiteralStop, offset: int):
        self.stop = stop
        self.offset = offset


class _Literal(NamedTuple):
    """An open XML-literal element: where its start tag begins, the tag rewritten, where its
    content starts (None: an empty-element tag), how many elements enclose it."""

    begin: int
    tag: bytes
    content: int | None
    depth: int


def _has_literal(path: Path) -> bool:
    if native.available() and not native.file_contains(path, 0, b"parseType"):
        return False  # what _MAYBE_LITERAL looks for starts with it
    with open(path, "rb") as f:
        tail = b""
        while chunk := f.read(CHUNK):
            data = tail + chunk
            if _MAYBE_LITERAL.search(data):
                return True
            tail = data[-_OVERLAP:]
    return False


def _tag_end(data: mmap.mmap, start: int) -> int:
    """The offset just past the start tag that begins at ``start`` (quoted values may hold ``>``)."""
    quote = 0
    i = start + 1
    while True:
        c = data[i]
        if quote:
            if c == quote:
                quote = 0
        elif c in (0x22, 0x27):
            quote = c
        elif c == 0x3E:
            return i + 1
        i += 1


def canonical_form(content: bytes, namespaces: dict[str | None, str]) -> str:
    """Exclusive XML Canonicalization (with comments) of ``content``, the bytes of an element's
    content, with ``namespaces`` (prefix → URI; None: the default namespace) in scope."""
    from lxml import etree

    prefix = "vdxl"
    while prefix in namespaces:
        prefix += "x"
    declarations = "".join(
        ' xmlns%s="%s"' % (":" + p if p else "", _attribute_escape(uri))
        for p, uri in namespaces.items()
        if p != "xml" and uri
    )
    opening = '<%s:w xmlns:%s="%s">' % (prefix, prefix, _WRAPPER_NS)
    fragment = b"<g%s>%s%s</%s:w></g>" % (
        declarations.encode("utf-8"),
        opening.encode("utf-8"),
        content,
        prefix.encode("ascii"),
    )
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, huge_tree=True, remove_comments=False, remove_pis=False
    )
    wrapper = etree.fromstring(fragment, parser)[0]
    canonical = etree.tostring(wrapper, method="c14n", exclusive=True, with_comments=True)
    closing = ("</%s:w>" % prefix).encode("ascii")
    if not (canonical.startswith(opening.encode("utf-8")) and canonical.endswith(closing)):
        raise ValueError("unexpected canonical wrapper: %r" % canonical[:200])
    return canonical[len(opening.encode("utf-8")) : -len(closing)].decode("utf-8")


def _attribute_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


def _text_escape(text: str) -> bytes:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").encode("utf-8")


class _Rewriter:
    """One pass of expat over the document, writing the copy as it goes (nothing is written until
    the first XML literal ends: a document without one is not copied)."""

    def __init__(self, dst: Path, data: mmap.mmap) -> None:
        self.dst, self.data = dst, data
        self.out: BinaryIO | None = None
        self.copied = 0  # bytes of the source accounted for in the copy so far
        self.parser = xml.parsers.expat.ParserCreate(encoding="utf-8", namespace_separator=" ")
        self.parser.StartElementHandler = self.start
        self.parser.EndElementHandler = self.end
        self.parser.StartNamespaceDeclHandler = self.declare
        self.parser.EndNamespaceDeclHandler = self.undeclare
        self.scopes: dict[str | None, list[str]] = {}
        #: Per open element, what its children are in the grammar.
        self.stack: list[int] = []
        #: The XML-literal element open now (its content is not RDF: nothing inside it is looked at).
        self.literal: _Literal | None = None

    def declare(self, prefix: str | None, uri: str | None) -> None:
        self.scopes.setdefault(prefix, []).append(uri or "")

    def undeclare(self, prefix: str | None) -> None:
        self.scopes[prefix].pop()

    def in_scope(self) -> dict[str | None, str]:
        return {p: uris[-1] for p, uris in self.scopes.items() if uris}

    def start(self, name: str, attributes: dict[str, str]) -> None:
        if not self.stack:  # the root: rdf:RDF, else a node element
            self.stack.append(_NODES if name == RDF + " RDF" else _PROPERTIES)
            return
        context = self.stack[-1]
        if context != _PROPERTIES:  # a node element (its children: properties), or opaque content
            self.stack.append(_PROPERTIES if context == _NODES else _OPAQUE)
            return
        parse_type = attributes.get(RDF + " parseType")
        if parse_type == "Literal":
            self.literal = self._literal(attributes)
            self.stack.append(_OPAQUE)
        else:
            self.stack.append(
                _PROPERTIES
                if parse_type == "Resource"
                else _NODES
                if parse_type in (None, "Collection")
                else _OPAQUE
            )

    def _literal(self, attributes: dict[str, str]) -> _Literal:
        """The XML-literal element starting here, its start tag with ``rdf:datatype``."""
        begin = self.parser.CurrentByteIndex
        others = [
            a for a in attributes if a not in (RDF + " parseType", RDF + " ID") and not a.startswith(XML)
        ]
        if others:
            raise _Stop(
                LiteralStop(
                    "error",
                    'rdf:parseType="Literal" does not allow %s beside it (RDF 1.1 XML Syntax §7.2.17)'
                    % ", ".join(sorted(_readable(a) for a in others)),
                    self.parser.CurrentLineNumber,
                    self.parser.CurrentColumnNumber + 1,
                ),
                begin,
            )
        end = _tag_end(self.data, begin)
        tag = bytes(self.data[begin:end])
        rdf_prefixes = {p for p, uri in self.in_scope().items() if uri == RDF and p}
        for match in _ATTRIBUTE.finditer(tag):
            prefix, _, local = match.group(1).decode("utf-8").rpartition(":")
            if local == "parseType" and prefix in rdf_prefixes:
                datatype = ' %s:datatype="%s"' % (prefix, XML_LITERAL)
                tag = tag[: match.start()] + datatype.encode("utf-8") + tag[match.end() :]
                break
        else:  # expat read it there
            raise ValueError("rdf:parseType not found in %r" % tag[:200])
        if tag.endswith(b"/>"):  # the empty literal: an element with no content
            qname = re.match(rb"<([^\s/>]+)", tag).group(1)  # type: ignore[union-attr]
            return _Literal(begin, tag[:-2] + b"></" + qname + b">", None, len(self.stack))
        return _Literal(begin, tag, end, len(self.stack))

    def end(self, name: str) -> None:
        self.stack.pop()
        literal = self.literal
        if literal is None or len(self.stack) != literal.depth:
            return
        self.literal = None
        self._copy_to(literal.begin)
        self._write(literal.tag)
        if literal.content is None:
            self.copied = self.parser.CurrentByteIndex
            return
        content_end = self.parser.CurrentByteIndex
        try:
            canonical = canonical_form(bytes(self.data[literal.content : content_end]), self.in_scope())
        except SyntaxError as exc:  # lxml's XMLSyntaxError: what expat read, libxml2 refuses
            position = self.parser.CurrentLineNumber, self.parser.CurrentColumnNumber + 1
            raise _Stop(
                LiteralStop("error", "XML literal not canonicalised: %s" % exc, *position), literal.begin
            ) from None
        self._write(_text_escape(canonical))
        self.copied = content_end

    def _write(self, data: bytes) -> None:
        if self.out is None:
            self.out = open(self.dst, "wb")
        self.out.write(data)

    def _copy_to(self, offset: int) -> None:
        if offset > self.copied:
            self._write(bytes(self.data[self.copied : offset]))
            self.copied = offset

    def run(self) -> LiteralStop | None:
        """Rewrite the document; where the rewriting stopped, else None."""
        try:
            for offset in range(0, len(self.data), CHUNK):
                self.parser.Parse(bytes(self.data[offset : offset + CHUNK]), False)
            self.parser.Parse(b"", True)
        except _Stop as exc:
            # The copy ends before the error: the parser stops there.
            self._copy_to(exc.offset)
            self._write(b"")
            return exc.stop
        except xml.parsers.expat.ExpatError as exc:
            at = self.parser.ErrorByteIndex
            if self.out is not None:
                self._copy_to(len(self.data))
            if _MAYBE_LITERAL.search(self.data, self.literal.begin if self.literal else at) is None:
                return None  # no XML literal is left as the parser writes it
            return LiteralStop(
                "warning",
                "XML literals from here on are not canonicalised: not well-formed XML (%s)"
                % xml.parsers.expat.ErrorString(exc.code),
                exc.lineno,
                exc.offset + 1,
            )
        if self.out is not None:
            self._copy_to(len(self.data))
        return None


def _readable(expanded: str) -> str:
    uri, _, local = expanded.rpartition(" ")
    return "rdf:" + local if uri == RDF else ("{%s}%s" % (uri, local) if uri else local)


def canonical_xml_literals(src: Path, dst: Path) -> tuple[Path, LiteralStop | None]:
    """The document to parse: ``src`` when it has no XML literal, else ``dst``, a copy with each one
    canonical; and where the rewriting stopped (an invalid XML-literal element ends the copy; XML
    that is not well-formed is copied as it is from there), else None."""
    if not _has_literal(src):
        return src, None
    with open(src, "rb") as f:
        if not f.seek(0, 2):
            return src, None
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            rewriter = _Rewriter(dst, data)
            try:
                stop = rewriter.run()
            finally:
                if rewriter.out is not None:
                    rewriter.out.close()
    return (src, None) if rewriter.out is None else (dst, stop)
