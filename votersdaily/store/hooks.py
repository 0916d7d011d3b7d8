"""What a writer calls around each batch it writes: the one typed seam of the write path.

:class:`~.writer.BatchWriter` calls ``before_write`` with the documents of a batch about to be
written (new or changed ones, before each ``_bulk_docs``) and ``after_batch`` once the batch is
written, both in the writer's worker thread; ``merge`` (when the hooks have one) combines each
document with the version of it already there before it is compared and written. Event reschedules
(:class:`~.reschedules.RescheduleTracker`) and the ingest's file table
(:class:`~.families.FamilyRows`) use them; a spool delivery runs the ``merge`` and ``after_batch`` of
the hooks its batches were written with, which the spool file names (``durable``, a name of
:data:`~.spool.DELIVERY_HOOKS`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Protocol

from .base import Store
from .upsert import Merge, UpsertResult

AfterBatchCall = Callable[[Store, str, list[dict[str, Any]], UpsertResult], None]


class WriteHooks(Protocol):
    #: The name (in :data:`~.spool.DELIVERY_HOOKS`) of the hooks a spool delivery runs for batches
    #: spooled with these, or None: spooled batches are delivered without hooks.
    durable: ClassVar[str | None]

    @property
    def merge(self) -> Merge | None:
        """How each document combines with the version of it already there before it is compared
        and written (:func:`~.upsert.upsert`'s ``merge``), or None: it replaces that version."""

    def before_write(self, store: Store, db: str, docs: list[dict[str, Any]]) -> None:
        """``docs`` (never unchanged ones) are about to be written to ``db``."""

    def after_batch(self, store: Store, db: str, batch: list[dict[str, Any]], result: UpsertResult) -> None:
        """``batch`` was written with ``result``; further writes add their ids to ``result``."""

    def settled_unchanged(self, doc: dict[str, Any]) -> bool:
        """Whether ``doc``, were it found unchanged, would need nothing of these hooks, so that the
        writer may tell it unchanged where it is added, out of any batch
        (:meth:`~.writer.BatchWriter.know_stored_texts`). Called with every document added, in
        order, in the adding thread."""


class AfterBatch:
    """Hooks that only react to a written batch (``call(store, db, batch, result)``)."""

    durable: ClassVar[str | None] = None
    merge: Merge | None = None

    def __init__(self, call: AfterBatchCall) -> None:
        self.call = call

    def before_write(self, store: Store, db: str, docs: list[dict[str, Any]]) -> None:
        pass

    def after_batch(self, store: Store, db: str, batch: list[dict[str, Any]], result: UpsertResult) -> None:
        self.call(store, db, batch, result)

    def settled_unchanged(self, doc: dict[str, Any]) -> bool:
        return False  # the call hears of every document of a batch, unchanged ones too
