"""Event pipelines: normalise time → validate → build the id → store.

Each stage is a function of its own (:func:`normalise_datetimes`, :func:`schema.check_event`,
:func:`set_event_id`, the store writer's ``add``) and a pipeline of its own
(:class:`NormaliseDatetimesPipeline`, :class:`ValidateEventPipeline`, :class:`EventIdPipeline`,
:class:`EventStorePipeline`). By default one component, :class:`EventPipeline`, runs the four stages
in that order: the same functions, the same drops and counts, without Scrapy's per-component work for
every item (a coroutine and its checks per component and item: a quarter of the pipelines' cost when
there were four). To run a pipeline of your own between two stages, list the four stage pipelines in
``ITEM_PIPELINES`` instead (settings.py says their orders); listing both is refused.

Items that are not :class:`~votersdaily.items.EventItem` pass through untouched, so the ingest and
laundromat spiders can share a project with the event spiders.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Self

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.misc import load_object

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


def normalise_datetimes(item: EventItem, default_zone: str) -> None:
    """Stage 1: source-local, aware or date-only values of ``datetime`` and ``end_datetime`` →
    ``YYYY-MM-DDTHH:MM:SSZ`` (plus ``all_day``, ``dst_note``), in the event's own
    ``source_timezone`` or else ``default_zone``; :class:`schema.InvalidEvent` (``datetime:<key>``)
    for a value that is no time."""
    zone = item.get("source_timezone") or default_zone
    assert isinstance(zone, str), "source_timezone is a zone name"  # noqa: S101 - the spiders' contract
    for key in ("datetime", "end_datetime"):
        value = item.get(key)
        if value is None or (key == "datetime" and value == ""):
            continue
        try:
            result = normalise(value, zone)
        except (ValueError, TypeError, OverflowError) as exc:
            raise schema.InvalidEvent("datetime:%s" % key, str(exc)) from None
        item[key] = result.iso
        if key == "datetime":
            if result.all_day:
                item["all_day"] = True
            if result.dst_note:
                item["dst_note"] = result.dst_note


def set_event_id(item: EventItem) -> None:
    """Stage 3: ``_id`` = ``<datetime>-<parser_name>-<unique_key>`` (docs/events.md §2)."""
    item["_id"] = schema.event_id(item["datetime"], item["parser_name"], item["unique_key"])


def count_cleaned(stats: StatsCollector, cleaned: list[str]) -> None:
    """The keys whose text :func:`schema.check_event` cleaned, in the stats ``events/cleaned/<key>``."""
    for key in cleaned:
        stats.inc_value("events/cleaned/%s" % key)


class _CrawlerPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        #: The crawl's context, looked up once (one object for the crawler's life; read per item).
        self.context = crawl_context(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)


class NormaliseDatetimesPipeline(_CrawlerPipeline):
    """Stage 1 alone (:func:`normalise_datetimes`), for a pipeline of your own between stages."""

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, EventItem):
            return item
        try:
            normalise_datetimes(item, self.context.source_timezone)
        except schema.InvalidEvent as exc:
            raise _drop(self.crawler, exc.code, str(exc), item) from None
        return item


class ValidateEventPipeline(_CrawlerPipeline):
    """Stage 2 alone: every rule of docs/events.md §2; an invalid event is dropped with its reason,
    never stored.

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
        if cleaned:  # crawler.stats is a descriptor of Scrapy's: read only when it is needed
            count_cleaned(self.crawler.stats, cleaned)
        return item


class EventIdPipeline:
    """Stage 3 alone: :func:`set_event_id`."""

    def process_item(self, item: Any) -> Any:
        if isinstance(item, EventItem):
            set_event_id(item)
        return item


class EventStorePipeline:
    """Stage 4 alone: batched, revision-aware writes of events to ``vd_events``, off the reactor thread."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.context = crawl_context(crawler)  # as _CrawlerPipeline's
        self.writer = writer_for(
            crawler,
            schema.EVENTS_DB,
            ignore=schema.VOLATILE_EVENT_KEYS,
            probe=schema.EVENT_CHANGE_PROBE,
            hooks=RescheduleTracker(),
            newer_by=schema.EVENT_OBSERVED_AT,
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _dry_run(self) -> bool:
        """A reparse's dry run writes nothing, spools nothing, delivers no spool (votersdaily.reparse)."""
        return self.context.dry_run

    async def open_spider(self) -> None:
        if not self._dry_run():
            await maybe_deferred_to_future(self.writer.open())

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, EventItem):
            return item
        return self._store(item)

    def _store(self, item: EventItem, body_json: str | None = None) -> Any:
        """Hand a copy of the event to the writer; ``body_json``, the event's JSON text without its
        ``_id`` when the check made it, travels with it (the embedded store writes it as it is)."""
        if self._dry_run():
            return item
        waiting = self.writer.add_copy(item, body_json)
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


#: The stage pipelines :class:`EventPipeline` stands for (listing it beside any of them would run a
#: stage twice, or store every event twice).
STAGE_PIPELINES = (NormaliseDatetimesPipeline, ValidateEventPipeline, EventIdPipeline, EventStorePipeline)


class EventPipeline(EventStorePipeline):
    """The four stages in one component, in their order: :func:`normalise_datetimes`,
    :func:`schema.check_event`, :func:`set_event_id`, the store. What ``ITEM_PIPELINES`` lists by
    default; an event any stage refuses is dropped with its reason as the stage pipeline drops it."""

    def __init__(self, crawler: Crawler) -> None:
        listed = [
            path
            for path in crawler.settings.getdict("ITEM_PIPELINES")
            if (load_object(path) if isinstance(path, str) else path) in STAGE_PIPELINES
        ]
        if listed:
            raise ValueError(
                "ITEM_PIPELINES lists votersdaily.pipelines.EventPipeline and its stage %s: list either "
                "EventPipeline or the four stage pipelines" % ", ".join(map(str, listed))
            )
        super().__init__(crawler)

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, EventItem):
            return item
        try:
            normalise_datetimes(item, self.context.source_timezone)
            if self.writer.takes_body_json:
                cleaned, text = schema.check_event_json(item)
            else:  # nothing would use the text: the check without it is cheaper
                cleaned, text = schema.check_event(item), None
        except schema.InvalidEvent as exc:
            raise _drop(self.crawler, exc.code, str(exc), item) from None
        if cleaned:  # crawler.stats is a descriptor of Scrapy's: read only when it is needed
            count_cleaned(self.crawler.stats, cleaned)
        # A key the store takes out of a body (a spider's own ``_id``, ``_rev``...): the text is not the
        # body's. Every such key starts with an underscore, and the check made no text of an event
        # with such a key but ``_id`` (it refuses the others: ``reserved:<key>``): one look-up.
        if text is not None and "_id" in item:
            text = None
        set_event_id(item)  # the only key added after the check: the text stays the body's
        return self._store(item, text)
