"""Recorded real responses of the sources, replayed by ``crawl --all --offline`` and the tests.

Files under ``gov/`` are byte-for-byte copies of ../shared/fixtures/gov (provenance in
``gov/FIXTURES.md``). Every recording a spider replays ships here, inside the package: offline replay
works from a clone, an egg or a scrapyd node with no ``shared`` folder anywhere.
"""

from __future__ import annotations

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent


def shared_dir() -> Path:
    """The ``shared`` folder beside the checkout (or ``$VOTERSDAILY_SHARED``): design documents,
    third-party test material and conformance suites for the tests and benchmarks. Product code
    never reads it."""
    env = os.environ.get("VOTERSDAILY_SHARED")
    if env:
        return Path(env)
    return HERE.parents[2] / "shared"


def recording_path(name: str) -> Path:
    """The shipped recording ``name`` (relative to this folder, e.g. ``gov/senate_vote/….xml``)."""
    return HERE / name
