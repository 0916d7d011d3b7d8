"""Skolemising: blank nodes of canonical lines become well-known genid IRIs under the document's key."""

from __future__ import annotations

import re
from urllib.parse import quote_from_bytes

#: A blank node label pyoxigraph invented for an anonymous node (hex of a random u128).
_GENERATED = re.compile(rb"^[0-9a-f]{16,32}$")

# Blank nodes in a block of canonical lines are found by position, so that "_:" inside a literal or
# an IRI (``<http://e/g_:x>``) is never touched: the block is split at every "_:<label>" (one regex
# with a literal prefix: fast), and a label is a term when it starts a line (a subject), ends a
# line (the object of a triple, or a graph label), or follows the predicate's ">" and comes before
# a graph label (an IRI, or a blank node ending the line): the rest of its line, which may run past
# the next "_:" (one in that graph label), decides. Literals hold no raw newline, so none of these
# can match inside one. Labels never hold white space, quotes or angle brackets.
_BLANK = re.compile(rb'_:([^\s"<>]+)')
_GRAPH_TAIL = re.compile(rb' (?:<[^\s"<>]*>|_:[^\s"<>]+) \.\n')


def _rest_of_line(parts: list[bytes], i: int) -> bytes:
    """The text after label ``parts[i]`` of a split block, to the end of its line (the labels after
    ``i`` are not replaced yet)."""
    rest = [parts[i + 1]]
    j = i + 2
    while b"\n" not in rest[-1] and j < len(parts):
        rest += [b"_:", parts[j], parts[j + 1]]
        j += 2
    return b"".join(rest)


def label_segment(label: bytes) -> bytes:
    """A blank node label as an IRI path segment: characters IRIs may not hold are percent-encoded."""
    return quote_from_bytes(label, safe=":").encode("ascii")


class Skolemiser:
    """Blank nodes → well-known genid IRIs under the document's key.

    The document's own labels are kept (they are stable, so a document cleaned as N-Triples or as
    Turtle gives the same output). With ``relabel=True`` (formats with anonymous blank nodes, for
    which the parser invents random 128-bit hex labels) such labels are numbered in order of first
    appearance as ``-anonN``, which no document label can be (labels cannot start with "-"), so the
    output stays deterministic. A document label that happens to look like a generated one is
    numbered too; the mapping is per document and one-to-one, so equal labels stay equal and
    distinct labels distinct.
    """

    def __init__(self, genid_base: str, doc_key: str, relabel: bool) -> None:
        self.prefix = ("<%s%s/" % (genid_base, doc_key)).encode("utf-8")
        self.relabel = relabel
        self.labels: dict[bytes, bytes] = {}

    def term(self, label: bytes) -> bytes:
        """The genid IRI of blank node ``label``."""
        if self.relabel and _GENERATED.match(label):
            mapped = self.labels.get(label)
            if mapped is None:
                mapped = self.labels[label] = b"-anon%d" % len(self.labels)
            label = mapped
        elif label.isascii():
            # N-Triples allows only letters, digits, "_", ":", "-" and "." in ASCII labels: all IRI-safe.
            return self.prefix + label + b">"
        return self.prefix + label_segment(label) + b">"

    def block(self, block: bytes) -> bytes:
        """All blank nodes of a block of canonical lines (newline-terminated, without triple terms) replaced."""
        term, prefix, relabel = self.term, self.prefix, self.relabel
        parts = _BLANK.split(b"\n" + block)
        for i in range(1, len(parts), 2):
            before, after = parts[i - 1], parts[i + 1]
            if (
                before[-1:] == b"\n"
                or after[:3] == b" .\n"
                or (
                    before[-2:] == b"> "
                    and (
                        _GRAPH_TAIL.match(after) is not None
                        or (b"\n" not in after and _GRAPH_TAIL.match(_rest_of_line(parts, i)) is not None)
                    )
                )
            ):
                label = parts[i]
                # (ASCII labels of N-Triples hold only IRI-safe characters.)
                parts[i] = prefix + label + b">" if not relabel and label.isascii() else term(label)
            else:
                parts[i] = b"_:" + parts[i]
        return b"".join(parts)[1:]
