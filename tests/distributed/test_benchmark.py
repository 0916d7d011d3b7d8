"""``python3 -m benchmarks.distributed`` runs from the repository alone: with no
``shared`` folder anywhere it serves the project's own recordings. A small run, checked for what it
prints, not for its speed (speed is the benchmark's own business)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys

import pytest

from tests.support.services import REPO

pytestmark = pytest.mark.slow  # separate processes: Redis, workers, killed and restarted services


def test_the_distributed_benchmark_runs_without_the_shared_folder(tmp_path):
    nowhere = tmp_path / "no-shared-folder"
    env = dict(os.environ, VOTERSDAILY_SHARED=str(nowhere), PYTHONPATH=str(REPO))
    env.pop("VOTERSDAILY_REDIS_URL", None)
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.distributed", "--requests", "21", "--workers", "1"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "over the project's own recordings: 21 government documents (6 html, 15 xml)" in run.stdout
    assert "(every request fetched, and by the workers exactly once, in every run: True)" in run.stdout
    (outcomes,) = re.findall(r"ingest outcomes \(plain spider\): (\{.*\})", run.stdout)
    assert sum(ast.literal_eval(outcomes).values()) == 21, "one result per request, whatever its status"
    assert not nowhere.exists()
    scholarly = subprocess.run(
        [sys.executable, "-m", "benchmarks.distributed", "--workload", "scholarly"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (
        scholarly.returncode == 1
        and "the default workload (--workload recordings) needs nothing" in scholarly.stderr
    )
