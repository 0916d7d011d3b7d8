"""Event pipelines, one concern each: normalise time → validate → build the id → store.

Items that are not :class:`~votersdaily.items.EventItem` pass through untouched, so the ingest and
laundromat spiders can share a project with the event spiders.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Self

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem
from scrapy.utils.defer import maybe_deferred_to_future

from . import schema
from .crawlcontext import crawl_context
from .datetimes import normalise
from .items import EventItem
from .store.crawler import writer_for
from .store.reschedules import RescheduleTracker

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector
    from twisted.internet.defer import Deferred

logger = logging.getLogger(__name__)


def count_dropped(stats: StatsCollector, reason: str) -> None:
    """One event (or record) that will not be stored, counted in the stats under its reason (for
    operators; the run log counts the ``item_dropped`` and ``record_dropped`` signals)."""
    stats.inc_value("events/dropped")
    stats.inc_value("events/dropped/%s" % reason)


class InvalidEvent(DropItem):
    """An event that broke a rule: dropped, never stored. ``reason`` is its key in the run log's
    ``dropped`` (which reads it from Scrapy's ``item_dropped`` signal)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def _drop(crawler: Crawler, code: str, message: str, item: Any) -> InvalidEvent:
    count_dropped(crawler.stats, code)
    adapter = ItemAdapter(item)
    return InvalidEvent(
        "invalid event (%s) from %s [unique_key=%r]: %s"
        % (code, adapter.get("source_url"), adapter.get("unique_key"), message),
        code,
    )


class _CrawlerPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)


class NormaliseDatetimesPipeline(_CrawlerPipeline):
    """Source-local, aware or date-only values → ``YYYY-MM-DDTHH:MM:SSZ`` (plus ``all_day``)."""

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, EventItem):
            return item
        zone = item.get("source_timezone") or crawl_context(self.crawler).source_timezone
        assert isinstance(zone, str), "source_timezone is a zone name"  # noqa: S101 - the spiders' contract
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
    """Every rule of docs/events.md §2; an invalid event is dropped with its reason, never stored.

    Text is cleaned first (controls but tab and newline removed, lone surrogates replaced; stat
    ``events/cleaned/<key>``): one hostile character costs neither the event nor its batch. Cleaning
    and the rules run in one pass over the values (:func:`schema.check_event`).
    """

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, EventItem):
            return item
        try:
            cleaned = schema.check_event(item)
        except schema.InvalidEvent as exc:
            raise _drop(self.crawler, exc.code, str(exc), item) from None
        for key in cleaned:
            self.crawler.stats.inc_value("events/cleaned/%s" % key)
        return item


class EventIdPipeline:
    """``_id`` = ``<datetime>-<parser_name>-<unique_key>``."""

    def process_item(self, item: Any) -> Any:
        if isinstance(item, EventItem):
            item["_id"] = schema.event_id(item["datetime"], item["parser_name"], item["unique_key"])
        return item


class EventStorePipeline:
    """Batched, revision-aware writes of events to ``vd_events``, off the reactor thread."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.writer = writer_for(
            crawler,
            schema.EVENTS_DB,
            ignore=schema.VOLATILE_EVENT_KEYS,
            probe=schema.EVENT_CHANGE_PROBE,
            hooks=RescheduleTracker(),
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _dry_run(self) -> bool:
        """A reparse's dry run writes nothing, spools nothing, delivers no spool (votersdaily.reparse)."""
        return crawl_context(self.crawler).dry_run

    async def open_spider(self) -> None:
        if not self._dry_run():
            await maybe_deferred_to_future(self.writer.open())

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, EventItem) or self._dry_run():
            return item
        waiting = self.writer.add(dict(item))
        if waiting is None:  # no back-pressure: no per-item Future
            return item
        return self._after(waiting, item)

    @staticmethod
    async def _after(accepted: Deferred[None], item: Any) -> Any:
        await maybe_deferred_to_future(accepted)
        return item

    async def close_spider(self) -> None:
        if not self._dry_run():
            await maybe_deferred_to_future(self.writer.close())
