"""A folder a run writes its outputs to, full: the folder's fault, never the document's.

The laundromat's output folder and the ingest's blob folder and TEI feed meet ENOSPC (or a quota's
EDQUOT) like any disk: :func:`full_folder` turns such an ``OSError`` into :class:`OutputFolderFull`
naming the folder and what the run does about it, which the run says once and fails with (its run
log's result), while what it stores in the store is kept.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

#: ``OSError`` numbers that mean the folder's filesystem is full (or its quota is).
FULL_DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT})


class OutputFolderFull(OSError):
    """A run's output folder has no room; the message names the folder and what becomes of what
    did not fit. The run log's result."""


def full_folder(exc: BaseException, what: str, folder: Path, consequence: str) -> OutputFolderFull | None:
    """``exc`` as :class:`OutputFolderFull` ("<what> <folder> is full (<why>): <consequence>") when it
    says the disk is full, else None."""
    if not isinstance(exc, OSError) or exc.errno not in FULL_DISK_ERRORS:
        return None
    return OutputFolderFull(exc.errno, "%s %s is full (%s): %s" % (what, folder, exc.strerror, consequence))


def without_room(folder: Path) -> bool:
    """Whether ``folder``'s filesystem has no block left for an unprivileged write: what an error
    that names no errno (SQLite's "disk I/O error" when it cannot make its ``-shm`` file) means."""
    try:
        return os.statvfs(folder).f_bavail == 0
    except OSError:  # gone, or not ours to look at: no claim about its room
        return False
