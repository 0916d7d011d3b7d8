"""Spiders with the bugs a spider author makes, to check the framework drops what they produce.

They parse the real Clerk recordings with the real house_votes code; only their configuration or
output is broken. Loaded with ``-s SPIDER_MODULES=tests.misconfigured_spiders``.
"""

from votersdaily.spiders.house_votes import HouseVotesSpider


class InvalidBranchSpider(HouseVotesSpider):
    name = "invalid_branch_votes"
    branch = "Congressional"


class MissingTitleSpider(HouseVotesSpider):
    name = "missing_title_votes"

    def parse_events(self, response):
        for event in super().parse_events(response):
            del event["title"]
            yield event


class SometimesMissingTitleSpider(HouseVotesSpider):
    """Only roll 37's event loses its title: the other event of the same run must still be stored."""

    name = "partly_broken_votes"

    def parse_events(self, response):
        for event in super().parse_events(response):
            if event["roll_call"] == 37:
                del event["title"]
            yield event
