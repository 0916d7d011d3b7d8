"""supreme_court_opinions: the real slip-opinion listing (2022 term) checked against juriscraper's
parse of it, in-chambers opinions (a derived page: no real one is recorded), look-alike tables told
apart by their header rows, and a real crawl."""

from __future__ import annotations

import json

import pytest
from scrapy.http import HtmlResponse

from tests.conftest import recording
from tests.spiders.gov_support import crawl_twice, parse
from votersdaily.sources.errors import UnexpectedDocument
from votersdaily.sources.supremecourt import JUSTICES
from votersdaily.spiders.supreme_court_arguments import SupremeCourtArgumentsSpider
from votersdaily.spiders.supreme_court_opinions import SupremeCourtOpinionsSpider as Spider
from votersdaily.spiders.supreme_court_orders import SupremeCourtOrdersSpider

SLIP = recording("gov/supreme_court/scotus_slip_example.html")
SLIP_URL = Spider.recordings["gov/supreme_court/scotus_slip_example.html"]
RELATING = recording("gov/supreme_court/scotus_relating_2025.html")
IN_CHAMBERS_URL = "https://www.supremecourt.gov/opinions/in-chambers.aspx"
PAGES = sorted(recording("gov/supreme_court").glob("*.html"))


def in_chambers_page() -> bytes:
    """Derived from the real 2025 relating page: its heading renamed to the in-chambers listing's and
    its last header cell to "Pt.", the in-chambers layout (Date | Docket | Name | J. | Pt.)."""
    body = RELATING.read_bytes()
    body = body.replace(b">Opinions Relating to Orders - 2025</span>", b">In-Chambers Opinions</span>")
    return body.replace(b'scope="col">Citation</th>', b'scope="col">Pt.</th>')


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


def test_in_chambers_opinions_derived():
    events = parse(Spider, in_chambers_page(), IN_CHAMBERS_URL, HtmlResponse).by_key()
    assert len(events) == 7
    orr = events["25a319_i4dj.pdf"]
    assert orr["title"] == "Trump v. Orr (No. 25A319): in-chambers opinion"
    assert (orr["justice"], orr["citation"], orr["opinion_type"]) == (
        "Ketanji Brown Jackson",
        "607/1",
        "in-chambers opinion",
    )
    assert orr["release_number"] is None and orr["datetime"] == "2025-11-06T00:00:00Z"


@pytest.mark.parametrize(
    "body",
    [
        # Derived: the slip page with its first header in the in-chambers layout.
        SLIP.read_bytes().replace(b'scope="col">Citation</th>', b'scope="col">Pt.</th>', 1),
        # Derived: the in-chambers page with the slip layout's R- column added.
        in_chambers_page().replace(
            b'<th style="text-align: center;" width="60" scope="col">Date</th>',
            b"<th>R-</th><th>Date</th>",
            1,
        ),
    ],
    ids=["slip_page_with_in_chambers_header", "in_chambers_page_with_slip_header"],
)
def test_a_table_is_recognised_by_its_header_never_by_position(body):
    with pytest.raises(UnexpectedDocument, match="header"):
        parse(Spider, body, SLIP_URL, HtmlResponse)


def test_a_row_without_its_pdf_link_is_dropped_alone():
    """Derived: the first slip opinion's link removed from its Name cell."""
    body = SLIP.read_bytes().replace(
        b"<a href='/opinions/22pdf/600us1r58_7khn.pdf' target='_blank'>303 Creative LLC v. Elenis</a>",
        b"303 Creative LLC v. Elenis",
    )
    parsed = parse(Spider, body, SLIP_URL, HtmlResponse)
    assert len(parsed.events) == 57 and "600us1r58_7khn.pdf" not in parsed.by_key()
    assert parsed.spider.crawler.stats.get_value("events/dropped/record:UnexpectedDocument") == 1


SPIDERS = (SupremeCourtOrdersSpider, Spider, SupremeCourtArgumentsSpider)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
@pytest.mark.parametrize("spider", SPIDERS, ids=[s.name for s in SPIDERS])
def test_every_court_page_is_read_or_refused_never_a_crash(spider, page):
    """Each Supreme Court spider on each real Supreme Court page: its own pages give events, every
    other page is an UnexpectedDocument (the orders spider crashed with AttributeError on slips)."""
    own = any(name.endswith("/" + page.name) for name in spider.recordings)
    url = "https://www.supremecourt.gov/" + page.stem
    if own:
        assert parse(spider, page, url, HtmlResponse).events
    else:
        with pytest.raises(UnexpectedDocument):
            parse(spider, page, url, HtmlResponse)


def test_justice_keys():
    assert JUSTICES["PC"] == "Per Curiam" and JUSTICES["KJ"] == "Ketanji Brown Jackson"


def test_crawl_twice(crawl, sqlite_uri, frozen_now, tmp_path):
    chambers = tmp_path / "in-chambers.html"
    chambers.write_bytes(in_chambers_page())  # derived, see in_chambers_page
    runs = crawl_twice(crawl, "supreme_court_opinions", [SLIP, chambers], sqlite_uri, 58 + 7)
    doc = runs.docs["2023-06-30T00:00:00Z-supreme_court_opinions-600us1r58_7khn.pdf"]
    assert doc["source_url"] == SLIP_URL and doc["justice"] == "Neil M. Gorsuch"


def test_smoke():
    assert Spider.custom_settings["DOWNLOAD_DELAY"] >= 5
    slip_listing, chambers_listing = Spider().listing_urls
    assert slip_listing.startswith("https://www.supremecourt.gov/opinions/slipopinion/")
    assert chambers_listing == IN_CHAMBERS_URL
    assert Spider.recording_urls() == [SLIP.resolve().as_uri()]
