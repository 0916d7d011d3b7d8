"""Options shared by the commands that run spiders (``crawl``, ``reparse``): Scrapy settings and log level."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.settings import Settings
from scrapy.utils.project import get_project_settings

if TYPE_CHECKING:
    import argparse


class BadSetting(ValueError):
    """A ``-s`` option that is not ``NAME=VALUE``."""


def add_scrapy_options(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Scrapy setting for every spider of this %s (repeatable)" % what,
    )
    parser.add_argument("--log-level", default="WARNING", help="Scrapy log level (default WARNING)")


def scrapy_settings(args: argparse.Namespace) -> Settings:
    """The project settings with the command line's ``--log-level`` and ``-s NAME=VALUE`` on top."""
    settings = get_project_settings()
    settings.set("LOG_LEVEL", args.log_level, priority="cmdline")
    for assignment in args.set:
        name, sep, value = assignment.partition("=")
        if not sep:
            raise BadSetting("-s takes NAME=VALUE, got %r" % assignment)
        settings.set(name, value, priority="cmdline")
    return settings
