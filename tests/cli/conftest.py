"""The CLI as a user runs it; Redis from the deployment tests' fixture."""

import pytest

from tests.cli.in_process import run_main
from tests.deploy.conftest import redis_server  # noqa: F401  (a fixture)


@pytest.fixture
def cli_main():
    """``cli_main(*args, store_uri=…, env=…)``: ``python -m votersdaily`` in this process, for the
    commands that start no crawl (tests/cli/in_process.py); answered like the ``cli`` fixture."""
    return run_main
