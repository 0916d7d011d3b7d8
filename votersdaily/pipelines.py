"""Event pipelines, one concern each: normalise time → validate → build the id → store.

Items that are not :class:`~votersdaily.items.EventItem` pass through untouched, so the ingest and
laundromat spiders can share a project with the event spiders.
"""

from __future__ import annotations

import logging

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import threads

from . import schema
from .clock import now_iso
from .datetimes import normalise
from .items import EventItem
from .store.base import Store
from .store.crawler import writer_for
from .store.upsert import UpsertResult, upsert

logger = logging.getLogger(__name__)


def _drop(crawler, code: str, message: str, item) -> DropItem:
    stats = crawler.stats
    stats.inc_value("events/dropped")
    stats.inc_value("events/dropped/%s" % code)
    adapter = ItemAdapter(item)
    return DropItem(
        "invalid event (%s) from %s [unique_key=%r]: %s"
        % (code, adapter.get("source_url"), adapter.get("unique_key"), message)
    )


class _CrawlerPipeline:
    def __init__(self, crawler):
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)


class NormaliseDatetimesPipeline(_CrawlerPipeline):
    """Source-local, aware or date-only values → ``YYYY-MM-DDTHH:MM:SSZ`` (plus ``all_day``)."""

    def process_item(self, item):
        if not isinstance(item, EventItem):
            return item
        zone = item.get("source_timezone") or getattr(self.crawler.spider, "source_timezone", "UTC")
        for key in ("datetime", "end_datetime"):
            value = item.get(key)
            if value is None or (key == "datetime" and value == ""):
                continue
            try:
                result = normalise(value, zone)
            except (ValueError, TypeError, OverflowError) as exc:
                raise _drop(self.crawler, "datetime:%s" % key, str(exc), item) from None
            item[key] = result.iso
            if key == "datetime":
                if result.all_day:
                    item["all_day"] = True
                if result.dst_note:
                    item["dst_note"] = result.dst_note
        return item


class ValidateEventPipeline(_CrawlerPipeline):
    """Every rule of DESIGN.md §4; an invalid event is dropped with its reason, never stored."""

    def process_item(self, item):
        if not isinstance(item, EventItem):
            return item
        try:
            schema.validate_event(item)
        except schema.InvalidEvent as exc:
            raise _drop(self.crawler, exc.code, str(exc), item) from None
        return item


class EventIdPipeline:
    """``_id`` = ``<datetime>-<parser_name>-<unique_key>``."""

    def process_item(self, item):
        if isinstance(item, EventItem):
            item["_id"] = schema.event_id(item["datetime"], item["parser_name"], item["unique_key"])
        return item


def mark_superseded(store: Store, db: str, batch: list[dict], result: UpsertResult) -> None:
    """After a batch: an event stored under a new datetime supersedes its older documents.

    ``vd_event_keys`` maps ``<parser_name>/<unique_key>`` to the event's current ``_id``; it is read
    and written by primary key (no view on the write path). Older documents are kept, with
    ``superseded_by`` naming the current one, so a calendar never shows both as live.
    """
    written = set(result.inserted) | set(result.updated)
    current: dict[str, dict] = {}
    replaced: dict[str, set[str]] = {}
    for doc in batch:
        if doc["_id"] not in written:
            continue
        key = schema.event_key_id(doc["parser_name"], doc["unique_key"])
        previous = current.get(key)
        if previous is not None and previous["event_id"] != doc["_id"]:
            replaced.setdefault(key, set()).add(previous["event_id"])
        current[key] = {"_id": key, "event_id": doc["_id"], "parser_name": doc["parser_name"],
                        "unique_key": doc["unique_key"]}
    if not current:
        return
    keys = upsert(store, schema.EVENT_KEYS_DB, list(current.values()), insert_first=True)
    if keys.updated:
        # An updated key document means its event id changed: find what it pointed to before.
        # (The previous revision is not kept, so the old id comes from the events themselves.)
        for row in store.query(db, "by_parser_unique_key",
                               keys=[[current[k]["parser_name"], current[k]["unique_key"]] for k in keys.updated],
                               include_docs=False):
            key = schema.event_key_id(*row.key)
            if row.id != current[key]["event_id"]:
                replaced.setdefault(key, set()).add(row.id)
    targets = {old: current[key]["event_id"] for key, olds in replaced.items() for old in olds}
    if not targets:
        return
    marks = []
    for old_id, old in store.get_many(db, targets).items():
        if old.get("superseded_by") != targets[old_id]:
            marked = {k: v for k, v in old.items() if k != "_rev"}
            marked["superseded_by"] = targets[old_id]
            marked["superseded_at"] = now_iso()
            marks.append(marked)
    if marks:
        upsert(store, db, marks)
        result.superseded += [doc["_id"] for doc in marks]


class EventStorePipeline:
    """Batched, revision-aware writes of events to ``vd_events``, off the reactor thread."""

    def __init__(self, crawler):
        self.crawler = crawler
        self.writer = writer_for(
            crawler, schema.EVENTS_DB, ignore=schema.VOLATILE_EVENT_KEYS, after_batch=mark_superseded
        )

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    async def open_spider(self):
        await maybe_deferred_to_future(self.writer.open())
        await maybe_deferred_to_future(threads.deferToThread(self.writer.store.ensure_db, schema.EVENT_KEYS_DB))

    def process_item(self, item):
        if not isinstance(item, EventItem):
            return item
        accepted = self.writer.add(dict(item))
        if accepted.called:  # no back-pressure: skip the per-item Future
            return item
        return self._after(accepted, item)

    @staticmethod
    async def _after(accepted, item):
        await maybe_deferred_to_future(accepted)
        return item

    async def close_spider(self):
        await maybe_deferred_to_future(self.writer.close())
