"""Unpacking: gzip, bzip2, xz, zip and tar, one layer per call (nesting goes through the state machine).

The kind is found from the file's magic bytes, never its name. Each entry is written to a file named
by its record key, made from the entry's index and name (names never reach the filesystem, and two
entries of the same name stay two records; :func:`safe_name` is what the record shows). Limits
refuse bombs: total uncompressed bytes, compression ratio and entry count, counted over the whole
tree of nested archives of one download (:class:`TreeUsage`: a nested bomb whose every layer looks
harmless still adds up), and nesting depth (a zip quine nests forever and is stopped by the depth).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import posixpath
import shutil
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from votersdaily.defaults import DEFAULTS

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

CHUNK = 1 << 20


class ArchiveError(Exception):
    """The archive is broken (truncated, corrupt, encrypted)."""


class ArchiveLimitExceeded(ArchiveError):
    """Unpacking was refused: the archive breaks a limit (size, ratio, entries, depth)."""


@dataclass(frozen=True)
class ArchiveLimits:
    max_total_bytes: int = DEFAULTS["LAUNDROMAT_MAX_UNPACKED_BYTES"]
    max_ratio: float = DEFAULTS["LAUNDROMAT_MAX_RATIO"]
    #: Ratios are only judged past this many bytes (tiny files compress absurdly well).
    ratio_grace_bytes: int = 1 << 20
    max_entries: int = DEFAULTS["LAUNDROMAT_MAX_ENTRIES"]
    max_depth: int = DEFAULTS["LAUNDROMAT_MAX_DEPTH"]

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> ArchiveLimits:
        return cls(
            max_total_bytes=settings.getint("LAUNDROMAT_MAX_UNPACKED_BYTES"),
            max_ratio=settings.getfloat("LAUNDROMAT_MAX_RATIO"),
            max_entries=settings.getint("LAUNDROMAT_MAX_ENTRIES"),
            max_depth=settings.getint("LAUNDROMAT_MAX_DEPTH"),
        )


@dataclass(frozen=True)
class TreeUsage:
    """What earlier layers of the same download's archive tree already unpacked."""

    unpacked_bytes: int = 0
    entries: int = 0
    #: Size of the download at the tree's root (the ratio's denominator); None: this file's size.
    compressed_bytes: int | None = None


@dataclass
class Entry:
    #: The name as the archive gives it (may be hostile: shown, never used as a path).
    raw_name: str
    #: A sanitised relative name for display.
    name: str
    path: Path
    size: int


@dataclass
class Unpacked:
    kind: str | None  # None: not an archive (data)
    entries: list[Entry] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    @property
    def unpacked_bytes(self) -> int:
        return sum(e.size for e in self.entries)


def archive_kind(path: Path) -> str | None:
    """``gzip``, ``bzip2``, ``xz``, ``zip``, ``tar`` or None, from the magic bytes."""
    with open(path, "rb") as f:
        head = f.read(512)
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if head[:3] == b"BZh" and head[3:4].isdigit():
        return "bzip2"
    if head[:6] == b"\xfd7zXZ\x00":
        return "xz"
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "tar"
    return None


def printable_name(raw: str) -> str:
    """An entry name as text any record and key can hold. A tar member's name is bytes, which tarfile
    decodes as UTF-8 and, where they are not (a Latin-1 name, common in the wild), keeps as lone
    surrogates that no store and no hash takes: those bytes are shown as ``\\xe9``."""
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        try:
            data = raw.encode("utf-8", "surrogateescape")  # the archive's own bytes back
        except UnicodeEncodeError:
            data = raw.encode("utf-8", "surrogatepass")
        return data.decode("utf-8", "backslashreplace")
    return raw


def safe_name(raw: str) -> str:
    """A relative, traversal-free rendering of an entry name (``../../etc/passwd`` → ``etc/passwd``)."""
    name = raw.replace("\\", "/").replace("\x00", "")
    if len(name) > 1 and name[1] == ":":
        name = name[2:]
    parts = [p for p in posixpath.normpath("/" + name).split("/") if p not in ("", ".", "..")]
    return "/".join(parts) or "data"


class _Budget:
    def __init__(self, limits: ArchiveLimits, compressed: int, used: TreeUsage = TreeUsage()) -> None:
        self.limits = limits
        self.compressed = max(compressed, 1)
        self.total = used.unpacked_bytes
        self.entries = used.entries

    def entry(self) -> None:
        self.entries += 1
        if self.entries > self.limits.max_entries:
            raise ArchiveLimitExceeded("more than %d entries" % self.limits.max_entries)

    def add(self, n: int) -> None:
        self.total += n
        if self.total > self.limits.max_total_bytes:
            raise ArchiveLimitExceeded("unpacked size exceeds %d bytes" % self.limits.max_total_bytes)
        if (
            self.total > self.limits.ratio_grace_bytes
            and self.total / self.compressed > self.limits.max_ratio
        ):
            raise ArchiveLimitExceeded(
                "compression ratio exceeds %.0f (%d bytes from %d)"
                % (self.limits.max_ratio, self.total, self.compressed)
            )


class _Readable(Protocol):
    """What an entry is copied from: a zip or tar member, or a decompressing stream."""

    def read(self, size: int = -1, /) -> bytes: ...


def _copy(src: _Readable, dst: Path, budget: _Budget) -> int:
    n = 0
    try:
        with open(dst, "wb") as out:
            while True:
                chunk = src.read(CHUNK)
                if not chunk:
                    break
                budget.add(len(chunk))
                out.write(chunk)
                n += len(chunk)
    except BaseException:
        dst.unlink(missing_ok=True)
        raise
    return n


_STREAMS: dict[str, Callable[[Path], io.BufferedIOBase]] = {
    "gzip": lambda p: gzip.open(p, "rb"),
    "bzip2": lambda p: bz2.open(p, "rb"),
    "xz": lambda p: lzma.open(p, "rb"),
}
_SUFFIXES = {"gzip": (".gz", ".tgz"), "bzip2": (".bz2", ".tbz2", ".tbz"), "xz": (".xz", ".txz")}


def _stream_name(kind: str, name: str) -> str:
    """The inner file's name: ``a.nt.gz`` → ``a.nt``, ``a.tgz`` → ``a.tar``."""
    for suffix in _SUFFIXES[kind]:
        if name.lower().endswith(suffix):
            base = name[: -len(suffix)]
            return base + ".tar" if suffix.startswith(".t") else base
    return name or "data"


def entry_id(index: int, name: str) -> str:
    """What an entry's key is made from: its position in the archive and its name (names repeat)."""
    return "%d %s" % (index, name)


def unpack(
    path: Path,
    out_dir: Path,
    key_of: Callable[[str], str],
    *,
    name: str = "",
    depth: int = 0,
    limits: ArchiveLimits = ArchiveLimits(),
    used: TreeUsage = TreeUsage(),
) -> Unpacked:
    """Unpack one layer of ``path`` into ``out_dir/<key_of(entry_id(index, name))>`` files.

    ``depth`` is the nesting depth of ``path`` itself (0 for a download); ``used`` what the layers
    before it in the same tree unpacked (the limits are for the tree). Returns the kind (None for
    data, which is left alone) and the entries; on a limit or a broken archive every file written
    so far is removed and the error raised.
    """
    kind = archive_kind(path)
    if kind is None:
        return Unpacked(kind=None)
    if depth >= limits.max_depth:
        raise ArchiveLimitExceeded("archive nesting deeper than %d" % limits.max_depth)
    out_dir.mkdir(parents=True, exist_ok=True)
    budget = _Budget(limits, used.compressed_bytes or path.stat().st_size, used)
    result = Unpacked(kind=kind)
    try:
        if kind in _STREAMS:
            raw = _stream_name(kind, posixpath.basename(name.replace("\\", "/")))
            dst = out_dir / key_of(entry_id(0, raw))
            try:
                with _STREAMS[kind](path) as stream:
                    size = _copy(stream, dst, budget)
            except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
                raise ArchiveError("%s stream is corrupt: %s" % (kind, exc)) from None
            budget.entry()
            result.entries.append(Entry(raw, safe_name(raw), dst, size))
        elif kind == "zip":
            _unzip(path, out_dir, key_of, budget, result)
        else:
            _untar(path, out_dir, key_of, budget, result)
    except BaseException as exc:
        for entry in result.entries:
            entry.path.unlink(missing_ok=True)
        if isinstance(exc, Exception) and not isinstance(exc, ArchiveError):
            # The archive modules raise more than their documented errors on hostile headers (a UTF-8
            # flag on a non-UTF-8 name: UnicodeDecodeError): any of them means a broken archive.
            raise ArchiveError("%s is corrupt: %s: %s" % (kind, type(exc).__name__, exc)) from None
        raise
    return result


def _unzip(path: Path, out_dir: Path, key_of: Callable[..., Any], budget: _Budget, result: Unpacked) -> None:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ArchiveError("zip is corrupt: %s" % exc) from None
    with archive:
        infos = [(n, i) for n, i in enumerate(archive.infolist()) if not i.is_dir()]
        if budget.entries + len(infos) > budget.limits.max_entries:  # refused before writing anything
            raise ArchiveLimitExceeded("more than %d entries" % budget.limits.max_entries)
        for index, info in infos:
            if info.flag_bits & 0x1:
                result.skipped.append({"name": safe_name(info.filename), "reason": "encrypted"})
                continue
            budget.entry()
            dst = out_dir / key_of(entry_id(index, info.filename))
            try:
                with archive.open(info) as stream:
                    size = _copy(stream, dst, budget)
            except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, zlib.error) as exc:
                dst.unlink(missing_ok=True)
                raise ArchiveError("zip entry %r is corrupt: %s" % (safe_name(info.filename), exc)) from None
            result.entries.append(Entry(info.filename, safe_name(info.filename), dst, size))


def _untar(path: Path, out_dir: Path, key_of: Callable[..., Any], budget: _Budget, result: Unpacked) -> None:
    try:
        archive = tarfile.open(path, "r:")
    except (tarfile.TarError, OSError) as exc:
        raise ArchiveError("tar is corrupt: %s" % exc) from None
    with archive:
        try:
            for index, member in enumerate(archive):
                if member.isdir():
                    continue
                name = printable_name(member.name)
                if not member.isfile():
                    # Links and devices are never followed or created.
                    result.skipped.append({"name": safe_name(name), "reason": "not a regular file"})
                    continue
                budget.entry()
                stream = archive.extractfile(member)
                assert stream is not None, "tarfile reads every regular file"  # noqa: S101 - invariant
                dst = out_dir / key_of(entry_id(index, name))
                size = _copy(stream, dst, budget)
                result.entries.append(Entry(name, safe_name(name), dst, size))
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise ArchiveError("tar is corrupt: %s" % exc) from None


def remove_tree(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists():
        path.unlink()
