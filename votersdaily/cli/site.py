"""``site build <dir>``: the static site: day pages, bill and case timelines, feeds per
branch/entity/parser/committee/bill/case, health."""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.utils.project import get_project_settings

from votersdaily.store.check import checked_store
from votersdaily.store.identity import identity_of
from votersdaily.store.spool import Spool, spool_dir

from . import EXIT_USAGE

if TYPE_CHECKING:
    import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("site", help="build the static calendar site")
    actions = parser.add_subparsers(dest="action", required=True)
    build = actions.add_parser("build", help="write the site into a folder (created if missing)")
    build.add_argument("dir", type=Path, help="output folder")
    build.add_argument(
        "--timezone", help="zone the day pages are shown in (default: setting VOTERSDAILY_SITE_TIMEZONE)"
    )
    build.add_argument(
        "--runs",
        type=int,
        help="runs per spider on the health page (default: setting VOTERSDAILY_HEALTH_RUNS)",
    )
    build.set_defaults(func=run_build)


def run_build(args: argparse.Namespace) -> int:
    from votersdaily.deploy.periodic import spider_frequencies
    from votersdaily.feeds.sanitise import FeedReport
    from votersdaily.feeds.site import SiteConfig, build_site

    from .crawl import event_spiders

    settings = get_project_settings()
    try:
        config = SiteConfig.from_settings(settings, timezone=args.timezone, runs=args.runs)
    except ValueError as exc:
        print("votersdaily site: %s" % exc, file=sys.stderr)
        return EXIT_USAGE
    store = checked_store(must_exist=True)
    report = FeedReport()
    # Only what was spooled for this store: another store's documents never reach it.
    spooled = Spool(spool_dir(settings)).waiting(identity_of(store))
    try:
        # Every spider that runs on a schedule (ingest and laundromat too), so one that never ran shows.
        spiders = sorted(set(event_spiders(settings)) | set(spider_frequencies(settings)))
        with replaced_dir(args.dir) as partial:
            summary = build_site(store, partial, config, spiders=spiders, report=report, spooled=spooled)
    finally:
        store.close()
    for line in report.lines():
        print("site: %s" % line, file=sys.stderr)
    if spooled:
        print(
            "site: %d documents for this store wait in the spool %s (not on the site until "
            "`python -m votersdaily flush` delivers them)" % (sum(spooled.values()), spool_dir(settings)),
            file=sys.stderr,
        )
    print(
        "site: %d day pages, %d bill and case pages, %d feeds, %d spiders on the health page in %s"
        % (summary.days, summary.timelines, summary.feeds, summary.spiders, args.dir),
        file=sys.stderr,
    )
    return 0


@contextlib.contextmanager
def replaced_dir(target: Path) -> Iterator[Path]:
    """A fresh folder beside ``target`` that replaces it only when the block succeeds: a failed
    build leaves the previous site (or nothing) in place, never a half-written one."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=".%s.partial-" % target.name, dir=target.parent))
    try:
        yield partial
        partial.chmod(0o755)
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=".%s.old-" % target.name, dir=target.parent))
            target.rename(old / target.name)
            partial.rename(target)
            shutil.rmtree(old)
        else:
            partial.rename(target)
    finally:
        if partial.exists():
            shutil.rmtree(partial)
