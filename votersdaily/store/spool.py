"""Outage spooling: documents a store did not take are kept in local files until that store takes them.

A :class:`~.writer.BatchWriter` whose store is unreachable, failing or refusing (after its retries)
spools the batch instead of dropping it, and a run log its store did not take is spooled the same way.
Every spooled document names the store it was meant for (its identity, :mod:`.identity`: no
credentials) and is delivered only there, with the same revision-aware :func:`~.upsert.upsert`, so
delivering twice is harmless: by the next run that writes to that store (``deliver_earlier``: counted
apart from that run's own work) or by ``python -m votersdaily flush``.

The spool folder holds (``<key>``: :func:`~.identity.store_key` of the store's identity):

* ``<db>--<key>--<time>-<pid>-<n>.jsonl``: one spooled batch, JSON lines ``{"store", "db", "ignore",
  "after_batch", "doc"}``, and ``"newer_by"``: the key of the time its document was observed (an
  event's ``access_datetime``), so a delivery after a newer run wrote that document keeps the newer
  one (the spooled copy is counted ``older``), however late the spool is delivered or redelivered. Written whole or not at all: into ``….jsonl.<pid>-<start>.writing``, synced, then
  renamed; a batch that does not fit (a full disk) raises :class:`NotSpooled` and leaves nothing.
* ``….jsonl.<pid>-<start>.delivering``: claimed by a deliverer (renamed first, so two deliverers never
  send one file); the claim of a dead process is taken over, and so is the ``.writing`` file of a
  writer that died mid-write (its whole lines are delivered; a cut last line makes it damaged). A
  process is named by its id and start time: an id alone is taken again (after a reboot, or by the
  same program in a restarted container), and the claim of the dead process would look alive for ever.
* ``….jsonl.undelivered``: a file holding lines no delivery can help (cut short, not JSON, another
  store's): its other documents were delivered, the file is kept for the operator, untouched, and
  reported until they remove it. A file whose documents the store refused (``forbidden``) stays a
  ``.jsonl``: the next delivery tries them again.
* ``<db>--<time>-<pid>-<n>.jsonl``: appended by versions before spooled documents named their store;
  delivered only when ``flush --untagged`` says they belong to the store at hand.

A spooled batch names the hooks its delivery runs (``after_batch``; their ``merge`` too: a row of
column families is merged with the row stored when it is delivered) by a name of
:data:`DELIVERY_HOOKS`, never by an import path: the data names no code, so whoever can write to the
spool folder cannot choose what ``flush`` runs. A line naming anything else (the import paths earlier
versions recorded are read as the names they meant: :data:`EARLIER_HOOK_PATHS`) is not delivered and
its file is kept, like a damaged one; nothing it names is imported.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import itertools
import json
import logging
import os
import re
import shlex
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from votersdaily import locations

from .base import Store
from .families import FamilyRows
from .hooks import WriteHooks
from .identity import identity_of, server_and_prefix, store_identity, store_key
from .names import PREFIX_ENV
from .reschedules import SpooledRescheduleTracker
from .upsert import UpsertResult, upsert

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

SUFFIX = ".jsonl"
CLAIM = ".delivering"
WRITING = ".writing"
UNDELIVERED = ".undelivered"
#: Separates the database name, the store key and the rest of a spool file name.
SEP = "--"
KEY = re.compile(r"[0-9a-f]{16}")
#: The end of every spool file's name, as every version wrote it (``%017.6f-<pid>-<n>``): a file of
#: someone else's in the folder (``vd_log--2026-11.jsonl``, a dump kept there) is never taken for one.
STAMP = re.compile(r"[0-9]+\.[0-9]{6}-[0-9]+-[0-9]+")
DELIVERY_CHUNK = 500
#: How many reasons a kept file's report lists (its line numbers; the count says how many there were).
REASONS_SHOWN = 5
#: What an earlier version's files (which name no store) are shown as.
NO_STORE = "no store (spooled by an earlier version)"

#: The hooks a spool delivery may run, by the name a spooled batch records (its hooks' ``durable``):
#: each is made once per delivery, so what it reads (the reschedule view) serves every chunk of
#: every file delivered.
DELIVERY_HOOKS: Mapping[str, Callable[[], WriteHooks]] = MappingProxyType(
    {"reschedules": SpooledRescheduleTracker, "families": FamilyRows}
)
#: What spool files of earlier versions record instead: the import path of their hooks, read as the
#: name it meant; None: delivered without hooks (the ingest's file-table bookkeeping, which served
#: only the run that spooled the batch; those versions could not deliver such a file at all).
#: Any other path is refused, never imported.
EARLIER_HOOK_PATHS: Mapping[str, str | None] = MappingProxyType(
    {
        "votersdaily.pipelines:mark_superseded": "reschedules",
        "votersdaily.pipelines:SpooledRescheduleTracker": "reschedules",
        "votersdaily.store.reschedules:SpooledRescheduleTracker": "reschedules",
        "votersdaily.ingest.persist:IngestStorePipeline._rows_written": None,
    }
)

_counter = itertools.count()


def spool_dir(settings: BaseSettings | None = None) -> Path:
    """The spool folder: environment first, then the Scrapy setting, then the default; relative:
    under the data home (votersdaily/locations.py). Every reader and writer of the spool finds it
    here, and only here."""
    return locations.spool_dir(settings)


def hook_name(hooks: WriteHooks | None) -> str | None:
    """What a spool file records for a later delivery: the name of the hooks' ``durable`` ones, if any."""
    return None if hooks is None else hooks.durable


class UnknownHooks(ValueError):
    """A spooled line names delivery hooks that are not among those a delivery may run."""

    def __init__(self, recorded: object, known: Iterable[str]) -> None:
        self.recorded = recorded
        super().__init__(
            "names delivery hooks %s, which are not among those a spool delivery runs (%s)"
            % (json.dumps(recorded, ensure_ascii=False)[:200], ", ".join(sorted(known)))
        )


def delivery_name(
    recorded: object, registry: Mapping[str, Callable[[], WriteHooks]] = DELIVERY_HOOKS
) -> str | None:
    """The name in ``registry`` of the hooks a spooled line records (an earlier version's import
    path read as the name it meant), None for none, or :class:`UnknownHooks`: only looked up, never
    imported."""
    if recorded is None or recorded == "":
        return None
    if isinstance(recorded, str):
        if recorded in registry:
            return recorded
        meant = EARLIER_HOOK_PATHS.get(recorded, recorded)
        if meant is None or meant in registry:
            return meant
    raise UnknownHooks(recorded, registry)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class NotSpooled(Exception):
    """Documents could not be spooled (the folder is full, read-only or cannot be made): unless the
    store takes them after all, they are lost, and whoever spooled them must say so."""

    def __init__(self, directory: Path, db: str, count: int, cause: BaseException) -> None:
        self.directory = directory
        self.db = db
        self.count = count
        self.cause = cause
        super().__init__(
            "could not spool %d documents for %s to %s: %s" % (count, db, directory, _reason(cause))
        )


class SpoolBusy(Exception):
    """Another live process is delivering spooled documents of this database for this store: a
    writer's later versions must wait behind them in the spool, or the earlier versions, written
    after, would replace them."""

    def __init__(self, claim: Path) -> None:
        self.claim = claim
        super().__init__("another process is delivering spooled documents now (%s)" % claim.name)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror and exc.errno is not None:
        return "[Errno %d] %s" % (exc.errno, exc.strerror)
    return "%s: %s" % (type(exc).__name__, exc)


class _FullFolders:
    """Folders that could not take a spooled batch, each reported once per process (one ERROR line
    naming it): a crawl of twelve spiders into one full folder says it once, not per batch or spider."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reported: set[str] = set()

    def failed(self, exc: NotSpooled) -> None:
        folder = str(exc.directory)
        with self._lock:
            if folder in self._reported:
                return
            self._reported.add(folder)
        logger.error(
            "spool folder %s cannot take documents (%s): what the store does not take is lost "
            "(free space there; each run's losses are in its summary)",
            folder,
            _reason(exc.cause),
        )


FULL_FOLDERS = _FullFolders()


def _line(record: dict[str, Any]) -> bytes:
    try:
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escaped, so the file stays UTF-8 (the store refuses it)
        return (json.dumps(record, separators=(",", ":")) + "\n").encode("ascii")


def _fsync_dir(directory: Path) -> None:
    """Make a rename durable; a filesystem that cannot sync a folder still has the file."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@dataclass(frozen=True)
class SpoolFile:
    """A spool file waiting for delivery: its database and the key of the store it is for."""

    path: Path
    db: str
    #: :func:`~.identity.store_key` of its store; None for an earlier version's file (no store named).
    key: str | None


def parse_name(name: str) -> tuple[str, str | None] | None:
    """``(db, store key or None)`` of a spool file name, or None for a file that is not one."""
    base = name.split(SUFFIX, 1)[0]
    head, sep, stamp = base.rpartition(SEP)
    if SUFFIX not in name or not sep or not STAMP.fullmatch(stamp):
        return None
    db, sep, key = head.rpartition(SEP)
    if sep and KEY.fullmatch(key):
        return db, key
    return head, None


@dataclass
class KeptFile:
    """A file whose every document could not be delivered: kept in the spool, never deleted."""

    path: Path
    reasons: list[str]
    #: How many lines could not be delivered.
    lines: int

    def why(self) -> str:
        """The reasons shown, and that there are more."""
        return "; ".join(self.reasons) + (", …" if self.lines > len(self.reasons) else "")


@dataclass
class Problems:
    """Why lines of a spool file were not delivered."""

    #: Lines no delivery can help (cut short, not JSON, for another store), by line number.
    damaged: list[str] = field(default_factory=list)
    #: Documents the store refused: id → its answer (its rights or rules may change).
    refused: dict[str, str] = field(default_factory=dict)


@dataclass
class LeftBehind:
    """Spool files for another store (or none named), left in the spool by a delivery."""

    files: int = 0
    documents: int = 0


@dataclass
class DeliveryReport:
    files: int = 0
    documents: int = 0
    result: UpsertResult = field(default_factory=UpsertResult)
    #: Files kept because some of their lines are damaged (this delivery's: ``.undelivered``).
    kept: list[KeptFile] = field(default_factory=list)
    #: Files left spooled because the store refused some of their documents.
    refused: list[KeptFile] = field(default_factory=list)
    #: One line per kept or refused file, for a caller that does not report them itself.
    problems: list[str] = field(default_factory=list)
    #: Files left spooled because another process was delivering files of their database for their
    #: store (delivered in order, by one process at a time): the next delivery takes them.
    behind: int = 0

    def log_problems(self) -> None:
        for line in self.problems:
            logger.error("%s", line)

    #: Store identity (or :data:`NO_STORE`) → what is spooled for it and was left alone.
    left: dict[str, LeftBehind] = field(default_factory=dict)


class Spool:
    """The spool folder ``directory``: one file per spooled batch, each for one store and database.
    ``delivery_hooks``: the hooks its deliveries may run, by name (a tool or benchmark may add its own)."""

    def __init__(
        self, directory: Path | str, delivery_hooks: Mapping[str, Callable[[], WriteHooks]] = DELIVERY_HOOKS
    ) -> None:
        self.directory = Path(directory)
        self.delivery_hooks = delivery_hooks

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Spool:
        return cls(spool_dir(settings))

    # -- writing -------------------------------------------------------------------------------

    def write(
        self,
        store: str,
        db: str,
        docs: Iterable[dict[str, Any]],
        ignore: Iterable[str] = (),
        hooks: WriteHooks | None = None,
        newer_by: str | None = None,
    ) -> Path:
        """Spool ``docs`` for ``db`` of the store whose identity is ``store``: the file holding them
        all, synced to disk, or :class:`NotSpooled` and nothing on disk. ``newer_by``: the key of
        the time each document was observed; its delivery keeps a stored version observed later
        (:func:`~.upsert.upsert`)."""
        docs = list(docs)
        after_batch = hook_name(hooks)
        if after_batch is not None and after_batch not in self.delivery_hooks:
            raise ValueError("%r names delivery hooks %r that no delivery could run" % (hooks, after_batch))
        meta = {"store": store, "db": db, "ignore": list(ignore), "after_batch": after_batch}
        if newer_by is not None:
            meta["newer_by"] = newer_by
        try:
            data = b"".join(_line(dict(meta, doc=doc)) for doc in docs)
        except (TypeError, ValueError) as exc:  # not JSON: it could not be stored either
            raise NotSpooled(self.directory, db, len(docs), exc) from exc
        name = "%s%s%s%s%017.6f-%d-%d%s" % (
            db,
            SEP,
            store_key(store),
            SEP,
            time.time(),
            os.getpid(),
            next(_counter),
            SUFFIX,
        )
        final = self.directory / name
        partial = final.with_name("%s.%s%s" % (name, _own_mark(), WRITING))
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            partial.rename(final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                partial.unlink()
            raise NotSpooled(self.directory, db, len(docs), exc) from exc
        _fsync_dir(self.directory)
        return final

    # -- reading -------------------------------------------------------------------------------

    def pending(self, db: str | None = None) -> list[SpoolFile]:
        """Files waiting for delivery (oldest first), for every store; with claims and half-written
        files of dead processes."""
        if not self.directory.is_dir():
            return []
        files = []
        for path in self.directory.iterdir():
            parsed = parse_name(path.name)
            if parsed is None or (db is not None and parsed[0] != db):
                continue
            if path.name.endswith(SUFFIX) or (
                path.name.endswith((CLAIM, WRITING)) and not _owner_alive(path.name)
            ):
                files.append(SpoolFile(path, *parsed))
        return sorted(files, key=lambda f: f.path.name)

    def databases(self) -> set[str]:
        """The databases of the files waiting for delivery or kept by earlier deliveries."""
        return {spooled.db for spooled in self.pending()} | {
            parsed[0] for path in self.kept() if (parsed := parse_name(path.name)) is not None
        }

    def kept(self, db: str | None = None) -> list[Path]:
        """Files kept by earlier deliveries (``.undelivered``), waiting for the operator."""
        if not self.directory.is_dir():
            return []
        return sorted(
            path
            for path in self.directory.iterdir()
            if path.name.endswith(UNDELIVERED)
            and (parsed := parse_name(path.name)) is not None
            and (db is None or parsed[0] == db)
        )

    def waiting(self, store: str) -> dict[str, int]:
        """Documents waiting for the store whose identity is ``store``, by database (others' files are
        not counted: they will never reach it)."""
        key = store_key(store)
        counts: dict[str, int] = {}
        for spooled in self.pending():
            if spooled.key == key:
                counts[spooled.db] = counts.get(spooled.db, 0) + _line_count(spooled.path)
        return counts

    def delivering(self, db: str, key: str | None) -> Path | None:
        """The claim of a live process delivering a file of ``db`` for the store ``key`` now, or
        None. A dead process's claim is none: the next delivery takes it over."""
        if not self.directory.is_dir():
            return None
        for path in self.directory.iterdir():
            if path.name.endswith(CLAIM) and parse_name(path.name) == (db, key) and _owner_alive(path.name):
                return path
        return None

    def ahead(self, db: str, key: str | None) -> list[SpoolFile]:
        """The files of ``db`` for the store ``key`` that a write to it goes after, oldest first:
        ready ones, and those a dead process claimed or was writing (written before them, a version
        would be replaced by their earlier ones once they are delivered). Raises :class:`SpoolBusy`
        while a live process delivers one (the write then waits behind it in the spool)."""
        claim = self.delivering(db, key)
        if claim is not None:
            raise SpoolBusy(claim)
        return [spooled for spooled in self.pending(db) if spooled.key == key]

    # -- delivery ------------------------------------------------------------------------------

    def deliver(
        self,
        store: Store,
        db: str | None = None,
        *,
        also_for: Iterable[str] = (),
        untagged: bool = False,
    ) -> DeliveryReport:
        """Write every document spooled for ``store`` (of ``db``, or all) to it; a delivered file is
        removed, one with lines that could not be delivered is kept (``.undelivered``), and files for
        other stores are left alone and reported. ``also_for``: store URIs whose documents the caller
        says belong here too; ``untagged``: so do those of earlier versions, which name no store.

        Raises what the store raises (e.g. :class:`~.base.StoreUnavailable`); the file being delivered
        then goes back to the spool untouched.
        """
        target = identity_of(store)
        accepted: set[str | None] = {target, *(store_identity(uri, store.prefix) for uri in also_for)}
        if untagged:
            accepted.add(None)
        keys = {store_key(tag) if tag is not None else None for tag in accepted}
        report = DeliveryReport()
        hooks: dict[str, WriteHooks] = {}
        busy: set[tuple[str, str | None]] = set()
        for spooled in self.pending(db):
            if spooled.key not in keys:
                left = report.left.setdefault(_store_of(spooled), LeftBehind())
                left.files += 1
                left.documents += _line_count(spooled.path)
                continue
            if (spooled.db, spooled.key) in busy or self.delivering(spooled.db, spooled.key) is not None:
                busy.add((spooled.db, spooled.key))  # its later files too: one deliverer, in order
                report.behind += 1
                continue
            claimed = self._claim(spooled.path)
            if claimed is None:
                continue
            try:
                problems = self._deliver_file(store, claimed, accepted, report, hooks)
            except BaseException:
                claimed.rename(ready_name(claimed))
                raise
            self._done(claimed, problems, report)
        return report

    def deliver_earlier(self, store: Store, db: str) -> DeliveryReport:
        """At the start of a write to ``db`` (the store is reachable): what earlier runs spooled for
        this store goes first. The caller counts it apart from its own work."""
        if not self.pending(db):
            return DeliveryReport()
        report = self.deliver(store, db)
        if report.documents:
            logger.warning(
                "delivered %d documents spooled by an earlier run to %s in %s (not counted as this run's)",
                report.documents,
                db,
                store.display_uri,
            )
        if report.behind:
            logger.warning(
                "%d spool files for %s wait: another process is delivering that database's spool for "
                "this store now",
                report.behind,
                db,
            )
        for label, left in report.left.items():
            LEFT_NOTICES.notice(self.directory, label, left, db, store.prefix)
        report.log_problems()
        return report

    def deliver_path(self, store: Store, path: Path) -> DeliveryReport:
        """Deliver one spool file (a writer's, in order: its own, or one :meth:`ahead` of its next
        write, a dead process's claim among them); removed once delivered. Raises
        :class:`SpoolBusy` while another process delivers files of its database for its store (this
        one among them, maybe): the writer's later versions then wait behind them. A file another
        process has delivered meanwhile is done."""
        report = DeliveryReport()
        path = Path(path)
        parsed = parse_name(path.name)
        while True:
            claim = self.delivering(*parsed) if parsed is not None else None
            if claim is not None:
                raise SpoolBusy(claim)
            claimed = self._claim(path) or self._take_over(path)
            if claimed is not None:
                break
            if not path.exists() and (parsed is None or self.delivering(*parsed) is None):
                return report  # delivered (or kept) by another process
        try:
            problems = self._deliver_file(store, claimed, {identity_of(store)}, report, {})
        except BaseException:
            claimed.rename(ready_name(claimed))
            raise
        self._done(claimed, problems, report)
        report.log_problems()
        return report

    def _claim(self, path: Path) -> Path | None:
        claimed = path.with_name("%s.%s%s" % (ready_name(path).name, _own_mark(), CLAIM))
        try:
            path.rename(claimed)
        except FileNotFoundError:  # another deliverer got it first
            return None
        return claimed

    def _take_over(self, path: Path) -> Path | None:
        """This process's claim of the ready file ``path`` that a dead process had claimed, or None."""
        for claim in self.directory.glob(glob.escape(path.name) + ".*" + CLAIM):
            if not _owner_alive(claim.name):
                claimed = self._claim(claim)
                if claimed is not None:
                    return claimed
        return None

    def _done(self, claimed: Path, problems: Problems, report: DeliveryReport) -> None:
        """A delivered file goes. One with damaged lines is kept, renamed (``.undelivered``: no
        delivery can help); one whose documents the store refused goes back to the spool as it was,
        for the next delivery (the store's rights or rules may change). Both are reported."""
        if not problems.damaged and not problems.refused:
            claimed.unlink()
            report.files += 1
            return
        reasons = problems.damaged + [
            "document %s refused by the store (%s)" % r for r in problems.refused.items()
        ]
        if problems.damaged:
            kept = KeptFile(_unused_kept_name(ready_name(claimed)), reasons[:REASONS_SHOWN], len(reasons))
            report.kept.append(kept)
            what = "its other documents were delivered, the file is kept"
        else:
            kept = KeptFile(ready_name(claimed), reasons[:REASONS_SHOWN], len(reasons))
            report.refused.append(kept)
            what = "its other documents were delivered, the file stays spooled for the next delivery"
        claimed.rename(kept.path)
        report.problems.append(
            "spool file %s: %d lines could not be delivered (%s); %s"
            % (kept.path, kept.lines, kept.why(), what)
        )

    def _deliver_file(
        self,
        store: Store,
        path: Path,
        accepted: set[str | None],
        report: DeliveryReport,
        hooks: dict[str, WriteHooks],
    ) -> Problems:
        """Deliver the good records of ``path``; why its other lines were not delivered."""
        groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        problems = Problems()
        older = 0
        ready: set[str] = set()
        for number, record, unreadable in _records(path):
            problem = unreadable
            if problem is None and record.get("store") not in accepted:
                problem = "spooled for %s" % (record.get("store") or NO_STORE)
            hook = None
            if problem is None:
                try:
                    hook = delivery_name(record.get("after_batch"), self.delivery_hooks)
                except UnknownHooks as exc:
                    problem = str(exc)
            newer_by = record.get("newer_by")
            if problem is None and newer_by is not None and not isinstance(newer_by, str):
                problem = "names no key of an observation time (newer_by %r)" % (newer_by,)
            if problem is not None:
                problems.damaged.append("line %d %s" % (number, problem))
                continue
            key = (record["db"], tuple(record.get("ignore") or ()), hook, newer_by)
            groups.setdefault(key, []).append(record["doc"])
        for (db, ignore, hook, newer_by), docs in groups.items():
            if db not in ready:  # as a crawl opens it: the delivery hooks read its views
                store.ensure_db(db)
                store.install_views(db)
                ready.add(db)
            delivery_hooks = self._hooks(hook, hooks)
            for start in range(0, len(docs), DELIVERY_CHUNK):
                chunk = docs[start : start + DELIVERY_CHUNK]
                merge = None if delivery_hooks is None else delivery_hooks.merge
                result = upsert(store, db, chunk, ignore, newer_by=newer_by, merge=merge)
                if delivery_hooks is not None:
                    delivery_hooks.after_batch(store, db, chunk, result)
                report.result.merge(result)
                report.documents += len(chunk)
                problems.refused.update(result.failed)
                older += len(result.older)
        if older:
            logger.warning(
                "spool file %s: %d documents were not written, the store holds versions of them "
                "observed later (a newer run wrote them meanwhile)",
                path.name,
                older,
            )
        logger.info("delivered spool file %s (%d documents so far)", path.name, report.documents)
        return problems

    def _hooks(self, name: str | None, made: dict[str, WriteHooks]) -> WriteHooks | None:
        """The hooks ``name`` for one delivery, made at its first use in it."""
        if name is None:
            return None
        if name not in made:
            made[name] = self.delivery_hooks[name]()
        return made[name]


def flush_command(option: str, identity: str, prefix: str) -> str:
    """The ``flush`` command that delivers what was spooled for the store ``identity``: there
    (``--store``) or to the store at hand (``--from``), for a person whose database prefix is
    ``prefix``. ``flush`` reads a store URI under its own prefix, so documents spooled under another
    one need theirs set: as printed, the command delivers them."""
    server, spooled_under = server_and_prefix(identity)
    command = "python -m votersdaily flush %s %s" % (option, shlex.quote(server))
    if spooled_under == prefix:
        return command
    return "%s=%s %s" % (PREFIX_ENV, shlex.quote(spooled_under), command)


class _LeftNotices:
    """A crawl that finds documents spooled for another store leaves them and says so once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._said: set[tuple[str, str]] = set()

    def notice(self, directory: Path, label: str, left: LeftBehind, db: str, prefix: str) -> None:
        with self._lock:
            if (str(directory), label) in self._said:
                return
            self._said.add((str(directory), label))
        logger.warning(
            "%d documents for %s in %s were spooled for %s: left there (they are delivered only to "
            "that store: `%s`)",
            left.documents,
            db,
            directory,
            label,
            flush_command("--store", label, prefix),
        )


LEFT_NOTICES = _LeftNotices()


def process_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks after boot, Linux's ``/proc/<pid>/stat``), as text;
    None where that cannot be read (no such process, no ``/proc``)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()  # after the command name, which may hold anything
    return fields[19].decode("ascii") if len(fields) > 19 else None


@functools.lru_cache(maxsize=4)
def _owner_mark(pid: int) -> str:
    """What names this process in the files it claims or writes: ``<pid>-<start>`` (a process id
    alone is taken again after the process is gone: by any process after a reboot, by the same
    program in a restarted container)."""
    start = process_start(pid)
    return "%d-%s" % (pid, start) if start else "%d" % pid


def _own_mark() -> str:
    return _owner_mark(os.getpid())


def _owner_alive(name: str) -> bool:
    """Whether the process named in a ``.delivering`` or ``.writing`` file name is alive: the process
    of that id, started when the name says (a name of an earlier version gives the id alone)."""
    mark = name.rsplit(".", 2)[-2]
    pid_text, _, start = mark.partition("-")
    if not pid_text.isdigit():
        return True
    pid = int(pid_text)
    if pid == os.getpid():  # this process's own files carry its mark; another is a dead one's
        return mark == _own_mark()
    if not _pid_alive(pid):
        return False
    if start:
        now = process_start(pid)
        return now is None or now == start
    return True


def ready_name(path: Path) -> Path:
    """``….jsonl`` for a claimed, half-written or kept spool file."""
    return path.with_name(path.name.split(SUFFIX, 1)[0] + SUFFIX)


def _unused_kept_name(ready: Path) -> Path:
    """``….jsonl.undelivered`` (``….jsonl.2.undelivered`` if that exists: a kept file is never replaced)."""
    candidate, n = ready.with_name(ready.name + UNDELIVERED), 1
    while candidate.exists():
        n += 1
        candidate = ready.with_name("%s.%d%s" % (ready.name, n, UNDELIVERED))
    return candidate


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any], str | None]]:
    """``(line number, record, None)`` per good line, ``(line number, {}, what is wrong)`` per other."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except ValueError:  # a line cut short (a crash, a full disk in earlier versions), bad bytes
                yield number, {}, "is not whole JSON (cut short or damaged)"
                continue
            doc = record.get("doc") if isinstance(record, dict) and "db" in record else None
            if not (
                isinstance(doc, dict) and isinstance(doc.get("_id"), str) and isinstance(record["db"], str)
            ):
                yield number, {}, "is not a spooled document"
                continue
            yield number, record, None


def _line_count(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return sum(1 for raw in f if raw.strip())
    except FileNotFoundError:  # delivered meanwhile
        return 0


def _store_of(spooled: SpoolFile) -> str:
    """The store a file is for, as its first good record names it (for messages)."""
    if spooled.key is None:
        return NO_STORE
    with contextlib.suppress(OSError):
        for _, record, problem in _records(spooled.path):
            if problem is None:
                return str(record.get("store") or NO_STORE)
    return "the store of key %s" % spooled.key
