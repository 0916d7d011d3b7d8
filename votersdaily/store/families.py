"""Rows of column families (the ingest's file table, seeds/001's HBase table): a row written replaces
the families it carries and keeps the stored row's others, with their attachments
(``<family>:<name>``).

The merge happens where the row is written (:func:`~.upsert.upsert`'s ``merge``), against the row
stored at that moment: a writer reads nothing before it hands the row over, and a row spooled while
the store was down is merged when it is delivered (:data:`~.spool.DELIVERY_HOOKS` names
:class:`FamilyRows` ``families``), as it would have been written then.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .base import Store
from .upsert import Merge, UpsertResult


def families(row: dict[str, Any]) -> set[str]:
    """The families of ``row``: its top-level keys but CouchDB's own (``_id``, ``_attachments``, …)."""
    return {key for key in row if not key.startswith("_")}


def merge_families(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """One version per row: the families of ``new`` replace the same families of ``old``; families
    (and their attachments) ``new`` does not carry are kept. ``old`` is the stored row (its
    attachments as stubs) or one given earlier in the same batch (its attachments with their data)."""
    new_families = families(new)
    merged = {key: old[key] for key in families(old) - new_families}
    merged.update({key: new[key] for key in new_families})
    merged["_id"] = new["_id"]
    attachments = {
        name: dict(stub)
        if "data" in stub and not stub.get("stub")
        else {k: v for k, v in stub.items() if k != "data"} | {"stub": True}
        for name, stub in (old.get("_attachments") or {}).items()
        if name.split(":", 1)[0] not in new_families
    }
    attachments.update(new.get("_attachments") or {})
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
