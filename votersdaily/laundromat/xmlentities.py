"""Internal entities of RDF/XML, expanded before parsing (the parser is never given a DTD).

Protégé and the OWL API write every ontology with namespace entities in the prolog
(``<!DOCTYPE rdf:RDF [ <!ENTITY owl "http://www.w3.org/2002/07/owl#" > ]>`` and ``&owl;Thing``):
refusing all entities loses them all. Only simple internal entities are expanded: a literal value
holding no markup and no reference (so no nesting, no recursion, no billion laughs), at most
``MAX_ENTITIES`` of them, with a bound on the bytes all references add (a quadratic blow-up is
refused too). External entities (``SYSTEM``/``PUBLIC``), parameter entities and a DOCTYPE anywhere
but the prolog are refused; the DOCTYPE is removed from what the parser reads.
"""

from __future__ import annotations

import re
from pathlib import Path

from . import native

CHUNK = 1 << 20
#: Where the prolog must end (its DOCTYPE with its internal subset).
MAX_PROLOG_BYTES = 1 << 20
MAX_ENTITIES = 1000
#: Bytes all entity references together may add to the document.
MAX_EXPANSION_BYTES = 64 << 20

_DOCTYPE = re.compile(rb"<!DOCTYPE", re.I)
_ENTITY = re.compile(rb"<!ENTITY", re.I)
#: A DOCTYPE with an optional external id and an internal subset: group 1 is the subset.
_DOCTYPE_DECL = re.compile(
    rb"<!DOCTYPE\s+[^\s\[>]+(?:\s+(?:SYSTEM|PUBLIC)[^\[>]*)?\s*(?:\[(.*?)\]\s*)?>", re.S
)
_SIMPLE_ENTITY = re.compile(rb"""<!ENTITY\s+([A-Za-z_][\w.\-]*)\s+(?:"([^"]*)"|'([^']*)')\s*>""")
_MARKUP_DECL = re.compile(rb"<!(?:ENTITY|ELEMENT|ATTLIST|NOTATION)\b[^>]*>|<!--.*?-->|<\?.*?\?>", re.S)
_REFERENCE = re.compile(rb"&([A-Za-z_][\w.\-]*);")
_ELEMENT = re.compile(rb"<[A-Za-z_]")
_COMMENTS_AND_PIS = re.compile(rb"<!--.*?-->|<\?.*?\?>", re.S)
#: Longest reference held back at a chunk boundary.
_MAX_NAME = 256


class EntityRefused(ValueError):
    """The document declares entities that are not simple internal ones, or expands past the bound."""


def _declarations(subset: bytes) -> dict[bytes, bytes]:
    """The simple internal entities of a DOCTYPE's internal subset; anything else is refused."""
    entities: dict[bytes, bytes] = {}
    for decl in _MARKUP_DECL.finditer(subset):
        text = decl.group(0)
        if not _ENTITY.match(text):
            continue  # element/attribute declarations, comments, PIs: no effect on RDF
        match = _SIMPLE_ENTITY.fullmatch(text)
        if match is None:
            raise EntityRefused("RDF/XML declares an external or parameter entity; refused: %r" % text[:200])
        value = match.group(2) if match.group(2) is not None else match.group(3)
        if b"&" in value or b"<" in value or b"%" in value:
            raise EntityRefused(
                "RDF/XML entity %r refers to other entities or markup; entity expansion is refused"
                % match.group(1)
            )
        entities.setdefault(match.group(1), value)  # XML: the first declaration binds
        if len(entities) > MAX_ENTITIES:
            raise EntityRefused("RDF/XML declares more than %d entities" % MAX_ENTITIES)
    leftover = _MARKUP_DECL.sub(b"", subset).strip()
    if leftover:  # parameter entity references (%name;), conditional sections: refused
        raise EntityRefused("RDF/XML internal subset holds %r; refused" % leftover[:200])
    return entities


def expand_entities(src: Path, dst: Path, max_expansion: int = MAX_EXPANSION_BYTES) -> Path:
    """``src`` when it declares no entity; else ``dst``, the document without its DOCTYPE and with
    every reference to a declared entity replaced by its value (XML-escaped)."""
    with open(src, "rb") as f:
        head = f.read(MAX_PROLOG_BYTES)
    doctype = _DOCTYPE.search(head)
    if doctype is None or _ENTITY.search(head, doctype.end()) is None:
        _refuse_late_entities(src, doctype.end() if doctype else 0, seen_doctype=doctype is not None)
        return src
    decl = _DOCTYPE_DECL.match(head, doctype.start())
    if decl is None or _ELEMENT.search(_COMMENTS_AND_PIS.sub(b"", head[: doctype.start()])):
        raise EntityRefused("RDF/XML DOCTYPE with entities is not in the prolog; entity expansion is refused")
    entities = _declarations(decl.group(1) or b"")
    _refuse_late_entities(src, decl.end(), seen_doctype=True)
    values = {
        name: value.replace(b'"', b"&quot;").replace(b"'", b"&apos;") for name, value in entities.items()
    }
    added = 0

    def replace(match: re.Match[bytes]) -> bytes:
        nonlocal added
        value = values.get(match.group(1))
        if value is None:
            return match.group(0)  # predefined (amp, lt, ...) or undeclared: the parser judges
        added += len(value)
        if added > max_expansion:
            raise EntityRefused("RDF/XML entity expansion exceeds %d bytes; refused" % max_expansion)
        return value

    with open(src, "rb") as inp, open(dst, "wb") as out:
        out.write(head[: decl.start()])
        inp.seek(decl.end())
        rest = b""
        while True:
            chunk = inp.read(CHUNK)
            data = rest + chunk
            cut = len(data)
            if chunk:  # hold back a reference the chunk boundary may cut
                amp = data.rfind(b"&", max(0, len(data) - _MAX_NAME))
                if amp >= 0 and b";" not in data[amp:]:
                    cut = amp
            out.write(_REFERENCE.sub(replace, data[:cut]))
            rest = data[cut:]
            if not chunk:
                break
    return dst


def _refuse_late_entities(path: Path, start: int, seen_doctype: bool, chunk_bytes: int = CHUNK) -> None:
    """Refuse a DOCTYPE with an ``<!ENTITY`` anywhere after byte ``start`` (a prolog can be padded
    past any window, and the parser also reads a DOCTYPE met after the root element starts). Both are
    searched case-insensitively, in or out of comments (a false alarm only on documents that spell
    out both strings)."""
    if native.available() and not native.file_contains(path, start, b"!"):
        return  # both strings hold a "!"
    pattern, tail = _ENTITY if seen_doctype else _DOCTYPE, b""
    with open(path, "rb") as f:
        f.seek(start)
        while True:
            chunk = f.read(chunk_bytes)
            if not chunk:
                return
            data = tail + chunk
            # Both strings hold a "!", which most chunks lack: those are skipped at memchr's speed.
            match = pattern.search(data) if b"!" in data else None
            while match is not None:
                if pattern is _ENTITY:
                    raise EntityRefused(
                        "RDF/XML declares DTD entities outside the prolog; entity expansion is refused"
                    )
                pattern = _ENTITY
                match = pattern.search(data, match.end())
            tail = data[-(len(b"<!DOCTYPE") - 1) :]
