"""``crawl --all [--offline] [--due]``: the main job, every event spider in one process, then a summary."""

from __future__ import annotations

import sys

from scrapy.crawler import CrawlerProcess
from scrapy.spiderloader import SpiderLoader

from ..spiders.base import EventSpider
from .options import BadSetting, add_scrapy_options, scrapy_settings

COLUMNS = ("spider", "result", "inserted", "updated", "unchanged", "duplicate", "dropped", "items", "seconds")


def register(sub) -> None:
    parser = sub.add_parser("crawl", help="run event spiders and print a per-spider summary")
    parser.add_argument("--all", action="store_true", help="every event spider")
    parser.add_argument(
        "--offline", action="store_true", help="replay the recorded responses the project ships"
    )
    parser.add_argument(
        "--due",
        action="store_true",
        help="only spiders whose last run (in vd_log) is older than their frequency_hours",
    )
    add_scrapy_options(parser, "run")
    parser.add_argument("spiders", nargs="*", help="spider names (instead of --all)")
    parser.set_defaults(func=run)


def event_spiders(settings) -> dict[str, type[EventSpider]]:
    loader = SpiderLoader.from_settings(settings)
    return {name: cls for name in sorted(loader.list()) if issubclass(cls := loader.load(name), EventSpider)}


def run(args) -> int:
    try:
        settings = scrapy_settings(args)
    except BadSetting as exc:
        print(exc, file=sys.stderr)
        return 2
    available = event_spiders(settings)
    names = sorted(available) if args.all else args.spiders
    unknown = [n for n in names if n not in available]
    if unknown or (not names and not args.all):
        print(
            "unknown event spider(s): %s; known: %s"
            % (", ".join(unknown) or "(none given)", ", ".join(available)),
            file=sys.stderr,
        )
        return 2
    not_due = []
    if args.due:
        due = set(due_spiders({n: available[n] for n in names if n in available}))
        not_due = [n for n in names if n not in due]
        names = [n for n in names if n in due]
    process = CrawlerProcess(settings)
    crawlers, skipped = [], []
    for name in names:
        kwargs = {}
        if args.offline:
            urls = available[name].recording_urls()
            if not urls:
                skipped.append(name)
                continue
            kwargs["url"] = ",".join(urls)
        crawler = process.create_crawler(available[name])
        crawlers.append(crawler)
        process.crawl(crawler, **kwargs)
    if crawlers:
        process.start()
    rows = [summary_row(c) for c in crawlers]
    rows += [{"spider": n, "result": "skipped (no recording here)"} for n in skipped]
    rows += [{"spider": n, "result": "not due"} for n in not_due]
    print_table(rows)
    return 0 if all(r.get("result") == "success" for r in rows if r["spider"] not in skipped + not_due) else 1


def due_spiders(spiders: dict[str, type[EventSpider]], now=None) -> list[str]:
    """Spiders whose last run in vd_log started ``frequency_hours`` ago or more (or never ran)."""
    from datetime import timedelta

    from ..clock import now_utc
    from ..schema import LOG_DB, parse_iso_utc
    from ..store import open_store

    now = (now or now_utc()).replace(tzinfo=None)
    store = open_store()
    try:
        if LOG_DB not in store.list_dbs():
            return list(spiders)
        store.install_views(LOG_DB)
        due = []
        for name, cls in spiders.items():
            last = store.query(
                LOG_DB,
                "by_parser",
                startkey=[name, {}],
                endkey=[name],
                descending=True,
                limit=1,
                include_docs=False,
            )
            if not last or now - parse_iso_utc(last[0].key[1]) >= timedelta(hours=cls.frequency_hours):
                due.append(name)
        return due
    finally:
        store.close()


def summary_row(crawler) -> dict:
    stats = crawler.stats.get_stats()
    return {
        "spider": crawler.spider.name,
        "result": stats.get("votersdaily/result", "no run log"),
        "inserted": stats.get("votersdaily/inserted", 0),
        "updated": stats.get("votersdaily/updated", 0),
        "unchanged": stats.get("votersdaily/unchanged", 0),
        "duplicate": stats.get("store/vd_events/duplicates", 0),
        "dropped": stats.get("events/dropped", 0),
        "items": stats.get("item_scraped_count", 0),
        "seconds": stats.get("votersdaily/runtime", ""),
    }


def print_table(rows: list[dict], out=None, columns: tuple[str, ...] = COLUMNS) -> None:
    out = out or sys.stdout
    cells = [[str(r.get(c, "")) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    fmt = "  ".join("{:<%d}" % w for w in widths)
    print(fmt.format(*columns), file=out)
    print(fmt.format(*("-" * w for w in widths)), file=out)
    for row in cells:
        print(fmt.format(*row), file=out)
