"""Background processes started the way a user starts them: crawls with the deployment tests' settings
(tests/deploy/settings.py), a gate to stop one at a known point, Redis, scrapyd and a scrapyd node."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.deploy.settings import SPIDER_MODULES
from tests.support.packaging import build_wheel, copy_clone, install, venv_python
from tests.support.services import REPO, TEST_HOME, free_port, which
from votersdaily.store.names import PREFIX_ENV

TEST_SPIDERS = ",".join(SPIDER_MODULES)
TEST_SETTINGS = "tests.deploy.settings"


def process_env(store_uri: str, **extra: str) -> dict:
    env = dict(os.environ)
    env["VOTERSDAILY_STORE"] = store_uri
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["SCRAPY_SETTINGS_MODULE"] = TEST_SETTINGS
    env.setdefault("VOTERSDAILY_HOME", TEST_HOME)  # what a crawl does not place itself: not the checkout
    env.update(extra)
    return env


#: The crawl processes :func:`start_crawl` started for the running test: one still running when the
#: test ends (it failed or timed out before its crawl did) is stopped with its descendants
#: (:func:`stop_leftover_crawls`, an autouse fixture of tests/conftest.py), so it never writes into
#: the store, site or Redis the next test of its pytest worker is given.
STARTED: list[subprocess.Popen] = []


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux /proc), children first."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for children in Path("/proc/%d/task" % parent).glob("*/children"):
            try:
                kids = [int(k) for k in children.read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def stop_leftover_crawls() -> list[int]:
    """SIGKILL every crawl of :data:`STARTED` still running, and its descendants (extraction
    processes, renderers); the pids of the crawls stopped."""
    stopped = []
    for crawl in STARTED:
        if crawl.poll() is not None:
            continue
        for pid in (*descendants(crawl.pid), crawl.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        crawl.wait(30)
        stopped.append(crawl.pid)
    STARTED.clear()
    return stopped


def start_crawl(
    spider: str, store_uri: str, *settings: str, log: Path, args: dict | None = None, env: dict | None = None
) -> subprocess.Popen:
    """``scrapy crawl <spider>`` in the background, as a user starts it; stopped at the end of the
    test if it is still running then (:data:`STARTED`)."""
    cmd = [sys.executable, "-m", "scrapy", "crawl", spider, "-s", "SPIDER_MODULES=" + TEST_SPIDERS]
    for s in settings:
        cmd += ["-s", s]
    for k, v in (args or {}).items():
        cmd += ["-a", "%s=%s" % (k, v)]
    crawl = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=process_env(store_uri, **(env or {})),
        stdout=subprocess.DEVNULL,
        stderr=open(log, "wb"),
    )
    STARTED.append(crawl)
    return crawl


class Gate:
    """A site route that answers once the test opens the gate (to act at a known point of a crawl)."""

    def __init__(self, timeout: float = 60):
        self.event = threading.Event()
        #: How long an answer waits at most (a safety valve: a test waits for its own event first).
        self.timeout = timeout

    def body(self, payload: bytes):
        def _body(handler):
            self.event.wait(self.timeout)
            return payload

        return _body


@pytest.fixture
def gate():
    g = Gate()
    yield g
    g.event.set()


class RedisServer:
    """Debian's redis-server on a free loopback port in a temporary folder, with the append-only
    file synced as ``appendfsync`` says (``always``: on every write, so a kill loses nothing it
    answered; ``everysec``: the production line of docs/operations.md) or, with ``appendfsync=None``,
    no persistence at all (``--save ""``, the line the docs gave before: a restart loses the queue)."""

    def __init__(self, workdir: Path, appendfsync: str | None = "everysec", extra: tuple[str, ...] = ()):
        self.workdir = workdir
        self.port = free_port()
        self.appendfsync = appendfsync
        self.extra = extra
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return "redis://127.0.0.1:%d/0" % self.port

    def command(self) -> list[str]:
        persistence = (
            ("--appendonly", "yes", "--appendfsync", self.appendfsync)
            if self.appendfsync
            else ("--appendonly", "no")
        )
        return [
            "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            *persistence,
            "--dir",
            str(self.workdir),
            *self.extra,
        ]

    def start(self) -> RedisServer:
        import redis

        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            self.command(), stdout=open(self.workdir / "redis.log", "ab"), stderr=subprocess.STDOUT
        )
        client = redis.Redis.from_url(self.url)
        for _ in range(100):
            try:
                client.ping()
                return self
            except redis.ConnectionError:
                time.sleep(0.05)
            except redis.ResponseError:  # NOAUTH: a password is set; it answers
                return self
        raise RuntimeError("redis-server did not start: %s" % (self.workdir / "redis.log").read_text())

    def client(self, **kwargs):
        import redis

        return redis.Redis.from_url(self.url, **kwargs)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill: no shutdown save (the append-only file has it all)."""
        self.proc.kill()
        self.proc.wait(10)


def _redis(tmp_path, appendfsync: str | None, name: str = "redis"):
    if not which("redis-server"):
        pytest.skip("redis-server is not installed (scripts/setup.sh installs Debian's redis-server)")
    return RedisServer(tmp_path / name, appendfsync=appendfsync).start()


@pytest.fixture
def redis_server(tmp_path):
    """Redis as docs/operations.md starts it: an append-only file, fsynced every second."""
    server = _redis(tmp_path, "everysec")
    yield server
    server.stop()


@pytest.fixture
def durable_redis(tmp_path):
    """A Redis whose data survives a kill and a restart on the same port: every write fsynced."""
    server = _redis(tmp_path, "always")
    yield server
    server.stop()


@pytest.fixture
def volatile_redis(tmp_path):
    """A Redis without persistence (``--save "" --appendonly no``): a restart loses everything."""
    server = _redis(tmp_path, None, "volatile-redis")
    yield server
    server.stop()


@dataclass(frozen=True)
class Deployment:
    """What an operator puts on a scrapyd node (docs/operations.md): the package installed in the
    node's Python (here a virtual environment over this one's dependencies), and the egg
    ``scrapyd-deploy`` uploads."""

    python: Path
    egg: Path


def deployment(workdir: Path) -> Deployment:
    """The wheel and the egg built from a copy of the clone (builds leave build/ and *.egg-info
    where they run), the wheel installed into the node's environment."""
    source = copy_clone(workdir / "project")
    wheel = build_wheel(source, workdir / "dist")
    python = venv_python(workdir / "node-env", system_site_packages=True)
    install(python, str(wheel), deps=False)
    egg = workdir / "votersdaily.egg"
    subprocess.run(
        [sys.executable, "-m", "scrapyd_client.deploy", "--build-egg", str(egg)],  # scrapyd-deploy
        cwd=source,
        check=True,
        capture_output=True,
        env=dict(os.environ, PYTHONPATH=""),
    )
    return Deployment(python, egg)


class ScrapydServer:
    """A real scrapyd on a free loopback port, configured as docs/operations.md documents it (HTTP basic
    auth on every endpoint); everything it keeps lives in ``workdir``."""

    USERNAME, PASSWORD = "deployer", "deploy-s3cret"

    def __init__(
        self, workdir: Path, env: dict, python: Path | str = sys.executable, credentials: bool = True
    ):
        self.workdir = workdir
        self.port = free_port()
        self.env = env
        #: The node's Python: scrapyd runs each job with it (``python -m scrapyd.runner``).
        self.python = python
        #: False: a scrapyd.conf without username and password (scrapyd then answers anyone).
        self.credentials = credentials
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d/" % self.port

    @property
    def auth_url(self) -> str:
        """The URL with the credentials, as the scheduler's ``--scrapyd`` takes it."""
        return "http://%s:%s@127.0.0.1:%d/" % (self.USERNAME, self.PASSWORD, self.port)

    def start(self) -> ScrapydServer:
        from tests.support.services import wait_http

        self.workdir.mkdir(parents=True, exist_ok=True)
        credentials = (
            "username = %s\npassword = %s\n" % (self.USERNAME, self.PASSWORD) if self.credentials else ""
        )
        (self.workdir / "scrapyd.conf").write_text(
            "[scrapyd]\nbind_address = 127.0.0.1\nhttp_port = %d\n%s"
            "eggs_dir = %s\nlogs_dir = %s\ndbs_dir = %s\nitems_dir =\njobs_to_keep = 20\nmax_proc = 4\n"
            "poll_interval = 0.2\n"
            % (
                self.port,
                credentials,
                self.workdir / "eggs",
                self.workdir / "logs",
                self.workdir / "dbs",
            )
        )
        self.proc = subprocess.Popen(
            [str(self.python), "-m", "scrapyd"],
            cwd=self.workdir,
            env=self.env,
            stdout=open(self.workdir / "scrapyd.out", "ab"),
            stderr=subprocess.STDOUT,
        )
        wait_http(
            self.url + "daemonstatus.json", auth=(self.USERNAME, self.PASSWORD) if self.credentials else None
        )
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(20)

    def job_log(self, spider: str, jobid: str) -> str:
        path = self.workdir / "logs" / "votersdaily" / spider / ("%s.log" % jobid)
        return path.read_text() if path.exists() else "(no log at %s)" % path


def scrapyd_env(store_uri: str, workdir: Path, **extra: str) -> dict:
    """The node's environment: the store and the data home come from here, never from the egg; no
    checkout on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SCRAPY_", "VOTERSDAILY_"))}
    if PREFIX_ENV in os.environ:  # a real CouchDB shared by the tests (tests/conftest.py)
        env[PREFIX_ENV] = os.environ[PREFIX_ENV]
    env["PYTHONPATH"] = ""
    env["VOTERSDAILY_STORE"] = store_uri
    env["VOTERSDAILY_HOME"] = str(workdir / "home")
    env["VOTERSDAILY_SPOOL_DIR"] = str(workdir / "spool")
    env["VOTERSDAILY_ARCHIVE_DIR"] = str(workdir / "archive")
    env.update(extra)
    return env


class SchedulerLoop:
    """``python -m votersdaily scheduler --scrapyd <url> <args>`` in loop mode on ``store_uri``, its
    output (both streams) in ``out``; :meth:`stop` signals it as a person or systemd does."""

    def __init__(
        self, scrapyd_url: str, store_uri: str, out: Path, *args: str, environment: dict | None = None
    ) -> None:
        from tests.support.services import cli_environment

        self.out = out
        with open(out, "wb") as output:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "votersdaily", "scheduler", "--scrapyd", scrapyd_url, *args],
                cwd=REPO,
                env=dict(os.environ, **cli_environment(store_uri, environment or {})),
                stdout=output,
                stderr=subprocess.STDOUT,
            )

    def text(self) -> str:
        return self.out.read_text()

    def wait_for(self, text: str, deadline: float) -> None:
        """Until ``text`` is in its output or ``time.monotonic()`` passes ``deadline``."""
        while time.monotonic() < deadline and text not in self.text():
            time.sleep(0.1)

    def stop(self, signum: int) -> int | str:
        """Send ``signum``; the exit status, or why there is none (killed after 20 s)."""
        self.proc.send_signal(signum)
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:  # its output says where it was
            self.proc.kill()
            self.proc.wait()
            return "still running 20 s after the signal"
