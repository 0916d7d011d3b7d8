"""Drives one file record through the state machine: filed → unarchiving → unarchived | depleted →
guessing → guessed → parsing → parsed (+ a cleaned record), persisting every transition.

Steps run in a worker process (:mod:`.steps`), store calls in a thread: the reactor never blocks.
A record found half-way through a step after a crash is resumed from the state before that step.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from votersdaily.blocking import run_in_thread
from votersdaily.clock import now_iso
from votersdaily.defaults import DEFAULTS
from votersdaily.plumbing.full_disk import OutputFolderFull, full_folder
from votersdaily.store.base import StoreUnavailable

from . import states, steps
from .archives import ArchiveLimits, TreeUsage
from .clean_types import CleanOptions
from .seedlist import SeedList
from .worker_pool import WORKER_MODULES, StepTimeout, WorkerPool

logger = logging.getLogger(__name__)

#: Longest error message kept on a record.
MAX_ERROR_CHARS = 1000


#: What a cleaned record says about its output (the same for every document with that output).
OUTPUT_KEYS = ("number_of_unique_statements", "number_of_bytes", "uncompressed_bytes", "named_graphs")
#: What cleaning says about one document: kept on that document's record.
DOCUMENT_KEYS = (
    "number_of_statements",
    "number_of_unique_statements",
    "number_of_duplicates",
    "number_of_errors",
    "number_of_warnings",
    "messages",
    "contexts",
)


def describe(doc: dict[str, Any]) -> str:
    """Where a record's document came from, for a log line: its URL (or an archive entry's), else
    its name, else its key."""
    return doc.get("uri") or doc.get("base_uri") or doc.get("name") or doc["_id"]


def full_disk(exc: BaseException, folder: Path) -> OutputFolderFull | None:
    """``exc`` as :class:`OutputFolderFull` naming the output folder when it says the disk is full."""
    return full_folder(
        exc,
        "the laundromat's output folder",
        folder,
        "what did not fit waits for the next run with room (LAUNDROMAT_OUTPUT_DIR)",
    )


def error_of(exc: BaseException) -> str:
    """A record's ``error`` for an exception: its type and message, bounded."""
    return ("%s: %s" % (type(exc).__name__, exc))[:MAX_ERROR_CHARS]


class Processor:
    def __init__(
        self,
        seedlist: SeedList,
        output_dir: Path,
        *,
        workers: int = 1,
        limits: ArchiveLimits = ArchiveLimits(),
        options: CleanOptions = CleanOptions(),
        on_write: Callable[[Any], None] | None = None,
        on_full: Callable[[OutputFolderFull], None] | None = None,
        timeout: float = DEFAULTS["LAUNDROMAT_DOCUMENT_TIMEOUT"],
        seconds_per_mb: float = DEFAULTS["LAUNDROMAT_DOCUMENT_SECONDS_PER_MB"],
    ) -> None:
        self.seedlist = seedlist
        self.output_dir = Path(output_dir)
        self.files_dir = self.output_dir / "files"
        self.cleaned_dir = self.output_dir / "cleaned"
        self.limits = limits
        self.options = options
        self.on_write = on_write
        #: Called with the first :class:`OutputFolderFull` of the run (the spider fails the run with it).
        self.on_full = on_full
        self.full: OutputFolderFull | None = None
        self.workers = max(1, workers)
        #: A document's time limit: ``timeout`` seconds plus ``seconds_per_mb`` per MiB (0: none).
        self.timeout = timeout
        self.seconds_per_mb = seconds_per_mb
        self._pool = WorkerPool(self.workers, preload=WORKER_MODULES)
        #: Document key → seconds of its time limit left (spent only while its steps run).
        self._budgets: dict[str, float] = {}
        #: One step per worker at a time: a submitted step runs at once, so its time is its own
        #: (not time spent queued behind other documents' steps).
        self._slots = asyncio.Semaphore(self.workers)
        #: What this run cleaned: (where the document came from, the cleaned file), for the run log.
        self.cleaned: list[tuple[str, str]] = []
        #: How many of them a worker with the compiled fast path cleaned (the run log's compiled_path).
        self.cleaned_compiled = 0
        #: Whether the run said that the context cache folder does not take contexts.
        self._said_context_cache = False

    # -- plumbing ---------------------------------------------------------------------------------

    def warm(self) -> None:
        """Start a worker now, so its start-up overlaps the crawl's own and the first download."""
        self._pool.warm()

    async def _attempt(
        self, doc: dict[str, Any], fn: Callable[..., Any], *args: Any
    ) -> tuple[Any, dict[str, Any] | None]:
        """(step result, None), or (None, ``doc`` moved to failed with the error): any exception of
        a step ends that one record, so a hostile file never aborts a run or wedges later ones. A
        step past the document's time limit has its worker killed (parsers in Rust or C cannot be
        interrupted otherwise) and fails with that reason; other documents' steps go on. A full
        output folder is no fault of the document: ``doc`` is left in its step, with its files, for
        the next run to resume (as after a crash), and the folder is said once."""
        budget = self._budgets.get(doc["_id"])
        async with self._slots:
            started = time.monotonic()
            try:
                return await self._pool.run(
                    fn, *args, timeout=None if budget is None else max(0.0, budget)
                ), None
            except StepTimeout:
                error = (
                    "DocumentTimeout: took longer than its limit of %.0f s (LAUNDROMAT_DOCUMENT_TIMEOUT)"
                    % (self._limit(doc))
                )
            except Exception as exc:
                full = full_disk(exc, self.output_dir)
                if full is not None:
                    self.output_full(full)
                    return None, doc
                error = error_of(exc)
            finally:
                if budget is not None:
                    self._budgets[doc["_id"]] = budget - (time.monotonic() - started)
        return None, await self.fail(doc, error)

    def output_full(self, full: OutputFolderFull) -> None:
        """Say once a run that the output folder is full (and tell the spider, which fails the run)."""
        if self.full is None:
            self.full = full
            logger.error("%s", full.strerror)
            if self.on_full is not None:
                self.on_full(full)

    def _context_cache_failed(self, error: str) -> None:
        """Say once a run that the context cache folder does not take contexts (the cache is a copy:
        the documents were cleaned with the contexts all the same)."""
        if not self._said_context_cache and self.options.contexts is not None:
            self._said_context_cache = True
            logger.warning(
                "the JSON-LD context cache %s cannot take contexts (%s): documents are cleaned with the "
                "contexts fetched, without caching them (LAUNDROMAT_CONTEXT_CACHE_DIR)",
                self.options.contexts.cache_dir,
                error,
            )

    def _limit(self, doc: dict[str, Any]) -> float:
        return self.timeout + self.seconds_per_mb * int(doc.get("number_of_bytes") or 0) / (1 << 20)

    async def store(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        result = await run_in_thread(fn, *args, **kwargs)
        if self.on_write is not None and hasattr(result, "inserted"):
            self.on_write(result)
        return result

    async def fail(self, doc: dict[str, Any], error: str, **changes: Any) -> dict[str, Any]:
        """``doc`` ends as failed with ``error``: said once at WARNING, naming where the document
        came from, and the files the laundromat made for it (its download, its link to or copy of
        an operator's file, its entry, its recoded text) removed: a failed input is not kept."""
        logger.warning("%s failed (%s): %s", describe(doc), doc["status"], error)
        self.remove_files(doc)
        return await self.move(doc, states.FAILED, error=error, **changes)

    def remove_files(self, doc: dict[str, Any]) -> None:
        """The files of ``doc`` under ``files/`` (never anything outside it: a record names them)."""
        for rel in {doc.get("file"), doc.get("recoded_file")}:
            path = self.own_file(rel)
            if path is None:
                continue
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:  # not a file of ours (a directory in its place): left, and said
                logger.warning("could not remove %s: %s", path, exc)

    async def move(self, doc: dict[str, Any], status: str, **changes: Any) -> dict[str, Any]:
        states.check_transition(doc["status"], status)
        new = dict(doc, status=status, **changes)
        await self.store(self.seedlist.put, new)
        return new

    def close(self) -> None:
        self._pool.close()

    def path_of(self, rel: str) -> Path:
        return self.output_dir / rel

    def own_file(self, rel: str | None) -> Path | None:
        """The file ``rel`` (as a record names it) when it is one of the laundromat's own, directly
        in ``files/``; None for anything else a stored record may name (``../…``, another folder):
        never read as a document, never removed."""
        if not rel:
            return None
        path = self.path_of(rel)
        return path if path.resolve().parent == self.files_dir.resolve() else None

    def rel(self, path: Path | str) -> str:
        return os.path.relpath(path, self.output_dir)

    # -- the state machine ------------------------------------------------------------------------

    async def process(self, doc: dict[str, Any]) -> list[str]:
        """Take ``doc`` (status filed or later, or half-done) to a terminal state; new seed URIs found.
        An unexpected error ends the record as failed (with the error) instead of leaving it half-done;
        the store going away is not the document's failure: it is raised as is, the record left where the
        store last had it (due again), for the spider to stop the run or a worker to wait the store out."""
        try:
            return await self._process(doc)
        except StoreUnavailable:
            raise
        except Exception as exc:
            logger.error("processing %s failed: %s", describe(doc), exc, exc_info=True)
            stored = await self.store(self.seedlist.get, doc["_id"]) or doc
            if stored.get("status") not in states.TERMINAL:
                self.remove_files(stored)
                await self.store(self.seedlist.put, dict(stored, status=states.FAILED, error=error_of(exc)))
            return []

    async def _process(self, doc: dict[str, Any]) -> list[str]:
        if self.timeout > 0:
            self._budgets[doc["_id"]] = self._limit(doc)
        try:
            return await self._steps(doc)
        finally:
            self._budgets.pop(doc["_id"], None)

    async def _steps(self, doc: dict[str, Any]) -> list[str]:
        status = doc["status"]
        resumed = status == states.UNARCHIVING
        if status in states.RESUME_FROM:
            doc = dict(doc, status=states.RESUME_FROM[status])
            status = doc["status"]
        if status in states.TERMINAL:
            return []
        file_rel = (
            doc.get("recoded_file") if status in (states.UNARCHIVED, states.GUESSED) else doc.get("file")
        )
        foreign = file_rel and self.own_file(file_rel) is None
        if foreign:  # a stored record naming a file not the laundromat's own: never read nor removed
            error = "names %s, which is not a file of %s: not read, not removed" % (file_rel, self.files_dir)
            logger.warning("%s failed (%s): %s", describe(doc), status, error)
            self.remove_files(doc)
            await self.store(self.seedlist.put, dict(doc, status=states.FAILED, error=error))
            return []
        if not file_rel or not self.path_of(file_rel).exists():
            error = "file lost (run interrupted); seed re-queued"
            logger.warning("%s failed (%s): %s", describe(doc), status, error)
            self.remove_files(doc)
            await self.store(self.seedlist.put, dict(doc, status=states.FAILED, error=error))
            await self._requeue_seed(doc)
            return []
        found: list[str] = []
        if doc["status"] == states.FILED:
            doc, children = await self._unarchive(doc, resumed)
            for child in children:
                found += await self.process(child)
            if doc["status"] != states.UNARCHIVED:
                return found
        if doc["status"] == states.UNARCHIVED:
            doc = await self._guess(doc)
        if doc["status"] == states.GUESSED:
            doc, dumps = await self._parse(doc)
            found += dumps
        return found

    async def _requeue_seed(self, doc: dict[str, Any]) -> None:
        seed = await self.store(self.seedlist.get, doc.get("seed") or "")
        if seed is not None and seed.get("status") == states.ADDED:
            await self.store(self.seedlist.put, dict(seed, processed=None))

    async def _tree_root(self, doc: dict[str, Any]) -> dict[str, Any]:
        """The download record at the root of ``doc``'s archive tree (it keeps the tree's usage)."""
        root_key = doc.get("root") or doc["_id"]
        if root_key == doc["_id"]:
            return doc
        return await self.store(self.seedlist.get, root_key) or doc

    async def _unarchive(
        self, doc: dict[str, Any], resumed: bool = False
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Unpack one layer; ``resumed``: a run died while unpacking it, maybe after writing its children."""
        doc = await self.move(doc, states.UNARCHIVING)
        path = self.path_of(doc["file"])
        root = await self._tree_root(doc)
        used = TreeUsage(
            unpacked_bytes=int(root.get("tree_unpacked_bytes") or 0),
            entries=int(root.get("tree_entries") or 0),
            compressed_bytes=root.get("number_of_bytes") or None,
        )
        result, failed = await self._attempt(
            doc,
            steps.unpack_step,
            str(path),
            str(self.files_dir),
            doc["_id"],
            doc.get("name") or "",
            int(doc.get("depth") or 0),
            self.limits,
            used,
        )
        if failed is not None:
            return failed, []
        if result["archive"] is None:
            recoded = self.files_dir / (doc["_id"] + ".utf8")
            meta, failed = await self._attempt(
                doc, steps.recode_step, str(path), str(recoded), doc.get("content_type")
            )
            if failed is not None:
                return failed, []
            meta["recoded_file"] = self.rel(meta.pop("recoded_path"))
            return await self.move(doc, states.UNARCHIVED, **meta), []
        children, new = [], []
        for entry in result["entries"]:
            child = {
                "_id": entry["key"],
                "parent": doc["_id"],
                "seed": doc.get("seed"),
                "status": states.FILED,
                "entry_name": entry["entry_name"],
                "name": entry["name"],
                "number_of_bytes": entry["size"],
                "depth": int(doc.get("depth") or 0) + 1,
                "root": root["_id"],
                "file": self.rel(entry["path"]),
                "base_uri": (doc.get("base_uri") or "") + "/" + entry["name"]
                if doc.get("base_uri")
                else None,
                "content_type": None,
                "added": now_iso(),
            }
            existing = await self.store(self.seedlist.get, child["_id"]) if resumed else None
            if existing is None:
                new.append(child)
            else:  # written before the crash: it keeps its state; a finished one does not need its file again
                if existing.get("status") in states.TERMINAL:
                    self.path_of(child["file"]).unlink(missing_ok=True)
                child = existing
            children.append(child)
        if new:
            await self.store(self.seedlist.put, *new)
        usage = {
            "tree_unpacked_bytes": used.unpacked_bytes + result["unpacked_bytes"],
            "tree_entries": used.entries + len(children),
        }
        states.check_transition(doc["status"], states.DEPLETED)
        doc = dict(
            doc,
            status=states.DEPLETED,
            archive=result["archive"],
            children=[c["_id"] for c in children],
            skipped_entries=result["skipped_entries"],
        )
        if root is doc or root["_id"] == doc["_id"]:
            doc.update(usage)
            await self.store(self.seedlist.put, doc)
        else:  # the layer's usage and its state in one write: a resumed layer is not counted twice
            await self.store(self.seedlist.put, dict(root, **usage), doc)
        path.unlink(missing_ok=True)
        return doc, children

    async def _guess(self, doc: dict[str, Any]) -> dict[str, Any]:
        doc = await self.move(doc, states.GUESSING)
        meta, failed = await self._attempt(
            doc,
            steps.guess_step,
            str(self.path_of(doc["recoded_file"])),
            doc.get("content_type"),
            doc.get("name") or doc.get("uri"),
        )
        if failed is not None:
            return failed
        if meta["format"] is None:  # a PDF, plain text: not RDF is not success
            return await self.fail(doc, "not RDF: %s" % meta["not_rdf"], **meta)
        return await self.move(doc, states.GUESSED, **meta)

    async def _parse(self, doc: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        doc = await self.move(doc, states.PARSING)
        clean, failed = await self._attempt(
            doc,
            steps.clean_step,
            str(self.path_of(doc["recoded_file"])),
            doc["format"],
            doc["_id"],
            str(self.cleaned_dir),
            doc.get("base_uri"),
            self.options,
        )
        if failed is not None:
            return failed, []
        # The cleaned record is keyed by the output's hash, so documents with the same output (all
        # the empty ones) share it: what is about one document (its counts and errors) stays on the
        # document's own record, the cleaned record says only what the output is.
        clean_doc = {
            "_id": clean["key"],
            "status": states.CLEANED,
            "parent": doc["_id"],  # docs/laundromat.md §2: a derived record points to its origin
            "dirty": doc["_id"],
            "seed": doc.get("seed"),
            "file": self.rel(clean.pop("path")),
            "content": {k: clean[k] for k in OUTPUT_KEYS},
        }
        await self.store(self.seedlist.put, clean_doc)
        self.cleaned.append((describe(doc), clean_doc["file"]))
        self.cleaned_compiled += bool(clean.get("compiled_path"))
        if clean.get("context_cache_error"):
            self._context_cache_failed(clean["context_cache_error"])
        summary = {k: clean[k] for k in DOCUMENT_KEYS}
        doc = await self.move(doc, states.PARSED, clean=clean["key"], **summary)
        self.remove_files(doc)  # its download and recoded copy (only files of files/: own_file)
        return doc, list(clean["void_data_dumps"])
