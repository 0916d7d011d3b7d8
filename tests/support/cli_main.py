"""``python -m votersdaily <args>`` run inside the test process: the CLI's own ``main(argv)``, with the
environment, working folder, standard streams and root log handler a subprocess would have.

For the commands that run no reactor (``dump``, ``export``, ``views``, ``site``, ``flush``, ``ingest``,
``scheduler --once``, and ``crawl`` / ``reparse`` when they stop before crawling: usage errors, an
unavailable store): no interpreter start-up per call. ``crawl`` and ``reparse`` (Scrapy's
``CrawlerProcess``) and ``enqueue`` (a spider's ``start()``) run a reactor of their own, which cannot
start in a process whose reactor already ran: they stay subprocesses (the ``cli`` fixture).
"""

from __future__ import annotations

import contextlib
import io
import logging
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

from tests.support.inprocess import environment
from tests.support.services import REPO, cli_environment

#: The warning filters of a fresh interpreter run without -W (Python's documented defaults).
DEFAULT_WARNING_FILTERS = (
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, ""),
    ("ignore", PendingDeprecationWarning, ""),
    ("ignore", ImportWarning, ""),
    ("ignore", ResourceWarning, ""),
)


def _print_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Python's own way of showing a warning: on standard error (the test runner records them)."""
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


@contextlib.contextmanager
def _process_state(env: dict[str, str], cwd: Path = REPO) -> Iterator[None]:
    """``env`` over the environment, ``cwd`` (the checkout) as working folder, a root logger without the
    test runner's handlers and warnings shown on standard error (as in a fresh interpreter); all of
    it restored afterwards, including what the command itself changed (``--store`` and
    ``--redis-url`` set environment variables)."""
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    root.handlers.clear()
    try:
        with environment(env), contextlib.chdir(cwd), warnings.catch_warnings():
            warnings.resetwarnings()
            for action, category, module in reversed(DEFAULT_WARNING_FILTERS):
                warnings.filterwarnings(action, category=category, module=module)
            warnings.showwarning = _print_warning
            yield
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)


def run_main(
    *args: str, store_uri: str, env: dict | None = None, cwd: Path = REPO
) -> subprocess.CompletedProcess:
    """``python -m votersdaily *args`` in this process; the same result shape as the ``cli`` fixture
    (exit status, and what the command wrote to standard output and error, as text)."""
    from votersdaily.cli import main

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    with _process_state(cli_environment(store_uri, env), cwd):
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = out, err
        try:
            status = main(list(args))
        except SystemExit as exc:  # argparse's usage errors, --help
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.stdout, sys.stderr = saved
    texts = []
    for stream in (out, err):
        stream.flush()
        texts.append(stream.buffer.getvalue().decode("utf-8"))
    return subprocess.CompletedProcess(["python", "-m", "votersdaily", *args], status, *texts)
