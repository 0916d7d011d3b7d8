"""The exact source text of XML elements (an event's ``source_text``), byte for byte.

lxml re-serialises an element (namespace declarations copied in, entities and spacing normalised);
expat reports the byte offset of every tag, so each element can be cut from the document as the
publisher wrote it. Run only on documents :func:`votersdaily.sources.xml.parse_xml` accepted; a
document with a DOCTYPE is not scanned (its DTD would be read by expat), the caller falls back.
"""

from __future__ import annotations

import re
from xml.parsers import expat


def element_texts(body: bytes, tag: str, encoding: str = "utf-8") -> list[str] | None:
    """The text of every ``tag`` element (local name, outermost occurrences) in document order,
    or None when the document cannot be scanned safely (DOCTYPE, parse error)."""
    head = body[:4096].lower()
    if b"<!doctype" in head or b"<!entity" in body.lower():
        return None
    parser = expat.ParserCreate(namespace_separator=" ")
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    spans: list[tuple[int, int]] = []
    state = {"depth": 0, "start": 0}
    end_tag = re.compile(rb"</(?:[\w.-]+:)?%s\s*>" % re.escape(tag.encode("utf-8")))

    def local(name: str) -> str:
        return name.rsplit(" ", 1)[-1]

    def start(name: str, attrs: dict[str, str]) -> None:
        if local(name) == tag:
            if state["depth"] == 0:
                state["start"] = parser.CurrentByteIndex
            state["depth"] += 1

    def end(name: str) -> None:
        if local(name) == tag and state["depth"]:
            state["depth"] -= 1
            if state["depth"] == 0:
                index = parser.CurrentByteIndex
                # expat reports an end tag where it starts, and an empty element (<tag/>) just after it.
                closing = end_tag.match(body, index)
                spans.append((state["start"], closing.end() if closing else index))

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(body, True)
    except (expat.ExpatError, ValueError):
        return None
    try:
        return [body[a:b].decode(encoding) for a, b in spans]
    except (LookupError, UnicodeDecodeError):
        return None
