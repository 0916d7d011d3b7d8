"""Scrapy's outputs an operator names, its log file (``LOG_FILE``; scrapyd gives each job one) and its
feeds to local files (``-o``, ``FEEDS``), on a full disk (a real small tmpfs, root only, skipped
otherwise) cost no event and are said once; one Scrapy cannot open is refused before the crawl.
The documents are the real House roll-call recordings, read from their files."""

from __future__ import annotations

import io
import logging
import sys

import pytest

from tests.support.tmpfs import assert_a_full_job_folder_stopped_the_start, fill, small_tmpfs
from votersdaily.scrapy_outputs import GuardedLogFile, output_problems
from votersdaily.spiders.house_votes import HouseVotesSpider
from votersdaily.store import open_store

URLS = HouseVotesSpider.recording_urls()


def said_once(stderr: str, log_file: str) -> None:
    """One line says the log file failed, naming it and its folder; no traceback anywhere."""
    lines = [line for line in stderr.splitlines() if "log file" in line]
    assert len(lines) == 1, stderr[-3000:]
    folder = log_file.rsplit("/", 1)[0]
    assert lines[0].endswith(
        "ERROR: the log file %s cannot take more (No space left on device): the rest of the log goes to "
        "standard error; make room in %s or point LOG_FILE elsewhere" % (log_file, folder)
    )
    assert "Traceback" not in stderr and "Logging error" not in stderr, stderr[-3000:]


def stored(store_uri: str) -> tuple[list[str], list[str]]:
    store = open_store(store_uri)
    try:
        keys = sorted(doc["unique_key"] for doc in store.iter_docs("vd_events"))
        results = [doc["result"] for doc in store.iter_docs("vd_log")]
    finally:
        store.close()
    return keys, results


@pytest.fixture
def expected_keys(crawl, tmp_path):
    """What the same crawl stores with its log file on a disk with room."""
    uri = "sqlite:///%s" % (tmp_path / "reference.db")
    proc = crawl("house_votes", URLS, uri, "-s", "LOG_FILE=%s" % (tmp_path / "crawl.log"), subprocess=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    keys, results = stored(uri)
    assert len(keys) == 3 and results == ["success"]
    return keys


def test_a_log_file_whose_disk_fills_during_the_crawl_costs_no_event(
    crawl, sqlite_uri, tmp_path, expected_keys
):
    """Before: "--- Logging error ---" and a traceback for every record once the disk was full,
    then an ``OSError`` traceback and exit 1 when Scrapy closed the handler."""
    with small_tmpfs(tmp_path / "logs", size="64k") as folder:
        fill(folder, leave=8192)  # the start-up lines fit, the crawl's DEBUG lines do not
        log_file = str(folder / "crawl.log")
        proc = crawl(
            "house_votes",
            URLS,
            sqlite_uri,
            "-s",
            "LOG_FILE=%s" % log_file,
            "-s",
            "LOG_LEVEL=DEBUG",
            subprocess=True,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        said_once(proc.stderr, log_file)
        kept = (folder / "crawl.log").read_text("utf-8", "replace")
        assert "Scrapy 2." in kept and "Spider closed" not in kept  # the file holds the start
        assert "Spider closed (finished)" in proc.stderr  # and the rest went on standard error
    assert stored(sqlite_uri) == (expected_keys, ["success"])


@pytest.mark.parametrize("command", ["scrapy crawl", "votersdaily crawl"])
def test_a_log_file_on_a_disk_full_from_the_start_costs_no_event(
    command, crawl, cli, sqlite_uri, tmp_path, expected_keys
):
    """Before: ``scrapy crawl`` crawled nothing: exit 1 on an ``OSError`` traceback as the crawler was
    made, no run log."""
    with small_tmpfs(tmp_path / "logs", size="64k") as folder:
        fill(folder)
        log_file = str(folder / "crawl.log")
        setting = "LOG_FILE=%s" % log_file
        if command == "scrapy crawl":
            proc = crawl("house_votes", URLS, sqlite_uri, "-s", setting, subprocess=True)
        else:
            proc = cli(
                "crawl", "house_votes", "--log-level", "INFO", "-a", "url=" + ",".join(URLS), "-s", setting,
                store_uri=sqlite_uri,
            )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        said_once(proc.stderr, log_file)
    assert stored(sqlite_uri) == (expected_keys, ["success"])


@pytest.mark.parametrize("command", ["scrapy crawl", "votersdaily crawl"])
@pytest.mark.parametrize(
    "where, says",
    [
        (
            "missing/crawl.log",
            "LOG_FILE names {d}/missing/crawl.log, whose folder {d}/missing does not exist",
        ),
        ("a-folder", "LOG_FILE names {d}/a-folder, which is a folder, not a file"),
        (
            "a-file/crawl.log",
            "LOG_FILE names {d}/a-file/crawl.log, under {d}/a-file, which is a file, not a folder",
        ),
    ],
)
def test_a_log_file_scrapy_cannot_open_is_refused_before_the_crawl(
    command, where, says, crawl, cli, tmp_path
):
    """Before: a ``FileNotFoundError`` or ``IsADirectoryError`` traceback, exit 1."""
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "a-file").write_text("not a folder")
    uri = "sqlite:///%s" % (tmp_path / "store.db")
    setting = "LOG_FILE=%s" % (tmp_path / where)
    if command == "scrapy crawl":
        proc = crawl("house_votes", URLS, uri, "-s", setting, subprocess=True)
    else:
        proc = cli("crawl", "house_votes", "--offline", "-s", setting, store_uri=uri)
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith("%s: %s" % (command, says.format(d=tmp_path)))
    assert not (tmp_path / "store.db").exists() and not (tmp_path / "missing").exists()


def test_scrapys_logfile_option_is_checked_as_the_setting(crawl, tmp_path):
    proc = crawl(
        "house_votes", URLS, "sqlite:///%s" % (tmp_path / "store.db"), "--logfile", str(tmp_path / "no/x.log")
    )
    assert proc.returncode == 2 and proc.stderr.startswith(
        "scrapy crawl: LOG_FILE names %s/no/x.log" % tmp_path
    )


def test_the_handlers_scrapy_makes_for_one_full_log_file_say_it_once(tmp_path, monkeypatch):
    """Scrapy makes one handler for the crawler process and one for each crawler: once a file failed,
    a later handler for it writes to standard error from the start (no log split back and forth), and
    closing either leaves standard error open."""
    errors = io.StringIO()
    monkeypatch.setattr(sys, "stderr", errors)
    monkeypatch.setattr(GuardedLogFile, "failed", set())
    logger = logging.getLogger("tests.logfile")
    logger.propagate = False
    monkeypatch.setattr(logger, "handlers", [])
    with small_tmpfs(tmp_path / "logs", size="64k") as folder:
        fill(folder)
        log_file = folder / "crawl.log"
        first = GuardedLogFile.adopt(logging.FileHandler(log_file))
        logger.addHandler(first)
        monkeypatch.setattr(logging.getLogger("votersdaily.scrapy_outputs"), "handlers", [first])
        logger.warning("one")
        first.close()
        logger.removeHandler(first)
        second = GuardedLogFile.adopt(logging.FileHandler(log_file))
        logger.addHandler(second)
        logger.warning("two")
        second.close()
        assert log_file.read_bytes() == b""
    lines = errors.getvalue().splitlines()
    assert lines[1:] == ["one", "two"] and lines[0].startswith("the log file %s cannot take more" % log_file)
    assert not errors.closed


def test_outputs_that_may_be_written_are_no_problem(tmp_path):
    """Scrapy makes a feed's missing folders; a remote feed or standard output is not checked here."""
    feeds = {
        str(tmp_path / "new/folders/out.jsonl"): {},
        (tmp_path / "out.csv").as_uri(): {},
        str(tmp_path / "%(name)s/%(time)s.jsonl"): {},
        "s3://bucket/out.jsonl": {},
        "stdout:": {},
    }
    assert output_problems({"LOG_FILE": str(tmp_path / "crawl.log"), "FEEDS": feeds}) == []
    assert output_problems({"LOG_FILE": None, "FEEDS": {}}) == []


def test_a_feed_whose_disk_fills_is_cut_short_said_once_and_fails_the_run(
    crawl, sqlite_uri, tmp_path, expected_keys
):
    """Before: "Error caught on signal handler" for every item, then "Stored jsonl feed (3 items)",
    ``feedexport/success_count`` 1 and exit 0, the feed empty or cut."""
    with small_tmpfs(tmp_path / "feeds", size="64k") as folder:
        fill(folder, leave=4096)  # room for the first items' lines, not for all three
        feed = folder / "events.jsonl"
        proc = crawl("house_votes", URLS, sqlite_uri, "-o", str(feed), subprocess=True)
        assert proc.returncode == 1, proc.stderr[-3000:]
        said = [line for line in proc.stderr.splitlines() if "feed" in line and "ERROR" in line]
        assert len(said) == 1 and said[0].endswith(
            "ERROR: the feed's folder %s is full (No space left on device): the feed %s is cut short where it "
            "filled; the items missing from it are in the store" % (folder, feed)
        )
        assert "Error caught on signal handler" not in proc.stderr and "Traceback" not in proc.stderr
        assert 0 < feed.stat().st_size < 3 * 4096
    store = open_store(sqlite_uri)
    try:
        keys = sorted(doc["unique_key"] for doc in store.iter_docs("vd_events"))
        (log,) = store.iter_docs("vd_log")
    finally:
        store.close()
    assert keys == expected_keys and log["result"] == "OutputFolderFull"
    assert {error["where"] for error in log["errors"]} == {"output"}


@pytest.mark.parametrize(
    "feed, says",
    [
        (
            "a-file/out.jsonl",
            "the feed (-o, FEEDS) names {d}/a-file/out.jsonl, under {d}/a-file, which is a file",
        ),
        ("a-folder:jsonl", "the feed (-o, FEEDS) names {d}/a-folder, which is a folder, not a file"),
        ("a-file/%(name)s.jsonl", "the feed (-o, FEEDS) names {d}/a-file/%(name)s.jsonl, under {d}/a-file"),
    ],
)
def test_a_feed_scrapy_cannot_open_is_refused_before_the_crawl(feed, says, crawl, tmp_path):
    """Before: an error per item, then "Task exception was never retrieved" and a traceback, exit 0."""
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "a-file").write_text("not a folder")
    uri = "sqlite:///%s" % (tmp_path / "store.db")
    proc = crawl("house_votes", URLS, uri, "-o", str(tmp_path / feed), subprocess=True)
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith("scrapy crawl: " + says.format(d=tmp_path))
    assert not (tmp_path / "store.db").exists()


def test_a_full_job_folder_fails_the_run_naming_the_folder(crawl, sqlite_uri, tmp_path):
    """``JOBDIR`` (Scrapy's queue on disk) on a full disk: Scrapy stops before the first request.
    Before: the run log said ``interrupted`` (the reason Scrapy gives, ``shutdown``, is a person's
    stop's), with no word of the disk."""
    with small_tmpfs(tmp_path / "job", size="64k") as folder:
        fill(folder)
        proc = crawl("house_votes", URLS, sqlite_uri, "-s", "JOBDIR=%s" % folder, subprocess=True)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert_a_full_job_folder_stopped_the_start(proc.stderr, "house_votes", folder, sqlite_uri)


def test_a_job_folder_that_is_a_file_is_refused_before_the_crawl(crawl, tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    uri = "sqlite:///%s" % (tmp_path / "store.db")
    proc = crawl("house_votes", URLS, uri, "-s", "JOBDIR=%s" % (tmp_path / "a-file"), subprocess=True)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "scrapy crawl: JOBDIR names %s/a-file, which is a file, not a folder" % tmp_path
    ]
