"""The embedded store: one SQLite file, CouchDB's document semantics, no server.

Every database of the project lives in the same file. View rows are maintained at write time
from :mod:`.views` and kept in a table indexed by key, so queries cost what an index scan costs.
Keys compare component by component in code-point order (CouchDB uses ICU collation; the two
agree for the ASCII keys the views emit: ISO datetimes, branch, entity and parser names).
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import functools
import hashlib
import json
import logging
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar, overload

from votersdaily.json_encoder import ReusableJsonEncoder
from votersdaily.locations import embedded_path
from votersdaily.plumbing.full_disk import without_room
from votersdaily.schema import SURROGATE_RE

from .base import Row, StoreError, StoreUnavailable, body_json_of, write_check_text
from .names import checked_prefix, database_name, project_name
from .revisions import META_KEYS, misshapen, next_rev, rev_number, unstorable
from .views import design_is_current, install_design, views_for

logger = logging.getLogger(__name__)

T = TypeVar("T")

MAX_KEY_PARTS = 3
#: Keys looked up by one SQL query (3 parameters each, well under SQLite's limit).
KEYS_PER_QUERY = 200
#: Sorts after every string: CouchDB's ``{}`` as a high key.
HIGH = "\U0010ffff"
#: Documents as stored: ``json.dumps(body, ensure_ascii=False)``, by one encoder made once (no NaN or
#: infinity: CouchDB's JSON has none, and a document holding one is refused as it would refuse it).
_BODY_JSON = ReusableJsonEncoder(ensure_ascii=False, allow_nan=False)

#: The tables of a new file. Documents are a rowid table (bodies of a few KB appended in order, not
#: spread over a B-tree keyed by id) with a unique index on (db, id); view rows are a table keyed by
#: the view key itself. Files made by earlier versions keep their own tables (documents keyed by
#: (db, id), view rows with two indexes): every statement below reads and writes both alike. A view
#: row's ``value`` is the JSON text of what its view emits beside the key (NULL for ``null``); a file
#: made before views had values gets the column when opened (:data:`VALUE_COLUMN`).
SCHEMA = """
CREATE TABLE IF NOT EXISTS dbs (name TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS docs (
    db TEXT NOT NULL, id TEXT NOT NULL, rev TEXT NOT NULL, body TEXT NOT NULL,
    UNIQUE (db, id)
);
CREATE TABLE IF NOT EXISTS attachments (
    db TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL,
    content_type TEXT NOT NULL, digest TEXT NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (db, id, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS view_rows (
    db TEXT NOT NULL, view TEXT NOT NULL, k0 TEXT NOT NULL, k1 TEXT NOT NULL, k2 TEXT NOT NULL,
    id TEXT NOT NULL, value TEXT,
    PRIMARY KEY (db, view, k0, k1, k2, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS view_rows_doc ON view_rows (db, id);
"""
#: The tables :data:`SCHEMA` makes (every version's): a file with any other table is another program's.
TABLES = frozenset({"dbs", "docs", "attachments", "view_rows"})
#: The column view rows of files made before views had values lack (each such row's value was null).
VALUE_COLUMN = "ALTER TABLE view_rows ADD COLUMN value TEXT"
#: The documents' revisions by id, apart from their bodies: a view read with the revision alone (a
#: reparse reads 200,000 events' so) finds it here, in a few MB, rather than in each document's row
#: among the bodies (200,000 rows: 0.4-0.7 s against 1.0-1.3 s from the page cache, 1.9 s against 9.2 s
#: from the disk, the view's own rows included).
#: Made when a file is opened; a file it cannot be made in (a full disk, a read-only file) is read
#: without it, as before.
REV_INDEX = "docs_rev"
#: The database name of the row :meth:`EmbeddedStore.check_writes` adds and removes (no project
#: database has it: CouchDB's names start with a lowercase letter).
WRITE_CHECK_NAME = "_votersdaily_write_check"
REV_INDEX_SQL = "CREATE INDEX IF NOT EXISTS %s ON docs (db, id, rev)" % REV_INDEX
#: The page size of a new file: a document body of a few KB fits a page more often than with
#: SQLite's 4 KB default (fewer overflow pages to write and read).
PAGE_SIZE = 8192


def _key_parts(key: Any, pad: str) -> tuple[str, ...]:
    """A key as the index stores it: its string components padded to MAX_KEY_PARTS."""
    parts = list(key) if isinstance(key, (list, tuple)) else [key]
    out = []
    for part in parts[:MAX_KEY_PARTS]:
        if isinstance(part, dict):
            out.append(HIGH)
        elif isinstance(part, str):
            out.append(part)
        else:
            raise StoreError("embedded views take string keys (or {} as a high key), got %r" % (part,))
    while len(out) < MAX_KEY_PARTS:
        out.append(pad)
    return tuple(out)


@functools.cache
def _view_rows_of(
    db: str,
) -> Callable[[str, str, Mapping[str, Any], list[tuple[str | None, ...]]], None]:
    """``extract(db_name, doc_id, body, rows)``: appends the document's view rows of ``db``'s views
    (:mod:`.views`), each ``(db_name, view, k0, k1, k2, doc_id, value)`` with unused key parts ``""``
    and the value's JSON text (None for ``null``): what :meth:`.views.ViewSpec.keys` and
    :meth:`~.views.ViewSpec.value` emit (``tests/store/test_views.py`` holds them to it), one loop over
    views whose fields and padding were looked up once. A view keyed by ids looks for the ids first:
    most events have none, and then it has no row whatever its other fields hold."""
    specs = []
    for view, spec in views_for(db).items():
        if not 1 <= spec.width <= MAX_KEY_PARTS:
            raise StoreError(
                "embedded views take 1 to %d key parts: %s has %d" % (MAX_KEY_PARTS, view, spec.width)
            )
        pad = ("",) * (MAX_KEY_PARTS - spec.width)
        specs.append((view, spec.fields, spec.where, spec.ids, pad, spec.values))

    def extract(
        db_name: str, doc_id: str, body: Mapping[str, Any], rows: list[tuple[str | None, ...]]
    ) -> None:
        get = body.get
        for view, fields, where, id_keys, pad, values in specs:
            ids: list[str] = []
            if id_keys:
                for id_key in id_keys:  # JavaScript's [].concat(...) of their values, strings only
                    value = get(id_key)
                    if isinstance(value, str):
                        ids.append(value)
                    elif isinstance(value, list):
                        ids.extend([one for one in value if isinstance(one, str)])
                if not ids:
                    continue
                if len(ids) > 1:  # each id once, as views._ids_of
                    ids = list(dict.fromkeys(ids))
            key = tuple([get(field) for field in fields])
            for part in key:
                if not isinstance(part, str):
                    break
            else:
                if where is not None and not where(body):
                    continue
                value = None if values is None else _BODY_JSON({k: body[k] for k in values if k in body})
                if id_keys:
                    rows.extend([(db_name, view, one, *key, *pad, doc_id, value) for one in ids])
                else:
                    rows.append((db_name, view, *key, *pad, doc_id, value))

    return extract


#: hashlib lets other threads run while it hashes this many bytes or more (CPython's
#: HASHLIB_GIL_MINSIZE): the writer thread then waits for the busy reactor thread to hand the lock
#: back, up to a switch interval (5 ms) per document.
_HASH_GIL_MINSIZE = 2048


def _md5_in_pieces(data: bytes) -> str:
    """``hashlib.md5(data).hexdigest()``, fed in pieces below :data:`_HASH_GIL_MINSIZE` so that
    hashing a body never gives up Python's lock (a few microseconds of hashing are not worth a
    5 ms wait for it)."""
    digest = hashlib.md5(usedforsecurity=False)
    for start in range(0, len(data), _HASH_GIL_MINSIZE - 1):
        digest.update(data[start : start + _HASH_GIL_MINSIZE - 1])
    return digest.hexdigest()


#: ``hashlib.md5(data).hexdigest()`` of bytes without giving up Python's lock: compiled
#: (``votersdaily/_eventjson.c``: one call, no pieces copied), else :func:`_md5_in_pieces`.
md5_holding_the_gil: Callable[[bytes], str]
#: The MD5 of a str's UTF-8 (None when it has none: a lone surrogate), the same way.
_compiled_text_md5: Callable[[str], str | None] | None
try:
    from votersdaily._eventjson import md5_hex as _compiled_md5_hex
except ImportError:  # not built
    md5_holding_the_gil, _compiled_text_md5 = _md5_in_pieces, None
else:
    md5_holding_the_gil = _compiled_text_md5 = _compiled_md5_hex


def text_md5(text: str) -> str | None:
    """The MD5 (hex) of ``text``'s UTF-8, as :func:`md5_holding_the_gil` makes a revision's from the
    encoded text; None when ``text`` has no UTF-8 (a lone surrogate: the store refuses it). An ASCII
    text is hashed as it is, without an encoded copy, when the compiled module is built."""
    if _compiled_text_md5 is not None:
        return _compiled_text_md5(text)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return _md5_in_pieces(data)


def _unavailable_when_sqlite_cannot(method: Callable[..., T]) -> Callable[..., T]:
    """A full disk, a read-only file, an I/O error or a lock held too long make the store unavailable
    (:class:`StoreUnavailable`: the writers retry, then spool), as a CouchDB that cannot write would."""

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> T:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.OperationalError as exc:
            raise StoreUnavailable("embedded store %s: %s" % (self.display_uri, exc)) from exc

    return call


def docs_by_pages(
    docs_after: Callable[[str, str], list[dict[str, Any]]], db: str, include_design: bool
) -> Iterator[dict[str, Any]]:
    """Every document of ``db`` in id order, a page (``docs_after(db, last id)``) at a time."""
    after = ""
    while True:
        page = docs_after(db, after)
        if not page:
            return
        for doc in page:
            if include_design or not doc["_id"].startswith("_design/"):
                yield doc
        after = page[-1]["_id"]


def text_md5_of(rev: str) -> str:
    """The MD5 of the stored JSON text a revision of this store names (``<n>-<md5>``)."""
    return rev.partition("-")[2]


@dataclass(frozen=True)
class Stored:
    """A stored document as :meth:`EmbeddedStore.compare_stored` tells it: its revision, its
    attachment stubs, and whether it is the same as the document compared (None: not told)."""

    rev: str
    attachments: dict[str, Any] | None
    same: bool | None


@dataclass(frozen=True)
class ComparedFields:
    """The keys a comparison with a stored body reads: ``probe`` (a differing value proves a change),
    then ``ignore`` (the caller's volatile keys, compared as the stored values), then ``_attachments``:
    ``read``, in that order."""

    probe: tuple[str, ...]
    ignore: tuple[str, ...]

    @property
    def read(self) -> tuple[str, ...]:
        return (*self.probe, *self.ignore, "_attachments")


def compared_fields(ignore: Sequence[str], probe: Sequence[str] = ()) -> ComparedFields:
    """The fields of a comparison: meta keys are never compared, a probe that is ignored is no probe."""
    ignored = tuple(key for key in ignore if key not in META_KEYS)
    return ComparedFields(tuple(key for key in probe if key not in ignored), ignored)


@overload
def tell_stored(
    doc: Mapping[str, Any], rev: str, values: list[Any], fields: ComparedFields, encode: Literal[True] = True
) -> Stored: ...


@overload
def tell_stored(
    doc: Mapping[str, Any], rev: str, values: list[Any], fields: ComparedFields, encode: bool
) -> Stored | None: ...


def tell_stored(
    doc: Mapping[str, Any], rev: str, values: list[Any], fields: ComparedFields, encode: bool = True
) -> Stored | None:
    """One document against a stored revision and its stored ``values`` of ``fields.read``
    (:meth:`EmbeddedStore.stored_values`), as :meth:`EmbeddedStore.compare_stored` tells it.

    The document is the stored body when, with the stored values of the ignored keys, it serialises
    to the text the revision is the MD5 of: a document whose text was made with it and that holds
    those values (a reparse of the same record) is hashed as it is; else a copy is encoded. With
    ``encode`` False, a document that would need that encoding is not told (None): the caller has it
    told where encoding costs less (the store's own process)."""
    probe, ignore = fields.probe, fields.ignore
    attachments = values[-1]
    if attachments is not None or "_attachments" in doc:
        return Stored(rev, attachments, None)
    for key, old in zip(probe, values, strict=False):
        new = doc.get(key)
        if isinstance(new, str) and (not isinstance(old, str) or old != new):
            return Stored(rev, None, False)  # the JSON of a string equals only that string's
    # The document but for its meta keys, with the stored values of the ignored keys it has: the
    # document itself when it holds those values, whose text may be made already; else a copy (in
    # C, then a few keys set: their places in the key order stay).
    stored = values[len(probe) : -1]
    text = body_json_of(doc) if isinstance(doc, dict) else None
    try:
        if text is None or not all(
            key not in doc or (type(doc[key]) is type(old) and doc[key] == old)
            for key, old in zip(ignore, stored, strict=True)
        ):
            if not encode:
                return None
            candidate = dict(doc)
            candidate.pop("_id", None)
            candidate.pop("_rev", None)
            for key, old in zip(ignore, stored, strict=True):
                if key in candidate:
                    candidate[key] = old
            text = _BODY_JSON(candidate)
        data = text.encode("utf-8")
    except (TypeError, ValueError):  # not JSON: the whole documents tell (and the write refuses it)
        return Stored(rev, None, None)
    return Stored(rev, None, True if md5_holding_the_gil(data) == text_md5_of(rev) else None)


class _DocColumn:
    """What a view query reads of each row's document: nothing (no join: a deleted document has no
    view rows), the whole body, or only ``fields`` (``json_extract`` in SQLite, one small JSON array a
    row: the body is neither sent to Python nor parsed there)."""

    def __init__(self, include_docs: bool, fields: Sequence[str] | None, rev_index: bool = False):
        self.fields = tuple(fields) if include_docs and fields is not None else None
        #: The parameters of :attr:`columns` (before the query's own).
        self.params: list[str] = []
        if not include_docs:
            self.columns, self.join = "NULL, NULL", ""
            return
        self.join = "JOIN docs d ON d.db = v.db AND d.id = v.id"
        if self.fields is None:
            self.columns = "d.rev, d.body"
            return
        if not self.fields:  # the revision alone: from :data:`REV_INDEX` where the file has it
            if rev_index:
                self.join = "JOIN docs d INDEXED BY %s ON d.db = v.db AND d.id = v.id" % REV_INDEX
            self.columns = "d.rev, ''"
            return
        for field in self.fields:
            if '"' in field:
                raise StoreError("a field to read cannot hold a double quote: %r" % field)
        # Two paths or more: json_extract answers a JSON array only then.
        self.params = ['$."%s"' % field for field in self.fields] * (2 if len(self.fields) == 1 else 1)
        self.columns = "d.rev, json_extract(d.body, %s)" % ", ".join("?" * len(self.params))

    def doc(self, doc_id: str, rev: str | None, value: str | None) -> dict[str, Any] | None:
        if value is None:
            return None
        if self.fields is None:
            return EmbeddedStore._materialise(doc_id, rev or "", value)
        doc = dict(zip(self.fields, json.loads(value), strict=False)) if self.fields else {}
        doc["_id"] = doc_id
        doc["_rev"] = rev
        return doc


def _value(text: str | None) -> Any:
    """A view row's value from its stored JSON text (NULL: ``null``)."""
    return None if text is None else json.loads(text)


#: The stores this process has open: each is closed as the process exits (:func:`_close_open_stores`).
_OPEN: weakref.WeakSet[EmbeddedStore] = weakref.WeakSet()


@atexit.register
def _close_open_stores() -> None:
    """Close what is still open as the process exits: SQLite checkpoints the write-ahead log into the
    file and removes ``-wal``/``-shm`` only when a connection closes, and a connection held in a
    reference cycle is never closed by an exit that collects nothing (:func:`votersdaily.gc_freeze.
    freeze_at_exit`): the file alone would then not hold the last writes."""
    for store in list(_OPEN):
        if store._opened_by != os.getpid():  # a forked child's copy: the connection is its parent's
            continue
        if store._lock.acquire(timeout=5):  # a daemon thread stuck inside a call keeps it
            try:
                if store._connection is not None:
                    store._connection.close()
            finally:
                store._lock.release()


def cannot_open_line(uri: str, path: str, exc: BaseException) -> str:
    """What a person is told of an embedded store that cannot be opened: the folder named when its
    disk is full (SQLite then says only "disk I/O error": it cannot make its ``-wal`` file)."""
    folder = Path(path).parent
    if path != ":memory:" and without_room(folder):
        return "cannot open the embedded store %s: the folder %s is full (%s): make room there" % (
            uri,
            folder,
            exc,
        )
    return "cannot open the embedded store %s: %s" % (uri, exc)


class EmbeddedStore:
    def __init__(self, path: str | Path, prefix: str = "") -> None:
        self.path = str(path)
        #: Put before every database name (:mod:`.names`), as on CouchDB.
        self.prefix = checked_prefix(prefix)
        self.display_uri = "sqlite:///" + self.path
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._connection: sqlite3.Connection | None = None
        self._has_rev_index = False
        self._opened_by = os.getpid()
        # Opened now; a file SQLite cannot open for now (its disk full, so no -wal file; locked too
        # long) is asked again at each call, which says StoreUnavailable until it opens, as a CouchDB
        # that does not answer: the writers spool, a worker waits, a run stops in one line.
        with contextlib.suppress(StoreUnavailable):
            self._open()

    @property
    def _conn(self) -> sqlite3.Connection:
        """The connection, opened at the first call that finds it is not (:meth:`_open`)."""
        return self._connection or self._open()

    def _open(self) -> sqlite3.Connection:
        with self._lock:
            if self._connection is not None:
                return self._connection
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            try:
                self._set_up(conn)
            except sqlite3.OperationalError as exc:
                conn.close()
                raise StoreUnavailable(cannot_open_line(self.display_uri, self.path, exc)) from exc
            except BaseException:
                conn.close()
                raise
            self._connection = conn
            _OPEN.add(self)
            return conn

    def _set_up(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA page_size=%d" % PAGE_SIZE)  # a new file only; no-op otherwise
        # Durability: in WAL mode with synchronous=NORMAL a committed batch survives a crash of the
        # process (the log is written before COMMIT returns) and the file is never corrupted, but
        # the last batches before a power loss or an OS crash may be rolled back (the log is synced
        # at checkpoints, not at every commit): the spool and the next run's re-crawl cover that.
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.executescript(SCHEMA)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(view_rows)")}
        if "value" not in columns:
            conn.execute(VALUE_COLUMN)
        self._has_rev_index = self._make_rev_index(conn)

    @property
    def _rev_index(self) -> bool:
        """Whether the file has :data:`REV_INDEX` (known once it is open: opened here)."""
        if self._connection is None:
            self._open()
        return self._has_rev_index

    def _make_rev_index(self, conn: sqlite3.Connection) -> bool:
        """Whether the file has :data:`REV_INDEX` (made now if it can be: a file of an earlier
        version gets it once, in about a second per 200,000 documents)."""
        try:
            conn.execute(REV_INDEX_SQL)
        except sqlite3.OperationalError as exc:  # full, read-only, locked too long: read without it
            logger.info("embedded store %s: reads revisions without their index (%s)", self.display_uri, exc)
        return (
            conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (REV_INDEX,)
            ).fetchone()
            is not None
        )

    @_unavailable_when_sqlite_cannot
    def change_token(self) -> tuple[int, int]:
        """Equal at two moments only when nothing was committed to the file in between, by any
        connection: SQLite's ``data_version`` (which moves with every commit of another connection,
        another process's included: the store's process, another crawl) and this connection's own
        ``total_changes``. A reader that took it before a read may reuse what it read while it holds."""
        with self._lock:
            (version,) = self._conn.execute("PRAGMA data_version").fetchone()
            return version, self._conn.total_changes

    @classmethod
    def from_uri(cls, uri: str, prefix: str = "") -> EmbeddedStore:
        return cls(cls.path_of(uri), prefix)

    @staticmethod
    def path_of(uri: str) -> str:
        """The file of ``sqlite:///relative.db`` or ``sqlite:////absolute.db`` (SQLAlchemy's spelling)."""
        path = embedded_path(uri)
        if not path:
            raise StoreError("sqlite store URI needs a path: %r" % uri)
        return path

    # -- databases ---------------------------------------------------------------------------

    def _name(self, db: str) -> str:
        return database_name(self.prefix, db)

    @_unavailable_when_sqlite_cannot
    def ensure_db(self, db: str) -> None:
        with self._lock:
            self._conn.execute("INSERT OR IGNORE INTO dbs (name) VALUES (?)", (self._name(db),))

    @_unavailable_when_sqlite_cannot
    def drop_db(self, db: str) -> None:
        name = self._name(db)
        with self._lock, self._transaction():
            for table in ("docs", "attachments", "view_rows"):
                self._conn.execute("DELETE FROM %s WHERE db = ?" % table, (name,))  # noqa: S608 - placeholders and fixed SQL fragments only
            self._conn.execute("DELETE FROM dbs WHERE name = ?", (name,))

    @_unavailable_when_sqlite_cannot
    def check_writes(self, db: str) -> None:
        """A row of :data:`WRITE_CHECK_BYTES` of random text, under a database name no project
        database has, added and removed in one committed transaction: SQLite fails it on a full
        disk or a read-only file, and no reader ever sees it (:meth:`Store.check_writes`). Its size
        is more than what a write that failed leaves unused at the end of the write-ahead log."""
        payload = write_check_text()
        with self._lock, self._transaction():
            self._conn.execute(
                "INSERT OR REPLACE INTO docs (db, id, rev, body) VALUES (?, 'check', '0', ?)",
                (WRITE_CHECK_NAME, payload),
            )
            self._conn.execute("DELETE FROM docs WHERE db = ?", (WRITE_CHECK_NAME,))

    def list_dbs(self) -> list[str]:
        with self._lock:
            names = [r[0] for r in self._conn.execute("SELECT name FROM dbs ORDER BY name")]
        return [db for db in (project_name(self.prefix, name) for name in names) if db is not None]

    def has_db(self, db: str) -> bool:
        with self._lock:
            return self._exists(self._name(db))

    def _exists(self, name: str) -> bool:
        return self._conn.execute("SELECT 1 FROM dbs WHERE name = ?", (name,)).fetchone() is not None

    def _require(self, name: str) -> None:
        if not self._exists(name):
            raise StoreError("database %r does not exist in %s" % (name, self.display_uri))

    def _transaction(self) -> AbstractContextManager[None]:
        conn = self._conn

        class _Tx:
            def __enter__(self_inner) -> None:
                conn.execute("BEGIN IMMEDIATE")

            def __exit__(
                self_inner,
                exc_type: type[BaseException] | None,
                exc: BaseException | None,
                tb: TracebackType | None,
            ) -> Literal[False]:
                if exc_type is None:
                    try:
                        conn.execute("COMMIT")
                        return False
                    except sqlite3.Error:  # a full disk: the transaction stays open unless rolled back
                        if conn.in_transaction:
                            conn.execute("ROLLBACK")
                        raise
                if conn.in_transaction:  # SQLite may have rolled it back itself (a full disk)
                    conn.execute("ROLLBACK")
                return False

        return _Tx()

    # -- documents ---------------------------------------------------------------------------

    def get(self, db: str, doc_id: str) -> dict[str, Any] | None:
        return self.get_many(db, [doc_id]).get(doc_id)

    @_unavailable_when_sqlite_cannot
    def get_many(self, db: str, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        ids = list(dict.fromkeys(ids))
        found: dict[str, dict[str, Any]] = {}
        db = self._name(db)
        with self._lock:
            self._require(db)
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    "SELECT id, rev, body FROM docs WHERE db = ? AND id IN (%s)" % marks,  # noqa: S608 - placeholders and fixed SQL fragments only
                    (db, *chunk),
                )
                for doc_id, rev, body in rows:
                    found[doc_id] = self._materialise(doc_id, rev, body)
        return found

    @_unavailable_when_sqlite_cannot
    def compare_stored(
        self, db: str, docs: Mapping[str, dict[str, Any]], ignore: Sequence[str], probe: Sequence[str] = ()
    ) -> dict[str, Stored]:
        """What the store holds of each of ``docs`` (by ``_id``), told without reading a body into
        Python: a :class:`Stored` per stored one (those not stored are left out). Its ``same`` is
        True when the stored body is the document's but for the ``ignore`` keys: the document with the
        stored values of those keys serialises to the very text the stored revision is the MD5 of;
        False when a ``probe`` key (a short string) differs, which proves a change at once (a reparse
        by a new parser version); None when only the whole documents can tell (another key order,
        attachments)."""
        fields = compared_fields(ignore, probe)
        return {
            doc_id: tell_stored(docs[doc_id], rev, values, fields)
            for doc_id, (rev, values) in self.stored_values(db, list(docs), fields).items()
        }

    @_unavailable_when_sqlite_cannot
    def stored_values(
        self, db: str, ids: Sequence[str], fields: ComparedFields
    ) -> dict[str, tuple[str, list[Any]]]:
        """The revision and the stored values of ``fields.read`` (``None`` for one a body lacks) of
        each stored one of ``ids``: all :func:`tell_stored` needs, read by SQLite without a body
        reaching Python (an id SQLite's text functions cannot carry, one with a NUL, is read whole)."""
        read = fields.read
        for field in read:
            if '"' in field:
                raise StoreError("a field to compare cannot hold a double quote: %r" % field)
        # Two paths or more: json_extract answers a JSON array only then.
        paths = ['$."%s"' % field for field in read] * (2 if len(read) == 1 else 1)
        plain = [i for i in ids if "\x00" not in i]
        found: dict[str, tuple[str, list[Any]]] = {}
        name = self._name(db)
        with self._lock:
            self._require(name)
            for start in range(0, len(plain), 500):
                chunk = plain[start : start + 500]
                # One row for the chunk: one step of SQLite, one JSON text for Python to read.
                (answer,) = self._conn.execute(
                    "SELECT json_group_array(json_array(id, rev, json_extract(body, %s))) FROM docs "  # noqa: S608 - placeholders and fixed SQL fragments only
                    "WHERE db = ? AND id IN (%s)" % (",".join("?" * len(paths)), ",".join("?" * len(chunk))),
                    (*paths, name, *chunk),
                ).fetchone()
                for doc_id, rev, values in json.loads(answer):
                    found[doc_id] = (rev, values[: len(read)])
        for doc_id in set(ids) - set(plain):
            stored = self.get(db, doc_id)
            if stored is not None:
                found[doc_id] = (stored["_rev"], [stored.get(field) for field in read])
        return found

    @staticmethod
    def _materialise(doc_id: str, rev: str, body: str) -> dict[str, Any]:
        doc = json.loads(body)
        doc["_id"] = doc_id
        doc["_rev"] = rev
        return doc

    @_unavailable_when_sqlite_cannot
    def bulk_docs(self, db: str, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """CouchDB ``_bulk_docs`` semantics, written as one transaction of a few multi-row statements."""
        results: list[dict[str, Any]] = []
        extract = _view_rows_of(db)
        db = self._name(db)
        with self._lock:
            self._require(db)
            with self._transaction():
                ids = [i for i in (d.get("_id") for d in docs) if isinstance(i, str)]
                revs = self._current_revs(db, [i for i in ids if not SURROGATE_RE.search(i)])
                rows: list[tuple[str, ...]] = []
                view_rows: list[tuple[str | None, ...]] = []
                replaced: list[str] = []
                for doc in docs:
                    answer, row = self._prepare(db, doc, revs)
                    results.append(answer)
                    if row is None:
                        continue
                    doc_id, rev, body, text = row
                    if doc_id in revs:
                        replaced.append(doc_id)  # its old view rows go
                    revs[doc_id] = rev
                    rows.append((db, doc_id, rev, text))
                    extract(db, doc_id, body, view_rows)
                self._delete_view_rows(db, replaced)
                self._insert_rows("INSERT OR REPLACE INTO docs (db, id, rev, body) VALUES ", rows)
                self._insert_rows(
                    "INSERT INTO view_rows (db, view, k0, k1, k2, id, value) VALUES ", view_rows
                )
        return results

    def _insert_rows(self, head: str, rows: Sequence[tuple[str | None, ...]]) -> None:
        """``head`` (an ``INSERT … VALUES``) for every row, in as few statements as SQLite's limit of
        parameters allows (one for a batch, mostly): each statement is one step of SQLite, during which
        the worker thread does not hold Python's lock, and after which it may wait a switch interval
        (5 ms) for a busy reactor thread to hand it back; a statement per row would wait per row."""
        if not rows:
            return
        width = len(rows[0])
        marks = "(%s)" % ",".join("?" * width)
        per_statement = max(1, self._conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width)
        for start in range(0, len(rows), per_statement):
            chunk = rows[start : start + per_statement]
            self._conn.execute(head + ",".join([marks] * len(chunk)), list(chain.from_iterable(chunk)))

    def _current_revs(self, db: str, ids: list[str]) -> dict[str, str]:
        revs: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for doc_id, rev in self._conn.execute(
                "SELECT id, rev FROM docs WHERE db = ? AND id IN (%s)" % marks,  # noqa: S608 - placeholders and fixed SQL fragments only
                (db, *chunk),
            ):
                revs[doc_id] = rev
        return revs

    def _delete_view_rows(self, db: str, ids: list[str]) -> None:
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            self._conn.execute("DELETE FROM view_rows WHERE db = ? AND id IN (%s)" % marks, (db, *chunk))  # noqa: S608 - placeholders and fixed SQL fragments only

    def _prepare(
        self, db: str, doc: dict[str, Any], revs: dict[str, str]
    ) -> tuple[dict[str, Any], tuple[str, str, dict[str, Any], str] | None]:
        """Check one document against the current revision; returns (answer, row to write or None)."""
        doc_id = doc.get("_id")
        if not isinstance(doc_id, str) or not doc_id:
            return {"id": doc_id, "error": "bad_request", "reason": "document has no _id"}, None
        refused = misshapen(doc)  # what CouchDB refuses, refused here too
        if refused is None and SURROGATE_RE.search(doc_id):
            refused = unstorable(doc)
            assert refused is not None, "a lone surrogate never encodes"  # noqa: S101 - invariant
        if refused is not None:
            return refused, None
        current = revs.get(doc_id)
        if current != doc.get("_rev"):
            return {"id": doc_id, "error": "conflict", "reason": "Document update conflict."}, None
        if doc.get("_deleted"):
            if current is None:
                return {"id": doc_id, "error": "not_found", "reason": "missing"}, None
            for table in ("docs", "attachments", "view_rows"):
                self._conn.execute("DELETE FROM %s WHERE db = ? AND id = ?" % table, (db, doc_id))  # noqa: S608 - placeholders and fixed SQL fragments only
            revs.pop(doc_id, None)
            return {"id": doc_id, "rev": next_rev(current, {}), "ok": True}, None
        body = dict(doc)  # a copy, then the meta keys out: the order of the rest is kept
        del body["_id"]
        body.pop("_rev", None)
        attachments = body.pop("_attachments", None)
        text = body_json_of(doc)
        try:  # checked before anything of the document is written
            if text is None:
                text = _BODY_JSON(body)
            data = text.encode("utf-8")
        except (TypeError, ValueError, RecursionError):  # a lone surrogate is a ValueError too
            refused = unstorable(doc)
            assert refused is not None, "the same encoding fails there"  # noqa: S101 - invariant
            return refused, None
        if attachments is not None or current is not None:
            stubs = self._write_attachments(db, doc_id, attachments, current)
            if stubs:
                body["_attachments"] = stubs
                text = _BODY_JSON(body)
                data = text.encode("utf-8")
        rev = "%d-%s" % (rev_number(current) + 1, md5_holding_the_gil(data))
        return {"id": doc_id, "rev": rev, "ok": True}, (doc_id, rev, body, text)

    def _write_attachments(
        self, db: str, doc_id: str, given: dict[str, Any] | None, current: str | None
    ) -> dict[str, Any]:
        given = given or {}
        keep = set()
        stubs = {}
        for name, att in given.items():
            if att.get("stub"):
                row = self._conn.execute(
                    "SELECT content_type, digest, length(data) FROM attachments WHERE db=? AND id=? AND name=?",
                    (db, doc_id, name),
                ).fetchone()
                if row is None:
                    continue
                stubs[name] = {"content_type": row[0], "digest": row[1], "length": row[2], "stub": True}
                keep.add(name)
                continue
            data = base64.b64decode(att.get("data", ""))
            digest = "md5-" + base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode(
                "ascii"
            )
            content_type = att.get("content_type", "application/octet-stream")
            self._conn.execute(
                "INSERT OR REPLACE INTO attachments (db, id, name, content_type, digest, data) VALUES (?,?,?,?,?,?)",
                (db, doc_id, name, content_type, digest, data),
            )
            stubs[name] = {"content_type": content_type, "digest": digest, "length": len(data), "stub": True}
            keep.add(name)
        if current is not None:
            existing = [
                r[0]
                for r in self._conn.execute(
                    "SELECT name FROM attachments WHERE db = ? AND id = ?", (db, doc_id)
                )
            ]
            for name in existing:
                if name not in keep:
                    self._conn.execute(
                        "DELETE FROM attachments WHERE db=? AND id=? AND name=?", (db, doc_id, name)
                    )
        return stubs

    def get_attachment(self, db: str, doc_id: str, name: str) -> bytes | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT data FROM attachments WHERE db=? AND id=? AND name=?", (self._name(db), doc_id, name)
            ).fetchone()
        return None if row is None else bytes(row[0])

    def iter_docs(self, db: str, include_design: bool = False) -> Iterator[dict[str, Any]]:
        return docs_by_pages(self.docs_after, db, include_design)

    def docs_after(self, db: str, after: str, limit: int = 1000) -> list[dict[str, Any]]:
        """Up to ``limit`` documents (design documents too) whose ids sort after ``after``, in order."""
        name = self._name(db)
        with self._lock:
            self._require(name)
            rows = self._conn.execute(
                "SELECT id, rev, body FROM docs WHERE db = ? AND id > ? ORDER BY id LIMIT ?",
                (name, after, limit),
            ).fetchall()
        return [self._materialise(doc_id, rev, body) for doc_id, rev, body in rows]

    def count(self, db: str) -> int:
        db = self._name(db)
        with self._lock:
            self._require(db)
            (n,) = self._conn.execute(
                "SELECT count(*) FROM docs WHERE db = ? AND id NOT LIKE '\\_design/%' ESCAPE '\\'", (db,)
            ).fetchone()
        return n

    # -- views ---------------------------------------------------------------------------------

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
        width = self._view_width(db, view)
        select = _DocColumn(include_docs, fields, self._rev_index)
        if keys is not None:
            rows = self._query_keys(self._name(db), view, width, keys, descending, select)
            return rows[skip : None if limit is None else skip + limit]
        if key is not None:
            startkey = endkey = key
        fetched = self._range(db, view, startkey, endkey, descending, limit, skip, select)
        out = []
        for doc_id, k0, k1, k2, value, rev, body in fetched:
            parts = [k0, k1, k2][:width]
            row_key = parts[0] if width == 1 else parts
            out.append(Row(doc_id, row_key, select.doc(doc_id, rev, body), _value(value)))
        return out

    def view_rows(
        self, db: str, view: str, *, startkey: Any, endkey: Any, revisions: bool = False
    ) -> list[tuple[str, Any, Any, str | None]]:
        """The rows of ``view`` from ``startkey`` to ``endkey`` as :meth:`query` answers them, each
        an ``(id, key, value, revision)`` tuple (the document's revision only with ``revisions``, else
        None): no :class:`~.base.Row` and no document made per row, and the values parsed as one JSON
        text. What a reparse reads of every event of its parser, 200,000 rows twice a run."""
        width = self._view_width(db, view)
        select = _DocColumn(revisions, () if revisions else None, self._rev_index)
        fetched = self._range(db, view, startkey, endkey, False, None, 0, select)
        values = json.loads("[%s]" % ",".join("null" if row[4] is None else row[4] for row in fetched))
        if width == 1:
            return [(row[0], row[1], value, row[5]) for row, value in zip(fetched, values, strict=True)]
        if width == 2:  # a parser's views: one list a row, not a list and its slice
            return [
                (row[0], [row[1], row[2]], value, row[5]) for row, value in zip(fetched, values, strict=True)
            ]
        return [
            (row[0], [row[1], row[2], row[3]][:width], value, row[5])
            for row, value in zip(fetched, values, strict=True)
        ]

    @_unavailable_when_sqlite_cannot
    def rows_of_first_key(
        self, db: str, view: str, first: str, *, revisions: bool = False
    ) -> list[tuple[str, str, Any, str | None]]:
        """The rows of a view keyed by two strings whose first is ``first`` (what :meth:`view_rows`
        answers for ``startkey=[first]``, ``endkey=[first, {}]``), each as ``(id, second string,
        value, revision)``: the key's first string and a list per row left out (a reparse's 200,000)."""
        if self._view_width(db, view) != 2:
            raise StoreError("view %r of %r is not keyed by two strings" % (view, db))
        select = _DocColumn(revisions, () if revisions else None, self._rev_index)
        fetched = self._range(db, view, [first], [first, {}], False, None, 0, select, keys="v.id, v.k1")
        values = json.loads("[%s]" % ",".join("null" if row[2] is None else row[2] for row in fetched))
        return [(row[0], row[1], value, row[3]) for row, value in zip(fetched, values, strict=True)]

    def _view_width(self, db: str, view: str) -> int:
        spec = views_for(db).get(view)
        if spec is None:
            raise StoreError("database %r has no view %r" % (db, view))
        return spec.width

    def _range(
        self,
        db: str,
        view: str,
        startkey: Any,
        endkey: Any,
        descending: bool,
        limit: int | None,
        skip: int,
        select: _DocColumn,
        *,
        keys: str = "v.id, v.k0, v.k1, v.k2",
    ) -> list[tuple[Any, ...]]:
        """The SQL rows ``(id, k0, k1, k2, value, rev, body)`` of a key range of a view, in its order
        (``keys``, the columns before the value, when it says fewer)."""
        db = self._name(db)
        where = ["v.db = ?", "v.view = ?"]
        params: list[Any] = [*select.params, db, view]
        low, high = (endkey, startkey) if descending else (startkey, endkey)
        if low is not None:
            where.append("(v.k0, v.k1, v.k2) >= (?, ?, ?)")
            params.extend(_key_parts(low, pad=""))
        if high is not None:
            where.append("(v.k0, v.k1, v.k2) <= (?, ?, ?)")
            params.extend(_key_parts(high, pad=""))
        order = "DESC" if descending else "ASC"
        sql = (
            "SELECT %s, v.value, %s FROM view_rows v %s WHERE %s "  # noqa: S608 - placeholders and fixed SQL fragments only
            "ORDER BY v.k0 %s, v.k1 %s, v.k2 %s, v.id %s LIMIT ? OFFSET ?"
            % (keys, select.columns, select.join, " AND ".join(where), order, order, order, order)
        )
        params.extend([-1 if limit is None else limit, skip])
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def _query_keys(
        self, db: str, view: str, width: int, keys: list[Any], descending: bool, select: _DocColumn
    ) -> list[Row]:
        """Rows of each of ``keys`` in the order given (CouchDB's ``keys``), a few SQL queries for
        all of them rather than one per key (the feeds look up 200 events' keys at a time)."""
        wanted = [_key_parts(one, pad="") for one in keys]
        found: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
        unique = list(dict.fromkeys(wanted))
        for start in range(0, len(unique), KEYS_PER_QUERY):
            chunk = unique[start : start + KEYS_PER_QUERY]
            sql = (
                "SELECT v.id, v.k0, v.k1, v.k2, v.value, %s FROM view_rows v %s "  # noqa: S608 - placeholders and fixed SQL fragments only
                "WHERE v.db = ? AND v.view = ? AND (v.k0, v.k1, v.k2) IN (VALUES %s)"
                % (select.columns, select.join, ", ".join(["(?, ?, ?)"] * len(chunk)))
            )
            with self._lock:
                fetched = self._conn.execute(
                    sql, [*select.params, db, view, *(p for parts in chunk for p in parts)]
                )
                for row in fetched.fetchall():
                    found.setdefault(tuple(row[1:4]), []).append(row)
        out = []
        for parts in wanted:
            for doc_id, k0, k1, k2, value, rev, body in sorted(found.get(parts, ()), reverse=descending):
                key_parts = [k0, k1, k2][:width]
                row_key = key_parts[0] if width == 1 else key_parts
                out.append(Row(doc_id, row_key, select.doc(doc_id, rev, body), _value(value)))
        return out

    def install_views(self, db: str) -> bool:
        """Store the design document too, so a dump shows what CouchDB would hold. When it changed
        (an upgrade added or altered a view), the view rows are built again from the stored
        documents, as CouchDB builds the index of a changed design document.

        The rows are built before the design document is written: a rebuild that fails (a full
        disk) leaves the old design in place, so the next open builds them again, and a reader
        that trusts a view the design holds (``view_installed``) never reads half its rows."""
        if design_is_current(self, db):
            return False
        self.ensure_db(db)
        self._rebuild_view_rows(db)
        return install_design(self, db)

    @_unavailable_when_sqlite_cannot
    def _rebuild_view_rows(self, db: str) -> None:
        extract = _view_rows_of(db)
        name = self._name(db)
        with self._lock, self._transaction():
            self._conn.execute("DELETE FROM view_rows WHERE db = ?", (name,))
            rows = self._conn.execute(
                "SELECT id, body FROM docs WHERE db = ? AND id NOT LIKE '\\_design/%' ESCAPE '\\'", (name,)
            )
            for batch in iter(lambda: rows.fetchmany(1000), []):
                view_rows: list[tuple[str | None, ...]] = []
                for doc_id, body in batch:
                    extract(name, doc_id, json.loads(body), view_rows)
                self._insert_rows(
                    "INSERT INTO view_rows (db, view, k0, k1, k2, id, value) VALUES ", view_rows
                )

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
        _OPEN.discard(self)
