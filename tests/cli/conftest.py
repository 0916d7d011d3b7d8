"""The CLI as a user runs it; Redis from the deployment tests' fixture."""

import pytest

from tests.deploy.conftest import redis_server  # noqa: F401  (a fixture)
from tests.support.cli_main import run_main


@pytest.fixture
def cli_main():
    """``cli_main(*args, store_uri=…, env=…)``: ``python -m votersdaily`` in this process, for the
    commands that start no crawl (tests/support/cli_main.py); answered like the ``cli`` fixture."""
    return run_main
