"""Recorded real responses of the sources, replayed by ``crawl --all --offline`` and the tests.

Files under ``gov/`` are byte-for-byte copies of ../shared/fixtures/gov (provenance in
``gov/FIXTURES.md``). Third-party pages that must not be copied are referenced as ``shared:<path>``
and read in place from the ``shared`` folder beside the checkout (or ``$VOTERSDAILY_SHARED``).
"""

from __future__ import annotations

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED_PREFIX = "shared:"


def shared_dir() -> Path:
    env = os.environ.get("VOTERSDAILY_SHARED")
    if env:
        return Path(env)
    return HERE.parents[2] / "shared"


def recording_path(name: str) -> Path | None:
    if name.startswith(SHARED_PREFIX):
        return shared_dir() / name[len(SHARED_PREFIX):]
    return HERE / name
