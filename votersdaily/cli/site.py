"""``site build <dir>``: the static site: day pages, bill and case timelines, feeds per
branch/entity/parser/committee/bill/case, health.

It replaces only what an earlier build wrote (votersdaily/feeds/site_folder.py): another folder is
refused in one line (exit 2) unless ``--force``, and some are never replaced.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from votersdaily.plumbing.environment import project_settings
from votersdaily.schema import EVENTS_DB, LOG_DB
from votersdaily.store.check import checked_store, require_database
from votersdaily.store.identity import identity_of
from votersdaily.store.spool import Spool, spool_dir

from . import EXIT_FAILED, fail, say
from .options import positive_int

if TYPE_CHECKING:
    import argparse

    from scrapy.settings import BaseSettings


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("site", help="build the static calendar site")
    actions = parser.add_subparsers(dest="action", required=True)
    build = actions.add_parser(
        "build",
        help="write the site into a folder: a new or empty one, or a site an earlier build wrote",
    )
    build.add_argument("dir", type=Path, help="output folder")
    build.add_argument(
        "--force",
        action="store_true",
        help="replace the folder even if it is not a site an earlier build wrote, or was changed since "
        "(never the root, home, working or package folders, nor the checkout's own)",
    )
    build.add_argument(
        "--timezone", help="zone the day pages are shown in (default: setting VOTERSDAILY_SITE_TIMEZONE)"
    )
    build.add_argument(
        "--runs",
        type=positive_int,
        help="runs per spider on the health page (default: setting VOTERSDAILY_HEALTH_RUNS)",
    )
    build.set_defaults(func=run_build)


def run_build(args: argparse.Namespace) -> int:
    from votersdaily.deploy.periodic import spider_frequencies
    from votersdaily.feeds.sanitise import FeedReport
    from votersdaily.feeds.site import SiteConfig, build_site
    from votersdaily.feeds.site_folder import RefusedTarget, check_target, replaced_site

    from .crawl import event_spiders

    settings = project_settings()
    target = Path(os.path.abspath(args.dir))  # said as the absolute folder it is
    try:
        config = SiteConfig.from_settings(settings, timezone=args.timezone, runs=args.runs)
        data = data_places(settings)
        check_target(target, args.force, data)  # before any work: a refusal costs nothing
    except (ValueError, OSError) as exc:
        return fail(str(exc))
    store = checked_store(must_exist=True)
    # Only what was spooled for this store: another store's documents never reach it.
    spooled = Spool(spool_dir(settings)).waiting(identity_of(store))
    if not spooled:  # runs whose documents all wait in the spool still get their health page
        require_database(store, EVENTS_DB, LOG_DB)
    report = FeedReport()
    try:
        # Every spider that runs on a schedule (ingest and laundromat too), so one that never ran shows.
        spiders = sorted(set(event_spiders(settings)) | set(spider_frequencies(settings)))
        with replaced_site(target, args.force, data) as partial:
            summary = build_site(store, partial, config, spiders=spiders, report=report, spooled=spooled)
    except RefusedTarget as exc:
        return fail(str(exc))
    except OSError as exc:  # a full disk, a folder it may not write: nothing was replaced
        return fail("cannot write the site to %s: %s (nothing was replaced)" % (target, exc), EXIT_FAILED)
    finally:
        store.close()
    for line in report.lines():
        say(line)
    if spooled:
        say(
            "%d documents for this store wait in the spool %s (not on the site until "
            "`python -m votersdaily flush` delivers them)" % (sum(spooled.values()), spool_dir(settings))
        )
    say(
        "%d day pages, %d bill and case pages, %d feeds, %d spiders on the health page in %s"
        % (summary.days, summary.timelines, summary.feeds, summary.spiders, target)
    )
    return 0


def data_places(settings: BaseSettings) -> dict[str, Path]:
    """Where the project keeps data a site build must never replace: the data home and every
    location ``where`` lists (votersdaily/locations.py), the embedded store's file among them."""
    from votersdaily import locations

    places = {"the data home": locations.data_home(settings)}
    for location in locations.BY_SETTING.values():
        try:
            where = location.resolve(settings)
        except locations.LocationUnset:
            continue  # not configured: nothing there to protect
        if isinstance(where, str):  # the store's URI: a file only for the embedded store
            if not where.startswith(locations.SQLITE_PREFIX) or ":memory:" in where:
                continue
            where = where[len(locations.SQLITE_PREFIX) :]
        if where is not None:  # None: switched off (an empty feed file)
            places[location.called] = Path(where)
    return places
