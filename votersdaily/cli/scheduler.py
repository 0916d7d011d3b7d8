"""``scheduler --scrapyd <url> [--once]``: schedule every spider on scrapyd at its frequency."""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

from scrapy.spiderloader import SpiderLoader

from votersdaily.interrupts import stop_requests
from votersdaily.plumbing.environment import project_settings
from votersdaily.plumbing.inputs import meant
from votersdaily.setting_rules import assign
from votersdaily.store.check import checked_store

from . import EXIT_FAILED, EXIT_OK, EXIT_UNAVAILABLE, EXIT_USAGE, fail
from .options import http_url, non_empty, positive_number


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("scheduler", help="schedule spiders on scrapyd at their declared frequencies")
    parser.add_argument(
        "--scrapyd", required=True, type=http_url, help="scrapyd URL, e.g. http://127.0.0.1:6800/"
    )
    parser.add_argument(
        "--project",
        default="votersdaily",
        type=non_empty("a scrapyd project"),
        help="scrapyd project (default votersdaily)",
    )
    parser.add_argument("--once", action="store_true", help="one pass, then exit (for cron)")
    parser.add_argument(
        "--interval", type=positive_number, default=60.0, help="seconds between passes (default 60)"
    )
    parser.add_argument(
        "--spider",
        action="append",
        default=[],
        type=non_empty("a spider"),
        help="only these spiders (repeatable)",
    )
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
        help="event spiders replay the recordings shipped with the package on the node (-a offline=true)",
    )
    parser.add_argument(
        "--allow-open-scrapyd",
        action="store_true",
        help="schedule on a scrapyd that answers without credentials (refused by default)",
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


def show(decision: dict[str, Any], stamp: bool = False) -> None:
    """One decision as a line of standard output (the loop prefixes the time)."""
    print(
        "%s%-28s %-20s %s %s"
        % (
            decision["datetime"] + " " if stamp else "",
            decision["spider"],
            decision["decision"],
            decision.get("jobid") or "",
            decision["reason"],
        ),
        flush=True,
    )


def run(args: argparse.Namespace) -> int:
    from votersdaily.deploy.periodic import (
        FAILED,
        OPEN,
        SCHEDULER_DB,
        UNAVAILABLE,
        Plan,
        RecurringScheduler,
        spider_frequencies,
    )
    from votersdaily.deploy.scrapyd import Scrapyd

    settings = project_settings()
    hours = spider_frequencies(settings)
    loader = SpiderLoader.from_settings(settings)
    try:
        for name, value in _pairs(args.hours, "--hours").items():
            if name not in loader.list():  # a typo would be a spider to load: a traceback
                raise ValueError(
                    "--hours %s=%s: no spider is named %r; known: %s%s"
                    % (name, value, name, ", ".join(sorted(loader.list())), meant(name, loader.list()))
                )
            try:
                hours[name] = positive_number(value)
            except argparse.ArgumentTypeError as exc:
                raise ValueError("--hours %s=%s: %s" % (name, value, exc)) from None
        job_settings = _pairs(args.setting, "--setting")
        checked = settings.copy()
        for name, value in job_settings.items():  # else every job scrapyd starts is refused, each pass
            assign(checked, name, value)
    except ValueError as exc:
        return fail(str(exc))
    names = args.spider or sorted(hours)
    unknown = [n for n in names if n not in hours]
    if unknown:
        return fail(
            "no frequency for %s (give --hours NAME=HOURS or VOTERSDAILY_SCHEDULE_HOURS); known: %s%s"
            % (", ".join(unknown), ", ".join(sorted(hours)), meant(unknown[0], hours))
        )
    plans = []
    for name in names:
        cls = loader.load(name)
        # A spider that needs arguments to have work says which (the ingest: requests=store).
        spider_args = dict(getattr(cls, "schedule_arguments", {}))
        # The node finds its own copy of the recordings (no file:// path of this machine).
        if args.offline and getattr(cls, "recordings", None):
            spider_args["offline"] = "true"
        plans.append(Plan(name, hours[name], spider_args, job_settings))
    store = checked_store()
    scheduler = RecurringScheduler(
        Scrapyd(args.scrapyd, args.project),
        store,
        plans,
        allow_open=args.allow_open_scrapyd,
        keep=settings.getint("VOTERSDAILY_SCHEDULER_DECISIONS"),
    )
    if args.once:
        decisions = scheduler.run_once()
        for d in decisions:
            show(d)
        # The exit status tells cron what the pass achieved: scrapyd down (or refusing the
        # credentials), open to anyone, or a spider not scheduled.
        if any(d["decision"] == UNAVAILABLE for d in decisions):
            return EXIT_UNAVAILABLE
        if any(d["decision"] == OPEN for d in decisions):
            return EXIT_USAGE
        return EXIT_FAILED if any(d["decision"] == FAILED for d in decisions) else EXIT_OK
    print(
        "votersdaily scheduler: a pass every %g s on %s for %s; each decision that changes is shown "
        "here and stored in %s (Ctrl-C stops)"
        % (args.interval, scheduler.scrapyd.url, ", ".join(names), SCHEDULER_DB),
        flush=True,
    )
    # Ctrl-C or SIGTERM: a pass in flight is cut short (KeyboardInterrupt), else the loop ends after it
    with stop_requests() as stop, contextlib.suppress(KeyboardInterrupt):
        scheduler.run_forever(args.interval, report=lambda decision: show(decision, stamp=True), stop=stop)
    return EXIT_OK
