"""CouchDB-style revision ids and document comparison shared by the backends and the writer."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

#: Keys CouchDB manages; never part of a document's content.
META_KEYS = frozenset({"_id", "_rev", "_attachments", "_deleted", "_conflicts", "_revisions"})


def canonical_json(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def content(doc: Mapping[str, Any], ignore: Iterable[str] = ()) -> dict[str, Any]:
    """The document without CouchDB's meta keys and the ``ignore`` keys."""
    skip = META_KEYS.union(ignore)
    return {k: v for k, v in doc.items() if k not in skip}


def same_content(old: Mapping[str, Any], new: Mapping[str, Any], ignore: Iterable[str] = ()) -> bool:
    ignore = tuple(ignore)
    return canonical_json(content(old, ignore)) == canonical_json(content(new, ignore))


def not_unicode(doc: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``_bulk_docs`` answer for a document that is not valid Unicode (a lone surrogate, which
    JSON can spell but UTF-8 cannot encode), or None: such a document is refused on its own, so it
    never costs its batch."""
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        return {
            "id": doc.get("_id"),
            "error": "bad_request",
            "reason": "the document is not valid Unicode (%s)" % exc.reason,
        }
    return None


def rev_number(rev: str | None) -> int:
    if not rev:
        return 0
    return int(rev.split("-", 1)[0])


def next_rev(old_rev: str | None, doc: Mapping[str, Any]) -> str:
    digest = hashlib.md5(canonical_json(content(doc)).encode("utf-8"), usedforsecurity=False).hexdigest()
    return "%d-%s" % (rev_number(old_rev) + 1, digest)
