"""Spiders as an earlier version of the project keyed their events, to test that the store retires
what they stored when the key scheme changes. Loaded with ``-s SPIDER_MODULES=tests.legacy_spiders``.
"""

from __future__ import annotations

from votersdaily.spiders.house_floor import HouseFloorSpider
from votersdaily.spiders.house_votes import HouseVotesSpider


class LegacyHouseFloorSpider(HouseFloorSpider):
    """house_floor 1.0: the same events, keyed by the bare ``unique-id`` (before the Congress)."""

    version = "1.0"

    def parse_events(self, response):
        for event in super().parse_events(response):
            event["unique_key"] = event.pop("replaces_key")
            yield event


class LegacyHouseVotesSpider(HouseVotesSpider):
    """house_votes 1.2: the same events, before they carried canonical ids."""

    version = "1.2"

    def parse_events(self, response):
        for event in super().parse_events(response):
            for key in ("vote_id", "bill_ids", "public_laws", "id_evidence"):
                del event[key]
            yield event
