"""The seedlist: every laundromat record in the store database ``ll_seeds``, written through at once.

Every state transition is persisted before the step it announces starts (and after it ends), so a
crashed run leaves each record in the state it was in. Calls block: the spider runs them in a thread.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from votersdaily.store.base import Store
from votersdaily.store.upsert import UpsertResult, upsert

from . import DB, states


class RecordNotStored(Exception):
    """The store refused records of the seed list (``failed``: id → its reason: a value JSON cannot
    hold, a document too large): said where it happens, never a seed dropped unsaid."""

    def __init__(self, failed: dict[str, str]) -> None:
        super().__init__("; ".join("%s: %s" % item for item in failed.items()))
        self.failed = failed


class SeedList:
    def __init__(self, store: Store, db: str = DB) -> None:
        self.store = store
        self.db = db
        self._lock = threading.Lock()
        self._opened = False

    def open(self) -> None:
        with self._lock:
            if not self._opened:
                self.store.ensure_db(self.db)
                self._opened = True

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            doc = self.store.get(self.db, key)
        if doc is not None:
            doc = {k: v for k, v in doc.items() if k != "_rev"}
        return doc

    def put(self, *docs: dict[str, Any]) -> UpsertResult:
        """Write ``docs`` (whole records, keyed by ``_id``); :class:`RecordNotStored` when the store
        refuses one (the others are written)."""
        clean = [{k: v for k, v in doc.items() if k != "_rev"} for doc in docs]
        with self._lock:
            result = upsert(self.store, self.db, clean)
        if result.failed:
            raise RecordNotStored(result.failed)
        return result

    def register(self, doc: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Add a new seed unless one with its key exists; (the stored record, whether it is new)."""
        existing = self.get(doc["_id"])
        if existing is not None:
            return existing, False
        self.put(doc)
        return doc, True

    def all(self) -> Iterator[dict[str, Any]]:
        with self._lock:
            docs = list(self.store.iter_docs(self.db))
        for doc in docs:
            yield {k: v for k, v in doc.items() if k != "_rev"}

    def transition(self, doc: dict[str, Any], status: str, **changes: Any) -> dict[str, Any]:
        """Move ``doc`` to ``status`` (checked against the state machine) with ``changes``; persisted."""
        states.check_transition(doc["status"], status)
        new = dict(doc, status=status, **changes)
        self.put(new)
        return new
