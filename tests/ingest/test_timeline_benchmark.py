"""``python3 -m benchmarks.ingest_timeline`` runs one probed ingest crawl of the benchmark's PDF
chains and prints where its time went. A small run, checked for what it prints and that every chain
was followed, not for its speed (speed is the benchmarks' own business)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

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
    completed = re.findall(r"\d+:\d+/\d+/\d+/\d+/(\d+)", out)
    assert sum(map(int, completed)) == 4, out  # every chain ended in an item inside the window
