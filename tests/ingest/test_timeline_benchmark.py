"""``python3 -m benchmarks.ingest_timeline`` runs one probed ingest crawl of the benchmark's PDF
chains and prints where its time went. A small run, checked for what it prints and that every chain
was followed, not for its speed (speed is the benchmarks' own business)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.services import REPO

pytestmark = pytest.mark.slow  # a whole `scrapy crawl ingest` in a subprocess, with its extraction processes


def test_the_timeline_benchmark_follows_every_chain_and_says_where_it_waited():
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.ingest_timeline", "--n", "4", "--sets", "pdf"],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    out = run.stdout
    assert re.search(r"^window [0-9.]+ s: first request [0-9.]+ ms after spider_opened", out, re.M), out
    for hop in ("landing", "pdf"):
        assert re.search(r"^examine_hop %s +n=4: submitted -> started" % hop, out, re.M), out
        assert re.search(r"^%s +extraction +n=4 median" % hop, out, re.M), out
    # rendered by the spider, or (the warm renderer built) inside the PDF's extraction call
    assert re.search(r"^page0( \(extraction process\))? +n=4: median", out, re.M), out
    assert re.search(r"^persist +n=4: median", out, re.M), out
    # each extraction process's CPU beside its wall-clock busy time: its calls' CPU, some, within its own
    processes = re.findall(
        r"^extraction process \d+: \d+ calls, busy [0-9.]+ s \(wall clock\); CPU ([0-9.]+) s in its "
        r"calls, ([0-9.]+) s since its start, its page-0 renderers [0-9.]+ s$",
        out,
        re.M,
    )
    assert processes, out
    assert all(0 < float(calls) <= float(total) for calls, total in processes), out
    assert sum(float(calls) for calls, _ in processes) > 0.001, out  # 8 calls: a PDF's pypdf alone is ms
    assert re.search(
        r"^extraction CPU per ingest: [0-9.]+ ms in calls, [0-9.]+ ms in the processes", out, re.M
    ), out
    completed = re.findall(r"\d+:\d+/\d+/\d+/\d+/(\d+)", out)
    assert sum(map(int, completed)) == 4, out  # every chain ended in an item inside the window


def test_every_pdf_chain_of_the_benchmark_serves_a_file_of_its_own_with_the_recordings_text():
    """The chains' PDFs are derived variants of the one real recording (its trailer's /ID varied):
    each its own SHA-1, every byte else the recording's, the same document to extract."""
    from benchmarks.ingest import pdf_variant, recorded_pdf
    from votersdaily.ingest.pdf import extract_pdf

    pdf = recorded_pdf()
    variants = [pdf_variant(pdf, i) for i in range(200)]
    assert pdf_variant(pdf, None) == pdf
    assert len({hashlib.sha1(v).digest() for v in variants} | {hashlib.sha1(pdf).digest()}) == 201
    for variant in (variants[0], variants[199]):
        assert len(variant) == len(pdf)
        assert sum(a != b for a, b in zip(variant, pdf, strict=True)) <= 8  # within the /ID's last 8 digits
        meta, text, _ = extract_pdf(variant, thumbnail=False)
        assert (meta["status"], text) == ("success", extract_pdf(pdf, thumbnail=False)[1])


def test_the_crawl_cpu_meter_reads_the_threads_wait_for_a_core_not_its_run_time():
    """``reactor_waited`` is the scheduler's runnable-but-waiting time (schedstat's second field),
    not the thread's CPU (its first), which grows by every second the thread computes."""
    import threading
    import time

    from benchmarks.crawl_cpu import _runqueue_wait

    schedstat = Path("/proc/thread-self/schedstat")
    if not schedstat.exists():
        pytest.skip("this kernel keeps no schedstat")
    readings: list[tuple[float, float, float]] = []

    def busy_thread() -> None:
        before = _runqueue_wait(), time.thread_time()
        while time.thread_time() - before[1] < 0.3:
            pass
        run_ns, wait_ns = (int(field) for field in schedstat.read_text().split()[:2])
        readings.append((_runqueue_wait() - wait_ns / 1e9, before[0], run_ns / 1e9))

    thread = threading.Thread(target=busy_thread)
    thread.start()
    thread.join()
    drift, waited_before, ran = readings[0]
    assert 0 <= drift < 0.05  # the same field, read a moment later
    assert waited_before >= 0
    assert ran >= 0.3  # the first field holds the 0.3 s computed; the meter does not read it
