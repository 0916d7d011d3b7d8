"""The package built and installed the way a user or an operator does it: from the files a clone of
the repository has (never its build products, never ``../shared``), into a virtual environment of
its own, so no test writes into the checkout or the test process's own environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

from tests.support.services import REPO


def clone_files() -> list[str]:
    """The checkout's files as a clone has them: tracked, plus new files not ignored (the change
    under test), without links to material outside it (node_modules, w3c-suites)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.decode()
    return [
        rel for rel in listed.split("\0") if rel and not (REPO / rel).is_symlink() and (REPO / rel).is_file()
    ]


def copy_clone(dest: Path) -> Path:
    """A copy of the clone's files in ``dest`` (builds leave build/ and *.egg-info where they run)."""
    for rel in clone_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target)
    return dest


def build_wheel(source: Path, out: Path, env: dict[str, str] | None = None) -> Path:
    """The project's wheel built from ``source`` without build isolation (the build backend of this
    environment, no download), as a node's installer would."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
        env=dict(os.environ, **(env or {})),
        timeout=600,
    )
    (wheel,) = out.glob("votersdaily-*.whl")
    return wheel


def venv_python(folder: Path, *, system_site_packages: bool) -> Path:
    """A new virtual environment; with ``system_site_packages`` it sees this environment's packages
    (the dependencies) under its own (the package installed into it)."""
    venv.create(folder, system_site_packages=system_site_packages, with_pip=not system_site_packages)
    return folder / "bin" / "python"


def install(python: Path, *requirements: str, deps: bool = True) -> None:
    """``python -m pip install`` into that environment (pip comes from this one when the environment
    has none of its own). Without ``deps`` (the package alone, over this environment's dependencies)
    it is installed even when this environment has the same version (the checkout, editable): pip
    would skip it, and the "node" would run the checkout."""
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            *(() if deps else ("--no-deps", "--ignore-installed")),
            *requirements,
        ],
        check=True,
        capture_output=True,
        timeout=1200,
    )


def user_env(**extra: str) -> dict[str, str]:
    """A user's environment: no checkout on the path, no location or settings chosen by the tests."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("VOTERSDAILY_", "SCRAPY_")) and k not in ("PYTHONPATH", "XDG_DATA_HOME")
    }
    env.update(extra)
    return env
