"""The storage protocol every backend implements, with CouchDB's document semantics.

Documents are JSON objects with ``_id`` and ``_rev``; writes go through :meth:`Store.bulk_docs`
(CouchDB's ``_bulk_docs``: per-document results, ``conflict`` on a stale revision); attachments are
given inline (``_attachments: {name: {content_type, data: base64}}``) and read back as stubs.
Calls block: callers on the Twisted reactor run them in a thread (see :mod:`.writer`).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

#: How much a store's :meth:`Store.check_writes` writes: random text, which no compression shrinks,
#: more than a full disk may still take at the end of a file's last block or a failed write's.
WRITE_CHECK_BYTES = 64 * 1024


def write_check_text() -> str:
    """:data:`WRITE_CHECK_BYTES` of random text (base64 of random bytes) for a write check."""
    return base64.b64encode(os.urandom(WRITE_CHECK_BYTES * 3 // 4)).decode("ascii")


class StoreError(RuntimeError):
    """The store failed to do what was asked (unreachable, refused, malformed answer)."""


class StoreUnavailable(StoreError):
    """The store could not be reached or answered a server error; the write may be retried."""


class StoreRefused(StoreUnavailable):
    """The store answered but refused the request (HTTP 401 or 403: wrong credentials or rights).

    Handled like an unavailable store (what it did not take is spooled, never lost), but never retried
    in a loop: CouchDB 3.4+ locks a user out after 5 failed logins."""


#: The results of a run the store failed (a run log's result is its exception's class name).
STORE_RESULTS = tuple(cls.__name__ for cls in (StoreUnavailable, StoreRefused, StoreError))


class EncodedDocument(dict[str, Any]):
    """A document to write with the JSON text of its body already made (``body_json``: the
    document but for ``_id``, as ``json.dumps(..., ensure_ascii=False)`` writes it), by whoever made
    the document: the event check serialises every event once, and the embedded store then writes
    and compares that text instead of encoding the event again. The text stands for the document as
    it was made: whatever changes a document makes a plain copy (``dict(doc)``, as the writers do);
    a store that cannot use the text (CouchDB, or a document with ``_rev`` or ``_attachments``)
    encodes the document itself."""

    __slots__ = ("body_json",)

    def __init__(self, doc: dict[str, Any], body_json: str) -> None:
        super().__init__(doc)
        self.body_json = body_json

    def __reduce__(self) -> tuple[Any, ...]:  # pickled with its text (the store's process)
        return (EncodedDocument, (dict(self), self.body_json))


def body_json_of(doc: dict[str, Any]) -> str | None:
    """The JSON text of ``doc``'s body, when it was made with the document and stands for all of it
    (no ``_rev``, no ``_attachments``), else None."""
    return standing_body_json(doc, doc.body_json) if type(doc) is EncodedDocument else None


def standing_body_json(doc: dict[str, Any], body_json: str | None) -> str | None:
    """``body_json``, made with ``doc``, when it stands for all of its body (no ``_rev``, no
    ``_attachments``: the store takes those out), else None."""
    return None if body_json is None or "_rev" in doc or "_attachments" in doc else body_json


@dataclass(frozen=True)
class Row:
    id: str
    key: Any
    doc: dict[str, Any] | None = None
    #: What the view emits beside the key (:attr:`.views.ViewSpec.values`; None for most views).
    value: Any = None


@runtime_checkable
class Store(Protocol):
    #: The store's URI with any password masked: the only form that may be logged.
    display_uri: str
    #: Put before every database name (``VOTERSDAILY_DB_PREFIX``, :mod:`.names`).
    prefix: str

    def ensure_db(self, db: str) -> None: ...

    def drop_db(self, db: str) -> None: ...

    def has_db(self, db: str) -> bool:
        """Whether ``db`` exists: what every command asks (a member of the database may)."""
        ...

    def list_dbs(self) -> list[str]:
        """The project's databases; on CouchDB 3 only a server admin may ask (tests, admin tools)."""
        ...

    def check_writes(self, db: str) -> None:
        """Raise :class:`StoreError` unless ``db`` takes a write now: something that no listing,
        count or replication shows is written and removed. A store that answers reads but fails
        writes (its disk full, a user without the right to write) is not taken for one that works.
        A ``db`` that does not exist yet passes when the store answers (nothing to write into)."""
        ...

    def get(self, db: str, doc_id: str) -> dict[str, Any] | None: ...

    def get_many(self, db: str, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The current documents among ``ids`` (missing and deleted ones are left out)."""
        ...

    def bulk_docs(self, db: str, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Write ``docs``; one result per doc: ``{"id", "rev"}`` or ``{"id", "error", "reason"}``."""
        ...

    def iter_docs(self, db: str, include_design: bool = False) -> Iterator[dict[str, Any]]: ...

    def count(self, db: str) -> int: ...

    def query(
        self,
        db: str,
        view: str,
        *,
        key: Any = None,
        keys: list[Any] | None = None,
        startkey: Any = None,
        endkey: Any = None,
        descending: bool = False,
        limit: int | None = None,
        skip: int = 0,
        include_docs: bool = True,
        fields: Sequence[str] | None = None,
    ) -> list[Row]:
        """Rows of a view of :mod:`.views`, ordered by key then id, as CouchDB returns them. With
        ``fields`` (and ``include_docs``), each row's document holds only ``_id``, ``_rev`` and those
        fields (``None`` for one it lacks): what a caller reading every document of a parser needs."""
        ...

    def get_attachment(self, db: str, doc_id: str, name: str) -> bytes | None: ...

    def install_views(self, db: str) -> bool:
        """Create or update the design document of ``db``; True when something changed."""
        ...

    def close(self) -> None: ...
