"""Rows of column families (the ingest's file table, seeds/001's HBase table): a row written replaces
the families it carries and keeps the stored row's others, with their attachments
(``<family>:<name>``).

As an HBase cell keeps the newest version whatever the order of the writes, a row says when each of
its families was made (:data:`UPDATED`, ``{family: ISO time}``): a family made earlier than the stored
one (a row spooled during an outage, delivered after a later ingest of the same file wrote it) does not
replace it. A family without a time on either side (rows of earlier versions) is replaced, as before.

The merge happens where the row is written (:func:`~.upsert.upsert`'s ``merge``), against the row
stored at that moment: a writer reads nothing before it hands the row over, and a row spooled while
the store was down is merged when it is delivered (:data:`~.spool.DELIVERY_HOOKS` names
:class:`FamilyRows` ``families``), as it would have been written then.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .base import Store
from .upsert import Merge, UpsertResult, observed_later

#: The row's key saying when each of its families was made: ``{family: ISO 8601 time}``.
UPDATED = "updated"


def families(row: dict[str, Any]) -> set[str]:
    """The families of ``row``: its top-level keys but CouchDB's own (``_id``, ``_attachments``, …)
    and :data:`UPDATED`."""
    return {key for key in row if not key.startswith("_") and key != UPDATED}


def made_at(row: dict[str, Any], when: str) -> dict[str, Any]:
    """``row`` saying that each of its families was made at ``when`` (an ISO 8601 time)."""
    row[UPDATED] = dict.fromkeys(sorted(families(row)), when)
    return row


def merge_families(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """One version per row: the families of ``new`` replace the same families of ``old`` unless
    ``old``'s was made later (:data:`UPDATED`); families (and their attachments) ``new`` does not
    carry are kept. ``old`` is the stored row (its attachments as stubs) or one given earlier in the
    same batch (its attachments with their data)."""
    old_times, new_times = old.get(UPDATED) or {}, new.get(UPDATED) or {}
    replaced = {
        family for family in families(new) if not observed_later(old_times.get(family), new_times.get(family))
    }
    kept = families(old) - replaced
    merged = {key: old[key] for key in kept}
    merged.update({key: new[key] for key in replaced})
    merged["_id"] = new["_id"]
    times = {family: old_times[family] for family in kept if family in old_times}
    times.update({family: new_times[family] for family in replaced if family in new_times})
    if times:
        merged[UPDATED] = dict(sorted(times.items()))
    attachments = {
        name: dict(stub)
        if "data" in stub and not stub.get("stub")
        else {k: v for k, v in stub.items() if k != "data"} | {"stub": True}
        for name, stub in (old.get("_attachments") or {}).items()
        if name.split(":", 1)[0] not in replaced
    }
    stale = families(new) - replaced  # new's families older than the stored ones: nor their attachments
    attachments.update(
        (name, stub)
        for name, stub in (new.get("_attachments") or {}).items()
        if name.split(":", 1)[0] not in stale
    )
    if attachments:
        merged["_attachments"] = attachments
    return merged


class FamilyRows:
    """The write hooks of a table of column-family rows: each row is merged with the stored one
    (:func:`merge_families`) where it is written, a spooled one where it is delivered."""

    durable: ClassVar[str | None] = "families"

    @property
    def merge(self) -> Merge:
        return merge_families

    def before_write(self, store: Store, db: str, docs: list[dict[str, Any]]) -> None:
        pass

    def after_batch(self, store: Store, db: str, batch: list[dict[str, Any]], result: UpsertResult) -> None:
        pass

    def settled_unchanged(self, doc: dict[str, Any]) -> bool:
        return True  # a row equal to the stored one merges into that row
