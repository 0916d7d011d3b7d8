"""Revision-aware batch writes: insert new documents, update changed ones, leave unchanged ones be.

"Unchanged" compares content without CouchDB's meta keys and without the caller's volatile keys
(for events, ``access_datetime``), so a re-scraped identical event keeps its first access time and
revision. A conflict from a concurrent writer is resolved by re-reading and re-applying.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from votersdaily.schema import SURROGATE_RE

from .base import Store, StoreError
from .revisions import same_content

MAX_CONFLICT_ROUNDS = 8
#: Conflict rounds back off by a random delay (up to this times 2**round seconds) so two writers
#: racing on the same documents do not collide again in lockstep.
CONFLICT_BACKOFF = 0.01


@dataclass
class UpsertResult:
    inserted: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    conflicts_resolved: int = 0
    #: Ids of older documents a batch hook marked as replaced (event reschedules).
    superseded: list[str] = field(default_factory=list)
    #: Ids of documents a batch hook marked as replaced by the same event under a new key.
    replaced: list[str] = field(default_factory=list)
    #: Ids of documents a batch hook marked to repair a key with two live documents.
    repaired: list[str] = field(default_factory=list)
    #: Ids given more than once in one batch (the last one is written; the others are counted here).
    duplicates: list[str] = field(default_factory=list)
    #: Ids kept in the local spool because the store was unavailable (see :mod:`.spool`).
    spooled: list[str] = field(default_factory=list)
    #: Ids neither written nor spooled: the store did not take them and the spool could not.
    lost: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """How many documents each outcome had (only those that happened): the run log's ``store``."""
        counts = {
            "inserted": len(self.inserted),
            "updated": len(self.updated),
            "unchanged": len(self.unchanged),
            "duplicates": len(self.duplicates),
            "superseded": len(self.superseded),
            "replaced": len(self.replaced),
            "repaired": len(self.repaired),
            "spooled": len(self.spooled),
            "lost": len(self.lost),
            "failed": len(self.failed),
            "conflicts_resolved": self.conflicts_resolved,
        }
        return {kind: n for kind, n in counts.items() if n}

    def merge(self, other: UpsertResult) -> None:
        self.inserted += other.inserted
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.duplicates += other.duplicates
        self.failed.update(other.failed)
        self.conflicts_resolved += other.conflicts_resolved
        self.superseded += other.superseded
        self.replaced += other.replaced
        self.repaired += other.repaired
        self.spooled += other.spooled
        self.lost += other.lost


def upsert(
    store: Store,
    db: str,
    docs: Iterable[dict[str, Any]],
    ignore: Iterable[str] = (),
    insert_first: bool = False,
    before_write: Callable[[list[dict[str, Any]]], None] | None = None,
) -> UpsertResult:
    """Write ``docs`` (each with ``_id``, without ``_rev``) to ``db``; the last of equal ids wins.

    ``insert_first`` skips the read for a batch that is expected to be new (a first crawl): the
    documents are written straight away and only those that already exist (CouchDB answers
    ``conflict``) are read, compared and updated. Either way the outcome is the same.
    ``before_write`` is called with the documents about to be written (never with unchanged ones),
    before each write: a hook that reads what the store held before the batch does it there.
    """
    ignore = tuple(ignore)
    result = UpsertResult()
    pending: dict[str, dict[str, Any]] = {}
    for doc in docs:
        if SURROGATE_RE.search(doc["_id"]):  # no store can look it up: refused on its own
            result.failed[doc["_id"]] = "bad_request: the _id is not valid Unicode"
            continue
        if doc["_id"] in pending:
            result.duplicates.append(doc["_id"])
        pending[doc["_id"]] = doc
    if insert_first and pending:
        existing_ids = {}
        if before_write is not None:
            before_write(list(pending.values()))
        for answer in store.bulk_docs(db, [dict(doc) for doc in pending.values()]):
            doc_id = answer["id"]  # every answer names its document (Store.bulk_docs)
            if "error" not in answer:
                result.inserted.append(doc_id)
            elif answer["error"] == "conflict":
                existing_ids[doc_id] = pending[doc_id]
            else:
                result.failed[doc_id] = "%s: %s" % (answer.get("error"), answer.get("reason"))
        pending = existing_ids
    for round_ in range(MAX_CONFLICT_ROUNDS):
        if not pending:
            break
        if round_:
            time.sleep(random.uniform(0, CONFLICT_BACKOFF * 2**round_))  # noqa: S311 - jitter, not a secret
        existing = store.get_many(db, pending)
        writes, kinds = [], {}
        for doc_id, doc in pending.items():
            old = existing.get(doc_id)
            if old is None:
                writes.append(dict(doc))
                kinds[doc_id] = "inserted"
            elif same_content(old, doc, ignore):
                result.unchanged.append(doc_id)
            else:
                new = dict(doc, _rev=old["_rev"])
                if "_attachments" in old and "_attachments" not in doc:
                    new["_attachments"] = old["_attachments"]
                writes.append(new)
                kinds[doc_id] = "updated"
        retry = {}
        if writes and before_write is not None:
            before_write(writes)
        for answer in store.bulk_docs(db, writes):
            doc_id = answer["id"]  # every answer names its document (Store.bulk_docs)
            if "error" not in answer:
                getattr(result, kinds[doc_id]).append(doc_id)
            elif answer["error"] == "conflict":
                retry[doc_id] = pending[doc_id]
            else:
                result.failed[doc_id] = "%s: %s" % (answer.get("error"), answer.get("reason"))
        result.conflicts_resolved += len(retry)
        pending = retry
    if pending:
        raise StoreError("unresolved write conflicts on %d documents in %s" % (len(pending), db))
    return result
