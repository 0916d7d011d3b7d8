"""``reparse [SPIDER...] [--since DATE] [--until DATE] [--dry-run]``: the current parsers over the
archived documents (see :mod:`votersdaily.reparse`), every spider in one process, then a summary."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from scrapy.crawler import CrawlerProcess

from votersdaily.archive import archive_dir, archived_runs
from votersdaily.crawlcontext import crawl_context
from votersdaily.gc_freeze import freeze_at_exit
from votersdaily.interrupts import Interrupts
from votersdaily.locations import misplaced
from votersdaily.reparse import parse_date_arg, points_into_archive, summarise_plan
from votersdaily.schema import EVENTS_DB
from votersdaily.store.check import checked_store

from . import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, fail, say
from .crawl import event_spiders, print_table, summary_row
from .options import BadSetting, add_scrapy_options, existing_folder, scrapy_settings

if TYPE_CHECKING:
    import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "reparse", help="run the current parsers over the archived documents (history correction)"
    )
    parser.add_argument("--since", help="only runs archived from this date (YYYY-MM-DD or ISO 8601)")
    parser.add_argument("--until", help="only runs archived up to this date (YYYY-MM-DD or ISO 8601)")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would be inserted, updated and withdrawn; write nothing",
    )
    parser.add_argument(
        "--archive-dir", type=existing_folder, help="the archive folder (default: VOTERSDAILY_ARCHIVE_DIR)"
    )
    add_scrapy_options(parser, "reparse")
    parser.add_argument("spiders", nargs="*", help="spider names (default: every spider with an archive)")
    # Scrapy's log handler only (the command's own would print every message a second time).
    parser.set_defaults(func=run, scrapy_logging=True)


def run(args: argparse.Namespace) -> int:
    try:
        settings = scrapy_settings(args)
    except BadSetting as exc:
        return fail(str(exc))
    if args.archive_dir:  # a folder that exists (argparse type existing_folder)
        os.environ["VOTERSDAILY_ARCHIVE_DIR"] = str(args.archive_dir)
    for problem in misplaced(settings, ("VOTERSDAILY_ARCHIVE_DIR",)):  # it would find nothing there
        return fail(problem)
    try:
        since = parse_date_arg(args.since, end=False, name="--since")
        until = parse_date_arg(args.until, end=True, name="--until")
    except ValueError as exc:
        return fail(str(exc))
    if since is not None and until is not None and since > until:  # it would find nothing, exit 0
        return fail("--since %s is after --until %s: no run can be in between" % (args.since, args.until))
    available = event_spiders(settings)
    unknown = [n for n in args.spiders if n not in available]
    if unknown:
        return fail("unknown event spider(s): %s; known: %s" % (", ".join(unknown), ", ".join(available)))
    # One line and exit 3 (the command's StoreError handler) when the store does not answer; a dry
    # run only reads, so it never creates an empty embedded store either.
    store = checked_store(must_exist=args.dry_run)
    folder = archive_dir(settings)
    try:
        # The events the reparse reads, asked once before any work: a store that answers the check and
        # then refuses or fails is one line (exit 3), not a traceback from every spider's run.
        store.has_db(EVENTS_DB)
        names = [
            n
            for n in args.spiders or sorted(available)
            if archived_runs(folder, n, since, until) or points_into_archive(store, n, folder, since, until)
        ]
    finally:
        store.close()
    if not names:
        say("no archived runs in %s for %s" % (folder, ", ".join(args.spiders) or "any spider"))
        return EXIT_OK
    process = CrawlerProcess(settings)
    crawlers = []
    for name in names:
        crawler = process.create_crawler(available[name])
        crawlers.append(crawler)
        process.crawl(
            crawler,
            reparse="archive",
            since=args.since,
            until=args.until,
            dry_run="1" if args.dry_run else None,
        )
    interrupts = Interrupts(process, say)  # Ctrl-C as in crawl: said, recorded interrupted, exit 130
    interrupts.install()
    freeze_at_exit()  # as crawl: the process ends after it
    process.start()
    if interrupts.stop:
        return EXIT_INTERRUPTED
    # The dry run and the real run end alike: a run whose archive could not all be read back (or whose
    # store writes failed) is not a success, and exits 1 either way.
    rows = [summary_row(crawler) for crawler in crawlers]
    ok = all(r.get("result") == "success" for r in rows)
    if args.dry_run:
        plans = [crawl_context(crawler).reparse_plan for crawler in crawlers]
        for crawler, plan in zip(crawlers, plans, strict=True):
            if plan is None:
                print("%s: the reparse did not finish (see the log above)" % crawler.spidercls.name)
            else:
                summarise_plan(plan, sys.stdout)
        return EXIT_OK if ok and all(plans) else EXIT_FAILED
    print_table(rows, columns=(*COLUMNS_BASE, "withdrawn", "replaced", "unjudged"))
    return EXIT_OK if ok else EXIT_FAILED


COLUMNS_BASE = ("spider", "result", "inserted", "updated", "unchanged", "dropped", "items", "seconds")
