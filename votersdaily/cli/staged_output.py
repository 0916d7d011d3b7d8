"""Standard output that a command writes whole or not at all.

``export`` and ``dump`` read the store page by page while they write. Streamed straight to standard
output, a store that refuses a page half-way (a user who may not read a database, a server that
stops) left a truncated calendar or dump behind the error line, which a pipe or a redirect keeps as
if it were whole. So the output is staged (in memory, then in a temporary file) and copied to
standard output only when the command got everything.
"""

from __future__ import annotations

import errno
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

#: Staged in memory up to this many bytes, then in a file of the temporary folder ($TMPDIR).
IN_MEMORY = 32 * 1024 * 1024
#: A disk that takes no more: full, over the user's quota, or past the largest file it holds.
FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _prefix() -> str:
    from . import prefix

    return prefix()


@contextmanager
def staged_stdout() -> Iterator[BinaryIO]:
    """A binary file for the block to write; it reaches standard output when the block ends without
    an exception, and is dropped otherwise."""
    with tempfile.SpooledTemporaryFile(max_size=IN_MEMORY) as staged:
        try:
            yield staged  # type: ignore[misc]  # SpooledTemporaryFile is a BinaryIO in all but name
        except OSError as exc:
            if exc.errno in FULL:
                raise SystemExit(
                    "%s: no room in %s to stage the output (%s): point $TMPDIR at a folder with room"
                    % (_prefix(), tempfile.gettempdir(), exc.strerror)
                ) from None
            raise
        staged.seek(0)
        try:
            sys.stdout.flush()
            shutil.copyfileobj(staged, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        except OSError as exc:
            if exc.errno not in FULL:
                raise
            # `export ics > /srv/full/cal.ics`: a traceback, and a cut file that looks whole
            raise SystemExit(
                "%s: standard output could not take the output (%s): what reached it is cut short; "
                "write it where there is room" % (_prefix(), exc.strerror)
            ) from None
