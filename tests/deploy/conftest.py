"""Helpers for the deployment tests: background processes started the way a user starts them."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.services import REPO, free_port, which

TEST_SPIDERS = "votersdaily.spiders,tests.deploy.spiders"
TEST_SETTINGS = "tests.deploy.settings"


def process_env(store_uri: str, **extra: str) -> dict:
    env = dict(os.environ)
    env["VOTERSDAILY_STORE"] = store_uri
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["SCRAPY_SETTINGS_MODULE"] = TEST_SETTINGS
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


class RedisServer:
    """Debian's redis-server on a free loopback port, no persistence, in a temporary folder."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return "redis://127.0.0.1:%d/0" % self.port

    def start(self) -> "RedisServer":
        import redis

        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir)],
            stdout=open(self.workdir / "redis.log", "wb"), stderr=subprocess.STDOUT,
        )
        client = redis.Redis.from_url(self.url)
        for _ in range(100):
            try:
                client.ping()
                return self
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start: %s" % (self.workdir / "redis.log").read_text())

    def client(self):
        import redis

        return redis.Redis.from_url(self.url)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


@pytest.fixture
def redis_server(tmp_path):
    if not which("redis-server"):
        pytest.skip("redis-server is not installed (scripts/setup.sh installs Debian's redis-server)")
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()
