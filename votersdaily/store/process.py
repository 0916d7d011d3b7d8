"""The embedded store in a process of its own, for a crawl's writers.

Under the GIL the store's worker thread (JSON encoding, hashing, view rows, SQLite's bindings: some
20 µs of Python a document) takes turns with the reactor thread on one core, and on a busy machine
the two also wait for each other's lock whole switch intervals at a time: the reactor then waits for
the writer (issue 29). A :class:`StoreProcess` answers the :class:`~.base.Store` protocol by running
each call in a child process that opens the same file; the writer's worker thread only pickles the
documents (a loop in C) and waits on a pipe without holding the lock. The ingest's extraction runs
in processes for the same reason (:mod:`votersdaily.ingest.workers`).

SQLite's WAL lets the crawl process keep reading and writing the file itself (run log, reparse) while
the child writes. A child that dies is a store that is unavailable (the writer retries, then spools:
:mod:`.writer`); the next call starts a new one. The child ends when the crawl process closes it or
ends (its pipe closes), ignores Ctrl-C (the crawl process stops gracefully and flushes through it),
and never outlives a killed crawl process. ``VOTERSDAILY_STORE_PROCESS = False`` keeps the store in
the crawl process.

The child collects garbage as the crawl process does (:mod:`votersdaily.gc_freeze`): its objects from
start-up (imports, the opened store) are frozen and its young generation is collected every
``VOTERSDAILY_GC_YOUNG_THRESHOLD`` allocations, passed to it at start (20,000 events compared, then
written: 321 collections at Python's 700, each walking the batch in hand; none at 50,000, the child
freeing nearly all it makes by reference counting). :meth:`StoreProcess.collector_state` tells.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing
import pickle
import signal
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from multiprocessing import resource_tracker
from typing import Any

from votersdaily.plumbing.processes import without_the_main_script

from .base import Row, StoreError, StoreUnavailable
from .embedded import EmbeddedStore, Stored, compared_fields, docs_by_pages, tell_stored

logger = logging.getLogger(__name__)

#: Documents one call of :meth:`StoreProcess.iter_docs` brings over.
PAGE = 1000


class PackedDocs:
    """Documents on their way to the child, pickled one by one: a pickle of a whole batch memoises
    every string and dict of its thousand documents on both sides; small pickles do not (20,000
    events: 0.6 s of CPU in the two processes instead of 0.25). :meth:`unpack` gives back the list,
    or the mapping by id, that was packed."""

    __slots__ = ("blobs", "ids")

    def __init__(self, docs: list[dict[str, Any]] | Mapping[str, dict[str, Any]]) -> None:
        values = list(docs.values()) if isinstance(docs, Mapping) else docs
        self.ids = list(docs) if isinstance(docs, Mapping) else None
        self.blobs = [pickle.dumps(doc, protocol=pickle.HIGHEST_PROTOCOL) for doc in values]

    def unpack(self) -> list[dict[str, Any]] | dict[str, dict[str, Any]]:
        # the crawl process's own pickles, through the child's own pipe
        docs = [pickle.loads(blob) for blob in self.blobs]  # noqa: S301
        return docs if self.ids is None else dict(zip(self.ids, docs, strict=True))


class StoreProcess:
    """A :class:`~.base.Store` whose calls run in a child process on the embedded store ``path``."""

    def __init__(
        self,
        path: str,
        prefix: str,
        display_uri: str,
        freeze: bool | None = None,
        young_threshold: int | None = None,
    ) -> None:
        self.path = path
        self.prefix = prefix
        self.display_uri = display_uri
        #: The child's collector (the crawl's VOTERSDAILY_GC_FREEZE and _YOUNG_THRESHOLD): freeze its
        #: start-up objects; its young threshold. None, False or 0: Python's own.
        self.freeze = bool(freeze)
        self.young_threshold = young_threshold or 0
        self._lock = threading.Lock()
        self._conn: Any = None
        self._process: Any = None

    @classmethod
    def of(
        cls, store: EmbeddedStore, freeze: bool | None = None, young_threshold: int | None = None
    ) -> StoreProcess:
        return cls(store.path, store.prefix, store.display_uri, freeze, young_threshold)

    # -- the child ---------------------------------------------------------------------------

    def _start(self) -> None:
        # "spawn": not "fork" (the crawl process has threads a fork would copy mid-state), and not the
        # fork server, whose preloaded modules are the ingest's to choose (votersdaily.ingest.workers).
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        process = context.Process(
            target=_serve,
            args=(child, self.path, self.prefix, self.freeze, self.young_threshold),
            name="votersdaily-store",
            daemon=True,
        )
        # Ctrl-C reaches the child too (the terminal signals the whole process group), and a child
        # still starting (importing, before _serve ignores it) would die of it and the write it was
        # started for fail: the child starts with SIGINT blocked (the signal mask of the starting
        # thread survives fork and exec) and never takes it. multiprocessing's resource tracker
        # first: starting it unblocks SIGINT in the thread that starts it.
        resource_tracker.ensure_running()
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            with without_the_main_script():  # the child runs _serve: a script's own code is not for it
                process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        child.close()  # the child's end lives in the child alone: its pipe closes when we end
        self._conn, self._process = parent, process

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            if self._conn is None:
                try:
                    self._start()
                except OSError as exc:  # no process to be had (out of memory, process limit)
                    raise StoreUnavailable(
                        "embedded store %s: cannot start its process: %s" % (self.display_uri, exc)
                    ) from None
            try:
                self._conn.send((name, args, kwargs))
                kind, value = self._conn.recv()
            except (EOFError, OSError) as exc:
                code = self._end(kill=True)
                raise StoreUnavailable(
                    "embedded store %s: its process ended (exit code %s) during %s: %s"
                    % (self.display_uri, code, name, exc or type(exc).__name__)
                ) from None
        if kind == "error":
            raise value
        return value

    def _end(self, kill: bool = False) -> int | None:
        """Stop the child (asked to close, or killed); its exit code."""
        process, conn = self._process, self._conn
        self._process = self._conn = None
        if process is None:
            return None
        if not kill:
            with contextlib.suppress(EOFError, OSError):
                conn.send(("close", (), {}))
                conn.recv()
        with contextlib.suppress(OSError):
            conn.close()
        process.join(10)
        if process.exitcode is None:
            process.kill()
            process.join()
        return process.exitcode

    def close(self) -> None:
        with self._lock:
            self._end()

    # -- the Store protocol -----------------------------------------------------------------

    def ensure_db(self, db: str) -> None:
        self._call("ensure_db", db)

    def drop_db(self, db: str) -> None:
        self._call("drop_db", db)

    def has_db(self, db: str) -> bool:
        return self._call("has_db", db)

    def list_dbs(self) -> list[str]:
        return self._call("list_dbs")

    def check_writes(self, db: str) -> None:
        self._call("check_writes", db)

    def get(self, db: str, doc_id: str) -> dict[str, Any] | None:
        return self._call("get", db, doc_id)

    def get_many(self, db: str, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        return self._call("get_many", db, list(ids))

    def bulk_docs(self, db: str, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self._call("bulk_docs", db, PackedDocs(docs))

    def compare_stored(
        self, db: str, docs: Mapping[str, dict[str, Any]], ignore: Sequence[str], probe: Sequence[str] = ()
    ) -> dict[str, Stored]:
        """What the store itself tells (:meth:`.embedded.EmbeddedStore.compare_stored`), with as
        little as can be sent: the ids go over and each stored one's revision and compared values come
        back; a document whose text was made with it and holds the stored values (a reparse's: the
        archived record's access time and pointer) is then told here, by hashing that text, instead of being pickled,
        sent and unpickled for the store's process to hash (200,000 events of a reparse: 5 s of the
        crawl process's CPU, and the other core's time). Only the documents that must be encoded
        anew (another access time) go over, to be told there."""
        fields = compared_fields(ignore, probe)
        found: dict[str, Stored] = {}
        sent: dict[str, dict[str, Any]] = {}
        for doc_id, (rev, values) in self._call("stored_values", db, list(docs), fields).items():
            told = tell_stored(docs[doc_id], rev, values, fields, encode=False)
            if told is None:
                sent[doc_id] = docs[doc_id]
            else:
                found[doc_id] = told
        if sent:
            found.update(self._call("compare_stored", db, PackedDocs(sent), fields.ignore, fields.probe))
        return found

    def iter_docs(self, db: str, include_design: bool = False) -> Iterator[dict[str, Any]]:
        return docs_by_pages(lambda db, after: self._call("docs_after", db, after, PAGE), db, include_design)

    def count(self, db: str) -> int:
        return self._call("count", db)

    def query(self, db: str, view: str, **options: Any) -> list[Row]:
        return self._call("query", db, view, **options)

    def get_attachment(self, db: str, doc_id: str, name: str) -> bytes | None:
        return self._call("get_attachment", db, doc_id, name)

    def install_views(self, db: str) -> bool:
        return self._call("install_views", db)

    def collector_state(self) -> dict[str, Any]:
        """The child's garbage collector: ``threshold`` (:func:`gc.get_threshold`), ``frozen``
        (:func:`gc.get_freeze_count`) and ``collections`` by generation so far."""
        return self._call("collector_state")


def _serve(conn: Any, path: str, prefix: str, freeze: bool, young_threshold: int) -> None:
    """The child: open the store, answer calls until closed or until the crawl process is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the crawl process stops gracefully, through us
    store = EmbeddedStore(path, prefix)
    # what lives as long as the child (modules, the open store) is never walked again; it ends
    # with the process, so nothing is unfrozen
    if freeze:
        gc.freeze()
    if young_threshold:
        gc.set_threshold(young_threshold, *gc.get_threshold()[1:])
    try:
        while True:
            try:
                name, args, kwargs = conn.recv()
                args = tuple(arg.unpack() if isinstance(arg, PackedDocs) else arg for arg in args)
            except (EOFError, OSError):  # the crawl process closed the pipe or ended
                return
            if name == "close":
                conn.send(("ok", None))
                return
            if name == "collector_state":
                collections = [generation["collections"] for generation in gc.get_stats()]
                state = {
                    "threshold": gc.get_threshold(),
                    "frozen": gc.get_freeze_count(),
                    "collections": collections,
                }
                conn.send(("ok", state))
                continue
            try:
                answer: tuple[str, Any] = ("ok", getattr(store, name)(*args, **kwargs))
            except Exception as exc:  # every failure goes back to the caller, as raised
                answer = ("error", exc)
            try:
                conn.send(answer)
            except Exception as exc:  # an answer that does not pickle
                conn.send(("error", StoreError("%s answered what cannot be sent back: %s" % (name, exc))))
    finally:
        store.close()
