"""``enqueue <spider> <file-or-url>...``: push requests into the shared Redis queue for the workers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import UsageError
from scrapy.spiderloader import SpiderLoader

from votersdaily.distributed import REDIS_ENV, spider_queue_name
from votersdaily.plumbing.environment import project_settings, setting_or_environment
from votersdaily.plumbing.inputs import (
    MAX_URL,
    bad_spider_arguments,
    checked_inputs,
    checked_url,
    listed_lines,
)
from votersdaily.setting_marks import REDIS_URL_FORM
from votersdaily.store import mask_uri

from . import EXIT_FAILED, EXIT_OK, EXIT_UNAVAILABLE, EXIT_USAGE, fail, say

if TYPE_CHECKING:
    import argparse

    from scrapy import Spider


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("enqueue", help="push a spider's requests into the shared Redis queue")
    parser.add_argument("spider", help="spider name (e.g. ingest, laundromat)")
    parser.add_argument(
        "sources", nargs="+", help="URLs, or files (one URL per line, or what the spider reads)"
    )
    parser.add_argument(
        "-a",
        dest="spider_args",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="spider argument, as for scrapy crawl",
    )
    parser.add_argument("--redis-url", help="Redis URL (default: the REDIS_URL setting)")
    parser.add_argument(
        "--allow-volatile-redis",
        action="store_true",
        help="queue even into a Redis without an append-only file (a restart then loses the queue)",
    )
    parser.set_defaults(func=run)


def spider_arguments(spidercls: type[Spider], sources: list[str], bad: list[str]) -> dict[str, Any]:
    """What to build the spider with: its own ``enqueue_arguments(sources)`` if it has one, else
    ``url=`` with the given URLs and the URLs listed in the given files (each one that is no URL
    is appended to ``bad`` as "where: why" and left out)."""
    own = getattr(spidercls, "enqueue_arguments", None)
    if own is not None:
        return own(sources)
    return urls_from(sources, bad)


def urls_from(sources: list[str], bad: list[str]) -> dict[str, Any]:
    found: list[tuple[str, str | Exception]] = []
    for source in sources:
        if "://" not in source and Path(source).is_file():
            found += listed_lines(source, MAX_URL + 2)
        else:
            found.append(("argument", source))
    urls = []
    for where, url in checked_inputs(found, checked_url):
        if isinstance(url, ValueError):
            bad.append("%s: %s" % (where, url))
        else:
            urls.append(url)
    return {"url": ",".join(urls)}


def add_spider_arguments(kwargs: dict[str, Any], given: list[str], spidercls: type[Spider]) -> str | None:
    """Adds the ``-a NAME=VALUE`` arguments ``given`` to ``kwargs``; why the spider cannot start with
    them, or None (a mistyped value, ``-a ingest_type=pfd``, would queue requests that all fail)."""
    for item in given:
        name, sep, value = item.partition("=")
        if not sep:
            return "spider argument %r is not NAME=VALUE" % item
        kwargs[name] = value
    return bad_spider_arguments(spidercls, kwargs)


def spider_problem(loader: SpiderLoader, name: str) -> str | None:
    """Why ``name``'s requests cannot be queued (no such spider, or no worker reads its queue), or None."""
    if name not in loader.list():
        return "unknown spider %r; known: %s" % (name, ", ".join(sorted(loader.list())))
    readers = queue_readers(loader)
    if spider_queue_name(loader.load(name)) in readers:
        return None
    return (
        "no worker reads the queue of %s: what it queued would wait for ever; spiders with Redis-fed "
        "workers: %s (or run `scrapy crawl %s` itself)"
        % (
            name,
            ", ".join("%s (%s)" % (queue, ", ".join(workers)) for queue, workers in sorted(readers.items())),
            name,
        )
    )


def queue_readers(loader: SpiderLoader) -> dict[str, list[str]]:
    """Each queue a Redis-fed worker of the project reads (its base spider's name), with those workers."""
    from votersdaily.distributed.redis_worker import WorkerMixin

    readers: dict[str, list[str]] = {}
    for name in sorted(loader.list()):
        spidercls = loader.load(name)
        if issubclass(spidercls, WorkerMixin):
            readers.setdefault(spider_queue_name(spidercls), []).append(name)
    return readers


def redis_unreachable(redis_url: str, exc: Exception) -> int:
    """One line saying why Redis could not be used; exit 2 for a URL to fix, else 3 (unavailable:
    down, or refusing writes while its memory or disk is full)."""
    from votersdaily.distributed.link import REDIS_REFUSED, no_such_database, redis_down_line

    if no_such_database(exc):
        return fail(redis_down_line(mask_uri(redis_url), exc, "--redis-url"), EXIT_USAGE)
    line = redis_down_line(mask_uri(redis_url), exc, "--redis-url")
    if isinstance(exc, REDIS_REFUSED):  # a push script is taken whole or not at all
        line += "; then enqueue again: what this run queued is skipped as already seen"
    return fail(line, EXIT_UNAVAILABLE)


def redis_url_problem(redis_url: str | None) -> str | None:
    """Why ``redis_url`` names no Redis to queue into, or None."""
    if not redis_url:
        return "no Redis configured: give --redis-url, set $%s or the REDIS_URL setting" % REDIS_ENV
    if not REDIS_URL_FORM(redis_url):  # redis://host:6379/l would queue into database 0, without a word
        return "%s is not %s" % (mask_uri(redis_url), REDIS_URL_FORM.what)
    return None


def run(args: argparse.Namespace) -> int:
    # Imported here, as every command's own dependencies: `python -m votersdaily` imports each
    # command module to build its parser, and a crawl needs no Redis client (0.04 s).
    from redis.exceptions import RedisError

    from votersdaily.distributed import redis_server
    from votersdaily.distributed.enqueue import enqueue
    from votersdaily.distributed.persistence import LOSS, RedisNotDurable

    settings = project_settings()
    if args.allow_volatile_redis:
        settings.set("VOTERSDAILY_REDIS_REQUIRE_PERSISTENCE", False, priority="cmdline")
    if args.redis_url:
        # The environment wins over the setting (votersdaily.plumbing.environment): so does --redis-url.
        os.environ[REDIS_ENV] = args.redis_url
    redis_url = setting_or_environment(settings, "REDIS_URL")
    loader = SpiderLoader.from_settings(settings)
    problem = redis_url_problem(redis_url) or spider_problem(loader, args.spider)
    if problem:
        return fail(problem)
    try:
        redis_server(settings)  # the service first: the inputs matter only once they can be queued
    except RedisError as exc:
        return redis_unreachable(redis_url, exc)
    except ValueError as exc:  # redis-py's parse_url: no redis://, a bad port or database
        return fail("%s is not a Redis URL (%s): e.g. redis://127.0.0.1:6379/0" % (mask_uri(redis_url), exc))
    # A spider's Redis worker (``<spider>_worker``) knows which of its arguments takes a file.
    worker = args.spider + "_worker"
    bad_inputs: list[str] = []
    try:
        kwargs = spider_arguments(
            loader.load(worker if worker in loader.list() else args.spider), args.sources, bad_inputs
        )
    except ValueError as exc:
        return fail(str(exc))
    for line in bad_inputs:
        say("bad input at %s" % line)
    problem = add_spider_arguments(kwargs, args.spider_args, loader.load(args.spider))
    if problem:
        return fail(problem)
    try:
        report = enqueue(args.spider, settings, **kwargs)
    except RedisNotDurable as exc:
        return fail(str(exc), EXIT_UNAVAILABLE)
    except UsageError as exc:  # a setting the spider refuses before any work (a bad host list entry)
        return fail(str(exc))
    except RedisError as exc:
        return redis_unreachable(redis_url, exc)
    if report.volatile:
        say("warning: %s (--allow-volatile-redis: %s)" % (report.volatile, LOSS))
    if report.migrated:
        say(
            "moved the previous version's queue into a Redis stream: %d waiting, "
            "%d leased by old workers (they run again), %d dead letters"
            % (report.migrated.waiting, report.migrated.leased, report.migrated.dead)
        )
    # Like `ingest enqueue`: the good inputs are queued, each bad one was reported above (exit 1).
    bad = len(report.bad) + len(bad_inputs)
    print(
        "%s: %d requests queued, %d already seen, %d items ignored (%d bad)"
        % (report.queue, report.pushed, report.duplicates, report.skipped_items, bad)
    )
    return EXIT_FAILED if bad else EXIT_OK
