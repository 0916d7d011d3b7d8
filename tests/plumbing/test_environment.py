"""One rule for settings given in the environment: the store, spool, archive and
Redis used to be read four ways, and every other documented variable
(``VOTERSDAILY_REDIS_IDLE_CLOSE=30 scrapy crawl ingest_worker``) was ignored."""

from __future__ import annotations

import pytest
from scrapy.crawler import Crawler
from scrapy.settings import Settings

from votersdaily.archive import archive_dir
from votersdaily.distributed import redis_url
from votersdaily.distributed.worker_spiders import IngestWorker
from votersdaily.store import store_uri
from votersdaily.store.spool import spool_dir


def _cmdline(**values) -> Settings:
    settings = Settings()
    settings.setdict(values, priority="cmdline")  # what -s gives
    return settings


@pytest.mark.parametrize(
    "read, setting, variable, values",
    [
        (store_uri, "VOTERSDAILY_STORE", "VOTERSDAILY_STORE", ("http://setting:5984/", "http://env:5984/")),
        (lambda s: str(spool_dir(s)), "VOTERSDAILY_SPOOL_DIR", "VOTERSDAILY_SPOOL_DIR", ("/setting", "/env")),
        (
            lambda s: str(archive_dir(s)),
            "VOTERSDAILY_ARCHIVE_DIR",
            "VOTERSDAILY_ARCHIVE_DIR",
            ("/setting", "/env"),
        ),
        (redis_url, "REDIS_URL", "VOTERSDAILY_REDIS_URL", ("redis://setting:6379/0", "redis://env:6379/0")),
    ],
)
def test_the_environment_wins_over_the_setting_and_empty_counts_as_unset(
    monkeypatch, read, setting, variable, values
):
    from_setting, from_environment = values
    settings = _cmdline(**{setting: from_setting})
    monkeypatch.setenv(variable, from_environment)
    assert read(settings) == from_environment
    monkeypatch.setenv(variable, "")
    assert read(settings) == from_setting


def test_a_crawl_reads_every_project_setting_from_the_environment(monkeypatch):
    monkeypatch.setenv("VOTERSDAILY_REDIS_IDLE_CLOSE", "30")
    monkeypatch.setenv("INGEST_PRIVATE_HOSTS", "127.0.0.1:8080,[::1]:8080")
    monkeypatch.setenv("VOTERSDAILY_REDIS_URL", "redis://127.0.0.1:1/0")
    monkeypatch.delenv("VOTERSDAILY_REDIS_LEASE", raising=False)
    crawler = Crawler(IngestWorker, _cmdline(VOTERSDAILY_REDIS_IDLE_CLOSE="5", VOTERSDAILY_REDIS_LEASE="7"))
    assert crawler.settings.getfloat("VOTERSDAILY_REDIS_IDLE_CLOSE") == 30.0
    assert crawler.settings.getlist("INGEST_PRIVATE_HOSTS") == ["127.0.0.1:8080", "[::1]:8080"]
    assert crawler.settings.get("REDIS_URL") == "redis://127.0.0.1:1/0"
    assert crawler.settings.getfloat("VOTERSDAILY_REDIS_LEASE") == 7.0  # not in the environment: -s
