"""JSON documents whose values keep their exact source text (an event's ``source_text``).

``json.loads`` forgets where a value came from; :func:`load_with_text` decodes a document and also
returns, for any object or array, the exact characters each member was written with, so an event
can carry the JSON object it came from byte for byte (the publisher's spacing and tabs included).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .errors import ErrorPage, MalformedDocument, UnexpectedDocument

_DECODER = json.JSONDecoder()
_WS = " \t\r\n"


@dataclass
class JsonText:
    """A decoded value with its exact text, and the same for its members (objects and arrays)."""

    value: Any
    text: str
    members: dict[str, JsonText] | list[JsonText] = field(default_factory=dict)

    def __getitem__(self, key: Any) -> JsonText:
        return self.members[key]


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def _expect(text: str, pos: int, char: str) -> int:
    pos = _skip(text, pos)
    if pos >= len(text) or text[pos] != char:
        found = text[pos] if pos < len(text) else "end of document"
        raise ValueError("expected %r at %d, found %r" % (char, pos, found))
    return pos + 1


def _scan(text: str, pos: int, depth: int) -> tuple[JsonText, int]:
    """One value at ``pos``: containers down to ``depth`` levels are walked member by member (each
    decoded once); deeper values and scalars are decoded whole by the standard library."""
    pos = _skip(text, pos)
    start = pos
    opener = text[pos] if pos < len(text) else ""
    if depth <= 0 or not opener or opener not in "{[":
        value, end = _DECODER.raw_decode(text, pos)
        return JsonText(value, text[start:end], {}), end
    is_object = opener == "{"
    close = "}" if is_object else "]"
    fields: dict[str, JsonText] = {}
    items: list[JsonText] = []
    pos = _skip(text, pos + 1)
    first = True
    while text[pos] != close:
        if not first:
            pos = _expect(text, pos, ",")
            pos = _skip(text, pos)
        first = False
        if is_object:
            if text[pos] != '"':
                raise ValueError("expected a key at %d" % pos)
            key, pos = _DECODER.raw_decode(text, pos)
            pos = _expect(text, pos, ":")
            fields[key], pos = _scan(text, pos, depth - 1)
        else:
            member, pos = _scan(text, pos, depth - 1)
            items.append(member)
        pos = _skip(text, pos)
    end = pos + 1
    if is_object:
        return JsonText({k: m.value for k, m in fields.items()}, text[start:end], fields), end
    return JsonText([m.value for m in items], text[start:end], items), end


def load_with_text(body: bytes | str, url: str = "", depth: int = 2) -> JsonText:
    """Decode a whole JSON document (leading/trailing whitespace allowed, nothing else), keeping the
    text of its values ``depth`` levels down (2: the objects of a top-level ``results`` array).

    Raises :class:`ErrorPage` for an HTML/XML page served in its place (error pages come with
    HTTP 200) and :class:`MalformedDocument` for anything that is not exactly one JSON value.
    """
    try:
        text = body.decode("utf-8-sig") if isinstance(body, bytes) else body
    except UnicodeDecodeError as exc:
        raise MalformedDocument("%s is not UTF-8: %s" % (url, exc)) from None
    if not text.strip():
        raise MalformedDocument("empty document at %s" % url)
    if text.lstrip()[:1] == "<":
        title = re.search(r"<title[^>]*>(.*?)</title>", text, re.I | re.S)
        raise ErrorPage(
            "%s answered markup, not JSON%s"
            % (url, (": " + " ".join(title.group(1).split())) if title else "")
        )
    try:
        doc, end = _scan(text, 0, depth)
    except ValueError as exc:
        raise MalformedDocument("%s does not parse as JSON: %s" % (url, exc)) from None
    except IndexError:
        raise MalformedDocument("%s does not parse as JSON: it ends in the middle of a value" % url) from None
    if text[end:].strip():
        raise MalformedDocument("%s has data after its JSON value (at %d)" % (url, end))
    return doc


def require(doc: JsonText, path: tuple[str, ...], kind: type, url: str = "") -> JsonText:
    """The member at ``path``, checked to be a ``kind`` (dict or list): the document's shape."""
    node = doc
    for key in path:
        if not isinstance(node.value, dict) or key not in node.value:
            raise UnexpectedDocument("%s has no %r (expected key path %s)" % (url, key, "/".join(path)))
        members = node.members
        assert isinstance(members, dict), "an object's members are keyed by name"  # noqa: S101 - invariant
        node = members[key]
    if not isinstance(node.value, kind):
        raise UnexpectedDocument(
            "%s: %s is %s, expected %s"
            % (url, "/".join(path) or "the document", type(node.value).__name__, kind.__name__)
        )
    return node
