"""The inner loop's configuration (CONTRIBUTING.md): the files run one at a time exist, and a run names
its test workers as tests/conftest.py says. (Slow tests carry ``pytest.mark.slow`` beside them, so a
renamed test keeps its mark.)"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import conftest
from tests.support.processes import STARTED, Gate, descendants, start_crawl, stop_leftover_crawls
from tests.support.services import REPO


@pytest.mark.parametrize("prefix", conftest.ONE_CLUSTER_AT_A_TIME)
def test_every_one_cluster_entry_names_a_test_file_or_test(prefix):
    """A renamed file would silently run beside the others (entries are node id prefixes: ``::test_a``
    covers ``test_a_and_b`` and every parameter of it)."""
    path, _, name = prefix.partition("::")
    target = REPO / path
    assert target.exists(), "%s: no such test file or folder" % path
    if name:
        assert re.search(r"^def %s\w*\(" % re.escape(name), target.read_text(encoding="utf-8"), re.M), (
            "%s: no test %s" % (path, name)
        )


#: A slow mark: a decorator, a module's ``pytestmark``, or one mark of a ``pytestmark`` list.
SLOW_MARK = re.compile(r"^\s*(@pytest\.mark\.slow\b|pytestmark = pytest\.mark\.slow\b|pytest\.mark\.slow,)")


def test_every_slow_mark_says_why():
    """What the slow list gave each entry: a reason, here a comment on the mark's line or above it."""
    unexplained = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            explained = "#" in line or lines[number - 1].lstrip().startswith("#")
            if SLOW_MARK.search(line) and not explained:
                unexplained.append("%s:%d" % (path.relative_to(REPO), number + 1))
    assert unexplained == []


@pytest.mark.parametrize(
    ("args", "workers"),
    [
        ([], conftest.WORKERS),
        (["tests"], conftest.WORKERS),
        (["tests/spiders"], conftest.WORKERS),
        (["tests/store/test_store.py", "tests/store/test_views.py::test_x"], conftest.WORKERS),
        (["tests/store/test_store.py::test_bulk_of_5000", "tests/store/test_views.py::test_x"], 0),
        (["tests/store/test_store.py"], 0),
        (["tests/store/test_store.py", "tests/store/test_store.py::test_bulk_of_5000"], 0),
    ],
)
def test_one_file_or_named_tests_run_without_workers(monkeypatch, args, workers):
    args = [str(REPO / arg) for arg in args]
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    assert conftest.pytest_xdist_auto_num_workers(SimpleNamespace(args=args)) == workers
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "3")
    assert conftest.pytest_xdist_auto_num_workers(SimpleNamespace(args=args)) == 3


def test_a_background_crawl_left_running_is_stopped_with_its_processes(site, sqlite_uri, tmp_path):
    """A test that fails before its background crawl ends must not leave that crawl (or the ingest's
    extraction processes) running into the next test of its worker, writing into the store and site
    that test is given: the autouse fixture's :func:`stop_leftover_crawls` kills the whole tree."""
    gate = Gate(timeout=120)
    url = site.route("/held", gate.body(b"held"), content_type="text/plain")
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps({"base_url": url, "ingest_type": "html"}) + "\n")
    crawl = start_crawl(
        "ingest",
        sqlite_uri,
        "INGEST_ALLOW_PRIVATE=True",
        "INGEST_ALLOWED_HOSTS=127.0.0.1",
        "INGEST_EXTRACT_PROCESSES=1",
        log=tmp_path / "crawl.log",
        args={"requests": requests},
    )
    try:
        deadline = time.monotonic() + 120
        while not (site.hits.get("/held") and descendants(crawl.pid)):
            assert crawl.poll() is None, (tmp_path / "crawl.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the crawl never reached the held page"
            time.sleep(0.05)
        tree = [*descendants(crawl.pid), crawl.pid]
        assert stop_leftover_crawls() == [crawl.pid]
        assert crawl.returncode is not None and not STARTED
        deadline = time.monotonic() + 30
        while alive := [pid for pid in tree if _running(pid)]:
            assert time.monotonic() < deadline, "still running: %s" % alive
            time.sleep(0.05)
    finally:
        gate.event.set()


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has: it waits for its reaper)."""
    try:
        state = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
