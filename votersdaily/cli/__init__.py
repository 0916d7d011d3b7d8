"""``python -m votersdaily``: one sub-command per module of this package.

Each command module has ``register(subparsers)``, which adds its parser and sets ``func`` (called with
the parsed arguments; it returns the exit status). Add a command by adding its module to COMMANDS.
Exit statuses: 0 done, 1 the work failed (a run, bad input lines, refused writes), 2 a usage error or
what was asked for does not exist, 3 the store or a service (scrapyd, Redis) is unavailable, 4 done,
but documents wait in the spool (the store did not take them: ``flush`` delivers them).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from typing import Any, NoReturn

from votersdaily.store.base import StoreError
from votersdaily.store.check import StoreMissing

#: Exit statuses of every command (README: Exit codes).
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNAVAILABLE, EXIT_SPOOLED = 0, 1, 2, 3, 4

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
        self.exit(EXIT_USAGE, "%s: error: %s (see --help)\n" % (self.prog, message))


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m votersdaily", description=__doc__.split("\n")[0])
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
    os.environ.setdefault("SCRAPY_SETTINGS_MODULE", "votersdaily.settings")
    args = build_parser().parse_args(argv)
    if args.store:
        os.environ["VOTERSDAILY_STORE"] = args.store
    # A command that runs Scrapy (crawl) gets Scrapy's log handler; a second one here would print
    # every message twice.
    if not logging.getLogger().handlers and not getattr(args, "scrapy_logging", False):
        handler = logging.StreamHandler(sys.stderr)
        handler.setLevel(logging.WARNING)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logging.getLogger().addHandler(handler)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # e.g. `dump vd_events | head`
        sys.stderr.close()
        return 0
    except StoreError as exc:
        # One line saying what is wrong and how to fix it (docs/operations.md: Troubleshooting), no traceback.
        print("votersdaily %s: %s" % (args.command, exc), file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, StoreMissing) else EXIT_UNAVAILABLE
