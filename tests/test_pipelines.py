"""The event pipeline's two configurations: :class:`EventPipeline` (the default, the four stages in one
component) against the four stage pipelines in their orders, on every event the spiders parse from
their real recordings and on hostile variants of one real event per spider (derived, each with one
change: tests/test_schema.py's ``hostile_variants``, and a datetime that is no time). Both must hand
the store the same documents, byte for byte, and drop the same events with the same reason and
message."""

from __future__ import annotations

import copy
import json

import pytest
from scrapy.exceptions import DropItem
from scrapy.utils.test import get_crawler

from tests.test_schema import hostile_variants, recorded_items
from votersdaily.gc_freeze import collections_paused
from votersdaily.items import EventItem
from votersdaily.pipelines import (
    EventIdPipeline,
    EventPipeline,
    EventStorePipeline,
    NormaliseDatetimesPipeline,
    ValidateEventPipeline,
)
from votersdaily.store.base import body_json_of

STAGES = {
    "votersdaily.pipelines.NormaliseDatetimesPipeline": 100,
    "votersdaily.pipelines.ValidateEventPipeline": 200,
    "votersdaily.pipelines.EventIdPipeline": 300,
    "votersdaily.pipelines.EventStorePipeline": 800,
}


def stage_pipelines(crawler) -> list:
    return [
        NormaliseDatetimesPipeline(crawler),
        ValidateEventPipeline(crawler),
        EventIdPipeline(),
        EventStorePipeline(crawler),
    ]


class Run:
    """One configuration over events: each spider's crawler (a store of its own, never written: a
    batch larger than the run keeps every document in the writer), what each event came to, and the
    documents handed to the store."""

    def __init__(self, tmp_path, name: str, configure, store_process: bool = False) -> None:
        self.tmp_path = tmp_path / name
        self.configure = configure
        self.store_process = store_process
        self.pipes: dict[type, list] = {}
        self.crawlers: dict[type, object] = {}
        self.outcomes: list[tuple] = []

    def _pipes_for(self, spider_cls) -> list:
        if spider_cls not in self.pipes:
            crawler = get_crawler(
                spider_cls,
                {
                    "VOTERSDAILY_STORE": "sqlite:///%s" % (self.tmp_path / ("%s.db" % spider_cls.name)),
                    "VOTERSDAILY_BATCH_SIZE": 10**9,
                    "VOTERSDAILY_STORE_PROCESS": self.store_process,
                },
            )
            crawler.spider = spider_cls.from_crawler(crawler)
            self.crawlers[spider_cls] = crawler
            self.pipes[spider_cls] = self.configure(crawler)
        return self.pipes[spider_cls]

    def feed(self, spider_cls, item: EventItem) -> None:
        try:
            for pipe in self._pipes_for(spider_cls):
                item = pipe.process_item(item)
        except DropItem as exc:
            self.outcomes.append(("dropped", exc.reason, str(exc)))
            return
        except RecursionError:  # a structure deeper than the limit: Scrapy's item_error, either way
            self.outcomes.append(("error", "RecursionError"))
            return
        self.outcomes.append(("passed", item["_id"]))

    def documents(self) -> list[dict]:
        """The documents handed to the store, spider by spider."""
        if not hasattr(self, "_documents"):
            self._documents = [
                doc for pipes in self.pipes.values() for doc in pipes[-1].writer.batch.take_unwritten()
            ]
        return self._documents

    def stored(self) -> list[str]:
        """The documents handed to the store, as JSON text (key order kept)."""
        return [json.dumps(doc, ensure_ascii=False, default=repr) for doc in self.documents()]

    def stats(self) -> list[dict]:
        return [
            {k: v for k, v in crawler.stats.get_stats().items() if k.startswith("events/")}
            for crawler in self.crawlers.values()
        ]


def events_and_variants():
    """(spider class, item) for every recorded event, then hostile variants of one per spider."""
    seen = set()
    for crawler, item in recorded_items():
        cls = type(crawler.spider)
        raw = dict(item)  # as the spider made it (the pipelines change the item in place)
        yield cls, item
        if cls in seen:
            continue
        seen.add(cls)
        for variant in [*hostile_variants(raw), {**raw, "datetime": "not a time at all"}]:
            yield cls, EventItem(variant)


@pytest.mark.parametrize("store_process", [False, True], ids=["store in the crawl", "store's process"])
def test_the_folded_pipeline_hands_the_store_what_the_four_stages_do(tmp_path, store_process):
    one = Run(tmp_path, "one", lambda crawler: [EventPipeline(crawler)], store_process)
    four = Run(tmp_path, "four", stage_pipelines, store_process)
    for cls, item in events_and_variants():
        try:
            # No collection while deepcopy recurses to the limit: a finalizer it ran there (of any
            # garbage of earlier tests) would have no stack left, and fail as an unraisable error.
            with collections_paused():
                twin = copy.deepcopy(item)
        except RecursionError:  # a variant nested deeper than Python's recursion limit
            continue
        one.feed(cls, item)
        four.feed(cls, twin)
    assert one.outcomes == four.outcomes
    stored = one.stored()
    assert len(stored) > 400
    assert stored == four.stored()
    assert one.stats() == four.stats()
    reasons = {outcome[1] for outcome in one.outcomes if outcome[0] == "dropped"}
    # the variants reach every stage: a time that is no time, broken rules, cleaned text
    assert reasons >= {
        "datetime:datetime",
        "not_json",
        "too_large",
        "text:title",
        "missing:title",
        "timezone",
        "reserved:_deleted",
    }
    assert any(key.startswith("events/cleaned/") for stats in one.stats() for key in stats)
    # The folded pipeline hands on the check's JSON text with every recorded event (the embedded store
    # writes it as it is, and tells an unchanged one by its hash, in its process or in the crawl's):
    # the text of the document without its _id, byte for byte.
    texts = [doc for doc in one.documents() if body_json_of(doc) is not None]
    assert len(texts) > 400
    # The text is dropped for an event holding a key the store takes out of a body: each starts with
    # an underscore, and the check refuses every such key but _id (the pipeline looks up _id alone).
    from votersdaily.store.revisions import META_KEYS

    assert all(key.startswith("_") for key in META_KEYS)
    assert any(outcome[0] == "passed" for outcome in one.outcomes)
    for doc in texts:
        assert doc.body_json == json.dumps({k: v for k, v in doc.items() if k != "_id"}, ensure_ascii=False)


def test_listing_the_folded_pipeline_beside_a_stage_is_refused(tmp_path):
    for stage, order in STAGES.items():
        crawler = get_crawler(
            settings_dict={
                "VOTERSDAILY_STORE": "sqlite:///%s" % (tmp_path / "events.db"),
                "ITEM_PIPELINES": {"votersdaily.pipelines.EventPipeline": 800, stage: order},
            }
        )
        with pytest.raises(ValueError, match="either EventPipeline or the four stage pipelines"):
            EventPipeline.from_crawler(crawler)


def test_the_project_runs_the_folded_pipeline():
    from scrapy.utils.project import get_project_settings

    assert get_project_settings().getdict("ITEM_PIPELINES") == {"votersdaily.pipelines.EventPipeline": 800}
