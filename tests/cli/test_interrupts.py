"""Ctrl-C during ``crawl --all --offline``, with a real SIGINT to a real process.

Before: one Ctrl-C printed nothing and the crawl went on for seconds (requests waiting out a download
delay were still fetched); spiders that had done their work were recorded ``shutdown`` like the
others and the health page called them Broken; a second Ctrl-C left spiders without a run log.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time

import lxml.html
import pytest

from tests.support.cli_main import run_main
from tests.support.faultproxy import FaultProxy
from tests.support.services import REPO, cli_environment

# real SIGINTs to `crawl --all --offline` subprocesses, one through a slow store
pytestmark = pytest.mark.slow

FIRST = "votersdaily crawl: interrupted: stopping after the current requests; Ctrl-C again to stop now"
SECOND = "votersdaily crawl: interrupted again: stopping now;"
PROGRESS = re.compile(r"^\[\d+/\d+\] (\w+): (\S+), ")
#: Politeness the offline replay does not need, here so that the spiders with several documents are
#: still running (waiting out the delay) when the first spider finishes and the interrupt comes.
# Long enough that spiders with more than one document are still running when the interrupt comes,
# however loaded the machine is (a graceful stop drops what waits, so the test does not wait it out).
SLOW = ("-s", "DOWNLOAD_DELAY=10")


class Crawl:
    """``python -m votersdaily crawl --all --offline`` in a subprocess; standard error read as it comes."""

    def __init__(self, store_uri: str, tmp_path, *extra: str):
        env = dict(os.environ)
        env.update(cli_environment(store_uri, {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "votersdaily", "crawl", "--all", "--offline", *extra],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue = queue.Queue()
        self.err: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, pattern: re.Pattern, timeout: float = 180) -> str:
        deadline = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            assert line is not None, "the crawl ended first:\n" + "\n".join(self.err)
            self.err.append(line)
            if pattern.search(line):
                return line

    def interrupt(self) -> None:
        self.proc.send_signal(signal.SIGINT)

    def finish(self, timeout: float = 120) -> tuple[int, str, list[str]]:
        self.proc.wait(timeout=timeout)  # standard error is the reader thread's: no communicate()
        assert self.proc.stdout is not None
        out = self.proc.stdout.read()
        while (line := self.lines.get(timeout=10)) is not None:
            self.err.append(line)
        return self.proc.returncode, out, self.err


def run_logs(store_uri: str) -> dict[str, list[dict]]:
    dump = run_main("dump", "vd_log", store_uri=store_uri)
    assert dump.returncode == 0, dump.stderr
    logs: dict[str, list[dict]] = {}
    for line in dump.stdout.splitlines():
        doc = json.loads(line)
        logs.setdefault(doc["parser_name"], []).append(doc)
    return logs


def health(store_uri: str, tmp_path) -> dict[str, str]:
    built = run_main("site", "build", str(tmp_path / "site"), store_uri=store_uri)
    assert built.returncode == 0, built.stderr
    page = lxml.html.parse(str(tmp_path / "site" / "health.html")).getroot()
    return {row.get("data-spider"): row.get("data-status") for row in page.cssselect("tr.spider-row")}


def event_spiders() -> set[str]:
    from scrapy.utils.project import get_project_settings

    from votersdaily.cli.crawl import event_spiders as found

    return set(found(get_project_settings()))


def test_one_ctrl_c_stops_after_the_current_requests_and_says_so(sqlite_uri, tmp_path):
    crawl = Crawl(sqlite_uri, tmp_path, *SLOW)
    first = PROGRESS.match(crawl.wait_for(PROGRESS))
    assert first is not None
    finished_before = dict(PROGRESS.match(line).groups() for line in crawl.err if PROGRESS.match(line))
    crawl.interrupt()
    status, out, err = crawl.finish()

    assert status == 130, "\n".join(err)
    assert FIRST in err, err
    assert "Traceback" not in "\n".join(err), "\n".join(err)
    summary = [
        line for line in err if line.startswith("votersdaily crawl: interrupted: ") and "finished" in line
    ]
    assert len(summary) == 1 and "stopped before they finished" in summary[0]
    assert "result" in out  # the summary table is still printed

    logs = run_logs(sqlite_uri)
    assert set(logs) == event_spiders() and all(len(runs) == 1 for runs in logs.values())
    results = {name: runs[0]["result"] for name, runs in logs.items()}
    # A spider that finished before the interrupt keeps its own result.
    for name, result in finished_before.items():
        assert results[name] == result == "success"
    assert "shutdown" not in results.values()
    stopped = {name for name, result in results.items() if result == "interrupted"}
    assert stopped, results  # the delay kept some running: they were stopped, not left to finish
    for name in stopped:
        (log,) = logs[name]
        assert log["interrupted"] == "graceful" and log["finish_reason"] == "shutdown"
        assert "errors" not in log  # the requests left out are no failure of the source
    # The requests still waiting for the downloader were dropped, not fetched after the interrupt.
    assert sum(logs[name][0]["not_fetched_count"] for name in stopped) > 0

    statuses = health(sqlite_uri, tmp_path)
    assert {statuses[name] for name in stopped} == {"interrupted"}
    assert "broken" not in statuses.values(), statuses


def test_a_second_ctrl_c_stops_now_and_still_leaves_every_run_log(couch_uri, pouchdb, tmp_path):
    """Writes to the store take a second (a slow store, through a proxy), so spiders are still
    closing when the second Ctrl-C comes: their run logs, and what they had not written, are
    spooled, and ``flush`` delivers them."""
    proxy = FaultProxy(pouchdb.port).start()
    proxy.delay(b"/_bulk_docs", 1.0)
    try:
        crawl = Crawl(proxy.url, tmp_path, *SLOW)
        crawl.wait_for(re.compile(r"^\[1/\d+\] "))
        crawl.interrupt()
        crawl.wait_for(re.compile(re.escape(FIRST)))
        crawl.interrupt()
        status, _, err = crawl.finish()
    finally:
        proxy.stop()
    assert status == 130, "\n".join(err)
    assert any(line.startswith(SECOND) for line in err) and "Traceback" not in "\n".join(err)

    spool = tmp_path / "spool"
    spooled_logs = [
        json.loads(line)["doc"] for f in spool.glob("vd_log--*.jsonl") for line in f.read_text().splitlines()
    ]
    # The spiders the forced stop caught each say their run log was spooled; a spider still closing
    # (its write in flight when the second Ctrl-C came) may deliver that spool to the store before the
    # command ends (said once, "spooled by an earlier run"): the logs are then checked in the store.
    said_spooled = {
        m.group(1)
        for m in (
            re.match(r".*\] ERROR: (\w+) stopped before it finished: its run log", line) for line in err
        )
        if m
    }
    assert said_spooled, "\n".join(err)
    assert {log["parser_name"] for log in spooled_logs} <= said_spooled
    assert {log["result"] for log in spooled_logs} <= {"interrupted"}
    assert {log["interrupted"] for log in spooled_logs} <= {"forced"}

    # Spooled for the store the crawl was given (the proxy's address): delivered to the same store.
    flushed = run_main(
        "flush", "--from", proxy.url, store_uri=couch_uri, env={"VOTERSDAILY_SPOOL_DIR": str(spool)}
    )
    assert flushed.returncode == 0, flushed.stderr
    logs = run_logs(couch_uri)
    # Every spider has its run log, exactly one: stored as it closed, or spooled by the forced stop.
    assert set(logs) == event_spiders() and all(len(runs) == 1 for runs in logs.values()), logs.keys()
    assert {runs[0]["result"] for runs in logs.values()} <= {"success", "interrupted"}
    forced = [runs[0] for runs in logs.values() if runs[0].get("interrupted") == "forced"]
    # (A spooled log may have been delivered already, by a spider closing a moment later.)
    assert {log["_id"] for log in spooled_logs} <= {log["_id"] for log in forced}
    assert {log["parser_name"] for log in forced} == said_spooled
    # What a spider had scraped is stored or was spooled with its log (counted there), not lost.
    events = run_main("dump", "vd_events", store_uri=couch_uri).stdout.splitlines()
    assert len(events) >= sum(log["insert_count"] + log["spooled_count"] for log in forced)


def test_ctrl_c_outside_a_crawl_is_one_line_and_exit_130(couch_uri, pouchdb, sqlite_uri, tmp_path):
    """A command that runs no crawl (an export waiting on a slow store) stops with one line instead
    of a KeyboardInterrupt traceback."""
    from tests.support.inprocess import crawl_in_process
    from votersdaily.spiders.house_votes import HouseVotesSpider

    urls = ",".join(HouseVotesSpider.recording_urls())
    assert crawl_in_process(["house_votes", "-a", "url=" + urls], cli_environment(couch_uri)).returncode == 0
    proxy = FaultProxy(pouchdb.port).start()
    proxy.delay(b"/_design/", 30.0)  # every view read: the export waits
    env = dict(os.environ)
    env.update(cli_environment(proxy.url))
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "votersdaily", "export", "json"],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while proxy.delayed == 0 and time.monotonic() < deadline:  # it is waiting on the store
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proxy.stop()
    assert proc.returncode == 130, err
    assert err.splitlines() == ["votersdaily export: interrupted"] and out == ""


def interrupt_while_opening(proxy: FaultProxy, tmp_path, times: int) -> tuple[int, list[str]]:
    """``crawl --all --offline`` through ``proxy``, whose store answers each writer's view check 3 s
    late (each event pipeline's ``open_spider`` waits for it, as for the embedded store's own process
    while it starts: ``VOTERSDAILY_STORE_PROCESS``): Ctrl-C ``times`` times while the spiders are still
    opening; the exit status and standard error."""
    proxy.delay(b"/_design/", 3.0)
    crawl = Crawl(proxy.url, tmp_path, *SLOW)
    deadline = time.monotonic() + 60
    while proxy.delayed == 0 and time.monotonic() < deadline:  # a writer is opening: the reactor runs
        time.sleep(0.05)
    crawl.interrupt()
    if times > 1:
        crawl.wait_for(re.compile(re.escape(FIRST)))
        crawl.interrupt()
    try:
        status, _, err = crawl.finish(timeout=30)
    except subprocess.TimeoutExpired:
        crawl.proc.kill()
        _, _, err = crawl.finish()
        pytest.fail("the crawl did not end after Ctrl-C:\n" + "\n".join(err[-20:]))
    assert status == 130, "\n".join(err)
    assert FIRST in err and "Traceback" not in "\n".join(err), "\n".join(err)
    return status, err


def test_ctrl_c_while_spiders_are_still_opening_ends_the_crawl(couch_uri, pouchdb, tmp_path):
    """Before: ``Crawler.stop_async`` found the engine not yet running and only marked the crawler
    stopped; the engine then started, its requests were refused, its spider closed as idle, and
    Scrapy's stop at that close found the crawler stopped already: the crawl never ended (its run
    logs written, the reactor idle)."""
    proxy = FaultProxy(pouchdb.port).start()
    try:
        interrupt_while_opening(proxy, tmp_path, times=1)
    finally:
        proxy.stop()
    logs = run_logs(couch_uri)
    assert set(logs) == event_spiders() and all(len(runs) == 1 for runs in logs.values()), logs.keys()
    # None had fetched anything: each was stopped as it started, its start requests left out.
    for name, (log,) in logs.items():
        assert (log["result"], log["interrupted"], log["finish_reason"]) == (
            "interrupted",
            "graceful",
            "shutdown",
        ), (name, log)
        assert log["not_fetched_count"] >= 1 and "errors" not in log, (name, log)


def test_a_second_ctrl_c_while_spiders_are_still_opening_spools_every_run_log(pouchdb, tmp_path):
    """Before: a spider still opening had had no ``spider_opened``, so no run log was spooled when the
    reactor stopped: the crawl ended with no run log at all."""
    proxy = FaultProxy(pouchdb.port).start()
    try:
        _, err = interrupt_while_opening(proxy, tmp_path, times=2)
    finally:
        proxy.stop()
    assert any(line.startswith(SECOND) for line in err), err
    spooled = [
        json.loads(line)["doc"]
        for f in (tmp_path / "spool").glob("vd_log--*.jsonl")
        for line in f.read_text().splitlines()
    ]
    assert sorted(log["parser_name"] for log in spooled) == sorted(event_spiders())
    assert {(log["result"], log["interrupted"], log["finish_reason"]) for log in spooled} == {
        ("interrupted", "forced", "forced stop")
    }
    assert "0 spiders finished, %d stopped before they finished" % len(spooled) in err[-1], err[-1]
