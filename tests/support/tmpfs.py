"""A real small filesystem for the full-disk tests: a tmpfs of a few hundred KiB mounted on a test's
folder, so a write meets the kernel's own ENOSPC (mounting needs root; without it the test is skipped
with that reason). Folders every process shares (``/dev/shm``, ``/tmp``) are made full for one command
only, in a mount namespace of its own (:func:`within_full_filesystems`)."""

from __future__ import annotations

import errno
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
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


#: Where :func:`within_full_filesystems` keeps the test process's temporary folder reachable when it
#: covers it (``/tmp``): the test's store and requests files stay there (:func:`moved`).
MOVED_TMP = "/dev/shm/votersdaily-test-tmp"  # noqa: S108 - on a tmpfs private to that command
#: The checkout: the command imports the package from it (an editable install), wherever it is.
CHECKOUT = Path(__file__).resolve().parents[2]


def within_full_filesystems(
    full: dict[str, int], read_only: tuple[str, ...] = (), cwd: str | None = None, size: str = "64k"
) -> list[str]:
    """The command (a prefix for a command's arguments) running it in a mount namespace of its own
    (``unshare -m``: its mounts are seen by that process alone, never by the machine's other
    processes), where each folder of ``full`` is a fresh tmpfs of ``size`` filled but for the bytes
    given, each of ``read_only`` a read-only one, and the working folder ``cwd``. When ``full``
    covers the test process's temporary folder, that folder is first bound at :data:`MOVED_TMP` (on a
    private tmpfs over ``/dev/shm``, which is then left roomy): give the command its paths
    :func:`moved`. Root only (skipped otherwise), as :func:`small_tmpfs`."""
    if os.geteuid() != 0:
        pytest.skip("a full filesystem is a small tmpfs here, and mounting one needs root")
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) here to make shared folders full for one command only")
    steps = ["set -e"]
    if tempfile.gettempdir() in full:
        steps += [
            "mount -t tmpfs -o size=16m tmpfs /dev/shm",
            "mkdir %s" % MOVED_TMP,
            "mount --bind %s %s" % (shlex.quote(tempfile.gettempdir()), MOVED_TMP),
        ]
    for folder, leave in full.items():
        quoted = shlex.quote(folder)
        steps += [
            "mount -t tmpfs -o size=%s tmpfs %s" % (size, quoted),
            "cat /dev/zero > %s/filler 2>/dev/null || true" % quoted,  # until the kernel says ENOSPC
        ]
        if leave:
            steps.append("truncate -s -%d %s/filler" % (leave, quoted))
    steps += ["mount -t tmpfs -o ro,size=%s tmpfs %s" % (size, shlex.quote(f)) for f in read_only]
    # The checkout and the interpreter's environment under /tmp (CI clones there, and makes its
    # lowest-floors venv there): each bound back where the command looks for it.
    for needed in dict.fromkeys((CHECKOUT, Path(sys.prefix).resolve())):
        covering = [folder for folder in full if needed.is_relative_to(Path(folder).resolve())]
        if not covering:
            continue
        if tempfile.gettempdir() not in full or not needed.is_relative_to(tempfile.gettempdir()):
            pytest.skip("%s is under %s, which this command sees full" % (needed, covering[0]))
        quoted = shlex.quote(str(needed))
        steps += ["mkdir -p %s" % quoted, "mount --bind %s %s" % (shlex.quote(moved(needed)), quoted)]
    if cwd:
        steps.append("cd %s" % shlex.quote(cwd))
    steps.append('exec "$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "; ".join(steps), "sh"]


def moved(path: Path | str) -> str:
    """``path`` (under the test process's temporary folder) as a command run
    :func:`within_full_filesystems` covering that folder reaches it."""
    return str(Path(MOVED_TMP) / Path(path).relative_to(tempfile.gettempdir()))


def assert_a_full_job_folder_stopped_the_start(
    stderr: str, spider: str, folder: Path, store_uri: str
) -> None:
    """What a crawl whose ``JOBDIR`` is on a full disk says: one line naming the folder, and a run
    log whose result is ``OutputFolderFull`` with the start's error (not ``interrupted``)."""
    from votersdaily.store import open_store

    said = [line for line in stderr.splitlines() if "start requests failed" in line]
    assert len(said) == 1 and said[0].endswith(
        "ERROR: %s: its start requests failed: the job folder (JOBDIR) %s is full (No space left "
        "on device): its requests could not be queued there, and the run stopped; make room and run it "
        "again" % (spider, folder)
    ), stderr[-3000:]
    store = open_store(store_uri)
    try:
        (log,) = store.iter_docs("vd_log")
    finally:
        store.close()
    assert log["result"] == "OutputFolderFull" and "interrupted" not in log
    assert log["errors"][0]["where"] == "start" and str(folder) in log["errors"][0]["message"]
