"""The laundromat's compiled fast paths (``_ntscan.c``), when built, else None: every caller has a
pure-Python path that gives the same result, only slower.

The build backend compiles it when the package is installed (``pip install``, a wheel of
``python -m build``; setup.py's optional extension: without a C compiler the install goes on without
it); ``python3 scripts/build_native.py`` rebuilds it in place in a checkout. A scrapyd job runs the
package installed on its node, compiled module included (docs/operations.md). Whether it is there:
``python -c "from votersdaily.laundromat import native; print(native.available(), native.location())"``;
the laundromat's run log says it as ``compiled_path``.

* :func:`canonical_lines`: the lines of an N-Triples/N-Quads block that already are canonical
  statements, copied (blank nodes skolemised) without building a Python object per statement; the
  other lines go to pyoxigraph as before. tests/laundromat/test_native.py checks that both paths
  clean every W3C N-Triples/N-Quads test, the benchmark's statements and mutated real lines alike.
* :func:`sorted_unique` and :func:`merge_runs`: the external sort of the cleaned lines (runs sorted
  by a multikey quicksort, merged k ways), in the byte order of ``LC_ALL=C sort -u``. The sort
  nests at most log2 n frames and falls back to a heapsort when a crafted order keeps defeating
  its pivots (tests/laundromat/sort_adversary.py builds one).
* :func:`utf8_counts`: strict UTF-8 validation counting characters and line endings in one pass.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from types import ModuleType
from typing import NamedTuple

#: Lines this long or longer are left to pyoxigraph, which refuses a token past its 16 MiB buffer
#: (the statement is dropped with that reason): both paths drop the same statements.
MAX_FAST_LINE = 1 << 24

_module: ModuleType | None
try:
    _module = importlib.import_module("votersdaily.laundromat._ntscan")
except ImportError:  # not built: the pure-Python paths are used
    _module = None


def available() -> bool:
    return _module is not None


def location() -> str | None:
    """The file the compiled module was loaded from; None when the pure-Python paths run."""
    return getattr(_module, "__file__", None)


class Scanned(NamedTuple):
    """What :func:`canonical_lines` found in a block of lines."""

    #: The canonical statements, skolemised.
    canonical: bytes
    #: The other lines, newline-terminated, for pyoxigraph.
    slow: bytes
    #: Their 0-based line numbers in the block (a sequence of ints).
    slow_line_numbers: memoryview
    #: Whether a canonical statement has a graph label.
    named: bool
    #: Lines in the block (one without a newline at its end counted).
    lines: int
    #: Statements in ``canonical``.
    statements: int


def canonical_lines(data: bytes, quads: bool, genid_prefix: bytes) -> Scanned:
    """The lines of ``data`` that are canonical statements (skolemised under ``genid_prefix``) and
    the others."""
    out, slow, where, named, lines, copied = _built().canonical_lines(
        data, quads, genid_prefix, MAX_FAST_LINE
    )
    return Scanned(out, slow, memoryview(where).cast("q"), named, lines, copied)


def _built() -> ModuleType:
    if _module is None:
        raise RuntimeError("votersdaily.laundromat._ntscan is not built (run scripts/setup.sh)")
    return _module


def sorted_unique(block: bytes) -> bytes:
    """The lines of ``block`` (newline-terminated) in unsigned byte order, each once."""
    return _built().sorted_unique(block)


def merge_runs(paths: Sequence[str | os.PathLike[str]], fd: int) -> int:
    """Sorted unique run files merged into file descriptor ``fd``, each line once; lines written.
    ``paths`` is copied before any is opened. Runs without the GIL (call it from a thread to
    overlap the reader's work)."""
    return _built().merge_runs(paths, fd)


def utf8_counts(data: bytes | memoryview) -> tuple[int, int, int, int, int]:
    """(bytes that are whole valid UTF-8 sequences from the start, characters, LF, CR, CR LF in them)."""
    return _built().utf8_counts(data)
