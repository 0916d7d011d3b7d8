"""The real house_floor spider on its real recordings, parsed again and again: a crawl with many
responses and events (each repetition's unique keys get a suffix, so every event is a new document).
Loaded with ``-s SPIDER_MODULES=tests.repeating_spiders``; the pipeline benchmark uses it too.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta

from scrapy import signals

from votersdaily.requestmeta import START_META
from votersdaily.spiders.house_floor import HouseFloorSpider


class RepeatedHouseFloorSpider(HouseFloorSpider):
    name = "repeated_house_floor"
    custom_settings = {
        **HouseFloorSpider.custom_settings,
        "HTTPCACHE_ENABLED": False,
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    }

    #: The recordings repeated, and their floor_actions together (7 + 41).
    RECORDINGS = ("20261001.xml", "20260902.xml")
    EVENTS_PER_ROUND = 48

    def __init__(
        self, *args, count: str = "20000", report: str | None = None, shift_days: str = "0", **kwargs
    ):
        urls = [u for u in HouseFloorSpider.recording_urls() if u.rsplit("/", 1)[-1] in self.RECORDINGS]
        super().__init__(*args, url=",".join(urls), **kwargs)
        self.rounds = max(1, int(count) // self.EVENTS_PER_ROUND)  # whole rounds: the same events every run
        self.report = report
        #: Every event moved by this many days (a derived variant: the same actions, rescheduled).
        self.shift = timedelta(days=int(shift_days))
        #: The most responses the scraper held at once (being scraped or queued for it).
        self.peak_parked = 0
        #: Responses that reached the engine while it was paused, per pause (the pause count's value):
        #: only requests already handed to the downloader may land then.
        self.landed_per_pause: Counter[int] = Counter()

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider._landed, signal=signals.response_received)
        return spider

    def _landed(self, response, request, spider):
        if self.crawler.engine.paused:
            self.landed_per_pause[self.crawler.stats.get_value("store/engine_paused", 0)] += 1

    def initial_requests(self):
        for rep in range(self.rounds):
            for url in self.given_urls:
                yield self.document_request(url, dont_filter=True, meta={"rep": rep, START_META: True})

    def parse_events(self, response):
        slot = self.crawler.engine.scraper.slot
        self.peak_parked = max(self.peak_parked, len(slot.active) + len(slot.queue))
        for event in super().parse_events(response):
            event["unique_key"] = "%s-r%d" % (event["unique_key"], response.meta["rep"])
            event["datetime"] += self.shift
            yield event

    def closed(self, reason):
        if self.report:
            with open(self.report, "w") as fh:
                json.dump(
                    {
                        "peak_parked": self.peak_parked,
                        "most_landed_in_one_pause": max(self.landed_per_pause.values(), default=0),
                        "stats": self.crawler.stats.get_stats(),
                    },
                    fh,
                    default=str,
                )
