"""Shared by the Congress spider tests: replay a recorded response through a spider and the event
pipelines in-process (no network, no reactor), bad-input variants of a real recording, and
reading back what a ``scrapy crawl`` subprocess stored."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse, Response, XmlResponse
from scrapy.spiderloader import SpiderLoader
from scrapy.utils.project import get_project_settings
from scrapy.utils.test import get_crawler

from votersdaily.pipelines import EventIdPipeline, NormaliseDatetimesPipeline, ValidateEventPipeline
from votersdaily.recordings import recording_path
from votersdaily.sources.errors import SourceError
from votersdaily.spiders.base import EventSpider
from votersdaily.store import open_store


def spider_for(cls: type[EventSpider], **kwargs) -> EventSpider:
    crawler = get_crawler(cls, {"TWISTED_REACTOR": None})
    spider = cls.from_crawler(crawler, **kwargs)
    crawler.spider = spider
    return spider


def response(url: str, body: bytes | Path, cls: type[Response] = XmlResponse, status: int = 200) -> Response:
    if isinstance(body, Path):
        body = body.read_bytes()
    return cls(url, body=body, status=status, request=Request(url))


def html_response(url: str, body: bytes | Path) -> Response:
    return response(url, body, HtmlResponse)


def events_of(spider: EventSpider, resp: Response) -> list[dict]:
    """The events a document yields, after the pipelines that run before storage (UTC, checks, _id)."""
    crawler = spider.crawler
    stages = [NormaliseDatetimesPipeline(crawler), ValidateEventPipeline(crawler), EventIdPipeline()]
    out = []
    for parsed in spider.parse_document(resp):
        item = parsed
        for stage in stages:
            item = stage.process_item(item)
        out.append(dict(item))
    return out


def by_key(events: list[dict]) -> dict[str, dict]:
    keyed = {e["unique_key"]: e for e in events}
    assert len(keyed) == len(events), "unique keys repeat"
    return keyed


def bad_variants(body: bytes, root: bytes) -> dict[str, tuple[bytes, str]]:
    """Corrupted copies of a real recording and the error each must raise: cut off half-way, its
    root element renamed, an invalid UTF-8 byte injected, and nothing at all."""
    middle = len(body) // 2
    swapped = body.replace(b"<" + root, b"<unexpected-root", 1).replace(
        b"</" + root + b">", b"</unexpected-root>", 1
    )
    assert swapped != body
    return {
        "truncated": (body[:middle], "MalformedDocument"),
        "root_swapped": (swapped, "UnexpectedDocument"),
        "invalid_bytes": (body[:middle] + b"\xff\xfe\xc3(" + body[middle:], "MalformedDocument"),
        "empty": (b"", "MalformedDocument"),
    }


#: The names of :func:`bad_variants`, for ``pytest.mark.parametrize``.
VARIANTS = ("truncated", "root_swapped", "invalid_bytes", "empty")


def check_bad_variant(spider: EventSpider, url: str, path: Path, root: bytes, variant: str) -> None:
    """A corrupted copy of a real recording raises the :mod:`~votersdaily.sources.errors` class it must."""
    body, error = bad_variants(path.read_bytes(), root)[variant]
    with pytest.raises(SourceError) as caught:
        events_of(spider, response(url, body))
    assert type(caught.value).__name__ == error


def crawl_bad_variant(
    crawl, spider: str, path: Path, root: bytes, variant: str, store_uri: str, folder: Path
) -> dict:
    """``scrapy crawl`` a corrupted copy of a recording: the failure is logged and nothing stored."""
    body, error = bad_variants(path.read_bytes(), root)[variant]
    bad = folder / path.name
    bad.write_bytes(body)
    crawled(crawl(spider, [bad], store_uri), status=1)
    events, (log,) = stored(store_uri)
    assert events == {} and log["result"] == error and log["insert_count"] == 0
    assert log["traceback"] and log["error_message"]
    return log


def recorded(cls: type[EventSpider]) -> dict[str, str]:
    """The spider's recordings that exist here: local path → upstream URL."""
    return {
        str(recording_path(name)): url
        for name, url in cls.recordings.items()
        if recording_path(name).exists()
    }


def check_spider_contract(cls: type[EventSpider]) -> None:
    """What ``scrapy check`` contracts would assert, plus the project's own spider rules."""
    loader = SpiderLoader.from_settings(get_project_settings())
    assert cls.name in loader.list() and loader.load(cls.name) is cls
    assert cls.frequency_hours > 0 and cls.version
    for key, value in EventSpider.custom_settings.items():
        if key not in ("DOWNLOAD_DELAY", "CONCURRENT_REQUESTS_PER_DOMAIN"):
            assert cls.custom_settings[key] == value, key
    assert cls.custom_settings["DOWNLOAD_DELAY"] >= 1.0
    assert recorded(cls), "no recording of %s exists here" % cls.name
    for url in cls.recordings.values():
        assert url.startswith("https://"), url
    spider = spider_for(cls)
    assert spider.listing_urls and all(u.startswith("https://") for u in spider.listing_urls)
    for path, url in recorded(cls).items():
        events = events_of(spider, response(url, Path(path)))
        assert events, "%s yields no events" % path
        assert all(e["parser_name"] == cls.name and e["source_url"] == url for e in events)


def stored(store_uri: str) -> tuple[dict[str, dict], list[dict]]:
    """(events by _id, run logs oldest first) of a store."""
    store = open_store(store_uri)
    try:
        dbs = store.list_dbs()
        events = {d["_id"]: d for d in store.iter_docs("vd_events")} if "vd_events" in dbs else {}
        logs = sorted(store.iter_docs("vd_log"), key=lambda d: d["_id"]) if "vd_log" in dbs else []
        return events, [d for d in logs if not d["_id"].startswith("_design/")]
    finally:
        store.close()


def crawled(proc, status: int = 0) -> None:
    """``status``: the exit status `scrapy crawl` must give (1: the run failed, its run log says why)."""
    assert proc.returncode == status, proc.stderr[-4000:]


def crawl_twice(crawl, spider: str, paths: list[Path], store_uri: str) -> tuple[dict[str, dict], list[dict]]:
    """``scrapy crawl`` the recordings twice into one store: the second run must insert nothing."""
    crawled(crawl(spider, paths, store_uri, env={"VOTERSDAILY_FROZEN_NOW": "2026-10-02T18:00:00Z"}))
    crawled(crawl(spider, paths, store_uri, env={"VOTERSDAILY_FROZEN_NOW": "2026-10-02T19:00:00Z"}))
    events, logs = stored(store_uri)
    first, second = logs
    assert first["result"] == second["result"] == "success", first.get("error_message")
    assert first["_id"] == "2026-10-02T18:00:00Z-%s-success" % spider
    assert first["insert_count"] == len(events) and second["insert_count"] == 0
    assert second["unchanged_count"] == len(events) and first["parser_name"] == spider
    assert first["empty"] is False and "traceback" not in first
    assert all(doc["access_datetime"] == "2026-10-02T18:00:00Z" for doc in events.values())
    return events, logs
