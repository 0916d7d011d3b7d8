"""Build the laundromat's compiled fast paths in place (``votersdaily/laundromat/_ntscan.c``).

    python3 scripts/build_native.py

Run by scripts/setup.sh; rebuilds only when the C source is newer than the built module. Needs a C
compiler and the Python headers; without them the laundromat runs its pure-Python paths (slower,
same output), and this script says so and exits 1.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import Distribution, Extension
from setuptools.command.build_ext import build_ext

REPO = Path(__file__).resolve().parents[1]
EXTENSION = Extension(
    "votersdaily.laundromat._ntscan",
    sources=["votersdaily/laundromat/_ntscan.c"],
    extra_compile_args=["-O3", "-Wall", "-Wextra"],
)


def main() -> int:
    os.chdir(REPO)
    command = build_ext(Distribution({"name": "votersdaily-native", "ext_modules": [EXTENSION]}))
    command.inplace = True
    command.build_temp = str(REPO / "build" / "native")
    command.ensure_finalized()
    try:
        command.run()
    except Exception as exc:  # no compiler, no headers: the pure-Python paths still work
        print("the laundromat's compiled fast path was not built: %s" % exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
