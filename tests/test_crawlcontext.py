"""The typed per-crawl context (votersdaily/crawlcontext.py): what the spider tells its crawl's components
(its source's zone, the reparse it was asked for), and the run log's record that the commands show."""

from __future__ import annotations

import re
from pathlib import Path

import scrapy
from scrapy.utils.test import get_crawler

from tests.conftest import recording
from tests.support.inprocess import crawler_in_process
from tests.support.services import cli_environment
from votersdaily import crawlcontext
from votersdaily.cli.crawl import summary_row
from votersdaily.commands.crawl import run_status
from votersdaily.crawlcontext import SOURCE_TIMEZONE, CrawlContext, RunRecord, crawl_context
from votersdaily.items import EventItem
from votersdaily.pipelines import EventStorePipeline, NormaliseDatetimesPipeline
from votersdaily.spiders.base import EventSpider
from votersdaily.spiders.house_votes import HouseVotesSpider
from votersdaily.store import open_store

ROLL314 = recording("gov/house_roll_call/roll314.xml")
#: roll314.xml's <action-date>/<action-time>: 16-Sep-2026 7:05 PM, Eastern time (23:05 UTC).
ROLL314_LOCAL = "2026-09-16T19:05:00"


class CentralVotes(HouseVotesSpider):
    """house_votes as if its source wrote Central time (a spider that says another zone)."""

    name = "central_votes"
    source_timezone = "America/Chicago"


def naive_event() -> EventItem:
    """An event whose time carries no zone and which does not name its zone itself."""
    return EventItem(datetime=ROLL314_LOCAL, end_datetime=None)


def test_the_pipelines_fallback_zone_is_the_spider_bases():
    """A crawl of no event spider reads a naive event time in the zone the spider base gives (it read
    it in UTC before: five hours off for every federal source)."""
    crawler = get_crawler(scrapy.Spider, {"TWISTED_REACTOR": None})
    assert crawl_context(crawler).source_timezone == EventSpider.source_timezone == SOURCE_TIMEZONE
    item = NormaliseDatetimesPipeline(crawler).process_item(naive_event())
    assert item["datetime"] == "2026-09-16T23:05:00Z"


def test_an_event_spider_gives_its_crawl_its_zone():
    crawler = get_crawler(CentralVotes, {"TWISTED_REACTOR": None})
    CentralVotes.from_crawler(crawler)
    assert crawl_context(crawler).source_timezone == "America/Chicago"
    item = NormaliseDatetimesPipeline(crawler).process_item(naive_event())
    assert item["datetime"] == "2026-09-17T00:05:00Z"  # 7:05 PM CDT
    # The event's own zone wins over the spider's.
    own = NormaliseDatetimesPipeline(crawler).process_item(
        EventItem(datetime=ROLL314_LOCAL, end_datetime=None, source_timezone="UTC")
    )
    assert own["datetime"] == "2026-09-16T19:05:00Z"


def test_each_crawler_has_its_own_context():
    first, second = (get_crawler(HouseVotesSpider, {"TWISTED_REACTOR": None}) for _ in range(2))
    HouseVotesSpider.from_crawler(first, reparse="archive", dry_run="1")
    HouseVotesSpider.from_crawler(second)
    assert crawl_context(first) is crawl_context(first) is not crawl_context(second)
    assert crawl_context(second) == CrawlContext()  # an ordinary crawl: no reparse, no record yet


def test_a_reparse_is_in_the_context_and_a_dry_run_keeps_the_store_pipeline_aside(sqlite_uri):
    crawler = get_crawler(HouseVotesSpider, {"TWISTED_REACTOR": None, "VOTERSDAILY_STORE": sqlite_uri})
    spider = HouseVotesSpider.from_crawler(
        crawler, reparse="archive", since="2026-09-01", until="2026-09-30", dry_run="1"
    )
    context = crawl_context(crawler)
    assert context.reparse is spider.reparse and context.reparse is not None
    assert (
        context.reparse.since is not None and context.reparse.since.isoformat() == "2026-09-01T00:00:00+00:00"
    )
    assert context.dry_run
    assert EventStorePipeline(crawler)._dry_run()
    real = get_crawler(HouseVotesSpider, {"TWISTED_REACTOR": None, "VOTERSDAILY_STORE": sqlite_uri})
    HouseVotesSpider.from_crawler(real, reparse="archive")
    assert crawl_context(real).reparse is not None and not crawl_context(real).dry_run
    assert not EventStorePipeline(real)._dry_run()


def test_the_run_record_is_the_run_logs_document_and_what_the_commands_show(sqlite_uri):
    """A real crawl of a recorded roll call: the record the run log leaves in the context is its
    vd_log document, typed; the summary table's row and ``scrapy crawl``'s exit status read it."""
    crawler = crawler_in_process(
        "house_votes", cli_environment(sqlite_uri), {"url": ROLL314.resolve().as_uri()}
    )
    record = crawl_context(crawler).run
    assert record is not None
    store = open_store(sqlite_uri)
    try:
        (doc,) = (
            r.doc
            for r in store.query("vd_log", "by_parser", startkey=["house_votes"], endkey=["house_votes", {}])
        )
    finally:
        store.close()
    assert record == RunRecord.from_run_log(doc, "vd_events")
    assert (record.spider, record.result, record.inserted, record.items) == ("house_votes", "success", 1, 1)
    assert (record.spooled, record.lost, record.run_log) == (0, 0, None)
    row = summary_row(crawler)
    assert (row["spider"], row["result"], row["inserted"], row["items"]) == ("house_votes", "success", 1, 1)
    assert row["seconds"] == doc["parser_runtime"]
    assert run_status([crawler]) == 0


def test_a_crawl_without_a_run_record_says_so():
    crawler = get_crawler(HouseVotesSpider, {"TWISTED_REACTOR": None})
    row = summary_row(crawler)
    assert (row["spider"], row["result"], row["inserted"], row["seconds"]) == (
        "house_votes",
        "no run log",
        0,
        "",
    )
    assert run_status([crawler]) == 0  # the run log switched off: a success, as in Scrapy


#: How the state the context carries travelled before: read from the spider with getattr, pinned on
#: the Crawler, or read back from the run log's stats by name.
OLD_WAYS = re.compile(
    r"getattr\([^)]*[\"'](reparse|source_timezone|reparse_plan)[\"']"
    r"|crawler\.reparse_plan"
    r"|(get_value|get)\([\"'](votersdaily|reparse)/"
)


def test_no_module_reads_that_state_another_way():
    package = Path(crawlcontext.__file__).parent
    found = [
        "%s:%d: %s" % (path.relative_to(package), number, line.strip())
        for path in sorted(package.rglob("*.py"))
        if "recordings" not in path.parts
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if OLD_WAYS.search(line)
    ]
    assert found == []
