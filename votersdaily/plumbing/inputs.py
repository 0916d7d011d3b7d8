"""Operators' input files (ingest request files, laundromat seed lists), read line by line within a
bound, so one huge line never fills memory and one bad line never stops the file; and the characters
no input field may hold."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

#: C0 and C1 control characters and lone surrogates (which have no UTF-8 form).
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
#: The same, but tab, line feed and carriage return allowed (free text).
CONTROL_IN_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


class BadLine(ValueError):
    """A line of an input file that cannot be read: longer than the bound, or not UTF-8."""


def bounded_lines(path: str | Path, max_bytes: int) -> Iterator[tuple[int, str | BadLine]]:
    """``(line number, text without its line end)`` for every line of ``path``, or a :class:`BadLine`
    for one longer than ``max_bytes`` (skipped without being held whole) or not UTF-8."""
    with open(path, "rb") as handle:
        lineno = 0
        while line := handle.readline(max_bytes + 1):
            lineno += 1
            if len(line) > max_bytes and not line.endswith(b"\n"):
                while (rest := handle.readline(max_bytes)) and not rest.endswith(b"\n"):
                    pass
                yield lineno, BadLine("line is longer than %d bytes" % max_bytes)
                continue
            try:
                yield lineno, line.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                yield lineno, BadLine("line is not UTF-8: %s" % exc)


def shown(value: str, chars: int = 80) -> str:
    """A value in a message: its start, never megabytes of it, control characters escaped."""
    return repr(value[:chars]) + ("... (%d characters)" % len(value) if len(value) > chars else "")
