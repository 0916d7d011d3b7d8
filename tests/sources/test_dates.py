"""The event sources' date parsers given a year, a year and month, or a day and month without its
year: each refuses rather than completes the date. Their full forms are tested
with each spider on its recordings."""

from __future__ import annotations

import pytest

from votersdaily.sources.eastern import parse_local
from votersdaily.sources.errors import UnexpectedDocument
from votersdaily.sources.rss import parse_rfc822
from votersdaily.sources.supremecourt import parse_date

PARTIAL = ["2017", "2017-01", "1/2017", "01/17", "January 2017", "26 January", "Jan 26"]
#: The strptime formats the spiders read local stamps with (house_votes, senate_votes, house_floor,
#: senate_committee_hearings, the Supreme Court listings).
SPIDER_FORMATS = ("%d-%b-%Y", "%B %d, %Y, %I:%M %p", "%Y%m%d", "%m%d%y", "%m/%d/%y", "%m/%d/%Y")


@pytest.mark.parametrize("text", PARTIAL)
def test_spider_formats_refuse_partial_dates(text):
    with pytest.raises(ValueError):
        parse_local(text, *SPIDER_FORMATS)


@pytest.mark.parametrize("text", PARTIAL)
def test_supreme_court_listing_dates_refuse_partial_dates(text):
    with pytest.raises(UnexpectedDocument, match="not M/D/YY"):
        parse_date(text, "https://www.supremecourt.gov/opinions/slipopinion/17")


@pytest.mark.parametrize("text", ["Sep 2026", "2026", "Tue, 29 Sep", "29 Sep 2026", "Tue, 29 Sep 2026 GMT"])
def test_rfc822_dates_refuse_partial_dates(text):
    with pytest.raises(ValueError, match="not an RFC 822 date"):
        parse_rfc822(text)


def test_rfc822_time_without_a_zone_is_the_sources_wall_time():
    """No zone at all is not UTC: the datetime stays naive and the pipeline reads it in the
    spider's zone; ``-0000`` is UTC with the sender's zone unknown (RFC 2822 §3.3)."""
    assert parse_rfc822("Tue, 29 Sep 2026 21:23:48").tzinfo is None
    assert parse_rfc822("Tue, 29 Sep 2026 21:23:48 -0000").utcoffset().total_seconds() == 0
