"""``python -m votersdaily``: one sub-command per module of this package.

Each command module has ``register(subparsers)``, which adds its parser and sets ``func`` (called with
the parsed arguments; it returns the exit status). Add a command by adding its module to COMMANDS.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

COMMANDS = ("dump", "views", "crawl", "export", "site", "flush", "enqueue", "scheduler", "ingest", "reparse")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m votersdaily", description=__doc__.split("\n")[0])
    parser.add_argument("--store", help="store URI (default: $VOTERSDAILY_STORE or sqlite:///votersdaily.db)")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module("%s.%s" % (__name__, name)).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("SCRAPY_SETTINGS_MODULE", "votersdaily.settings")
    args = build_parser().parse_args(argv)
    if args.store:
        os.environ["VOTERSDAILY_STORE"] = args.store
    if not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setLevel(logging.WARNING)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logging.getLogger().addHandler(handler)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # e.g. `dump vd_events | head`
        sys.stderr.close()
        return 0
