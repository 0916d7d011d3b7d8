"""The laundromat's compiled fast paths (``_ntscan.c``), when built, else None: every caller has a
pure-Python path that gives the same result, only slower.

``scripts/setup.sh`` builds the module in place (``python3 scripts/build_native.py``; gcc and the
Python headers). An egg deployed to scrapyd does not carry it and runs the pure-Python paths.

* :func:`canonical_lines`: the lines of an N-Triples/N-Quads block that already are canonical
  statements, copied (blank nodes skolemised) without building a Python object per statement; the
  other lines go to pyoxigraph as before. tests/laundromat/test_native.py checks that both paths
  clean every W3C N-Triples/N-Quads test, the benchmark's statements and mutated real lines alike.
* :func:`utf8_counts`: strict UTF-8 validation counting characters and line endings in one pass.
"""

from __future__ import annotations

import importlib
from types import ModuleType

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


def canonical_lines(data: bytes, quads: bool, genid_prefix: bytes) -> tuple[bytes, bytes, memoryview, bool]:
    """(the canonical statements of ``data``, skolemised under ``genid_prefix``; the other lines,
    newline-terminated; their 0-based line numbers (a sequence of ints); whether a copied statement
    has a graph label)."""
    if _module is None:
        raise RuntimeError("votersdaily.laundromat._ntscan is not built (run scripts/setup.sh)")
    out, slow, where, named = _module.canonical_lines(data, quads, genid_prefix, MAX_FAST_LINE)
    return out, slow, memoryview(where).cast("q"), named


def utf8_counts(data: bytes | memoryview) -> tuple[int, int, int, int, int]:
    """(bytes that are whole valid UTF-8 sequences from the start, characters, LF, CR, CR LF in them)."""
    if _module is None:
        raise RuntimeError("votersdaily.laundromat._ntscan is not built (run scripts/setup.sh)")
    return _module.utf8_counts(data)
