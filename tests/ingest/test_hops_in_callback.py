"""A chain's next hops are fetched by the callback that found them (``IngestSpider._next_hop``), not
yielded to Scrapy's scheduler; held here to the scheduler's path (``hops_through_scheduler``, what a
Redis-fed worker keeps): the same results, the same requests reaching the site (headers, ``Referer``
included), the same depth, and the same refusals (the URL length limit, a hop a spider middleware
drops, an interrupted crawl)."""

from __future__ import annotations

import re

import pytest
from scrapy import signals
from scrapy.exceptions import IgnoreRequest

from tests.conftest import CRAWL_MODE
from votersdaily.ingest.persist import IngestStorePipeline
from votersdaily.ingest.spider import IngestSpider

from .conftest import build_site, read_results, run_ingest, write_requests
from .test_crawl_statuses import CASES

pytestmark = pytest.mark.skipif(
    CRAWL_MODE == "subprocess", reason="switches the path in the test process (an in-process crawl)"
)

#: Fields that hold the time of the crawl, or follow from it (a document's revision).
VOLATILE = {"_rev", "updated", "terminal_dt", "datetime", "timestamp"}
#: Request headers the site sees that name the connection, not the request.
CONNECTION_HEADERS = {"Host", "Connection"}


def steady(value):
    """``value`` without :data:`VOLATILE` fields, at any depth."""
    if isinstance(value, dict):
        return {k: steady(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [steady(v) for v in value]
    return value


def stat(stderr: str, name: str) -> int | None:
    found = re.search(r"'%s': (\d+)" % re.escape(name), stderr)
    return int(found.group(1)) if found else None


def seen(site) -> list[tuple]:
    """What reached the site, in a fixed order (the order of concurrent fetches varies)."""
    return sorted(
        (method, path, sorted((k, v) for k, v in headers.items() if k not in CONNECTION_HEADERS))
        for method, path, headers in site.requests
    )


def both_ways(crawl, site, tmp_path, monkeypatch, requests, *settings):
    """The same crawl with hops through the scheduler, then fetched by the callback: for each, its
    results, what reached the site and the crawl's log."""
    runs = {}
    for through_scheduler in (True, False):
        monkeypatch.setattr(IngestSpider, "hops_through_scheduler", through_scheduler)
        site.requests.clear()
        work = tmp_path / ("scheduler" if through_scheduler else "callback")
        work.mkdir()
        store_uri = "sqlite:///%s" % (work / "store.db")
        proc = run_ingest(
            crawl, store_uri, write_requests(work / "requests.jsonl", requests), work, *settings
        )
        runs[through_scheduler] = (read_results(store_uri), seen(site), proc.stderr)
    return runs[True], runs[False]


def test_every_status_and_request_is_the_scheduler_paths(crawl, site, tmp_path, monkeypatch):
    build_site(site)
    requests = [{"base_url": site.url + path, "ingest_type": itype} for path, (itype, _) in CASES.items()]
    (old, old_seen, old_log), (new, new_seen, new_log) = both_ways(
        crawl, site, tmp_path, monkeypatch, requests
    )
    assert len(new) == len(CASES)
    assert steady(new) == steady(old)
    assert new_seen == old_seen
    referred = [headers for _, path, headers in new_seen if path == "/landing-pdf"]
    assert referred and all(("Referer", site.url + "/hop1") in headers for headers in referred)
    for name in ("request_depth_max", "downloader/request_count", "response_received_count"):
        assert stat(new_log, name) == stat(old_log, name), name
    # the hops did not go through the scheduler (the start requests and retries did)
    assert stat(new_log, "scheduler/enqueued") < stat(old_log, "scheduler/enqueued")


def test_a_hop_over_the_url_length_limit_is_a_bad_redirect_either_way(crawl, site, tmp_path, monkeypatch):
    """A redirect to a URL longer than URLLENGTH_LIMIT is ``bad-redirect`` naming it, from the crawl's
    own limit. Before: Scrapy's UrlLengthMiddleware dropped the hop and the ingest had no result."""
    build_site(site)
    requests = [{"base_url": site.url + "/start", "ingest_type": "pdf"}]
    limit = len(site.url + "/start")  # /start and /hop1 pass, /landing-pdf does not
    (old, old_seen, old_log), (new, new_seen, new_log) = both_ways(
        crawl, site, tmp_path, monkeypatch, requests, "URLLENGTH_LIMIT=%d" % limit
    )
    assert steady(new) == steady(old)
    [result] = new.values()
    assert result["status"] == "bad-redirect"
    assert result["terminal"]["terminal_url"] == site.url + "/hop1"
    assert result["error_message"].endswith(
        "'/landing-pdf' cannot be fetched (%d characters as fetched, over URLLENGTH_LIMIT %d)"
        % (len(site.url + "/landing-pdf"), limit)
    )
    assert new_seen == old_seen
    assert [path for _, path, _ in new_seen if path != "/robots.txt"] == ["/hop1", "/start"]
    assert stat(new_log, "urllength/request_ignored_count") is None  # the middleware had none to drop
    assert stat(old_log, "urllength/request_ignored_count") is None


def test_a_hop_a_spider_middleware_drops_ends_its_ingest_either_way(crawl, site, tmp_path, monkeypatch):
    """DEPTH_LIMIT=1: /start (depth 0) redirects to /hop1 (1), which redirects to /landing-pdf (2),
    a hop Scrapy's DepthMiddleware drops. Before: that ingest had no result at all, either way; now
    ``fetch-error`` saying so, its terminal the hop not fetched; a one-hop ingest is untouched. An
    operator's SPIDER_MIDDLEWARES does not take the scheduler path's guard away."""
    build_site(site)
    requests = [
        {"base_url": site.url + "/start", "ingest_type": "pdf"},
        {"base_url": site.url + "/article", "ingest_type": "html"},
    ]
    (old, old_seen, old_log), (new, new_seen, new_log) = both_ways(
        crawl, site, tmp_path, monkeypatch, requests, "DEPTH_LIMIT=1", "SPIDER_MIDDLEWARES={}"
    )
    assert steady(new) == steady(old)
    results = {doc["request"]["base_url"]: doc for doc in new.values()}
    assert {url: doc["status"] for url, doc in results.items()} == {
        site.url + "/start": "fetch-error",
        site.url + "/article": "success",
    }
    dropped = results[site.url + "/start"]
    assert dropped["terminal"] == {
        "terminal_url": site.url + "/landing-pdf",
        "terminal_dt": None,
        "terminal_status_code": None,
    }
    assert dropped["error_message"].startswith(
        "not fetched: a spider middleware dropped the hop to %s/landing-pdf (" % site.url
    )
    assert new_seen == old_seen
    assert "/landing-pdf" not in {path for _, path, _ in new_seen}
    for log in (new_log, old_log):
        assert stat(log, "depth/request_ignored_count") == stat(log, "ingest/hop_dropped") == 1


def test_a_hop_robots_txt_forbids_ends_blocked_robots_either_way(crawl, site, tmp_path, monkeypatch):
    """A downloader middleware's IgnoreRequest (robots.txt's) reaches the hop's errback on both paths:
    ``blocked-robots``, the hop never fetched."""
    build_site(site)
    site.route("/robots.txt", "User-agent: *\nDisallow: /landing-pdf\n", content_type="text/plain")
    requests = [{"base_url": site.url + "/start", "ingest_type": "pdf"}]
    (old, old_seen, _), (new, new_seen, _) = both_ways(crawl, site, tmp_path, monkeypatch, requests)
    assert steady(new) == steady(old)
    [result] = new.values()
    assert (result["status"], result["terminal"]["terminal_url"]) == (
        "blocked-robots",
        site.url + "/landing-pdf",
    )
    assert new_seen == old_seen
    assert "/landing-pdf" not in {path for _, path, _ in new_seen}


class RefuseHops:
    """A ``request_scheduled`` receiver refusing every request but the start requests, as an
    interrupted crawl refuses what is scheduled after Ctrl-C (``votersdaily.interrupts``)."""

    def __init__(self, crawler) -> None:
        self.crawler = crawler
        crawler.signals.connect(self.refuse, signal=signals.request_scheduled)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def refuse(self, request, spider) -> None:
        if not request.meta.get("is_start_request"):
            self.crawler.stats.inc_value("test/refused")
            raise IgnoreRequest("refused: %s" % request.url)


def test_a_refused_hop_is_not_fetched_either_way(crawl, site, tmp_path, monkeypatch):
    build_site(site)
    requests = [
        {"base_url": site.url + "/start", "ingest_type": "pdf"},  # a redirect: its next hop is refused
        {"base_url": site.url + "/article", "ingest_type": "html"},  # one hop: a result
    ]
    extension = 'EXTENSIONS={"tests.ingest.test_hops_in_callback.RefuseHops": 0}'
    (old, old_seen, old_log), (new, new_seen, new_log) = both_ways(
        crawl, site, tmp_path, monkeypatch, requests, extension
    )
    assert steady(new) == steady(old)
    assert [doc["request"]["base_url"] for doc in new.values()] == [site.url + "/article"]
    assert new_seen == old_seen
    assert "/hop1" not in {path for _, path, _ in new_seen}
    assert stat(new_log, "test/refused") == stat(old_log, "test/refused") == 1


def test_a_hop_body_the_callback_holds_counts_toward_the_scrapers_limit_either_way(
    crawl, site, tmp_path, monkeypatch
):
    """The engine starts no more requests while the scraper holds more than
    SCRAPER_SLOT_MAX_ACTIVE_SIZE of response bodies: a PDF the callback fetched itself counts there
    while its chain works on it, as a scheduled hop's response did."""
    build_site(site)
    held: dict[bool, list[tuple[int, int]]] = {}
    terminal = IngestSpider._terminal

    async def measured(self, state, response, *args):
        slot = self.crawler.engine.scraper.slot
        held.setdefault(self.hops_through_scheduler, []).append((slot.active_size, len(response.body)))
        return await terminal(self, state, response, *args)

    monkeypatch.setattr(IngestSpider, "_terminal", measured)
    at_close: list[int] = []
    close = IngestStorePipeline.close_spider

    async def closing(self):
        at_close.append(self.crawler.engine.scraper.slot.active_size)
        await close(self)

    monkeypatch.setattr(IngestStorePipeline, "close_spider", closing)
    requests = [
        {"base_url": site.url + path, "ingest_type": "pdf"}
        for path in ("/start", "/missing", "/landing-nopdf")  # a PDF, a hop failed, no link
    ]
    (old, _, _), (new, _, _) = both_ways(crawl, site, tmp_path, monkeypatch, requests)
    assert steady(new) == steady(old)
    for through_scheduler in (True, False):
        [(active, body)] = held[through_scheduler]
        assert body > 1024 and active >= body, (through_scheduler, active, body)
    assert at_close == [0, 0]  # every body counted was given back
