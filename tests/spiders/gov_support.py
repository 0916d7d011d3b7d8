"""Helpers for the government-spider tests: run a spider's parse and the event pipelines in-process
on a real recorded response, and read back what a ``scrapy crawl`` subprocess stored."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scrapy.http import Request, TextResponse
from scrapy.utils.test import get_crawler

from votersdaily.items import EventItem
from votersdaily.pipelines import EventIdPipeline, NormaliseDatetimesPipeline, ValidateEventPipeline
from votersdaily.requestmeta import SOURCE_URL_META


@dataclass
class Parsed:
    events: list[EventItem]
    requests: list[Request]
    spider: object

    def by_key(self) -> dict[str, EventItem]:
        return {e["unique_key"]: e for e in self.events}


def parse(
    spider_cls,
    source: Path | bytes,
    url: str,
    response_cls=TextResponse,
    upstream: str | None = None,
    settings: dict | None = None,
    given: str | None = None,
    **spider_kwargs,
) -> Parsed:
    """``spider.parse_document`` on ``source`` served as ``url``, each event through the normalise,
    validate and id pipelines (an invalid event raises DropItem and fails the test). ``given`` is
    the spider's ``-a url=`` (documents given rather than discovered)."""
    if given is not None:
        spider_kwargs["url"] = given
    crawler = get_crawler(spider_cls, settings)
    spider = spider_cls.from_crawler(crawler, **spider_kwargs)
    crawler.spider = spider
    body = source.read_bytes() if isinstance(source, Path) else source
    meta = {SOURCE_URL_META: upstream} if upstream else {}
    response = response_cls(url=url, body=body, request=Request(url, meta=meta))
    out = list(spider.parse_document(response))
    pipes = [NormaliseDatetimesPipeline(crawler), ValidateEventPipeline(crawler), EventIdPipeline()]
    events = []
    for parsed in (x for x in out if isinstance(x, EventItem)):
        item = parsed
        for pipe in pipes:
            item = pipe.process_item(item)
        events.append(item)
    return Parsed(events, [x for x in out if isinstance(x, Request)], spider)


def ok(proc):
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def failed(proc):
    """`scrapy crawl` of a run that failed: exit status 1 (the project's command), its run log says why."""
    assert proc.returncode == 1, proc.stderr[-3000:]
    return proc


def stored_events(store, parser: str) -> dict[str, dict]:
    if "vd_events" not in store.list_dbs():
        return {}
    return {d["_id"]: d for d in store.iter_docs("vd_events") if d.get("parser_name") == parser}


def run_logs(store, parser: str) -> list[dict]:
    rows = store.query("vd_log", "by_parser", startkey=[parser], endkey=[parser, {}])
    return [r.doc for r in rows]


def truncate(body: bytes) -> bytes:
    """Real bytes cut off mid-document (a dropped connection)."""
    return body[: len(body) // 2]


@dataclass
class TwoRuns:
    store: object
    docs: dict[str, dict]
    first: dict
    second: dict


def crawl_twice(crawl, spider: str, urls, store_uri: str, count: int, *args: str) -> TwoRuns:
    """Crawl the same documents twice (a day apart): ``count`` events inserted, then none, all unchanged."""
    from votersdaily.store import open_store

    ok(crawl(spider, urls, store_uri, *args))
    ok(crawl(spider, urls, store_uri, *args, env={"VOTERSDAILY_FROZEN_NOW": "2026-10-03T18:00:00Z"}))
    store = open_store(store_uri)
    docs = stored_events(store, spider)
    first, second = run_logs(store, spider)
    assert len(docs) == count
    assert (first["result"], first["insert_count"], first["empty"]) == ("success", count, count == 0)
    assert (second["result"], second["insert_count"], second["updated_count"], second["unchanged_count"]) == (
        "success",
        0,
        0,
        count,
    )
    return TwoRuns(store, docs, first, second)


def crawl_bad(crawl, spider: str, path: Path, body: bytes, store_uri: str, exception: str) -> dict:
    """Crawl one bad document: a run log with ``exception`` as its result, and nothing stored."""
    from votersdaily.store import open_store

    path.write_bytes(body)
    failed(crawl(spider, [path], store_uri))
    store = open_store(store_uri)
    assert stored_events(store, spider) == {}
    (log,) = run_logs(store, spider)
    assert (log["result"], log["insert_count"], log["empty"]) == (exception, 0, False), log.get(
        "error_message"
    )
    assert exception in log["traceback"] and log["_id"].endswith("-%s-%s" % (spider, exception))
    return log
