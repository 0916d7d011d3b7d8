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


@contextmanager
def staged_stdout() -> Iterator[BinaryIO]:
    """A binary file for the block to write; it reaches standard output when the block ends without
    an exception, and is dropped otherwise."""
    with tempfile.SpooledTemporaryFile(max_size=IN_MEMORY) as staged:
        try:
            yield staged  # type: ignore[misc]  # SpooledTemporaryFile is a BinaryIO in all but name
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                from . import prefix

                raise SystemExit(
                    "%s: no room in %s to stage the output (%s): point $TMPDIR at a folder with room"
                    % (prefix(), tempfile.gettempdir(), exc.strerror)
                ) from None
            raise
        staged.seek(0)
        sys.stdout.flush()
        shutil.copyfileobj(staged, sys.stdout.buffer)
        sys.stdout.buffer.flush()
