"""Serializer output made final RDF 1.1 lines: statements with triple terms dropped (recorded),
base directions dropped (recorded), dot segments removed, blank nodes skolemised."""

from __future__ import annotations

import re

from .clean_types import Messages
from .skolem import Skolemiser
from .uris import remove_dot_segments

_IRI = rb'<[^<>"\s]*>'
_BN = rb"_:[^ ]+"
_LIT = rb'"(?:[^"\\]|\\.)*"(?:@[^ ]+|\^\^<[^>]*>)?'
#: A canonical N-Quads line as pyoxigraph writes it (subject, object, graph captured).
CANONICAL = re.compile(
    rb"^(%s|%s) %s (%s|%s|%s)(?: (%s|%s))? \.$" % (_IRI, _BN, _IRI, _IRI, _BN, _LIT, _IRI, _BN), re.S
)

#: An RDF 1.2 directional language tag at the end of a canonical literal: group 1 is the plain tag.
_DIRECTION = re.compile(rb'"(@[^ ]+?)--(?:ltr|rtl)$')
#: An IRI whose path may hold dot segments.
_DOTTED = (b"/./", b"/../", b"/.>", b"/..>", b"/.?", b"/..?", b"/.#", b"/..#")
_IRI_PARTS = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*:(?://[^/?#]*)?)(/[^?#]*)(.*)$", re.S)


def without_dot_segments(iri: str) -> str:
    """``iri`` with the dot segments of its hierarchical path removed (as resolution does)."""
    match = _IRI_PARTS.match(iri)
    if match is None or not any(s in (".", "..") for s in match.group(2).split("/")):
        return iri
    return match.group(1) + remove_dot_segments(match.group(2)) + match.group(3)


def _iri_term(term: bytes) -> bytes:
    if term[:1] != b"<":
        return term
    return b"<" + without_dot_segments(term[1:-1].decode("utf-8")).encode("utf-8") + b">"


def _rdf11_line(line: bytes, messages: Messages, line_no: int | None, dots: bool) -> bytes:
    """A canonical line with its literal's base direction dropped (recorded) and, with ``dots``, the
    dot segments of its IRIs removed."""
    match = CANONICAL.match(line)
    if match is None:
        return line
    subject, obj, graph = match.group(1), match.group(2), match.group(3)
    predicate = line[match.end(1) + 1 : match.start(2) - 1]
    if obj[:1] == b'"' and (obj.endswith(b"--ltr") or obj.endswith(b"--rtl")):
        direction = _DIRECTION.search(obj)
        if direction is not None:
            messages.add(
                "warning",
                "base direction %s dropped (the output is RDF 1.1)" % obj[direction.end(1) + 2 :].decode(),
                line_no,
            )
            obj = obj[: direction.end(1)]
    if dots:
        subject, predicate, obj = _iri_term(subject), _iri_term(predicate), _iri_term(obj)
        graph = _iri_term(graph) if graph else graph
    return b" ".join(t for t in (subject, predicate, obj, graph) if t) + b" ."


def _has_direction(block: bytes) -> bool:
    return b"--" in block and (b"--ltr" in block or b"--rtl" in block)


def records_messages(block: bytes) -> bool:
    """Whether :func:`canonical_lines` may record a message for a line of ``block`` (a triple term,
    a base direction): a caller that knows each line's number gives it one line at a time."""
    return b"<<" in block or _has_direction(block)


def canonical_lines(
    block: bytes, skolem: Skolemiser, messages: Messages, line_no: int | None, dots: bool = False
) -> bytes:
    """Serializer output made final: statements RDF 1.1 cannot hold dropped (recorded as errors),
    base directions dropped (recorded), with ``dots`` dot segments removed, blank nodes skolemised."""
    if b"<<" in block:
        keep = []
        for line in block.split(b"\n")[:-1]:
            if b"<<" in line and CANONICAL.match(line) is None:
                messages.add(
                    "error",
                    "statement not representable in RDF 1.1 N-Quads: %s" % line.decode("utf-8", "replace"),
                    line_no,
                )
                continue
            keep.append(line)
        block = b"\n".join(keep) + b"\n" if keep else b""
    dotted = dots and any(d in block for d in _DOTTED)
    if dotted or _has_direction(block):
        block = b"".join(
            _rdf11_line(line, messages, line_no, dots) + b"\n" for line in block.split(b"\n")[:-1]
        )
    if b"_:" in block:
        block = skolem.block(block)
    return block


def has_named_graph(block: bytes) -> bool:
    return any(m is not None and m.group(3) for m in map(CANONICAL.match, block.split(b"\n")))
