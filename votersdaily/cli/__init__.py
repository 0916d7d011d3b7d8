"""``python -m votersdaily``: one sub-command per module of this package.

Each command module has ``register(subparsers)``, which adds its parser and sets ``func`` (called with
the parsed arguments; it returns the exit status). Add a command by adding its module to COMMANDS.
Exit statuses: 0 done, 1 the work failed (a run, bad input lines, refused writes), 2 a usage error or
what was asked for does not exist, 3 the store or a service (scrapyd, Redis) is unavailable, 4 done,
but documents wait in the spool (the store did not take them: ``flush`` delivers them), 130 a crawl
stopped by Ctrl-C (SIGINT or SIGTERM).

Every message a command writes to standard error starts with the same prefix, ``votersdaily
<command>: ``: usage errors, one-line failures (:func:`fail`), notes (:func:`say`) and log records
of WARNING and above.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from votersdaily.interrupts import EXIT_INTERRUPTED as EXIT_INTERRUPTED  # 130: the shell's status for SIGINT
from votersdaily.setting_rules import bad_environment
from votersdaily.store.base import StoreError
from votersdaily.store.check import StoreMisconfigured, StoreMissing

from .standard_output import StagingFull, StandardOutputFull, guarded_standard_output

#: Exit statuses of every command (docs/cli.md: Exit codes), and EXIT_INTERRUPTED above.
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNAVAILABLE, EXIT_SPOOLED = 0, 1, 2, 3, 4

#: The command being run (set by :func:`main`): the prefix of its messages.
_running = {"command": ""}


def prefix() -> str:
    """``votersdaily <command>``: what every message of the running command starts with."""
    return " ".join(filter(None, ("votersdaily", _running["command"])))


def say(message: str) -> None:
    """A note or a failure on standard error, as one line with the command's prefix."""
    print("%s: %s" % (prefix(), message), file=sys.stderr, flush=True)


def fail(message: str, status: int = EXIT_USAGE) -> int:
    """:func:`say` ``message``; the exit status to return (default: a usage error)."""
    say(message)
    return status


class CommandLogFormatter(logging.Formatter):
    """Log records of a command that runs no crawl, in the commands' own shape: ``votersdaily
    <command>: [warning: ]message`` (a crawl's log is Scrapy's, with time and logger name)."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        command = _running["command"]
        if command and text.startswith(command + ": "):  # a component that names the command itself
            text = text[len(command) + 2 :]
        level = "" if record.levelno >= logging.ERROR else "%s: " % record.levelname.lower()
        return "%s: %s%s" % (prefix(), level, text)


COMMANDS = (
    "dump",
    "views",
    "crawl",
    "export",
    "site",
    "flush",
    "enqueue",
    "scheduler",
    "ingest",
    "reparse",
    "where",
)


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line (the usage itself is one ``--help`` away), exit status 2; options are
    spelled out (an abbreviation that works today breaks when an option is added)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, "%s: %s (see --help)\n" % (command_prefix(self.prog), message))


def command_prefix(prog: str) -> str:
    """The message prefix of a parser's ``prog`` (``python -m votersdaily site build`` → ``votersdaily
    site``): its command, as :func:`prefix` names it."""
    words = prog.split()
    start = words.index("votersdaily") if "votersdaily" in words else 0
    return " ".join(words[start : start + 2])


def invoked_as(argv0: str) -> str:
    """How the person ran the command, for its usage lines: ``votersdaily`` (the installed script)
    or ``python -m votersdaily``."""
    return "votersdaily" if Path(argv0).name == "votersdaily" else "python -m votersdaily"


def build_parser(prog: str = "python -m votersdaily") -> argparse.ArgumentParser:
    parser = OneLineParser(prog=prog, description=__doc__.split("\n")[0])
    parser.add_argument(
        "--store",
        help="store URI (default: $VOTERSDAILY_STORE or sqlite:///votersdaily.db; a relative sqlite path"
        " is under the data home, see `where`)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module("%s.%s" % (__name__, name)).register(sub)
    for command in sub.choices.values():
        _accept_store_anywhere(command)
    return parser


def _accept_store_anywhere(parser: argparse.ArgumentParser) -> None:
    """``--store`` after the command too (``dump vd_events --store …``), as users type it."""
    parser.add_argument("--store", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _accept_store_anywhere(child)


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` names; its exit status (module docstring)."""
    with guarded_standard_output():
        try:
            status = _command(argv)
            if sys.stdout is not None:  # None: started with standard output closed (`>&-`)
                sys.stdout.flush()
            return status
        except (StandardOutputFull, StagingFull) as exc:  # `where > /srv/full/where.txt`
            return fail(str(exc), EXIT_FAILED)
        except BrokenPipeError:  # `dump vd_events | head`: the reader took what it wanted
            return EXIT_OK


def _command(argv: list[str] | None) -> int:
    os.environ.setdefault("SCRAPY_SETTINGS_MODULE", "votersdaily.settings")
    _running["command"] = ""
    args, extra = build_parser(invoked_as(sys.argv[0])).parse_known_args(argv)
    _running["command"] = args.command
    if extra:  # said by the top parser, its prefix was `votersdaily:`, not the command's
        return fail("unrecognized arguments: %s (see --help)" % " ".join(extra))
    if args.store is not None and not args.store.strip():  # `--store "$STORE"` unset: not the default store
        return fail("--store is empty: give a store URI, or leave --store out for $VOTERSDAILY_STORE")
    if args.store:
        os.environ["VOTERSDAILY_STORE"] = args.store
    for problem in bad_environment():  # a mistyped VOTERSDAILY_STOR would read the default store
        return fail(problem)
    # A command that runs Scrapy (crawl) gets Scrapy's log handler; a second one here would print
    # every message twice.
    if not logging.getLogger().handlers and not getattr(args, "scrapy_logging", False):
        handler = logging.StreamHandler(sys.stderr)
        handler.setLevel(logging.WARNING)
        handler.setFormatter(CommandLogFormatter())
        logging.getLogger().addHandler(handler)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:  # Ctrl-C outside a crawl (a crawl handles its own: votersdaily/interrupts.py)
        return fail("interrupted", EXIT_INTERRUPTED)
    except StoreError as exc:
        # One line saying what is wrong and how to fix it (docs/operations.md: Troubleshooting), no traceback.
        return fail(str(exc), store_error_status(exc))


def store_error_status(exc: StoreError) -> int:
    """A store that is not there or a URI that cannot be one is the user's to fix (usage, 2); one
    that does not answer or refuses the credentials is unavailable (3)."""
    return EXIT_USAGE if isinstance(exc, (StoreMissing, StoreMisconfigured)) else EXIT_UNAVAILABLE
