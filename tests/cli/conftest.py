"""The CLI as a user runs it; Redis from tests/support/processes.py."""

import pytest

from tests.support.cli_main import run_main
from tests.support.processes import redis_server  # noqa: F401  (a fixture)


@pytest.fixture
def cli_main():
    """``cli_main(*args, store_uri=…, env=…)``: ``python -m votersdaily`` in this process, for the
    commands that start no crawl (tests/support/cli_main.py); answered like the ``cli`` fixture."""
    return run_main


@pytest.fixture(scope="module")
def house_votes_store(tmp_path_factory):
    """An embedded store with the house_votes recordings in it (crawled in the test process)."""
    from tests.support.inprocess import crawl_in_process
    from tests.support.services import cli_environment
    from votersdaily.spiders.house_votes import HouseVotesSpider

    uri = "sqlite:///%s" % (tmp_path_factory.mktemp("house_votes") / "store.db")
    urls = ",".join(HouseVotesSpider.recording_urls())
    proc = crawl_in_process(["house_votes", "-a", "url=" + urls], cli_environment(uri))
    assert proc.returncode == 0, proc.stderr
    return uri
