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


class UnprintableFailureSpider(HouseVotesSpider):
    """Fails on its document with a message no store takes as it is (a lone surrogate, as a file name
    decoded with ``surrogateescape`` has, and a terminal escape), and adds to its run log a field that is
    not JSON (a set) and one that is no string (a date): the run log must still be stored."""

    name = "unprintable_failure_votes"

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        from votersdaily import signals as vd_signals

        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider._log_fields, signal=vd_signals.run_log_building)
        return spider

    def _log_fields(self, doc, spider=None):
        import datetime

        doc["checked_on"] = datetime.date(2026, 9, 16)
        doc["tags"] = {"votes"}

    def parse_events(self, response):
        raise ValueError("cannot read roll\udcff.xml \x1b[31mhere\x1b[0m")
