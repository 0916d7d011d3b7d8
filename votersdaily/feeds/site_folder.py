"""The folder ``site build`` writes: it replaces only what an earlier build wrote, and swaps atomically.

A build goes into a fresh folder beside the target and replaces it only when complete, so a failed
build leaves the previous site (or nothing) in place. The target is replaced only when it is absent,
empty, or a site an earlier build wrote and nobody changed since: every build leaves a marker
(:data:`MARKER`: the build's identity and the size and time of every file it wrote). Anything else is
refused with one line saying why, unless ``force``; and some folders are never replaced, forced or
not: the filesystem root and the top-level system folders, the working folder, the home folder and
the folders that hold them, the package's folders, and anything already in the checkout that holds
the package (a new or empty folder there, like the ``site/`` of docs/events.md's examples, is fine).

Where the kernel can (Linux ``renameat2`` with ``RENAME_EXCHANGE``), old and new site trade places in
one step, so the target never stops being a complete site; elsewhere two renames, a moment apart.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from votersdaily import __version__
from votersdaily.clock import now_iso
from votersdaily.locations import PACKAGE, checkout_root

#: The file in a built site that says which build wrote it and what it wrote.
MARKER = ".votersdaily-site"
GENERATOR = "votersdaily site build"
#: Folders directly under the root are the system's (/etc, /usr, /home, /tmp, …): never replaced.
SPECIAL_FILESYSTEMS = ("/proc", "/sys", "/dev", "/run")


class RefusedTarget(ValueError):
    """``site build`` will not replace this target; ``forceable``: ``--force`` would let it."""

    def __init__(self, message: str, forceable: bool):
        super().__init__(message)
        self.forceable = forceable


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def never_replaced(target: Path, data: dict[str, Path] | None = None) -> str | None:
    """Why ``target`` (resolved) is never replaced, forced or not; None when it may be. ``data``:
    where the project keeps data (what → path: the store file, the spool, the archive, …)."""
    if target == Path(target.anchor):
        return "the root folder"
    if len(target.parts) == 2:
        return "a top-level system folder"
    if any(_within(target, Path(special)) for special in SPECIAL_FILESYSTEMS):
        return "a system folder"
    for what, folder in (
        ("the working folder", Path.cwd().resolve()),
        ("your home folder", Path.home().resolve()),
        ("the votersdaily package", PACKAGE),
        *((what, Path(os.path.abspath(path)).resolve()) for what, path in (data or {}).items()),
    ):
        if _within(folder, target):
            return what if folder == target else "a folder that holds %s" % what
    if _within(target, PACKAGE):
        return "a folder of the votersdaily package"
    root = checkout_root()
    in_checkout = root is not None and _within(target, root)
    if in_checkout and (target.is_file() or _non_empty_dir(target)) and not read_marker(target):
        return "part of the votersdaily checkout (%s)" % root
    return None


def _non_empty_dir(path: Path) -> bool:
    try:
        return path.is_dir() and any(path.iterdir())
    except OSError:
        return True  # cannot tell: treat as holding something


def read_marker(folder: Path) -> dict[str, Any] | None:
    """The marker of a site an earlier build wrote in ``folder``, or None."""
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("generator") != GENERATOR:
        return None
    return marker if isinstance(marker.get("files"), dict) else None


def _files(folder: Path) -> dict[str, list[int]]:
    """Every file, link and folder under ``folder`` (links not followed): relative path → [size,
    mtime_ns] (a folder's are [-1, 0]: its files say whether it changed)."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in filenames + dirnames:
            path = Path(dirpath) / name
            info = path.lstat()
            real_dir = name in dirnames and not path.is_symlink()
            found[str(path.relative_to(folder))] = [-1, 0] if real_dir else [info.st_size, info.st_mtime_ns]
    found.pop(MARKER, None)
    return found


def _listed(names: list[str]) -> str:
    return ", ".join(sorted(names)[:3]) + (", …" if len(names) > 3 else "")


def check_target(target: Path, force: bool = False, data: dict[str, Path] | None = None) -> Path:
    """The resolved folder a build may replace, or :class:`RefusedTarget` saying why not (``data``:
    see :func:`never_replaced`)."""
    resolved = Path(os.path.abspath(target)).resolve()
    shown = str(target)
    why = never_replaced(resolved, data)
    if why:
        raise RefusedTarget(
            "refusing to write the site to %s: it is %s, which site build never replaces; "
            "give a new or empty folder" % (shown, why),
            forceable=False,
        )
    if force or not os.path.lexists(resolved):
        return resolved
    if not resolved.is_dir():
        raise RefusedTarget(
            "refusing to write the site to %s: it is a file, not a site written by site build; "
            "give a new or empty folder, or --force to replace it" % shown,
            forceable=True,
        )
    if not any(resolved.iterdir()):
        return resolved
    marker = read_marker(resolved)
    if marker is None:
        raise RefusedTarget(
            "refusing to write the site to %s: it is not empty and was not written by site build "
            "(no %s marker in it); give a new or empty folder, or --force to replace it" % (shown, MARKER),
            forceable=True,
        )
    built, now = marker["files"], _files(resolved)
    added = [name for name in now if name not in built]
    changed = [name for name in now if name in built and now[name] != list(built[name])]
    if added or changed:
        raise RefusedTarget(
            "refusing to replace the site in %s: %s since the last build (%s); move them out, "
            "or --force to replace them too"
            % (
                shown,
                "files were added or changed"
                if added and changed
                else "files were added"
                if added
                else "files were changed",
                _listed(added + changed),
            ),
            forceable=True,
        )
    return resolved


def write_marker(folder: Path) -> None:
    """Mark ``folder`` as a site this build wrote (its identity and every file it holds)."""
    marker = {
        "generator": GENERATOR,
        "version": __version__,
        "built_at": now_iso(),
        "build_id": uuid.uuid4().hex,
        "files": _files(folder),
    }
    (folder / MARKER).write_text(json.dumps(marker, sort_keys=True, indent=1) + "\n", encoding="utf-8")


def _exchange(a: Path, b: Path) -> bool:
    """Swap ``a`` and ``b`` in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False where the
    kernel, the C library or the filesystem cannot."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def _swap_in_two_steps(new: Path, target: Path) -> None:
    """``target`` aside, ``new`` in its place, the old one removed; on failure the old one goes
    back (and if even that fails, it is kept aside and named: never removed)."""
    holder = Path(tempfile.mkdtemp(prefix=".%s.old-" % target.name, dir=target.parent))
    old = holder / target.name
    try:
        target.rename(old)
    except OSError:
        holder.rmdir()
        raise
    try:
        new.rename(target)
    except OSError as exc:
        try:
            old.rename(target)
        except OSError:
            raise OSError(exc.errno, "%s; the previous site is kept in %s" % (exc.strerror, old)) from exc
        holder.rmdir()
        raise
    _remove(holder)


@contextlib.contextmanager
def replaced_site(target: Path, force: bool = False, data: dict[str, Path] | None = None) -> Iterator[Path]:
    """A fresh folder beside ``target`` (checked with :func:`check_target` first) that replaces it
    when the block succeeds, marked as this build's; nothing is left beside it either way."""
    resolved = check_target(target, force, data)
    parent = resolved.parent
    parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=".%s.partial-" % resolved.name, dir=parent))
    try:
        yield partial
        write_marker(partial)
        partial.chmod(0o755)
        check_target(target, force, data)  # again: a file may have appeared while the site was built
        if not os.path.lexists(resolved):
            partial.rename(resolved)
        elif not _exchange(partial, resolved):
            _swap_in_two_steps(partial, resolved)
        # After the exchange the old site is where the new one was built: removed below.
    finally:
        if os.path.lexists(partial):
            _remove(partial)
