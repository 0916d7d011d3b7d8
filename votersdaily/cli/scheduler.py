"""``scheduler --scrapyd <url> [--once]``: schedule every spider on scrapyd at its frequency."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from scrapy.spiderloader import SpiderLoader
from scrapy.utils.project import get_project_settings

from votersdaily.store.check import checked_store

from . import EXIT_FAILED, EXIT_OK, EXIT_UNAVAILABLE, EXIT_USAGE

if TYPE_CHECKING:
    import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("scheduler", help="schedule spiders on scrapyd at their declared frequencies")
    parser.add_argument("--scrapyd", required=True, help="scrapyd URL, e.g. http://127.0.0.1:6800/")
    parser.add_argument("--project", default="votersdaily", help="scrapyd project (default votersdaily)")
    parser.add_argument("--once", action="store_true", help="one pass, then exit (for cron)")
    parser.add_argument("--interval", type=float, default=60.0, help="seconds between passes (default 60)")
    parser.add_argument("--spider", action="append", default=[], help="only these spiders (repeatable)")
    parser.add_argument(
        "--hours",
        action="append",
        default=[],
        metavar="SPIDER=HOURS",
        help="override a spider's frequency (repeatable)",
    )
    parser.add_argument(
        "--offline",
        action="store_true",
        help="event spiders replay their recordings (file:// URLs of this machine)",
    )
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="Scrapy setting for every scheduled job (repeatable)",
    )
    parser.set_defaults(func=run)


def _pairs(values: list[str], what: str) -> dict[str, str]:
    out = {}
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep:
            raise ValueError("%s %r is not NAME=VALUE" % (what, value))
        out[name] = rest
    return out


def run(args: argparse.Namespace) -> int:
    from votersdaily.deploy.periodic import FAILED, UNAVAILABLE, Plan, RecurringScheduler, spider_frequencies
    from votersdaily.deploy.scrapyd import Scrapyd

    settings = get_project_settings()
    hours = spider_frequencies(settings)
    try:
        hours.update({k: float(v) for k, v in _pairs(args.hours, "--hours").items()})
        job_settings = _pairs(args.setting, "--setting")
    except ValueError as exc:
        print("votersdaily scheduler: %s" % exc, file=sys.stderr)
        return EXIT_USAGE
    names = args.spider or sorted(hours)
    unknown = [n for n in names if n not in hours]
    if unknown:
        print(
            "votersdaily scheduler: no frequency for %s (give --hours NAME=HOURS or VOTERSDAILY_SCHEDULE_HOURS);"
            " known: %s" % (", ".join(unknown), ", ".join(sorted(hours))),
            file=sys.stderr,
        )
        return EXIT_USAGE
    loader = SpiderLoader.from_settings(settings)
    plans = []
    for name in names:
        spider_args = {}
        if args.offline and hasattr(cls := loader.load(name), "recording_urls"):
            urls = cls.recording_urls()
            if urls:
                spider_args["url"] = ",".join(urls)
        plans.append(Plan(name, hours[name], spider_args, job_settings))
    store = checked_store()
    scheduler = RecurringScheduler(Scrapyd(args.scrapyd, args.project), store, plans)
    if args.once:
        decisions = scheduler.run_once()
        for d in decisions:
            print("%-28s %-20s %s %s" % (d["spider"], d["decision"], d.get("jobid") or "", d["reason"]))
        # The exit status tells cron what the pass achieved: scrapyd down, or a spider not scheduled.
        if any(d["decision"] == UNAVAILABLE for d in decisions):
            return EXIT_UNAVAILABLE
        return EXIT_FAILED if any(d["decision"] == FAILED for d in decisions) else EXIT_OK
    scheduler.run_forever(args.interval)
    return 0
