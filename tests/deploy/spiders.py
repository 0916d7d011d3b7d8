"""A small fetch spider for the deployment tests: one document per fetched page, stored through the
framework's batched writer (so outages and spooling are exercised for real)."""

from __future__ import annotations

import hashlib

import scrapy
from scrapy.utils.defer import maybe_deferred_to_future

from votersdaily.distributed.redis_worker import WorkerMixin
from votersdaily.plumbing.inputs import split_urls
from votersdaily.rendering import RENDER_SETTINGS
from votersdaily.store.base import StoreUnavailable
from votersdaily.store.crawler import writer_for


class FetchSpider(scrapy.Spider):
    name = "vd_fetch"
    custom_settings = {
        "ITEM_PIPELINES": {"tests.deploy.spiders.DocStorePipeline": 800},
    }

    def __init__(self, *args, url: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.given_urls = split_urls(url)

    async def start(self):
        for url in self.given_urls:
            yield scrapy.Request(url, callback=self.parse_page)

    def parse_page(self, response):
        yield {
            "_id": hashlib.sha1(response.url.encode()).hexdigest(),
            "url": response.url,
            "body_sha1": hashlib.sha1(response.body).hexdigest(),
            "worker": self.settings.get("TEST_WORKER_NAME", ""),
        }


class DocStorePipeline:
    def __init__(self, crawler):
        self.writer = writer_for(crawler, crawler.settings.get("TEST_DB", "vd_fetch"), ignore=("worker",))

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    async def open_spider(self):
        await maybe_deferred_to_future(self.writer.open())

    async def process_item(self, item):
        waiting = self.writer.add(dict(item))
        if waiting is not None:
            await maybe_deferred_to_future(waiting)
        return item

    async def close_spider(self):
        await maybe_deferred_to_future(self.writer.close())


class RenderedSpider(FetchSpider):
    """Pages whose content JavaScript writes, rendered (Chromium, or Splash when SPLASH_URL is set)."""

    name = "vd_rendered"
    render_js = True
    custom_settings = {
        **RENDER_SETTINGS,
        **FetchSpider.custom_settings,
        # The ingest's guard (INGEST_* settings): what the browser's requests are checked by.
        "DOWNLOADER_MIDDLEWARES": {
            **RENDER_SETTINGS["DOWNLOADER_MIDDLEWARES"],
            "votersdaily.plumbing.ssrf.SsrfGuardMiddleware": 50,
        },
    }

    def parse_page(self, response):
        yield {
            "_id": hashlib.sha1(response.url.encode()).hexdigest(),
            "url": response.url,
            "content": response.css("#content::text").get(),
        }


class FetchWorker(WorkerMixin, FetchSpider):
    """``vd_fetch`` fed from the Redis queue; a page whose body starts with "raise" makes the
    callback raise (a bug, or a page it cannot handle yet), one starting with "store" makes it raise
    ``StoreUnavailable`` though the store answers (a document the store fails alone), one starting
    with "follow" yields a request for ``<url>/next``."""

    name = "vd_fetch_worker"
    queue_name = "vd_fetch"

    def parse_page(self, response):
        if response.body.startswith(b"raise"):
            raise ValueError("the page asked its callback to fail: %s" % response.url)
        if response.body.startswith(b"store"):
            raise StoreUnavailable("POST /vd_fetch/_bulk_docs answered HTTP 500 for %s" % response.url)
        if response.body.startswith(b"follow"):  # a next page, through the shared queue
            yield scrapy.Request(response.url + "/next", callback=self.parse_page)
        yield from super().parse_page(response)
