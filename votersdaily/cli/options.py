"""Options shared by the commands that run spiders (``crawl``, ``reparse``): Scrapy settings, log
level, spider arguments; and argparse types shared by every command."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from scrapy.settings import Settings

from votersdaily.locations import misplaced
from votersdaily.plumbing.environment import project_settings
from votersdaily.setting_marks import DATABASE_NAME, LOG_LEVELS
from votersdaily.setting_rules import BadSettingValue, assign, check_settings


class BadSetting(ValueError):
    """A ``-s`` option that is not ``NAME=VALUE``, or a setting whose value its readers cannot use."""


def one_of(names: tuple[str, ...], what: str) -> Callable[[str], str]:
    """An argparse type: one of ``names`` in any case, given back in its canonical spelling."""
    canonical = {name.casefold(): name for name in names}

    def parse(value: str) -> str:
        try:
            return canonical[value.strip().casefold()]
        except KeyError:
            raise argparse.ArgumentTypeError(
                "unknown %s %r; known: %s" % (what, value, ", ".join(names))
            ) from None

    return parse


def log_level(value: str) -> str:
    """An argparse type: a logging level by name, in any case (``info`` → ``INFO``)."""
    level = value.strip().upper()
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError("unknown level %r; known: %s" % (value, ", ".join(LOG_LEVELS)))
    return level


def name_value(value: str) -> tuple[str, str]:
    """An argparse type: ``NAME=VALUE`` (the value may be empty or hold ``=``)."""
    name, sep, rest = value.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError("%r is not NAME=VALUE" % value)
    return name.strip(), rest


def positive_int(value: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError("not a whole number of at least 1: %r" % value)
    return number


def positive_number(value: str) -> float:
    """An argparse type: a number above 0 (seconds, hours)."""
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    if not number > 0 or number == float("inf"):
        raise argparse.ArgumentTypeError("not a number above 0: %r" % value)
    return number


def http_url(value: str) -> str:
    """An argparse type: an http(s) URL, of a service or to fetch (one URL check:
    votersdaily/plumbing/inputs.py)."""
    from votersdaily.plumbing.inputs import checked_url

    try:
        return checked_url(value, "the URL", schemes=("http", "https"), local=True)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def non_empty(what: str) -> Callable[[str], str]:
    """An argparse type: text that is not empty (``--db "$UNSET"`` would otherwise be the default
    database, ``--project ""`` a scrapyd project of no name, without a word)."""

    def parse(value: str) -> str:
        if not value.strip():
            raise argparse.ArgumentTypeError("empty: give %s, or leave the option out for its default" % what)
        return value

    return parse


def database_name(value: str) -> str:
    """An argparse type: a database's name as CouchDB takes it, whatever the store (the embedded
    store would queue requests in ``--db "Bad DB"``, which no CouchDB can hold), never empty."""
    value = non_empty("a database")(value)
    if not DATABASE_NAME(value):
        raise argparse.ArgumentTypeError("%r is not %s" % (value, DATABASE_NAME.what))
    return value


def existing_folder(value: str) -> Path:
    """An argparse type: a folder that exists (a command reading from it must not find "nothing" in
    a mistyped path), as an absolute path: a relative one is under the working folder, as the shell
    means it, whatever the command hands it to (a setting's relative value is under the data home).
    An empty value (``--spool-dir "$UNSET"``) is no folder: it would be the working folder."""
    if not value.strip():
        raise argparse.ArgumentTypeError("empty: give a folder, or leave the option out for its default")
    path = Path(os.path.abspath(Path(value).expanduser()))
    if not path.is_dir():
        raise argparse.ArgumentTypeError(
            "%s: %s" % (path, "not a folder" if path.exists() else "no such folder")
        )
    return path


def add_scrapy_options(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Scrapy setting for every spider of this %s (repeatable)" % what,
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        type=log_level,
        help="Scrapy log level: %s, any case (default WARNING)" % ", ".join(LOG_LEVELS),
    )


def add_spider_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-a",
        dest="spider_args",
        action="append",
        default=[],
        type=name_value,
        metavar="NAME=VALUE",
        help="a spider argument, as for scrapy crawl (repeatable; e.g. -a url=file:///…/roll314.xml)",
    )


def scrapy_settings(args: argparse.Namespace) -> Settings:
    """The project settings with the command line's ``--log-level`` and ``-s NAME=VALUE`` on top and
    the environment above both, as the crawls have them (votersdaily/plumbing/environment.py: before,
    the command's own lines read the settings without it, and said "the parsed source documents are
    archived" under ``VOTERSDAILY_ARCHIVE_ENABLED=False``), each setting checked
    (votersdaily/setting_rules.py), and the spool folder (a file there would lose what the store does
    not take: votersdaily/locations.py), before any work: :class:`BadSetting` names the first one
    that cannot be used."""
    settings = project_settings()
    settings.set("LOG_LEVEL", args.log_level, priority="cmdline")
    try:
        for assignment in args.set:
            name, sep, value = assignment.partition("=")
            if not sep:
                raise BadSetting("-s takes NAME=VALUE, got %r" % assignment)
            assign(settings, name.strip(), value)
        check_settings(settings)
    except BadSettingValue as exc:
        raise BadSetting(str(exc)) from None
    for problem in misplaced(settings):  # the spool a file: what the store does not take would be lost
        raise BadSetting(problem)
    return settings
