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
#: The top-level keys starting with an underscore that CouchDB takes in a written document; for any
#: other it refuses the whole request ("Bad special document member").
COUCHDB_SPECIAL_KEYS = META_KEYS | {"_revs_info", "_deleted_conflicts", "_local_seq"}
#: The ids starting with an underscore that CouchDB takes ("Only reserved document ids may start
#: with underscore").
RESERVED_ID_PREFIXES = ("_design/", "_local/")


def canonical_json(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def content(doc: Mapping[str, Any], ignore: Iterable[str] = ()) -> dict[str, Any]:
    """The document without CouchDB's meta keys and the ``ignore`` keys."""
    skip = META_KEYS.union(ignore)
    return {k: v for k, v in doc.items() if k not in skip}


def same_content(old: Mapping[str, Any], new: Mapping[str, Any], ignore: Iterable[str] = ()) -> bool:
    ignore = tuple(ignore)
    return canonical_json(content(old, ignore)) == canonical_json(content(new, ignore))


def unstorable(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The ``_bulk_docs`` answer for a document no store takes, or None. CouchDB refuses a whole
    ``_bulk_docs`` request for one such document (HTTP 400), so each store and :func:`.upsert.upsert`
    refuse it on its own, with the reason, and it never costs its batch: one that is not shaped as
    CouchDB takes a document (:func:`misshapen`), or is not valid Unicode (a lone surrogate, which
    JSON can spell but UTF-8 cannot encode), or is not JSON at all (a set, bytes or another object,
    NaN or an infinity, a cycle, a nesting deeper than the encoder goes). A document whose JSON text
    was made with it is checked by that text."""
    answer = misshapen(doc)
    if answer is not None:
        return answer
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


def misshapen(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The ``_bulk_docs`` answer for a document whose id starts with an underscore and is not
    reserved (``_design/``, ``_local/``), or that holds a top-level key starting with an underscore
    that is not one of CouchDB's own (:data:`COUCHDB_SPECIAL_KEYS`); else None. What
    :func:`unstorable` checks first, without encoding the document."""
    doc_id = doc.get("_id")
    if isinstance(doc_id, str) and doc_id[:1] == "_" and not doc_id.startswith(RESERVED_ID_PREFIXES):
        reason = "only reserved document ids may start with an underscore (%s)" % doc_id.split("/")[0]
    else:
        if _underscored_keys(doc) == len(doc.keys() & COUCHDB_SPECIAL_KEYS):  # CouchDB's own alone
            return None
        special = next((key for key in doc if key not in COUCHDB_SPECIAL_KEYS and str(key)[:1] == "_"), None)
        if special is None:  # a key holding a newline and an underscore was counted twice
            return None
        reason = "bad special document member %s: a key may not start with an underscore" % special
    return {"id": doc_id, "error": "bad_request", "reason": reason}


def _underscored_keys(doc: dict[str, Any]) -> int:
    """How many of the document's keys start with an underscore, or more (a key holding a newline
    then an underscore counts twice): one scan of the keys joined, not a loop over them."""
    try:
        joined = "\n".join(doc)
    except TypeError:  # a key that is no string: one by one
        return sum(1 for key in doc if str(key)[:1] == "_")
    return joined.count("\n_") + (joined[:1] == "_")


def rev_number(rev: str | None) -> int:
    if not rev:
        return 0
    return int(rev.split("-", 1)[0])


def next_rev(old_rev: str | None, doc: Mapping[str, Any]) -> str:
    digest = hashlib.md5(canonical_json(content(doc)).encode("utf-8"), usedforsecurity=False).hexdigest()
    return "%d-%s" % (rev_number(old_rev) + 1, digest)
