"""``crawl --all [--offline]``: the main job, every event spider in one process, then a summary."""

from __future__ import annotations

import sys

from scrapy.crawler import CrawlerProcess
from scrapy.spiderloader import SpiderLoader
from scrapy.utils.project import get_project_settings

from ..spiders.base import EventSpider

COLUMNS = ("spider", "result", "inserted", "updated", "unchanged", "duplicate", "dropped", "items", "seconds")


def register(sub) -> None:
    parser = sub.add_parser("crawl", help="run event spiders and print a per-spider summary")
    parser.add_argument("--all", action="store_true", help="every event spider")
    parser.add_argument("--offline", action="store_true", help="replay the recorded responses the project ships")
    parser.add_argument("--log-level", default="WARNING", help="Scrapy log level (default WARNING)")
    parser.add_argument("spiders", nargs="*", help="spider names (instead of --all)")
    parser.set_defaults(func=run)


def event_spiders(settings) -> dict[str, type[EventSpider]]:
    loader = SpiderLoader.from_settings(settings)
    return {
        name: cls for name in sorted(loader.list())
        if issubclass(cls := loader.load(name), EventSpider)
    }


def run(args) -> int:
    settings = get_project_settings()
    settings.set("LOG_LEVEL", args.log_level, priority="cmdline")
    available = event_spiders(settings)
    names = sorted(available) if args.all else args.spiders
    unknown = [n for n in names if n not in available]
    if unknown or not names:
        print("unknown event spider(s): %s; known: %s" % (", ".join(unknown) or "(none given)", ", ".join(available)),
              file=sys.stderr)
        return 2
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
    process.start()
    rows = [summary_row(c) for c in crawlers]
    rows += [{"spider": n, "result": "skipped (no recording here)"} for n in skipped]
    print_table(rows)
    return 0 if all(r.get("result") == "success" for r in rows if r["spider"] not in skipped) else 1


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


def print_table(rows: list[dict], out=None) -> None:
    out = out or sys.stdout
    cells = [[str(r.get(c, "")) for c in COLUMNS] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(COLUMNS)]
    fmt = "  ".join("{:<%d}" % w for w in widths)
    print(fmt.format(*COLUMNS), file=out)
    print(fmt.format(*("-" * w for w in widths)), file=out)
    for row in cells:
        print(fmt.format(*row), file=out)
