"""Helpers for the deployment tests: background processes started the way a user starts them."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.support.services import REPO

TEST_SPIDERS = "votersdaily.spiders,tests.deploy.spiders"


def process_env(store_uri: str, **extra: str) -> dict:
    env = dict(os.environ)
    env["VOTERSDAILY_STORE"] = store_uri
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("SCRAPY_SETTINGS_MODULE", "votersdaily.settings")
    env.update(extra)
    return env


def start_crawl(spider: str, store_uri: str, *settings: str, log: Path, args: dict | None = None,
                env: dict | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "scrapy", "crawl", spider, "-s", "SPIDER_MODULES=" + TEST_SPIDERS]
    for s in settings:
        cmd += ["-s", s]
    for k, v in (args or {}).items():
        cmd += ["-a", "%s=%s" % (k, v)]
    return subprocess.Popen(cmd, cwd=REPO, env=process_env(store_uri, **(env or {})),
                            stdout=subprocess.DEVNULL, stderr=open(log, "wb"))


class Gate:
    """A site route that answers once the test opens the gate (to act at a known point of a crawl)."""

    def __init__(self):
        self.event = threading.Event()

    def body(self, payload: bytes):
        def _body(handler):
            self.event.wait(60)
            return payload
        return _body


@pytest.fixture
def gate():
    g = Gate()
    yield g
    g.event.set()
