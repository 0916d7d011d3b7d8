"""Outage spooling: documents the store could not take are kept in local files until it is back.

A :class:`~.writer.BatchWriter` that has exhausted its retries appends the batch to a spool file
(JSON lines, one per database and process) instead of dropping it; ``python -m votersdaily flush``
and the next run's writers deliver spooled documents with the same revision-aware
:func:`~.upsert.upsert`, so delivering twice is harmless. A file is claimed by renaming it before
delivery, so concurrent deliverers never both send one file; a claim left by a dead process is
taken over.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import pkgutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import Store
from .hooks import AfterBatch, WriteHooks
from .upsert import UpsertResult, upsert

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

SPOOL_ENV = "VOTERSDAILY_SPOOL_DIR"
DEFAULT_SPOOL_DIR = ".votersdaily-spool"
SUFFIX = ".jsonl"
CLAIM = ".delivering"
#: Separates the database name from the rest of a spool file name (never in a CouchDB db name).
SEP = "--"
DELIVERY_CHUNK = 500

_counter = itertools.count()


def spool_dir(settings: BaseSettings | None = None) -> Path:
    """The spool folder: environment first, then the Scrapy setting, then the default."""
    value = os.environ.get(SPOOL_ENV)
    if not value and settings is not None:
        value = settings.get("VOTERSDAILY_SPOOL_DIR")
    return Path(value or DEFAULT_SPOOL_DIR)


def hook_name(hooks: WriteHooks | None) -> str | None:
    """What a spool file records for a later delivery: the hooks' ``durable`` class, if any."""
    return None if hooks is None else hooks.durable


def load_hook(name: str | None) -> Callable[..., Any] | None:
    return resolve_hook(name) if name else None


def resolve_hook(name: str) -> Callable[..., Any]:
    """The function or class ``module:qualified.name``."""
    return pkgutil.resolve_name(name)


def delivery_hook(name: str | None, hooks: dict[str, WriteHooks]) -> WriteHooks | None:
    """The hooks ``name`` for one delivery: a class is instantiated once per delivery, so what it
    reads (e.g. the reschedule view) serves every chunk of every file delivered; a function (named
    by spool files of earlier versions) is called after each chunk."""
    if not name:
        return None
    if name not in hooks:
        hook = resolve_hook(name)
        hooks[name] = hook() if isinstance(hook, type) else AfterBatch(hook)
    return hooks[name]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class DeliveryReport:
    files: int = 0
    documents: int = 0
    result: UpsertResult = field(default_factory=UpsertResult)


class Spool:
    """Append-only spool files under ``directory``; one file per (database, writer)."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Spool:
        return cls(spool_dir(settings))

    # -- writing -------------------------------------------------------------------------------

    def new_file(self, db: str) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        name = "%s%s%017.6f-%d-%d%s" % (db, SEP, time.time(), os.getpid(), next(_counter), SUFFIX)
        return self.directory / name

    @staticmethod
    def append(
        path: Path,
        db: str,
        docs: Iterable[dict[str, Any]],
        ignore: Iterable[str] = (),
        hooks: WriteHooks | None = None,
    ) -> int:
        """Append ``docs`` to ``path`` and fsync; the count written."""
        meta = {"db": db, "ignore": list(ignore), "after_batch": hook_name(hooks)}
        n = 0
        with open(path, "a", encoding="utf-8") as f:
            for doc in docs:
                f.write(json.dumps(dict(meta, doc=doc), ensure_ascii=False, separators=(",", ":")) + "\n")
                n += 1
            f.flush()
            os.fsync(f.fileno())
        return n

    def keep(self, db: str, docs: Iterable[dict[str, Any]]) -> Path:
        """Spool ``docs`` in a file of their own (e.g. a run log the store could not take)."""
        path = self.new_file(db)
        self.append(path, db, docs)
        return path

    # -- reading and delivery ----------------------------------------------------------------

    def pending_files(self, db: str | None = None) -> list[Path]:
        """Spool files waiting for delivery (oldest first), including claims of dead processes."""
        if not self.directory.is_dir():
            return []
        prefix = db + SEP if db else ""
        files = []
        for path in self.directory.iterdir():
            if not path.name.startswith(prefix) or SEP not in path.name:
                continue
            if path.name.endswith(SUFFIX):
                files.append(path)
            elif path.name.endswith(CLAIM):
                pid = path.name[: -len(CLAIM)].rsplit(".", 1)[-1]
                if pid.isdigit() and not _pid_alive(int(pid)):
                    files.append(path)
        return sorted(files, key=lambda p: p.name)

    def pending_count(self, db: str | None = None) -> int:
        return sum(1 for path in self.pending_files(db) for _ in self._records(path))

    @staticmethod
    def _records(path: Path) -> Iterator[dict[str, Any]]:
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    yield json.loads(line)
                except ValueError:
                    # A line cut short by a crash while appending: everything before it is whole.
                    logger.warning("spool file %s: line %d is incomplete, skipped", path, number)

    def _claim(self, path: Path) -> Path | None:
        base = path.name[: -len(SUFFIX)] if path.name.endswith(SUFFIX) else path.name.split(SUFFIX)[0]
        claimed = path.with_name("%s%s.%d%s" % (base, SUFFIX, os.getpid(), CLAIM))
        try:
            path.rename(claimed)
        except FileNotFoundError:  # another deliverer got it first
            return None
        return claimed

    def deliver(self, store: Store, db: str | None = None, exclude: Iterable[Path] = ()) -> DeliveryReport:
        """Write every spooled document (of ``db``, or all) to ``store``; delivered files are removed.

        Raises what the store raises (e.g. :class:`~.base.StoreUnavailable`); the file being
        delivered then goes back to the spool untouched.
        """
        report = DeliveryReport()
        hooks: dict[str, WriteHooks] = {}
        skip = {Path(p).name for p in exclude}
        for path in self.pending_files(db):
            if path.name in skip:
                continue
            claimed = self._claim(path)
            if claimed is None:
                continue
            try:
                self._deliver_file(store, claimed, report, hooks)
            except BaseException:
                claimed.rename(path.with_name(claimed.name.split(SUFFIX)[0] + SUFFIX))
                raise
            claimed.unlink()
            report.files += 1
        return report

    def deliver_earlier(self, store: Store, db: str) -> DeliveryReport:
        """At the start of a write to ``db`` (the store is reachable): what earlier runs spooled
        for it goes first."""
        if not self.pending_files(db):
            return DeliveryReport()
        report = self.deliver(store, db)
        logger.warning("delivered %d documents spooled by an earlier run to %s", report.documents, db)
        return report

    def deliver_path(self, store: Store, path: Path) -> DeliveryReport:
        """Deliver one spool file (a writer's own, in order); removed once delivered."""
        report = DeliveryReport()
        claimed = self._claim(Path(path))
        if claimed is None:
            return report
        try:
            self._deliver_file(store, claimed, report, {})
        except BaseException:
            claimed.rename(path)
            raise
        claimed.unlink()
        report.files = 1
        return report

    def _deliver_file(
        self, store: Store, path: Path, report: DeliveryReport, hooks: dict[str, WriteHooks]
    ) -> None:
        groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for record in self._records(path):
            key = (record["db"], tuple(record.get("ignore") or ()), record.get("after_batch"))
            groups.setdefault(key, []).append(record["doc"])
        for (db, ignore, hook), docs in groups.items():
            store.ensure_db(db)
            delivery_hooks = delivery_hook(hook, hooks)
            for start in range(0, len(docs), DELIVERY_CHUNK):
                chunk = docs[start : start + DELIVERY_CHUNK]
                result = upsert(store, db, chunk, ignore)
                if delivery_hooks is not None:
                    delivery_hooks.after_batch(store, db, chunk, result)
                report.result.merge(result)
                report.documents += len(chunk)
        logger.info("delivered spool file %s (%d documents so far)", path.name, report.documents)
