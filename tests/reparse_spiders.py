"""house_votes as a maintainer would change it, for the reparse tests: the real spider's code on the
real Clerk recordings, with one change chosen by the setting REPARSE_TEST_CHANGE (a fixed title, a
changed key, an event no longer emitted, or one of a parser's bugs: an invalid event, a record it
cannot read, a callback that raises on one document or on every one). Loaded with
``-s SPIDER_MODULES=tests.reparse_spiders`` (it keeps the name ``house_votes``, as a fixed parser does).
"""

from votersdaily.spiders.house_votes import HouseVotesSpider

#: The roll call the "drop" change stops emitting (roll 37 of 2023, the committee-vote excerpt).
DROPPED_KEY = "118-1-37"


class FixedHouseVotesSpider(HouseVotesSpider):
    version = "9.0"

    def parse_events(self, response):
        change = self.settings.get("REPARSE_TEST_CHANGE")
        for event in super().parse_events(response):
            if change == "fix":
                event["title"] = event["title"] + " (corrected)"
            elif change == "key":
                event["unique_key"] = "roll-" + event["unique_key"]
            elif change == "drop" and event["unique_key"] == DROPPED_KEY:
                continue
            elif change == "invalid" and event["unique_key"] == DROPPED_KEY:
                event["datetime"] = "the 37th roll call"  # a parser bug: no time, the event dropped
            elif change == "record" and event["unique_key"] == DROPPED_KEY:  # as parse_events drops one
                self.drop_record(response, ValueError("the fixed parser cannot read roll 37's record"))
                continue
            elif change == "raise" and event["unique_key"] == DROPPED_KEY:
                raise ValueError("the fixed parser fails on roll 37")  # a parser bug: the callback raised
            elif change == "raise-all":  # a parser bug on every document: the same line raises each time
                raise KeyError("roll call %s has no 'legis-num'" % event["unique_key"])
            yield event
