"""Recorded real responses of the sources, replayed by ``crawl --all --offline`` and the tests.

Files under ``gov/`` are byte-for-byte copies of recordings published by other public projects
(provenance in ``gov/FIXTURES.md``). Every recording a spider replays ships here, inside the package: offline replay
works from a clone, an installed wheel or a scrapyd node with no ``shared`` folder anywhere.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def recording_path(name: str) -> Path:
    """The shipped recording ``name`` (relative to this folder, e.g. ``gov/senate_vote/….xml``)."""
    return HERE / name
