"""The spiders the pipeline benchmark runs.

``bench_events`` parses the recorded roll314.xml once and yields one small event per (synthetic roll
number, member row) until ``count`` events: a spider whose own cost per item is close to nothing.
``bench_house_floor`` is the real house_floor spider on its real recordings, repeated
(:class:`tests.repeating_spiders.RepeatedHouseFloorSpider`).
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timedelta

import requests

from tests.repeating_spiders import RepeatedHouseFloorSpider
from votersdaily.items import EventItem
from votersdaily.recordings import HERE
from votersdaily.sources.xml import outer_xml, parse_xml, text_of
from votersdaily.spiders.base import EventSpider

ROLL = HERE / "gov" / "house_roll_call" / "roll314.xml"


class BenchResult:
    """Writes the run's figures for benchmarks/pipeline.py when the spider closes."""

    t0 = 0.0

    def closed(self, reason):
        out = os.environ.get("BENCH_RESULT")
        if out:
            elapsed = time.monotonic() - self.t0
            stats = self.crawler.stats.get_stats()
            with open(out, "w") as fh:
                json.dump(
                    {
                        "items": stats.get("item_scraped_count", 0),
                        "seconds": elapsed,
                        "inserted": stats.get("store/vd_events/inserted", 0),
                        "unchanged": stats.get("store/vd_events/unchanged", 0),
                    },
                    fh,
                )


class BenchEventsSpider(BenchResult, EventSpider):
    name = "bench_events"
    branch = "Legislative"
    entity = "House of Representatives"
    custom_settings = {**EventSpider.custom_settings, "HTTPCACHE_ENABLED": False, "LOG_LEVEL": "WARNING"}

    def __init__(self, *args, count: str = "20000", **kwargs):
        super().__init__(*args, url=ROLL.resolve().as_uri(), **kwargs)
        self.count = int(count)

    def parse_events(self, response):
        self.t0 = time.monotonic()
        root = parse_xml(response.body, ("rollcall-vote",), response.url)
        rows = root.findall("vote-data/recorded-vote")
        start = datetime(2026, 9, 16, 19, 5)
        n = 0
        roll = 0
        while n < self.count:
            roll += 1
            for row in rows:
                if n >= self.count:
                    break
                member = row.find("legislator")
                yield {
                    "datetime": start + timedelta(minutes=roll),
                    "title": "Roll %d: %s voted %s" % (roll, text_of(member), text_of(row, "vote")),
                    "unique_key": "%d-%s" % (roll, member.get("name-id")),
                    "source_text": outer_xml(row),
                    "vote": text_of(row, "vote"),
                    "party": member.get("party"),
                    "state": member.get("state"),
                }
                n += 1


class BenchHouseFloorSpider(BenchResult, RepeatedHouseFloorSpider):
    """The real house_floor spider on its real recordings, repeated until ``count`` events."""

    name = "bench_house_floor"
    custom_settings = dict(RepeatedHouseFloorSpider.custom_settings, LOG_LEVEL="WARNING")

    def parse_events(self, response):
        if not self.t0:
            self.t0 = time.monotonic()
        yield from super().parse_events(response)


class NaivePutPipeline:
    """The naive writer the benchmark compares against: one blocking HTTP PUT per item."""

    def __init__(self, crawler):
        from votersdaily.store import store_uri

        self.base = store_uri(crawler.settings).rstrip("/") + "/vd_events/"
        self.session = requests.Session()
        self.session.headers["Accept"] = "application/json"
        self.session.put(self.base)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def process_item(self, item):
        if isinstance(item, EventItem):
            from urllib.parse import quote

            doc = dict(item)
            doc_id = doc.pop("_id")
            self.session.put(self.base + quote(doc_id, safe=""), data=json.dumps(doc))
        return item
