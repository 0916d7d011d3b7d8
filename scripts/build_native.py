"""Build the compiled modules in place: the laundromat's fast paths (``votersdaily/laundromat/_ntscan.c``),
the event pipeline's JSON text of an event (``votersdaily/_eventjson.c``) and the ingest's page-0
renderer (``votersdaily/ingest/_page0.cc``, on poppler's headers).

    python3 scripts/build_native.py              # what scripts/setup.sh runs: only when the source is newer
    python3 scripts/build_native.py --sanitize   # an AddressSanitizer + UBSan build, then:
        LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)" \\
        ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1 \\
        python3 -m pytest -n 0 -p no:randomly tests/laundromat/test_native.py tests/laundromat/test_cleaning.py \\
            tests/test_eventjson.py
    python3 scripts/build_native.py --force      # back to the optimised build

Needs a C compiler and the Python headers (and for the renderer a C++ compiler and Debian's
``libpoppler-private-dev``); without them the laundromat runs its pure-Python paths, events are
encoded by Python's ``json`` and thumbnails come from ``pdftoppm`` (slower, same output), and this
script says which was not built and exits 1. The extensions are the ones ``pip install`` builds
(``ntscan_extension``, ``eventjson_extension`` and ``page0_extension`` in setup.py); an editable
install (``pip install -e .``) builds them in place too.
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
    setup = setup_module()
    sanitize = SANITIZE if args.sanitize else None
    built = [
        build(setup.ntscan_extension(compile_args=sanitize), "the laundromat's compiled fast path", args),
        build(setup.eventjson_extension(compile_args=sanitize), "the events' compiled JSON text", args),
        build(setup.page0_extension(compile_args=sanitize), "the ingest's page-0 renderer", args),
    ]
    return 0 if all(built) else 1


def build(extension, what: str, args: argparse.Namespace) -> bool:
    """Build one extension in place; False (said on stderr) when it could not be built."""
    extension.optional = False  # here a failed build is an error the caller sees (exit 1)
    if args.sanitize:
        extension.extra_link_args = [*extension.extra_link_args, *SANITIZE]
    command = build_ext(Distribution({"name": "votersdaily-native", "ext_modules": [extension]}))
    command.inplace = True
    command.force = args.force or args.sanitize
    command.build_temp = str(REPO / "build" / ("native-sanitize" if args.sanitize else "native"))
    command.ensure_finalized()
    try:
        command.run()
    except Exception as exc:  # no compiler, no headers: the other paths still work
        print("%s was not built: %s" % (what, exc), file=sys.stderr)
        return False
    return True


def setup_module():
    """The checkout's setup.py as a module (its ``setup()`` runs only as a script)."""
    spec = importlib.util.spec_from_file_location("votersdaily_setup", REPO / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    sys.exit(main())
