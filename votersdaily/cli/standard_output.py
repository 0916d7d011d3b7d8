"""Standard output: a full one is one line, and ``export``/``dump`` write it whole or not at all.

Every command's standard output is guarded (:func:`guarded_standard_output`): a write it cannot take
(``where > /srv/full/where.txt``, a disk full or over quota) raises :class:`StandardOutputFull`, which
the command line turns into one line and exit status 1, instead of a traceback from whichever
``print`` met it (or an "Exception ignored" at exit for buffered lines).

``export`` and ``dump`` read the store page by page while they write. Streamed straight to standard
output, a store that refuses a page half-way (a user who may not read a database, a server that
stops) left a truncated calendar or dump behind the error line, which a pipe or a redirect keeps as
if it were whole. So the output is staged (in memory, then in a temporary file) and copied to
standard output only when the command got everything.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

#: Staged in memory up to this many bytes, then in a file of the temporary folder ($TMPDIR).
IN_MEMORY = 32 * 1024 * 1024
#: A disk that takes no more: full, over the user's quota, or past the largest file it holds.
FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


class StandardOutputFull(OSError):
    """Standard output took no more (its ``errno`` is one of :data:`FULL`)."""

    def __str__(self) -> str:
        return (
            "standard output could not take the output (%s): what reached it is cut short; write it "
            "where there is room" % self.strerror
        )


class StagingFull(OSError):
    """The temporary folder took no more of the output being staged (:func:`staged_stdout`)."""

    def __str__(self) -> str:
        return "no room in %s to stage the output (%s): point $TMPDIR at a folder with room" % (
            tempfile.gettempdir(),
            self.strerror,
        )


class _GuardedFile(io.RawIOBase):
    """File descriptor 1, whose full-disk errors are :class:`StandardOutputFull` (a pipe closed early
    stays a ``BrokenPipeError``)."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: Any) -> int:
        try:
            return os.write(self._fd, data)
        except OSError as exc:
            if exc.errno in FULL:
                raise StandardOutputFull(exc.errno, exc.strerror) from None
            raise


@contextmanager
def guarded_standard_output() -> Iterator[None]:
    """``sys.stdout`` as :class:`_GuardedFile`, line-buffered (a full disk shows at the line that met
    it, inside the command), for the block; flushed and restored after (the block flushes it itself
    to hear of a failure). A ``sys.stdout`` with no file descriptor (a test capturing it in memory)
    is left as it is."""
    original = sys.stdout
    try:
        fd = original.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        yield
        return
    original.flush()
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_GuardedFile(fd)),
        encoding=original.encoding,
        errors=original.errors,
        line_buffering=True,
    )
    try:
        yield
    finally:
        guarded, sys.stdout = sys.stdout, original
        with contextlib.suppress(OSError):  # what a full disk did not take is reported already
            guarded.close()  # flushes; file descriptor 1 stays open


@contextmanager
def staged_stdout() -> Iterator[BinaryIO]:
    """A binary file for the block to write; it reaches standard output when the block ends without
    an exception, and is dropped otherwise. A full disk on either side is :class:`StagingFull` or
    :class:`StandardOutputFull` (one line from the command line's ``main``)."""
    staged = tempfile.SpooledTemporaryFile(max_size=IN_MEMORY)
    try:
        try:
            yield staged  # type: ignore[misc]  # SpooledTemporaryFile is a BinaryIO in all but name
            staged.seek(0)  # writes what the staging file still buffers
        except OSError as exc:
            if exc.errno in FULL and not isinstance(exc, StandardOutputFull):
                raise StagingFull(exc.errno, exc.strerror) from None
            raise
        try:
            sys.stdout.flush()
            shutil.copyfileobj(staged, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        except OSError as exc:
            if exc.errno not in FULL:
                raise
            # `export ics > /srv/full/cal.ics`: a traceback, and a cut file that looks whole
            raise StandardOutputFull(exc.errno, exc.strerror) from None
    finally:
        with contextlib.suppress(OSError):  # a full staging folder kept its last buffer: said above
            staged.close()
