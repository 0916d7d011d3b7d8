"""An installable product: ``pip install`` of a clone or of a wheel brings the dependencies, the
``votersdaily`` command, the CouchDB views, the recordings and the compiled laundromat module, and
the installed command works from an empty folder anywhere.

The wheel and fresh-environment tests are slow (a build and an install each; the fresh environment
downloads the dependencies, or takes them from pip's cache)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.support.packaging import build_wheel, copy_clone, install, user_env, venv_python
from tests.support.services import REPO
from votersdaily.schema import VOLATILE_EVENT_KEYS
from votersdaily.store import open_store

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
NATIVE_CHECK = "from votersdaily.laundromat import native; print(native.available(), native.location())"
#: Whether thumbnails come from the warm renderer (its compiled module built) or pdftoppm.
PAGE0_CHECK = "from votersdaily.ingest.thumbnail import warm_renderer; print(warm_renderer() is not None)"
#: Whether the event pipeline encodes events with the compiled module, and the file it was loaded from.
EVENTJSON_CHECK = (
    "import sys; from votersdaily import schema; print(schema._compiled_clean_text is not None, "
    "getattr(sys.modules.get('votersdaily._eventjson'), '__file__', None))"
)


#: The venv above sees the system's site-packages (for the dependencies), where this checkout's editable
#: install (`pip install -e .`, scripts/setup.sh) puts a finder after Python's own: it answers for the
#: top-level package's direct children the wheel lacks, so `votersdaily._eventjson` would come from the
#: checkout's build. The check looks at the wheel alone.
WITHOUT_EDITABLE = (
    "import sys; sys.meta_path[:] = "
    "[f for f in sys.meta_path if not getattr(f, '__module__', '').startswith('__editable__')]"
)


def requirement_lines(path: Path) -> set[str]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text("utf-8").splitlines())
    return {line for line in lines if line}


def test_requirement_files_repeat_the_package_metadata():
    """pyproject.toml is the one list; the requirement files are copies that must not drift."""
    project = PYPROJECT["project"]
    extras = project["optional-dependencies"]
    assert requirement_lines(REPO / "requirements.txt") == set(project["dependencies"])
    dev = {r for r in extras["test"] + extras["dev"] if not r.startswith("votersdaily")}
    assert requirement_lines(REPO / "requirements-dev.txt") == dev
    assert "votersdaily[test]" in extras["dev"]


def distribution_key(name: str) -> str:
    """A distribution's name as the registry compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_modules(package: Path) -> dict[str, set[str]]:
    """Each top-level module the package's own code imports by absolute name (the standard library's
    and the package's own left out), with the files importing it."""
    found: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != package.name:
                    found.setdefault(top, set()).add(path.relative_to(REPO).as_posix())
    return found


def test_every_module_the_package_imports_is_a_declared_dependency():
    """A module reached only through another dependency (Twisted through Scrapy, htmldate through
    trafilatura) is installed at whatever version that one allows, not at a floor this package was
    tested on (.ci/lowest-floors), and goes when that one stops needing it."""
    declared = {
        distribution_key(re.split(r"[ ;<>=!~\[(]", requirement, maxsplit=1)[0])
        for requirement in PYPROJECT["project"]["dependencies"]
    }
    providers = importlib.metadata.packages_distributions()
    imports = imported_modules(REPO / "votersdaily")
    assert {"scrapy", "twisted", "lxml"} <= set(imports)  # the scan sees the package's imports
    undeclared = {
        module: sorted(files)
        for module, files in imports.items()
        if not declared & {distribution_key(d) for d in providers.get(module, [module])}
    }
    assert undeclared == {}


def test_the_metadata_names_the_command_and_scrapy_settings():
    project = PYPROJECT["project"]
    assert project["scripts"] == {"votersdaily": "votersdaily.cli:main"}
    assert project["entry-points"]["scrapy"] == {"settings": "votersdaily.settings"}
    assert PYPROJECT["build-system"]["build-backend"] == "setuptools.build_meta"


def shipped_data() -> set[str]:
    """Where the checkout's views and recordings land in an installed package."""
    views = {
        "votersdaily/_couchdb_views/%s" % p.relative_to(REPO / "couchdb_views").as_posix()
        for p in (REPO / "couchdb_views").rglob("*.js")
    }
    recordings = {
        p.relative_to(REPO).as_posix()
        for p in (REPO / "votersdaily" / "recordings").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert len(views) >= 9 and len(recordings) >= 30
    return views | recordings


@pytest.mark.slow  # an isolated wheel build
def test_a_wheel_built_as_users_build_it_holds_the_compiled_module_views_and_recordings(tmp_path):
    """``python -m build`` (isolated: the build backend from the registry or pip's cache, the wheel
    built from the sdist, as a release is)."""
    source = copy_clone(tmp_path / "clone")
    subprocess.run(
        [sys.executable, "-m", "build", "-o", str(tmp_path / "dist"), str(source)],
        check=True,
        capture_output=True,
        timeout=900,
    )
    (wheel,) = (tmp_path / "dist").glob("votersdaily-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert [n for n in names if re.fullmatch(r"votersdaily/laundromat/_ntscan\..*\.so", n)], sorted(names)
    assert [n for n in names if re.fullmatch(r"votersdaily/ingest/_page0\..*\.so", n)], sorted(names)
    assert [n for n in names if re.fullmatch(r"votersdaily/_eventjson\..*\.so", n)], sorted(names)
    assert shipped_data() <= names
    assert "votersdaily/feeds/templates/day.html" in names and "votersdaily/cli/where.py" in names
    assert not [
        n for n in names if n.startswith(("tests/", "benchmarks/")) or n.endswith((".c", ".cc", ".pyc"))
    ]
    entry_points = zipfile.ZipFile(wheel).read("votersdaily-0.1.0.dist-info/entry_points.txt").decode()
    assert (
        "votersdaily = votersdaily.cli:main" in entry_points
        and "settings = votersdaily.settings" in entry_points
    )


@pytest.mark.slow  # a wheel build and a virtual environment
def test_without_a_compiler_the_build_goes_on_and_the_pure_python_path_runs(tmp_path):
    source = copy_clone(tmp_path / "clone")
    no_compiler = str(tmp_path / "no-such-compiler")
    wheel = build_wheel(source, tmp_path / "dist", env={"CC": no_compiler, "CXX": no_compiler})
    compiled = ("_ntscan", "_page0", "_eventjson")
    names = [n for n in zipfile.ZipFile(wheel).namelist() if not n.endswith(".pyi")]  # a stub is no module
    assert not [n for n in names if any(name in n for name in compiled)]
    python = venv_python(tmp_path / "venv", system_site_packages=True)
    install(python, str(wheel), deps=False)
    (tmp_path / "empty").mkdir()
    check = subprocess.run(
        [
            str(python),
            "-c",
            "%s\n%s\n%s\n%s" % (WITHOUT_EDITABLE, NATIVE_CHECK, PAGE0_CHECK, EVENTJSON_CHECK),
        ],
        cwd=tmp_path / "empty",
        env=user_env(),
        capture_output=True,
        text=True,
    )
    # thumbnails by pdftoppm, events encoded by Python's json
    assert check.stdout.split() == ["False", "None", "False", "False", "None"], check.stderr


@pytest.mark.slow  # a wheel build and a virtual environment
def test_the_documented_upgrade_replaces_a_package_of_the_same_version(tmp_path):
    """Every build is version 0.1.0 until the project has releases, and ``pip install`` of a wheel of
    the version installed does nothing ("already installed with the same version"): before, the
    upgrade docs/operations.md gave left a node on its old code, saying nothing."""
    text = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    (upgrade,) = re.findall(r"Upgrading a node to a new wheel:\s*`([^`]+)`", text)
    wheel = build_wheel(copy_clone(tmp_path / "clone"), tmp_path / "dist")
    python = venv_python(tmp_path / "venv", system_site_packages=True)
    install(python, str(wheel), deps=False)
    (installed,) = (tmp_path / "venv" / "lib").glob("python3*/site-packages/votersdaily/__init__.py")
    installed.write_text(installed.read_text() + "\nOLDER_BUILD = True\n")  # the node's older build
    command = upgrade.replace("python3", str(python)).replace("votersdaily-*.whl", str(wheel))
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OLDER_BUILD" not in installed.read_text()


def events_of(db: Path) -> dict[str, dict]:
    """The stored events, without what differs between two machines' runs of the same documents
    (revisions, the archive pointer, the replayed file's own path)."""
    store = open_store("sqlite:///%s" % db)
    try:
        return {
            doc["_id"]: {
                k: v for k, v in doc.items() if k not in ("_rev", "replayed_from", *VOLATILE_EVENT_KEYS)
            }
            for doc in store.iter_docs("vd_events")
        }
    finally:
        store.close()


@pytest.mark.slow  # a virtual environment, pip install, the main job
def test_pip_install_of_a_clone_then_the_main_job_from_an_empty_folder(tmp_path, frozen_now):
    """The issue's "done when": a fresh virtual environment, ``pip install <clone>``, then
    ``votersdaily crawl --all --offline`` from an empty folder elsewhere stores the events the main
    job stores, with the compiled path; nothing is written where the command ran."""
    clone = copy_clone(tmp_path / "clone")
    python = venv_python(tmp_path / "venv", system_site_packages=False)
    install(python, str(clone))
    empty, home = tmp_path / "empty", tmp_path / "data"
    empty.mkdir()
    env = user_env(XDG_DATA_HOME=str(home), VOTERSDAILY_FROZEN_NOW=frozen_now)
    for code in (NATIVE_CHECK, EVENTJSON_CHECK):
        check = subprocess.run([str(python), "-c", code], cwd=empty, env=env, capture_output=True, text=True)
        available, location = check.stdout.split()
        assert available == "True" and location.startswith(str(tmp_path / "venv")), check.stderr
    installed = subprocess.run(
        [str(tmp_path / "venv" / "bin" / "votersdaily"), "crawl", "--all", "--offline"],
        cwd=empty,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert (
        "events and run logs are in sqlite:///%s" % (home / "votersdaily" / "votersdaily.db")
        in installed.stderr
    )
    assert list(empty.iterdir()) == []

    # The main job as the README runs it: from the checkout, with its own store.
    main = subprocess.run(
        [sys.executable, "-m", "votersdaily", "crawl", "--all", "--offline"],
        cwd=REPO,
        env=user_env(
            PYTHONPATH=str(REPO),
            VOTERSDAILY_FROZEN_NOW=frozen_now,
            VOTERSDAILY_HOME=str(tmp_path / "main"),
        ),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert main.returncode == 0, main.stderr[-3000:]
    ours, theirs = (
        events_of(home / "votersdaily" / "votersdaily.db"),
        events_of(tmp_path / "main" / "votersdaily.db"),
    )
    assert len(theirs) > 300 and ours == theirs


@pytest.mark.slow  # a virtual environment and pip install of a git URL
def test_pip_install_of_a_git_url_brings_the_command_and_the_compiled_module(tmp_path):
    """``pip install git+<url>`` (of this repository's committed HEAD; the dependencies come from
    this environment, the fresh-environment test above downloads them)."""
    python = venv_python(tmp_path / "venv", system_site_packages=True)
    install(python, "git+file://%s" % REPO, deps=False)
    (tmp_path / "empty").mkdir()
    env = user_env(XDG_DATA_HOME=str(tmp_path / "data"))
    where = subprocess.run(
        [str(tmp_path / "venv" / "bin" / "votersdaily"), "where"],
        cwd=tmp_path / "empty",
        env=env,
        capture_output=True,
        text=True,
    )
    assert "data home  %s" % (tmp_path / "data" / "votersdaily") in where.stdout, where.stderr
    for code in (NATIVE_CHECK, EVENTJSON_CHECK):
        check = subprocess.run(
            [str(python), "-c", code], cwd=tmp_path / "empty", env=env, capture_output=True, text=True
        )
        available, location = check.stdout.split()
        assert available == "True" and location.startswith(str(tmp_path / "venv")), check.stderr
