"""The embedded store: one SQLite file, CouchDB's document semantics, no server.

Every database of the project lives in the same file. View rows are maintained at write time
from :mod:`.views` and kept in a table indexed by key, so queries cost what an index scan costs.
Keys compare component by component in code-point order (CouchDB uses ICU collation; the two
agree for the ASCII keys the views emit: ISO datetimes, branch, entity and parser names).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from votersdaily.schema import SURROGATE_RE

from .base import Row, StoreError, StoreUnavailable
from .names import checked_prefix, database_name, project_name
from .revisions import next_rev, not_unicode, rev_number
from .views import ViewSpec, install_design, views_for

if TYPE_CHECKING:
    from collections.abc import Callable

T = TypeVar("T")

MAX_KEY_PARTS = 3
#: Keys looked up by one SQL query (3 parameters each, well under SQLite's limit).
KEYS_PER_QUERY = 200
#: Sorts after every string: CouchDB's ``{}`` as a high key.
HIGH = "\U0010ffff"

SCHEMA = """
CREATE TABLE IF NOT EXISTS dbs (name TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS docs (
    db TEXT NOT NULL, id TEXT NOT NULL, rev TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (db, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS attachments (
    db TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL,
    content_type TEXT NOT NULL, digest TEXT NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (db, id, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS view_rows (
    db TEXT NOT NULL, view TEXT NOT NULL, k0 TEXT NOT NULL, k1 TEXT NOT NULL, k2 TEXT NOT NULL,
    id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS view_rows_key ON view_rows (db, view, k0, k1, k2, id);
CREATE INDEX IF NOT EXISTS view_rows_doc ON view_rows (db, id);
"""


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


def _view_rows(
    db: str, doc_id: str, body: dict[str, Any], specs: dict[str, ViewSpec]
) -> list[tuple[str, ...]]:
    """The ``view_rows`` of one document: a row per key each view emits for it."""
    return [
        (db, view, *key, *[""] * (MAX_KEY_PARTS - len(key)), doc_id)
        for view, spec in specs.items()
        for key in spec.keys(body)
    ]


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


class EmbeddedStore:
    def __init__(self, path: str | Path, prefix: str = "") -> None:
        self.path = str(path)
        #: Put before every database name (:mod:`.names`), as on CouchDB.
        self.prefix = checked_prefix(prefix)
        self.display_uri = "sqlite:///" + self.path
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA busy_timeout=30000")
        self._conn.executescript(SCHEMA)

    @classmethod
    def from_uri(cls, uri: str, prefix: str = "") -> EmbeddedStore:
        return cls(cls.path_of(uri), prefix)

    @staticmethod
    def path_of(uri: str) -> str:
        """The file of ``sqlite:///relative.db`` or ``sqlite:////absolute.db`` (SQLAlchemy's spelling)."""
        path = uri[len("sqlite:") :]
        if path.startswith("///"):
            path = path[3:]
        elif path.startswith("//"):
            path = path[2:]
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

    @staticmethod
    def _materialise(doc_id: str, rev: str, body: str) -> dict[str, Any]:
        doc = json.loads(body)
        doc["_id"] = doc_id
        doc["_rev"] = rev
        return doc

    @_unavailable_when_sqlite_cannot
    def bulk_docs(self, db: str, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """CouchDB ``_bulk_docs`` semantics, written as one transaction with batched statements."""
        results: list[dict[str, Any]] = []
        specs = views_for(db)
        db = self._name(db)
        with self._lock:
            self._require(db)
            with self._transaction():
                ids = [i for i in (d.get("_id") for d in docs) if isinstance(i, str)]
                revs = self._current_revs(db, [i for i in ids if not SURROGATE_RE.search(i)])
                rows, view_rows, touched = [], [], []
                for doc in docs:
                    answer, row = self._prepare(db, doc, revs)
                    results.append(answer)
                    if row is None:
                        continue
                    doc_id, rev, body, text = row
                    revs[doc_id] = rev
                    rows.append((db, doc_id, rev, text))
                    touched.append(doc_id)
                    view_rows += _view_rows(db, doc_id, body, specs)
                self._delete_view_rows(db, touched)
                self._conn.executemany(
                    "INSERT OR REPLACE INTO docs (db, id, rev, body) VALUES (?, ?, ?, ?)", rows
                )
                self._conn.executemany(
                    "INSERT INTO view_rows (db, view, k0, k1, k2, id) VALUES (?, ?, ?, ?, ?, ?)", view_rows
                )
        return results

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
        if SURROGATE_RE.search(doc_id):
            refused = not_unicode(doc)
            assert refused is not None, "a lone surrogate never encodes"  # noqa: S101 - invariant
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
        body = {k: v for k, v in doc.items() if k not in ("_id", "_rev", "_attachments")}
        text = json.dumps(body, ensure_ascii=False)
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # checked before anything of the document is written
            refused = not_unicode(doc)
            assert refused is not None, "the same encoding fails there"  # noqa: S101 - invariant
            return refused, None
        if "_attachments" in doc or current is not None:
            stubs = self._write_attachments(db, doc_id, doc.get("_attachments"), current)
            if stubs:
                body["_attachments"] = stubs
                text = json.dumps(body, ensure_ascii=False)
                data = text.encode("utf-8")
        rev = "%d-%s" % (rev_number(current) + 1, hashlib.md5(data, usedforsecurity=False).hexdigest())
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
        last = ""
        db = self._name(db)
        while True:
            with self._lock:
                self._require(db)
                rows = self._conn.execute(
                    "SELECT id, rev, body FROM docs WHERE db = ? AND id > ? ORDER BY id LIMIT 1000",
                    (db, last),
                ).fetchall()
            if not rows:
                return
            for doc_id, rev, body in rows:
                if include_design or not doc_id.startswith("_design/"):
                    yield self._materialise(doc_id, rev, body)
            last = rows[-1][0]

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
    ) -> list[Row]:
        spec = views_for(db).get(view)
        if spec is None:
            raise StoreError("database %r has no view %r" % (db, view))
        width = spec.width
        db = self._name(db)
        if keys is not None:
            rows = self._query_keys(db, view, width, keys, descending, include_docs)
            return rows[skip : None if limit is None else skip + limit]
        if key is not None:
            startkey = endkey = key
        where = ["v.db = ?", "v.view = ?"]
        params: list[Any] = [db, view]
        low, high = (endkey, startkey) if descending else (startkey, endkey)
        if low is not None:
            where.append("(v.k0, v.k1, v.k2) >= (?, ?, ?)")
            params.extend(_key_parts(low, pad=""))
        if high is not None:
            where.append("(v.k0, v.k1, v.k2) <= (?, ?, ?)")
            params.extend(_key_parts(high, pad=""))
        order = "DESC" if descending else "ASC"
        sql = (
            "SELECT v.id, v.k0, v.k1, v.k2, d.rev, d.body FROM view_rows v "  # noqa: S608 - placeholders and fixed SQL fragments only
            "JOIN docs d ON d.db = v.db AND d.id = v.id WHERE %s "
            "ORDER BY v.k0 %s, v.k1 %s, v.k2 %s, v.id %s LIMIT ? OFFSET ?"
            % (" AND ".join(where), order, order, order, order)
        )
        params.extend([-1 if limit is None else limit, skip])
        with self._lock:
            fetched = self._conn.execute(sql, params).fetchall()
        out = []
        for doc_id, k0, k1, k2, rev, body in fetched:
            parts = [k0, k1, k2][:width]
            row_key = parts[0] if width == 1 else parts
            out.append(Row(doc_id, row_key, self._materialise(doc_id, rev, body) if include_docs else None))
        return out

    def _query_keys(
        self, db: str, view: str, width: int, keys: list[Any], descending: bool, include_docs: bool
    ) -> list[Row]:
        """Rows of each of ``keys`` in the order given (CouchDB's ``keys``), a few SQL queries for
        all of them rather than one per key (the feeds look up 200 events' keys at a time)."""
        wanted = [_key_parts(one, pad="") for one in keys]
        found: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
        unique = list(dict.fromkeys(wanted))
        for start in range(0, len(unique), KEYS_PER_QUERY):
            chunk = unique[start : start + KEYS_PER_QUERY]
            sql = (
                "SELECT v.id, v.k0, v.k1, v.k2, d.rev, d.body FROM view_rows v "  # noqa: S608 - placeholders and fixed SQL fragments only
                "JOIN docs d ON d.db = v.db AND d.id = v.id "
                "WHERE v.db = ? AND v.view = ? AND (v.k0, v.k1, v.k2) IN (VALUES %s)"
                % ", ".join(["(?, ?, ?)"] * len(chunk))
            )
            with self._lock:
                fetched = self._conn.execute(sql, [db, view, *(p for parts in chunk for p in parts)])
                for row in fetched.fetchall():
                    found.setdefault(tuple(row[1:4]), []).append(row)
        out = []
        for parts in wanted:
            for doc_id, k0, k1, k2, rev, body in sorted(found.get(parts, ()), reverse=descending):
                key_parts = [k0, k1, k2][:width]
                row_key = key_parts[0] if width == 1 else key_parts
                out.append(
                    Row(doc_id, row_key, self._materialise(doc_id, rev, body) if include_docs else None)
                )
        return out

    def install_views(self, db: str) -> bool:
        """Store the design document too, so a dump shows what CouchDB would hold. When it changed
        (an upgrade added or altered a view), the view rows are built again from the stored
        documents, as CouchDB builds the index of a changed design document."""
        changed = install_design(self, db)
        if changed:
            self._rebuild_view_rows(db)
        return changed

    @_unavailable_when_sqlite_cannot
    def _rebuild_view_rows(self, db: str) -> None:
        specs = views_for(db)
        name = self._name(db)
        with self._lock, self._transaction():
            self._conn.execute("DELETE FROM view_rows WHERE db = ?", (name,))
            rows = self._conn.execute(
                "SELECT id, body FROM docs WHERE db = ? AND id NOT LIKE '\\_design/%' ESCAPE '\\'", (name,)
            )
            for batch in iter(lambda: rows.fetchmany(1000), []):
                self._conn.executemany(
                    "INSERT INTO view_rows (db, view, k0, k1, k2, id) VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        row
                        for doc_id, body in batch
                        for row in _view_rows(name, doc_id, json.loads(body), specs)
                    ],
                )

    def close(self) -> None:
        with self._lock:
            self._conn.close()
