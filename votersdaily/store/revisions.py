"""CouchDB-style revision ids and document comparison shared by the backends and the writer."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from votersdaily.json_encoder import ReusableJsonEncoder

from .base import body_json_of

#: JSON as CouchDB's parser takes it: no NaN or infinity.
_STRICT_JSON = ReusableJsonEncoder(ensure_ascii=False, allow_nan=False)

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


def not_json(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The ``_bulk_docs`` answer for a document no store can take, or None: one that is not valid
    Unicode (a lone surrogate, which JSON can spell but UTF-8 cannot encode) or not JSON at all (a
    set, bytes or another object, NaN or an infinity, which CouchDB's parser refuses, a cycle, a
    nesting deeper than the encoder goes). Such a document is refused on its own, with the reason, so
    it never costs its batch; a document whose JSON text was made with it is checked by that text."""
    text = body_json_of(doc)
    try:
        (_STRICT_JSON(doc) if text is None else text).encode("utf-8")
    except UnicodeEncodeError as exc:
        reason = "the document is not valid Unicode (%s)" % exc.reason
    except (TypeError, ValueError, RecursionError) as exc:
        reason = "the document is not JSON (%s)" % exc
    else:
        return None
    return {"id": doc.get("_id"), "error": "bad_request", "reason": reason}


def rev_number(rev: str | None) -> int:
    if not rev:
        return 0
    return int(rev.split("-", 1)[0])


def next_rev(old_rev: str | None, doc: Mapping[str, Any]) -> str:
    digest = hashlib.md5(canonical_json(content(doc)).encode("utf-8"), usedforsecurity=False).hexdigest()
    return "%d-%s" % (rev_number(old_rev) + 1, digest)
