"""``crawl --all [--offline] [--due]``: the main job, every event spider in one process, then a summary.

``-a NAME=VALUE`` gives every spider of the run that argument (``crawl house_votes -a url=file://…``),
``-s NAME=VALUE`` a setting; both, and the store URI, are checked before anything starts (exit 2).
Ctrl-C stops after the current requests, a second one now (votersdaily/interrupts.py); an
interrupted crawl exits 130.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO

from scrapy.crawler import CrawlerProcess
from scrapy.spiderloader import get_spider_loader

from votersdaily.archive import archive_dir
from votersdaily.crawlcontext import RunRecord, crawl_context, incomplete_lines, not_archived_line
from votersdaily.gc_freeze import freeze_at_exit
from votersdaily.interrupts import FORCED_STOP, INTERRUPTED, Interrupts
from votersdaily.locations import archive_written, misplaced
from votersdaily.plumbing.inputs import bad_spider_arguments
from votersdaily.reactor import installed_reactor
from votersdaily.spiders.base import EventSpider
from votersdaily.store import mask_uri, store_uri
from votersdaily.store.base import STORE_RESULTS, StoreError
from votersdaily.store.check import StoreMisconfigured, checked_store
from votersdaily.store.spool import NotSpooled, spool_dir

from . import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_SPOOLED, EXIT_UNAVAILABLE, fail, say
from .options import BadSetting, add_scrapy_options, add_spider_arguments, scrapy_settings

if TYPE_CHECKING:
    import argparse
    from datetime import datetime
    from pathlib import Path

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from twisted.internet.task import LoopingCall

COLUMNS = (
    "spider",
    "result",
    "inserted",
    "updated",
    "unchanged",
    "duplicate",
    "dropped",
    "items",
    "spooled",
    "seconds",
)
#: Results of runs that failed only because the store did not take their documents (then spooled).


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    add_spider_arguments(parser)
    parser.add_argument("spiders", nargs="*", help="spider names (instead of --all)")
    parser.set_defaults(func=run, scrapy_logging=True)


def event_spiders(settings: BaseSettings, names: Iterable[str] | None = None) -> dict[str, type[EventSpider]]:
    """Every event spider by name, or those of ``names`` (importing only their own modules: see
    votersdaily/spiderloader.py); a name that is no event spider is left out."""
    loader = get_spider_loader(settings)
    found = {}
    for name in sorted(loader.list() if names is None else names):
        try:
            spidercls = loader.load(name)
        except KeyError:
            continue
        if issubclass(spidercls, EventSpider):
            found[name] = spidercls
    return found


def run(args: argparse.Namespace) -> int:
    try:
        settings = scrapy_settings(args)
    except BadSetting as exc:
        return fail(str(exc))
    from votersdaily.scrapy_outputs import guard_log_file, output_problems  # Scrapy's feed storage

    # a file where the archive goes: no WARC copy of any document; a log file Scrapy cannot open
    for misplacement in (*misplaced(settings, archive_written(settings)), *output_problems(settings)):
        return fail(misplacement)
    if args.all and args.spiders:  # `crawl --all house_votse`: the names were ignored and everything crawled
        return fail("give --all or spider names, not both (%s)" % ", ".join(args.spiders))
    available = event_spiders(settings, None if args.all else args.spiders)
    names = sorted(available) if args.all else args.spiders
    if not names and not args.all:  # `crawl --due`: it selects among the spiders named, or --all
        return fail(
            "name the spiders to crawl, or give --all; known: %s" % ", ".join(event_spiders(settings))
        )
    unknown = [n for n in names if n not in available]
    if unknown:
        return fail(
            "unknown event spider(s): %s; known: %s"
            % (", ".join(unknown), ", ".join(event_spiders(settings)))
        )
    spider_args = dict(args.spider_args)
    if args.offline and "url" in spider_args:
        return fail("-a url= and --offline both say which documents to read: give one")
    runs, skipped = {}, []
    for name in names:
        kwargs = dict(spider_args)
        if args.offline:
            urls = available[name].recording_urls()
            if not urls:
                skipped.append(name)
                continue
            kwargs["url"] = ",".join(urls)
        runs[name] = kwargs
    for name, kwargs in runs.items():
        problem = bad_spider_arguments(available[name], kwargs)
        if problem:
            return fail(problem)  # before the store is touched: a typo is not a failed run
    uri = store_uri(settings)
    try:
        checked_store(uri).close()
    except StoreMisconfigured as exc:
        return fail(str(exc))  # a typo: nothing to spool, nothing was tried
    except StoreError as exc:
        return store_unavailable(settings, {n: available[n] for n in runs}, runs, exc)
    not_due = []
    if args.due:
        due = set(due_spiders({n: available[n] for n in names}, settings=settings))
        not_due = [n for n in names if n not in due]
        runs = {n: kwargs for n, kwargs in runs.items() if n in due}
    guard_log_file()
    process = CrawlerProcess(settings)
    progress = Progress(len(runs))
    crawlers = []
    for name, kwargs in runs.items():
        crawler = process.create_crawler(available[name])
        crawlers.append(crawler)
        process.crawl(crawler, **kwargs).addBoth(progress.finished, crawler)
    interrupts = Interrupts(process, say)
    if crawlers:
        progress.start_live(crawlers)
        interrupts.install()
        freeze_at_exit()  # the process ends after the crawl: no collection of everything at its exit
        process.start()
    counted = [summary_row(c) for c in crawlers]
    rows = counted + [{"spider": n, "result": "skipped (no recording here)"} for n in skipped]
    rows += [{"spider": n, "result": "not due"} for n in not_due]
    lost = sum(r["lost"] for r in counted)
    print_table(rows, columns=(*COLUMNS, "lost") if lost else COLUMNS)
    records = [crawl_context(c).run for c in crawlers]
    incomplete = incomplete_runs(records)
    if crawlers:
        print("events and run logs are in %s" % mask_uri(uri), file=sys.stderr)
        if settings.getbool("VOTERSDAILY_ARCHIVE_ENABLED") and not_archived_line(records) is None:
            print(
                "the parsed source documents are archived in %s" % archive_dir(settings).resolve(),
                file=sys.stderr,
            )
    status = crawl_status(counted, spool_dir(settings), mask_uri(uri), incomplete=incomplete)
    return interrupted(interrupts.stop, counted, settings) if interrupts.stop else status


def crawl_status(
    rows: list[dict[str, Any]], spool_folder: Path | str, shown_uri: str, incomplete: bool = False
) -> int:
    """What the crawl's exit status says, with a line for what is not in the table: 1 when a run
    failed, documents were lost, or runs were ``incomplete`` (source documents not archived,
    documents the store refused), else 4 when documents wait in the spool, else 0."""
    delivered = sum(r["spool_delivered"] for r in rows)
    if delivered:
        print(
            "%d documents spooled by earlier runs were delivered to %s (not counted above)"
            % (delivered, shown_uri),
            file=sys.stderr,
        )
    lost = sum(r["lost"] for r in rows)
    spooled = sum(r["spooled"] for r in rows)
    if spooled:
        print(
            "%d documents wait in the spool %s for %s: `python -m votersdaily flush` delivers them "
            "once it takes them" % (spooled, spool_folder, shown_uri),
            file=sys.stderr,
        )
    if lost:
        say(
            "%d documents were lost: neither the store nor the spool folder %s took them"
            % (lost, spool_folder)
        )
        return EXIT_FAILED
    if incomplete or any(r["result"] not in ("success", *STORE_RESULTS) for r in rows):
        return EXIT_FAILED
    if spooled:
        return EXIT_SPOOLED
    return EXIT_OK if all(r["result"] == "success" for r in rows) else EXIT_FAILED


def incomplete_runs(records: list[RunRecord | None]) -> bool:
    """Whether runs did not do all their job though they succeeded, each way said in one line
    (:func:`~votersdaily.crawlcontext.incomplete_lines`): source documents not all archived (their
    events are stored all the same, ``archived: false``), documents the store refused."""
    lines = incomplete_lines(records)
    for line in lines:
        say(line)
    return bool(lines)


def interrupted(stop: str, rows: list[dict[str, Any]], settings: BaseSettings) -> int:
    """The last line of an interrupted crawl: which spiders finished and what became of the others."""
    stopped = [r["spider"] for r in rows if r.get("result") == INTERRUPTED]
    finished = [r["spider"] for r in rows if r.get("result") not in (INTERRUPTED, "no run log")]
    where = (
        "their run logs and unwritten documents are spooled in %s" % spool_dir(settings).resolve()
        if stop == FORCED_STOP
        else "their run logs say what they stored"
    )
    say(
        "interrupted: %d spiders finished, %d stopped before they finished (%s)%s"
        % (len(finished), len(stopped), ", ".join(stopped) or "none", "; " + where if stopped else "")
    )
    return EXIT_INTERRUPTED


def store_unavailable(
    settings: BaseSettings, spiders: dict[str, type[EventSpider]], runs: dict[str, Any], exc: StoreError
) -> int:
    """Nothing is crawled into a store that cannot take it: one line saying why, and each spider's
    run log (result StoreUnavailable) spooled for when the store is back."""
    from votersdaily.extensions import first_start_url, spool_run_log, unavailable_run_log

    say(str(exc))
    kept = lost = 0
    for name, cls in spiders.items():
        # an instance: most spiders' listing URLs depend on the date or the spider's arguments
        source = (runs[name].get("url") or first_start_url(cls())).split(",")[0]
        try:
            spool_run_log(settings, unavailable_run_log(cls, source, exc))
            kept += 1
        except NotSpooled:
            lost += 1
    if kept:
        say("nothing crawled; %d run logs (StoreUnavailable) spooled to %s" % (kept, spool_dir(settings)))
    if lost:
        # The folder and why were said once when it refused (the spool's own line).
        say(
            "nothing crawled; %d run logs (StoreUnavailable) lost: the spool could not take them either"
            % lost
        )
    return EXIT_UNAVAILABLE


class Progress:
    """One line per spider as it finishes (on standard error, so the summary table stays clean on
    standard output); on a terminal also a live count of finished spiders and scraped items."""

    def __init__(self, total: int, out: TextIO | None = None) -> None:
        self.total = total
        self.done = 0
        self.out = out or sys.stderr
        self.live: LoopingCall | None = None

    def finished(self, result: Any, crawler: Crawler) -> Any:
        self.done += 1
        row = summary_row(crawler)
        self._clear_live()
        print(
            "[%d/%d] %s: %s, %s inserted, %s updated, %s items, %s%ss"
            % (
                self.done,
                self.total,
                row["spider"],
                row["result"],
                row["inserted"],
                row["updated"],
                row["items"],
                "%s spooled, " % row["spooled"] if row["spooled"] else "",
                row["seconds"],
            ),
            file=self.out,
            flush=True,
        )
        return result

    def start_live(self, crawlers: list[Crawler]) -> None:
        if not self.out.isatty():
            return
        from twisted.internet import task

        reactor = installed_reactor()

        def show() -> None:
            items = sum(c.stats.get_value("item_scraped_count", 0) for c in crawlers if c.stats)
            self.out.write("\r%d of %d spiders finished, %d items so far " % (self.done, self.total, items))
            self.out.flush()

        self.live = task.LoopingCall(show)
        reactor.callWhenRunning(self.live.start, 1.0)
        reactor.addSystemEventTrigger("before", "shutdown", self._stop_live)

    def _clear_live(self) -> None:
        if self.live is not None:
            self.out.write("\r\033[K")

    def _stop_live(self) -> None:
        if self.live is not None and self.live.running:
            self.live.stop()
        self._clear_live()


def due_spiders(
    spiders: dict[str, type[EventSpider]], now: datetime | None = None, settings: BaseSettings | None = None
) -> list[str]:
    """Spiders whose last run in vd_log started ``frequency_hours`` ago or more (or never ran), in the
    store (and database prefix) of ``settings``."""
    from datetime import timedelta

    from votersdaily.clock import now_utc
    from votersdaily.schema import LOG_DB, parse_iso_utc
    from votersdaily.store import open_store, store_uri

    now = (now or now_utc()).replace(tzinfo=None)
    store = open_store(store_uri(settings), settings)
    try:
        if not store.has_db(LOG_DB):
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


def summary_row(crawler: Crawler) -> dict[str, Any]:
    """The summary table's row of one crawl: its run log's record (``crawl_context(crawler).run``);
    a crawl without one (the run log switched off, or the spider never started) says so."""
    record = crawl_context(crawler).run
    if record is None:
        return {**_row(RunRecord(spider=crawler.spidercls.name, result="no run log")), "seconds": ""}
    return _row(record)


def _row(record: RunRecord) -> dict[str, Any]:
    return {
        "spider": record.spider,
        "result": record.result,
        "inserted": record.inserted,
        "updated": record.updated,
        "unchanged": record.unchanged,
        "duplicate": record.duplicates,
        "dropped": record.dropped,
        "items": record.items,
        "spooled": record.spooled,
        "lost": record.lost,
        "spool_delivered": record.spool_delivered,
        "seconds": record.seconds,
        "withdrawn": record.withdrawn,
        "replaced": record.replaced,
        "unjudged": record.unjudged,
    }


def print_table(
    rows: list[dict[str, Any]], out: TextIO | None = None, columns: tuple[str, ...] = COLUMNS
) -> None:
    out = out or sys.stdout
    cells = [[str(r.get(c, "")) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    fmt = "  ".join("{:<%d}" % w for w in widths)
    print(fmt.format(*columns), file=out)
    print(fmt.format(*("-" * w for w in widths)), file=out)
    for row in cells:
        print(fmt.format(*row), file=out)
