"""Build the laundromat's compiled fast paths in place (``votersdaily/laundromat/_ntscan.c``).

    python3 scripts/build_native.py              # what scripts/setup.sh runs: only when the source is newer
    python3 scripts/build_native.py --sanitize   # an AddressSanitizer + UBSan build, then:
        LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)" \\
        ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1 \\
        python3 -m pytest -n 0 -p no:randomly tests/laundromat/test_native.py tests/laundromat/test_cleaning.py
    python3 scripts/build_native.py --force      # back to the optimised build

Needs a C compiler and the Python headers; without them the laundromat runs its pure-Python paths
(slower, same output), and this script says so and exits 1. The extension is the one ``pip install``
builds (``ntscan_extension`` in setup.py); an editable install (``pip install -e .``) builds it in
place too.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from setuptools import Distribution
from setuptools.command.build_ext import build_ext

REPO = Path(__file__).resolve().parents[1]
SANITIZE = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-omit-frame-pointer"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sanitize", action="store_true", help="build with ASan and UBSan")
    parser.add_argument("--force", action="store_true", help="build even if the module is newer")
    args = parser.parse_args(argv)
    os.chdir(REPO)
    extension = setup_module().ntscan_extension(
        compile_args=SANITIZE if args.sanitize else None, link_args=SANITIZE if args.sanitize else None
    )
    extension.optional = False  # here a failed build is an error the caller sees (exit 1)
    command = build_ext(Distribution({"name": "votersdaily-native", "ext_modules": [extension]}))
    command.inplace = True
    command.force = args.force or args.sanitize
    command.build_temp = str(REPO / "build" / ("native-sanitize" if args.sanitize else "native"))
    command.ensure_finalized()
    try:
        command.run()
    except Exception as exc:  # no compiler, no headers: the pure-Python paths still work
        print("the laundromat's compiled fast path was not built: %s" % exc, file=sys.stderr)
        return 1
    return 0


def setup_module():
    """The checkout's setup.py as a module (its ``setup()`` runs only as a script)."""
    spec = importlib.util.spec_from_file_location("votersdaily_setup", REPO / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    sys.exit(main())
