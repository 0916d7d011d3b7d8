"""The spiders the pipeline benchmark runs.

``bench_events`` parses the recorded roll314.xml once and yields one small event per (synthetic roll
number, member row) until ``count`` events: a spider whose own cost per item is close to nothing.
``bench_house_floor`` is the real house_floor spider on its real recordings, repeated
(:class:`tests.repeating_spiders.RepeatedHouseFloorSpider`).
"""

from __future__ import annotations

import gc
import json
import os
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import requests
from scrapy import signals

from tests.repeating_spiders import RepeatedHouseFloorSpider
from votersdaily.items import EventItem
from votersdaily.recordings import HERE
from votersdaily.requestmeta import SOURCE_URL_META, START_META
from votersdaily.sources.xml import outer_xml, parse_xml, text_of
from votersdaily.spiders.base import EventSpider
from votersdaily.spiders.federal_register import FederalRegisterSpider

ROLL = HERE / "gov" / "house_roll_call" / "roll314.xml"
#: The repetition a response stands for (a ``vd_`` key: the archive keeps it, a reparse gets it back).
REP_META = "vd_bench_rep"


def thread_cpu() -> dict[str, float]:
    """CPU seconds of this process's Python threads so far, by thread name, and of those in the
    kernel (``<name> sys``) (Linux; a name's threads summed, pool threads' numbers left out:
    ``PoolThread-…-0`` and ``-1`` are one entry)."""
    ticks = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for thread in threading.enumerate():
        try:
            stat = Path("/proc/self/task/%d/stat" % thread.native_id).read_text()
        except (OSError, TypeError):  # ended meanwhile, or not started
            continue
        fields = stat.rsplit(")", 1)[1].split()
        name = thread.name.rstrip("0123456789").rstrip("-_")
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / ticks
        out[name + " sys"] = out.get(name + " sys", 0.0) + int(fields[12]) / ticks
    return out


class GcTime:
    """CPU seconds Python's cyclic garbage collector ran (in whichever thread), and how often, per generation."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.runs = [0, 0, 0]
        self._start = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.thread_time()
        else:
            self.seconds[info["generation"]] += time.thread_time() - self._start
            self.runs[info["generation"]] += 1

    def report(self) -> dict:
        gc.callbacks.remove(self._callback)
        return {"seconds": [round(s, 3) for s in self.seconds], "runs": self.runs}


class BenchResult:
    """Writes the run's figures for benchmarks/pipeline.py when the engine has stopped (after every
    ``spider_closed`` receiver: the store's flush, a reparse's checks and marks, the run log): items,
    wall seconds from the first parse (from the spider's opening for a reparse, whose reads of the
    store come before), CPU seconds of the process, its threads and the garbage collector, and what
    the store's writers did."""

    t0 = 0.0
    cpu0 = 0.0
    reactor_cpu0 = 0.0

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider._bench_opened, signal=signals.spider_opened)
        crawler.signals.connect(spider._bench_closing, signal=signals.spider_closed)
        crawler.signals.connect(spider._bench_result, signal=signals.engine_stopped)
        return spider

    def _bench_opened(self, spider) -> None:
        if getattr(self, "reparse", None) is not None:
            self.start_clock()

    def _bench_closing(self, spider) -> None:
        """Threads that end with the spider (the archive's writer): their CPU time now."""
        self.threads_at_close = thread_cpu()

    def start_clock(self) -> None:
        if not self.t0:
            self.t0 = time.monotonic()
            self.cpu0 = time.process_time()
            self.reactor_cpu0 = time.thread_time()
            self.threads0 = thread_cpu()
            self.gc_time = GcTime()

    def _bench_result(self) -> None:
        out = os.environ.get("BENCH_RESULT")
        if not out:
            return
        elapsed = time.monotonic() - self.t0
        stats = self.crawler.stats.get_stats()
        figures = {
            "items": stats.get("item_scraped_count", 0),
            "seconds": elapsed,
            "cpu": time.process_time() - self.cpu0,
            "reactor_cpu": time.thread_time() - self.reactor_cpu0,
            "thread_cpu": {
                name: round(cpu - self.threads0.get(name, 0.0), 3)
                for name, cpu in {**getattr(self, "threads_at_close", {}), **thread_cpu()}.items()
            },
            "gc": self.gc_time.report(),
            "paused": [stats.get("store/engine_paused", 0), stats.get("store/engine_paused_seconds", 0.0)],
        }
        for kind in ("inserted", "updated", "unchanged"):
            figures[kind] = stats.get("store/vd_events/%s" % kind, 0)
        # A reparse's end: its start read reused (nothing committed to the store since) or read again.
        figures["end_read"] = stats.get("reparse/end_read")
        Path(out).write_text(json.dumps(figures))


class BenchEventsSpider(BenchResult, EventSpider):
    name = "bench_events"
    branch = "Legislative"
    entity = "House of Representatives"
    custom_settings = {**EventSpider.custom_settings, "HTTPCACHE_ENABLED": False, "LOG_LEVEL": "WARNING"}

    def __init__(self, *args, count: str = "20000", **kwargs):
        super().__init__(*args, url=ROLL.resolve().as_uri(), **kwargs)
        self.count = int(count)

    def parse_events(self, response):
        self.start_clock()
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
        self.start_clock()
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


class BenchFederalRegisterSpider(BenchResult, FederalRegisterSpider):
    """The real federal_register spider on its two real recordings (20 + 10 documents), repeated
    until ``count`` events; each repetition's document numbers get a suffix of the repetition and the
    page (3 documents are on both pages), so every event is a document of its own (the suffix is the
    request's ``vd_bench_rep``, which the archive keeps: a reparse of the archive yields the same
    events)."""

    name = "bench_federal_register"
    custom_settings = {
        **FederalRegisterSpider.custom_settings,
        "HTTPCACHE_ENABLED": False,
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
        "LOG_LEVEL": "WARNING",
    }
    EVENTS_PER_ROUND = 30

    def __init__(self, *args, count: str = "20000", version: str | None = None, **kwargs):
        if kwargs.get("reparse"):  # the archive is the input
            super().__init__(*args, **kwargs)
        else:
            super().__init__(*args, url=",".join(FederalRegisterSpider.recording_urls()), **kwargs)
        if version:  # a new parser version: a reparse then updates every event
            self.version = version
        self.rounds = max(1, -(-int(count) // self.EVENTS_PER_ROUND))
        self.count = int(count)

    def initial_requests(self):
        upstream = {url: self.upstream_url(url) for url in self.given_urls}
        for rep in range(self.rounds):
            for page, url in enumerate(self.given_urls):
                yield self.document_request(
                    url,
                    dont_filter=True,
                    meta={REP_META: "%d-%d" % (rep, page), SOURCE_URL_META: upstream[url], START_META: True},
                )

    def parse_events(self, response):
        self.start_clock()
        rep = response.meta[REP_META]
        for event in super().parse_events(response):
            event["unique_key"] = "%s-r%s" % (event["unique_key"], rep)
            yield event
