"""supreme_court_opinions: the real slip-opinion listing (2022 term) checked against juriscraper's
parse of it, and a real crawl of it with a real in-chambers listing (the pages of other terms and
layouts: test_supreme_court_terms.py)."""

from __future__ import annotations

import json

import pytest
from scrapy.http import HtmlResponse

from tests.conftest import recording
from tests.spiders.gov_support import crawl_twice, parse
from tests.spiders.supreme_court_pages import EARLIER_TERMS
from votersdaily.sources.supremecourt import JUSTICES
from votersdaily.spiders.supreme_court_opinions import SupremeCourtOpinionsSpider as Spider

SLIP = recording("gov/supreme_court/scotus_slip_example.html")
SLIP_URL = Spider.recordings["gov/supreme_court/scotus_slip_example.html"]
CHAMBERS = EARLIER_TERMS / "chambers_all_terms_2025.html"
IN_CHAMBERS_URL = "https://www.supremecourt.gov/opinions/in-chambers.aspx"


@pytest.fixture(scope="module")
def slip():
    return parse(Spider, SLIP, SLIP_URL, HtmlResponse)


def test_slip_opinions(slip):
    assert len(slip.events) == 58  # R-58 … R-1, in two tables (one per sitting)
    assert sorted(e["release_number"] for e in slip.events) == list(range(1, 59))
    first = slip.events[0]
    assert first["_id"] == "2023-06-30T00:00:00Z-supreme_court_opinions-600us1r58_7khn.pdf"
    assert first["title"] == "303 Creative LLC v. Elenis (No. 21-476): opinion of the Court"
    assert (first["justice_initials"], first["justice"]) == ("NG", "Neil M. Gorsuch")
    assert first["citation"] == "600 U.S. 570" and first["docket"] == "21-476"
    assert (
        first["pdf_url"]
        == first["event_url"]
        == "https://www.supremecourt.gov/opinions/22pdf/600us1r58_7khn.pdf"
    )
    assert (first["opinion_type"], first["term_year"], first["all_day"]) == ("slip opinion", 2022, True)
    assert (first["branch"], first["entity"], first["source_url"]) == ("Judicial", "Supreme Court", SLIP_URL)
    text = SLIP.read_text("utf-8")
    for e in slip.events:
        assert e["source_text"].startswith("<tr>") and e["source_text"] in text
        assert e["justice"], e["justice_initials"]  # every author key of the page resolves


def test_slip_opinions_match_juriscrapers_parse(slip):
    """juriscraper's expected parse of the same page (set 3 .compare.json) as an oracle."""
    oracle = json.loads(recording("gov/supreme_court/scotus_slip_example.compare.json").read_text("utf-8"))
    mine = {e["pdf_url"]: e for e in slip.events}
    assert len(oracle) == len(mine) == 58
    for expected in oracle:
        event = mine[expected["download_urls"]]
        assert event["datetime"][:10] == expected["case_dates"]
        # juriscraper straightens the page's curly apostrophes (Int’l); the event keeps them.
        assert (event["docket"], event["case_name"].replace("’", "'"), event["citation"]) == (
            expected["docket_numbers"],
            expected["case_names"],
            expected["citations"],
        )
        # juriscraper spells "Elana Kagan" and leaves out middle initials and "Jr."
        assert event["justice"].split(",")[0].split()[-1] == expected["judges"].split()[-1]


def test_a_row_without_its_pdf_link_is_dropped_alone():
    """Derived: the first slip opinion's link removed from its Name cell."""
    body = SLIP.read_bytes().replace(
        b"<a href='/opinions/22pdf/600us1r58_7khn.pdf' target='_blank'>303 Creative LLC v. Elenis</a>",
        b"303 Creative LLC v. Elenis",
    )
    parsed = parse(Spider, body, SLIP_URL, HtmlResponse)
    assert len(parsed.events) == 57 and "600us1r58_7khn.pdf" not in parsed.by_key()
    assert parsed.spider.crawler.stats.get_value("events/dropped/record:UnexpectedDocument") == 1


def test_justice_keys():
    assert JUSTICES["PC"] == "Per Curiam" and JUSTICES["KJ"] == "Ketanji Brown Jackson"


# The fast subset crawls event spiders twice with house_votes and house_floor; this crawls one of the
# largest listings (its parser is tested on the same recordings by the tests beside it).
@pytest.mark.slow  # every opinion listing, twice
def test_crawl_twice(crawl, sqlite_uri, frozen_now):
    """The 2022 slip page with the real in-chambers page of 2025 (several terms, a Term Year column)."""
    runs = crawl_twice(crawl, "supreme_court_opinions", [SLIP, CHAMBERS], sqlite_uri, 58 + 1)
    doc = runs.docs["2023-06-30T00:00:00Z-supreme_court_opinions-600us1r58_7khn.pdf"]
    assert doc["source_url"] == SLIP_URL and doc["justice"] == "Neil M. Gorsuch"
    navarro = runs.docs["2024-03-18T00:00:00Z-supreme_court_opinions-23a843_he4l.pdf"]
    assert (navarro["opinion_type"], navarro["term_year"]) == ("in-chambers opinion", 2023)


def test_smoke():
    assert Spider.custom_settings["DOWNLOAD_DELAY"] >= 5
    slip_listing, chambers_listing = Spider().listing_urls
    assert slip_listing.startswith("https://www.supremecourt.gov/opinions/slipopinion/")
    assert chambers_listing == IN_CHAMBERS_URL
    assert Spider.recording_urls() == [SLIP.resolve().as_uri()]
