"""``where``: the data home and every location a run writes to, as absolute paths (see
:mod:`votersdaily.locations`), so an operator sees where data goes before any run writes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from votersdaily import locations
from votersdaily.plumbing.environment import project_settings
from votersdaily.rfc3986 import mask_uri

if TYPE_CHECKING:
    import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("where", help="print the data home and where each kind of data goes")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = project_settings()
    home, reason = locations.home_and_reason(settings)
    print("data home  %s" % home)
    chosen_by_operator = reason in ("$%s" % locations.HOME_ENV, "the %s setting" % locations.HOME_ENV)
    change = "" if chosen_by_operator else "; $%s or the setting of that name changes it" % locations.HOME_ENV
    print("           (%s%s)" % (reason, change))
    found = locations.locations(settings)
    width = max(map(len, locations.BY_SETTING))
    for name, location in locations.BY_SETTING.items():
        where = found.get(name)
        shown = mask_uri(where) if name == "VOTERSDAILY_STORE" and where else (where or "(off)")
        print("%-*s  %s  # %s" % (width, name, shown, location.holds))
    return 0
