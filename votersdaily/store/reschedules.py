"""Event reschedules, beside the writer that triggers them: the second write of an event batch.

When :class:`~.writer.BatchWriter` writes a batch of events (``vd_events``) it calls the
:class:`RescheduleTracker` it was given as :class:`~.hooks.WriteHooks`, in its worker thread:

1. ``before_write``: the first time a parser's events are about to be written, its documents are
   read from the view ``by_parser_unique_key`` (one read per parser and run; for a batch that
   writes nothing, in step 3);
2. the batch is written (:func:`~.upsert.upsert`);
3. ``after_batch``: the older documents of each stored event's key are read (``get_many``) and
   marked ``superseded_by``/``replaced_by`` in a second :func:`~.upsert.upsert`; the ids marked
   join the batch's :class:`~.upsert.UpsertResult` (``superseded``, ``replaced``, ``repaired``).
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from votersdaily import schema
from votersdaily.clock import now_iso

from .base import Store
from .upsert import Merge, UpsertResult, observed_later, upsert

logger = logging.getLogger(__name__)

#: A key's documents that may still be live: their ids, or the id alone of a key with one document
#: (how a reparse hands over 200,000 keys: a set each would be 43 MB more, made at its start).
KeyIds = set[str] | str


def key_ids(known: dict[str, KeyIds], key: str) -> set[str]:
    """The ids of ``key``'s documents in ``known``, as the set the tracker changes (made so)."""
    ids = known.get(key)
    if isinstance(ids, set):
        return ids
    made: set[str] = set() if ids is None else {ids}
    known[key] = made
    return made


def holds(ids: KeyIds | None, doc_id: str) -> bool:
    """Whether a key's documents (``known.get(key)``) include ``doc_id``."""
    return ids == doc_id if type(ids) is str else ids is not None and doc_id in ids


class RescheduleTracker:
    """Marks an event's older documents ``superseded_by`` the current one when it reappears under
    another datetime (its ``_id`` holds the datetime, so a reschedule is a new document).

    The documents of a parser (view ``by_parser_unique_key``, which the iCal export reads too) are
    read once per run: just before a batch first writes a new or changed event of that parser (so
    the view need not index that batch first), or after a batch of unchanged ones; they are then
    kept current in memory from what the run writes, so detection costs no server work per event.
    Every stored event, changed or not, is settled: every other document of its key is marked
    (re-pointed to it), so a key left with two live documents (a lost ``_bulk_docs`` answer, two
    runs racing) is repaired by the next run that sees the event. Such marks are counted in
    ``repaired``, apart from ordinary reschedules in ``superseded``.

    A spider that changed its key scheme gives each event its key under the old one as
    ``replaces_key``: when the event is stored, the stored document of that key at the same datetime
    (the ``_id`` the event had) is marked ``replaced_by`` (with ``replaced_at``): the same event under
    its old id, neither a reschedule nor a second live copy (counted in ``replaced``).
    """

    #: What a spool records for later delivery: :class:`SpooledRescheduleTracker`, by its name there.
    durable: ClassVar[str | None] = "reschedules"
    merge: Merge | None = None

    def __init__(self) -> None:
        #: parser_name → unique_key → ids of that key's documents that may still be live.
        self._ids: dict[str, dict[str, KeyIds]] = {}
        #: Ids this run tried to write whose marking has not run yet: when the answer of that write
        #: was lost, its retry finds them unchanged, and what they replace is a reschedule.
        self._attempted: set[str] = set()
        #: parser_name → the unique keys of every event of it added to the writer so far, and the
        #: keys they replace (:meth:`settled_unchanged`; the adding thread's alone).
        self._added: dict[str, set[str]] = {}

    def known(self, parser_name: str, ids_by_key: dict[str, KeyIds]) -> None:
        """The documents of ``parser_name`` by unique key (the rows of ``by_parser_unique_key``) as
        a caller read them before this run wrote any of that parser's (a reparse, at its start; a
        key with one document may give its id alone, :data:`KeyIds`): not read again. Once read, a parser's documents are kept as this run's writes left them."""
        self._ids.setdefault(parser_name, ids_by_key)

    def settled_unchanged(self, doc: dict[str, Any]) -> bool:
        """An unchanged event needs nothing of the tracker when it is the first of its key this run
        and the only document of that key when the run started: marking would find no other
        document to point at it. The key's ids are the start's as long as no event of it was added
        (the writer's thread changes only the ids of keys of events added, and of the keys they
        replace), so they are read here without waiting for the batches in flight."""
        parser, key, replaces = doc.get("parser_name"), doc.get("unique_key"), doc.get("replaces_key")
        if not isinstance(parser, str) or not isinstance(key, str):
            return False  # no event the check let through: the batch tells
        added = self._added.get(parser)
        if added is None:
            added = self._added[parser] = set()
        seen = len(added)
        added.add(key)
        first = len(added) != seen  # one look-up in the set, not two
        changes_scheme = bool(replaces) and replaces != key
        old_key_unseen = True
        if changes_scheme:  # the key it replaces: its document may be marked replaced by this one
            if not isinstance(replaces, str):
                return False
            old_key_unseen = replaces not in added
            added.add(replaces)
        known = self._ids.get(parser)
        if known is None or not first:
            return False
        ids = known.get(key)  # this one document alone
        if type(ids) is str:  # the id alone of a key with one document
            if ids != doc["_id"]:
                return False
        elif ids is None or len(ids) != 1 or doc["_id"] not in ids:
            return False
        if not changes_scheme:
            return True
        old = known.get(str(replaces))
        return old_key_unseen and (old is None or (type(old) is not str and not old))

    def before_write(self, store: Store, db: str, docs: list[dict[str, Any]]) -> None:
        for parser in {doc["parser_name"] for doc in docs} - self._ids.keys():
            self._ids[parser] = self._read(store, db, parser)
        self._attempted.update(doc["_id"] for doc in docs)

    def _written(self, doc_id: str) -> bool:
        """Whether this run wrote ``doc_id`` (rather than finding it as an earlier run left it)."""
        return doc_id in self._attempted

    def after_batch(self, store: Store, db: str, batch: list[dict[str, Any]], result: UpsertResult) -> None:
        changed = set(result.inserted) | set(result.updated)
        stored = changed | set(result.unchanged)
        self._attempted |= changed  # kept if marking fails: the retry finds them unchanged
        current: dict[tuple[str, str], str] = {}
        older: dict[tuple[str, str], set[str]] = {}
        in_batch: dict[str, dict[str, Any]] = {}
        for doc in batch:
            doc_id, parser = doc["_id"], doc["parser_name"]
            if doc_id not in stored:
                continue
            if parser not in self._ids:
                self._ids[parser] = self._read(store, db, parser)
            ids = key_ids(self._ids[parser], doc["unique_key"])
            key = (parser, doc["unique_key"])
            older.setdefault(key, set()).update(ids)
            ids.clear()
            ids.add(doc_id)
            current[key] = doc_id
            in_batch[doc_id] = doc
        targets = {old: current[key] for key, olds in older.items() for old in olds if old != current[key]}
        found = store.get_many(db, targets) if targets else {}
        self._keep_the_latest_observed(current, older, targets, found, in_batch)
        repaired: set[str] = set()
        for key, doc_id in current.items():
            # Live documents the batch did not write: a consistent key has at most one, the one a
            # newly written event replaces; any other (or any at all, for an event stored
            # unchanged by an earlier run) is a repair.
            live = sorted(
                old_id
                for old_id in older[key]
                if old_id in found and old_id not in in_batch and not found[old_id].get("superseded_by")
            )
            repaired.update(live[1:] if self._written(doc_id) else live)
        marks = self._marks(found, targets, "superseded")
        replaced = self._replaced(batch, stored)
        retired = self._marks(store.get_many(db, replaced) if replaced else {}, replaced, "replaced")
        if marks or retired:
            upsert(store, db, marks + retired)
            for doc in marks:
                (result.repaired if doc["_id"] in repaired else result.superseded).append(doc["_id"])
            result.replaced += [doc["_id"] for doc in retired]
        if repaired:
            logger.warning(
                "marked %d documents of %s superseded: their events had two live documents "
                "(a lost write answer or racing runs)",
                len(repaired),
                db,
            )
        self._attempted -= stored

    def _keep_the_latest_observed(
        self,
        current: dict[tuple[str, str], str],
        older: dict[tuple[str, str], set[str]],
        targets: dict[str, str],
        found: dict[str, dict[str, Any]],
        in_batch: dict[str, dict[str, Any]],
    ) -> None:
        """A key whose live stored document was observed later than the batch's event of it (a spool
        delivered after a newer run stored the event's reschedule, a reparse of older archives) keeps
        that document current: the batch's event is marked superseded by it, not the reverse."""
        for key, doc_id in list(current.items()):
            seen = in_batch[doc_id].get(schema.EVENT_OBSERVED_AT)
            later = [
                old_id
                for old_id in sorted(older[key])
                if old_id in found
                and old_id not in in_batch
                and not found[old_id].get("superseded_by")
                and observed_later(found[old_id].get(schema.EVENT_OBSERVED_AT), seen)
            ]
            if not later:
                continue
            latest = later[0]
            for old_id in later[1:]:
                if observed_later(
                    found[old_id].get(schema.EVENT_OBSERVED_AT), found[latest].get(schema.EVENT_OBSERVED_AT)
                ):
                    latest = old_id
            current[key] = latest
            older[key].add(doc_id)
            for old_id in older[key] - {latest}:
                targets[old_id] = latest
            targets.pop(latest, None)
            del found[latest]  # current: neither marked nor counted a second live document
            found[doc_id] = dict(in_batch[doc_id])  # as just written: marked like a stored one
            ids = key_ids(self._ids[key[0]], key[1])
            ids.clear()
            ids.add(latest)

    def _replaced(self, batch: list[dict[str, Any]], stored: set[str]) -> dict[str, str]:
        """Old id → new id, for the stored events whose ``replaces_key`` document is known."""
        replaced = {}
        for doc in batch:
            old_key = doc.get("replaces_key")
            if doc["_id"] not in stored or not old_key or old_key == doc["unique_key"]:
                continue
            old_id = schema.event_id(doc["datetime"], doc["parser_name"], old_key)
            if holds(self._ids.get(doc["parser_name"], {}).get(old_key), old_id):
                replaced[old_id] = doc["_id"]
        return replaced

    @staticmethod
    def _marks(found: dict[str, dict[str, Any]], targets: dict[str, str], how: str) -> list[dict[str, Any]]:
        """Copies of the ``found`` documents marked ``<how>_by`` their target id (unless already)."""
        marks = []
        for old_id, old in found.items():
            if old.get(how + "_by") != targets[old_id]:
                marked = {k: v for k, v in old.items() if k != "_rev"}
                marked[how + "_by"] = targets[old_id]
                marked[how + "_at"] = now_iso()
                marks.append(marked)
        return marks

    @staticmethod
    def _read(store: Store, db: str, parser_name: str) -> dict[str, KeyIds]:
        ids: dict[str, KeyIds] = {}
        for row in store.query(
            db, "by_parser_unique_key", startkey=[parser_name], endkey=[parser_name, {}], include_docs=False
        ):
            key_ids(ids, row.key[1]).add(row.id)
        return ids


class SpooledRescheduleTracker(RescheduleTracker):
    """:class:`RescheduleTracker` for a spool delivery (one per delivery, so the view is read once
    per parser, not per chunk): a spooled batch may have been written before the outage hid the
    answer, so an event found unchanged still counts as written by the run that spooled it."""

    def _written(self, doc_id: str) -> bool:
        return True


def mark_superseded(store: Store, db: str, batch: list[dict[str, Any]], result: UpsertResult) -> None:
    """One batch on its own, its view read for it alone (tools; the spool delivery of earlier versions)."""
    SpooledRescheduleTracker().after_batch(store, db, batch, result)
