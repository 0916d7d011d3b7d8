"""``scrapy crawl`` inside the test process, as Scrapy's own tests run crawls: no interpreter start-up.

One asyncio Twisted reactor (the project's ``TWISTED_REACTOR``) is installed for the test session and
runs in a thread of its own, *parked* between crawls: it only turns while a crawl runs, so tests that
touch Twisted or asyncio between crawls (``get_crawler``, ``asyncio.run``, Playwright's sync API) see a
quiet reactor and no running event loop in the test thread, as before. (``pytest-twisted`` runs the
reactor in a greenlet of the test thread instead, which leaves its event loop "running" there and breaks
``asyncio.run`` and Playwright's sync API in the same session.)

``crawl_in_process(argv, env)`` parses the command line with Scrapy's own ``crawl`` command, applies the
environment a subprocess would get, runs the crawl with a ``CrawlerRunner`` and answers a
``CompletedProcess`` with the exit status the project's ``scrapy crawl`` gives (votersdaily/commands/
crawl.py: 2 for a bad setting, 1 when the run failed) and the crawl's log in ``stderr``.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import queue
import subprocess
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from scrapy.utils.reactor import install_reactor

from tests.support.services import REPO

#: What the project's settings ask for; installed once, before anything imports the default reactor.
REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
#: ``scrapy crawl`` options this runner understands; any other option runs the crawl in a subprocess.
IN_PROCESS_OPTIONS = {"-s", "--set", "-a", "-o", "--output", "-O", "--overwrite-output", "-L", "--loglevel"}


def install_session_reactor() -> None:
    """Install the asyncio reactor (a no-op if it is installed already); call before any test runs."""
    install_reactor(REACTOR)


class ParkedReactor:
    """The session's reactor in a daemon thread; ``call(f)`` runs ``f`` in it and waits for its result."""

    def __init__(self) -> None:
        self._jobs: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="test-reactor", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from twisted.internet import reactor

        # Park from inside the event loop: "when running" fires before the asyncio loop has started.
        reactor.callWhenRunning(reactor.callLater, 0, self._park)
        reactor.run(installSignalHandlers=False)

    def _park(self) -> None:
        """Block the reactor thread until the next job; the reactor turns only while a job runs."""
        from twisted.internet import defer, reactor

        job = self._jobs.get()
        if job is None:
            reactor.stop()
            return
        func, answer = job
        d = defer.maybeDeferred(func)

        def done(result: Any) -> None:
            answer.put(result)
            # Let the reactor finish what the job left behind (closing connections) before parking.
            reactor.callLater(0.05, self._park)

        d.addBoth(done)

    def call(self, func: Callable[[], Any], timeout: float) -> Any:
        answer: queue.Queue = queue.Queue()
        self._jobs.put((func, answer))
        result = answer.get(timeout=timeout)
        from twisted.python.failure import Failure

        if isinstance(result, Failure):
            result.raiseException()
        return result

    def stop(self) -> None:
        self._jobs.put(None)
        self._thread.join(10)


_reactor: ParkedReactor | None = None
_reactor_lock = threading.Lock()


def session_reactor() -> ParkedReactor:
    global _reactor  # noqa: PLW0603 - one parked reactor for the test session
    with _reactor_lock:
        if _reactor is None:
            from scrapy.utils.log import configure_logging

            # What ``scrapy crawl`` does before a crawl, minus the root handler (each crawl adds its own):
            # Twisted's log into Python logging, Scrapy's loggers at DEBUG.
            configure_logging({"LOG_INSTALL_ROOT_HANDLER": False})
            _reactor = ParkedReactor()
        return _reactor


def stop_session_reactor() -> None:
    if _reactor is not None:
        _reactor.stop()


def can_run_in_process(argv: list[str]) -> bool:
    """Whether ``scrapy crawl`` arguments (after ``crawl``) use only options this runner reproduces."""
    return all(arg in IN_PROCESS_OPTIONS for arg in argv if arg.startswith("-"))


@contextlib.contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """``env`` over ``os.environ`` (what a subprocess would inherit); the whole environment restored
    afterwards, including what the code run in between set itself (``--store`` sets a variable)."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _captured_log(settings) -> Iterator[io.StringIO]:
    """The root handler ``scrapy crawl`` installs (format and level from the settings), into a string."""
    text = io.StringIO()
    if not settings.getbool("LOG_ENABLED"):
        yield text
        return
    handler = logging.StreamHandler(text)
    handler.setFormatter(logging.Formatter(settings.get("LOG_FORMAT"), settings.get("LOG_DATEFORMAT")))
    handler.setLevel(settings.get("LOG_LEVEL"))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(min(level or logging.WARNING, handler.level))
    try:
        yield text
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def _start(runner, crawler, spider_args: dict):
    """In the reactor thread: what ``scrapy crawl``'s crawler process sets up on the reactor for the
    crawl's settings (the DNS resolver, the thread pool's size), then the crawl."""
    from scrapy.utils.misc import build_from_crawler, load_object
    from twisted.internet import reactor

    settings = runner.settings
    # DNS_RESOLVER (deprecated) wins only when set above TWISTED_DNS_RESOLVER, as in Scrapy.
    name = (
        "DNS_RESOLVER"
        if settings.getpriority("DNS_RESOLVER") > settings.getpriority("TWISTED_DNS_RESOLVER")
        else "TWISTED_DNS_RESOLVER"
    )
    resolver = build_from_crawler(load_object(settings[name]), runner, reactor=reactor)
    resolver.install_on_reactor()
    reactor.getThreadPool().adjustPoolsize(maxthreads=settings.getint("REACTOR_THREADPOOL_MAXSIZE"))
    return runner.crawl(crawler, **spider_args)


def crawl_in_process(
    argv: list[str], env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess:
    """``scrapy crawl <argv>`` run in this process with ``env`` set; same result shape as ``run_cli``."""
    from scrapy.cmdline import ScrapyArgumentParser
    from scrapy.crawler import CrawlerRunner
    from scrapy.utils.project import get_project_settings

    from votersdaily.commands.crawl import Command, run_status

    reactor = session_reactor()
    with environment(env), contextlib.chdir(REPO):
        settings = get_project_settings()
        command = Command()
        settings.setdict(command.default_settings, priority="command")
        command.settings = settings
        parser = ScrapyArgumentParser(conflict_handler="resolve")
        command.add_options(parser)
        opts, args = parser.parse_known_args(argv)
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                command.process_options(args, opts)  # the project's checks: exit status 2 and one line
        except SystemExit as exc:
            return subprocess.CompletedProcess(["scrapy", "crawl", *argv], exc.code, "", err.getvalue())
        (spider,) = args
        with _captured_log(settings) as log:
            runner = CrawlerRunner(settings)
            crawler = runner.create_crawler(spider)
            returncode = 0
            try:
                reactor.call(lambda: _start(runner, crawler, opts.spargs), timeout)
            except Exception:
                log.write(traceback.format_exc())
                returncode = 1
            if runner.bootstrap_failed:
                returncode = 1
            elif returncode == 0:
                returncode = run_status([crawler])  # the project's `scrapy crawl` exit status
    return subprocess.CompletedProcess(["scrapy", "crawl", *argv], returncode, "", log.getvalue())


def crawler_in_process(spider, env: dict[str, str], spider_args: dict | None = None, timeout: float = 300):
    """A crawl of ``spider`` (a name or a class) with the project's settings and ``env`` set, run on the
    session's reactor like :func:`crawl_in_process`, answered with its finished ``Crawler``: for tests
    that read what the crawl's components kept (its context, its run record)."""
    from scrapy.crawler import CrawlerRunner
    from scrapy.utils.project import get_project_settings

    reactor = session_reactor()
    with environment(env), contextlib.chdir(REPO):
        runner = CrawlerRunner(get_project_settings())
        crawler = runner.create_crawler(spider)
        reactor.call(lambda: _start(runner, crawler, spider_args or {}), timeout)
    return crawler
