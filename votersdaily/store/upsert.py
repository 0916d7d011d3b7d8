"""Revision-aware batch writes: insert new documents, update changed ones, leave unchanged ones be.

"Unchanged" compares content without CouchDB's meta keys and without the caller's volatile keys
(for events, ``access_datetime``), so a re-scraped identical event keeps its first access time and
revision. A conflict from a concurrent writer is resolved by re-reading and re-applying.

A write that may come late (a spool delivered after an outage, :mod:`.spool`) names the key that
says when its documents were observed (``newer_by``): a stored version observed later is kept, and
the late copy is counted ``older``, never written over it.

A write that only adds to what is stored (``merge``: rows of column families, :mod:`.families`)
combines each document with the stored version here, against what is stored at the moment of the
write: the caller reads nothing first, and a spooled copy is merged when it is delivered.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from votersdaily.schema import SURROGATE_RE

from .base import Store, StoreError
from .revisions import same_content, unstorable

if TYPE_CHECKING:
    from .embedded import Stored

#: What ``upsert`` calls with the documents about to be written, before each write.
BeforeWrite = Callable[[list[dict[str, Any]]], None]
#: ``merge(there, doc)``: the document to write for ``doc`` given the version of it already there
#: (the stored one, or one given earlier in the same batch).
Merge = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]

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
    #: Ids given more than once in one batch (the last one is written; the others are counted here),
    #: or again after a writer told them unchanged where they were added (``BatchWriter.know_stored_texts``).
    duplicates: list[str] = field(default_factory=list)
    #: Ids kept in the local spool because the store was unavailable (see :mod:`.spool`).
    spooled: list[str] = field(default_factory=list)
    #: Ids neither written nor spooled: the store did not take them and the spool could not.
    lost: list[str] = field(default_factory=list)
    #: Outcomes of earlier batches of the same run this result takes back, by kind (``inserted``,
    #: ``updated``, ``unchanged``): the ids written again here, counted as in one batch
    #: (:meth:`.writer.BatchWriter._as_one_run`). Negative in :meth:`counts`.
    withdrawn: dict[str, list[str]] = field(default_factory=dict)
    #: Ids not written because the store holds a version observed later (``upsert``'s ``newer_by``):
    #: a spooled copy delivered after a newer run wrote its document.
    older: list[str] = field(default_factory=list)

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
            "older": len(self.older),
            "failed": len(self.failed),
            "conflicts_resolved": self.conflicts_resolved,
        }
        for kind, ids in self.withdrawn.items():
            counts[kind] -= len(ids)
        return {kind: n for kind, n in counts.items() if n}

    def merge(self, other: UpsertResult) -> None:
        """Add ``other`` to this result; what ``other`` takes back (:attr:`withdrawn`) leaves it."""
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
        self.older += other.older
        for kind, ids in other.withdrawn.items():  # one pass over the kind's ids, however many leave
            gone = set(ids)
            outcomes = getattr(self, kind)
            outcomes[:] = [doc_id for doc_id in outcomes if doc_id not in gone]


@runtime_checkable
class ComparesStored(Protocol):
    """A store that tells what it holds of documents without handing their bodies over
    (:meth:`.embedded.EmbeddedStore.compare_stored`)."""

    def compare_stored(
        self, db: str, docs: Mapping[str, dict[str, Any]], ignore: Sequence[str], probe: Sequence[str] = ()
    ) -> dict[str, Stored]: ...


@dataclass
class _Existing:
    """A stored document as the comparison needs it: its revision and attachment stubs, and either
    the verdict (same or not) or the whole document to compare."""

    rev: str
    attachments: dict[str, Any] | None = None
    same: bool | None = None
    doc: dict[str, Any] | None = None

    def same_as(self, new: dict[str, Any], ignore: tuple[str, ...]) -> bool:
        if self.same is not None:
            return self.same
        assert self.doc is not None, "without a verdict the whole document was read"  # noqa: S101 - invariant
        return same_content(self.doc, new, ignore)


def _existing(
    store: Store,
    db: str,
    pending: dict[str, dict[str, Any]],
    ignore: tuple[str, ...],
    probe: tuple[str, ...],
    whole: bool = False,
) -> dict[str, _Existing]:
    """What the store holds of the ``pending`` documents: told by the store where it can
    (``compare_stored``), else (and for what it cannot tell, and for all when ``whole``) read whole."""
    told: dict[str, _Existing] = {}
    if isinstance(store, ComparesStored) and not whole:
        for doc_id, stored in store.compare_stored(db, pending, ignore, probe).items():
            told[doc_id] = _Existing(stored.rev, stored.attachments, stored.same)
        unread = [doc_id for doc_id, existing in told.items() if existing.same is None]
    else:
        unread = list(pending)
    for doc_id, doc in store.get_many(db, unread).items() if unread else ():
        told[doc_id] = _Existing(doc["_rev"], doc.get("_attachments"), None, doc)
    for doc_id in unread:
        if told.get(doc_id) is not None and told[doc_id].doc is None:
            del told[doc_id]  # gone meanwhile: written as new (a conflict if it comes back)
    return told


def observed_later(first: object, second: object) -> bool:
    """Whether the time ``first`` (an ISO 8601 time with its offset, as every stored time is) is
    later than ``second``; False when either is not such a time (nothing then says which is newer)."""
    try:
        return datetime.fromisoformat(first) > datetime.fromisoformat(second)  # type: ignore[arg-type]
    except (TypeError, ValueError):  # not a string, not a time, or one naive and one aware
        return False


def _admitted(
    docs: Iterable[dict[str, Any]],
    result: UpsertResult,
    newer_by: str | None = None,
    merge: Merge | None = None,
) -> dict[str, dict[str, Any]]:
    """The documents to write by id, the last of an id given twice (the others counted in
    ``result.duplicates``; with ``newer_by``, the one observed last; with ``merge``, merged into
    it), without a ``_rev`` given; one whose id no store can look up, or that would delete a
    document, is refused on its own in ``result.failed``, so it never costs its batch."""
    pending: dict[str, dict[str, Any]] = {}
    for doc in docs:
        if SURROGATE_RE.search(doc["_id"]):  # no store can look it up
            result.failed[doc["_id"]] = "bad_request: the _id is not valid Unicode"
            continue
        if doc.get("_deleted"):  # content to write, never a deletion (an event's own key, say)
            result.failed[doc["_id"]] = "bad_request: upsert writes documents and deletes none (_deleted)"
            continue
        if "_rev" in doc:  # upsert keeps the revisions: a caller's could only conflict
            doc = {key: value for key, value in doc.items() if key != "_rev"}  # noqa: PLW2901 - the copy is the document
        earlier = pending.get(doc["_id"])
        if earlier is not None:
            result.duplicates.append(doc["_id"])
            if newer_by is not None and observed_later(earlier.get(newer_by), doc.get(newer_by)):
                earlier, doc = doc, earlier  # noqa: PLW2901 - the copy observed last is the one written
            if merge is not None:
                doc = merge(earlier, doc)  # noqa: PLW2901 - as above
        pending[doc["_id"]] = doc
    return pending


def upsert(
    store: Store,
    db: str,
    docs: Iterable[dict[str, Any]],
    ignore: Iterable[str] = (),
    insert_first: bool = False,
    before_write: BeforeWrite | None = None,
    probe: Iterable[str] = (),
    newer_by: str | None = None,
    *,
    merge: Merge | None = None,
) -> UpsertResult:
    """Write ``docs`` (each with ``_id``, without ``_rev``) to ``db``; the last of equal ids wins.

    ``insert_first`` skips the read for a batch that is expected to be new (a first crawl): the
    documents are written straight away and only those that already exist (CouchDB answers
    ``conflict``) are read, compared and updated. Either way the outcome is the same.
    ``before_write`` is called with the documents about to be written (never with unchanged ones),
    before each write: a hook that reads what the store held before the batch does it there.
    ``probe``: keys whose stored value, when it differs, proves a document changed (a store that
    compares for itself reads them first; for events, ``parser_version``).
    A document no store takes (:func:`.revisions.unstorable`) is refused on its own, in ``failed``.
    ``newer_by``: the key of the time a document was observed (a late write: a spool's delivery). A
    changed document is not written over a stored version observed later (``older``), and of an id
    given twice the copy observed last wins.
    ``merge``: how a document combines with the version of it already there (:data:`Merge`): each is
    merged with the stored version read at the write (and a conflict's with the one read again),
    and an id given twice with its earlier copy; what is compared and written is the merge.
    """
    write = functools.partial(
        _upsert,
        store,
        db,
        ignore=tuple(ignore),
        insert_first=insert_first,
        before_write=before_write,
        probe=tuple(probe),
        newer_by=newer_by,
        merge=merge,
    )
    docs = list(docs)
    try:
        return write(docs)
    except (TypeError, ValueError, RecursionError):
        # A document that is not JSON failed its comparison with the stored one (a store refuses one
        # it is given on its own): it is refused here, and the rest written.
        refusals = [unstorable(doc) for doc in docs]
        if not any(refusals):
            raise
    result = write([doc for doc, refusal in zip(docs, refusals, strict=True) if refusal is None])
    for doc, refusal in zip(docs, refusals, strict=True):
        if refusal is not None:
            result.failed[doc["_id"]] = "bad_request: %s" % refusal["reason"]
    return result


def _upsert(
    store: Store,
    db: str,
    docs: list[dict[str, Any]],
    *,
    ignore: tuple[str, ...],
    insert_first: bool,
    before_write: BeforeWrite | None,
    probe: tuple[str, ...],
    newer_by: str | None,
    merge: Merge | None,
) -> UpsertResult:
    """:func:`upsert`, for documents that are JSON."""
    result = UpsertResult()
    pending = _admitted(docs, result, newer_by, merge)
    if insert_first and pending:
        existing_ids = {}
        if before_write is not None:
            before_write(list(pending.values()))
        for answer in store.bulk_docs(db, list(pending.values())):  # a store never changes what it writes
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
        # With ``newer_by`` the stored documents are read whole: their time decides; with ``merge``
        # they are merged with.
        whole = newer_by is not None or merge is not None
        existing = _existing(store, db, pending, ignore, probe, whole=whole)
        writes, kinds = [], {}
        for doc_id, given in pending.items():
            old = existing.get(doc_id)
            doc = given if merge is None or old is None or old.doc is None else merge(old.doc, given)
            if old is None:
                writes.append(
                    doc
                )  # a store never changes what it writes (an EncodedDocument's text stays true)
                kinds[doc_id] = "inserted"
            elif old.same_as(doc, ignore):
                result.unchanged.append(doc_id)
            elif (
                newer_by is not None
                and old.doc is not None
                and observed_later(old.doc.get(newer_by), doc.get(newer_by))
            ):
                result.older.append(doc_id)
            else:
                new = dict(doc, _rev=old.rev)
                # The stored attachments are kept (a document never names its own), unless a merge
                # made the document: it says which are kept, and a family it replaced keeps none.
                merged = merge is not None and old.doc is not None
                if not merged and old.attachments is not None and "_attachments" not in doc:
                    new["_attachments"] = old.attachments
                writes.append(new)
                kinds[doc_id] = "updated"
        retry = {}
        if writes and before_write is not None:
            before_write(writes)
        # Nothing to write (a batch found unchanged: a reparse's, mostly): no call of the store
        # (an empty transaction, or an empty _bulk_docs, with the writer waiting for its answer).
        for answer in store.bulk_docs(db, writes) if writes else ():
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
