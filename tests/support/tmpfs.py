"""A real small filesystem for the full-disk tests: a tmpfs of a few hundred KiB mounted on a test's
folder, so a write meets the kernel's own ENOSPC (mounting needs root; without it the test is skipped
with that reason)."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_tmpfs(folder: Path, size: str = "200k") -> Iterator[Path]:
    """``folder`` as the mount point of a fresh tmpfs of ``size``, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("a full filesystem is a small tmpfs here, and mounting one needs root")
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", str(folder)], capture_output=True, text=True
    )
    if mounted.returncode:
        pytest.skip("cannot mount a tmpfs on %s: %s" % (folder, mounted.stderr.strip()))
    try:
        yield folder
    finally:
        subprocess.run(["umount", "--lazy", str(folder)], check=False)


def fill(folder: Path, leave: int = 0) -> Path:
    """Fill ``folder``'s filesystem with one file until the kernel says it is full, then give back
    ``leave`` bytes (rounded to what the filesystem frees). The filler file is returned."""
    filler = folder / "filler"
    chunk = b"\0" * 4096
    with open(filler, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(chunk)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    if leave:
        os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler
