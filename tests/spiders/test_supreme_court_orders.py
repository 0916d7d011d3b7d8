"""supreme_court_orders: the real supremecourt.gov orders listing and opinions relating to orders
(2025, shipped; 2015, a test recording), failure modes, a real crawl (the relating pages of other
terms: test_supreme_court_terms.py)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import date

import pytest
from scrapy.http import HtmlResponse

from tests.conftest import recording
from tests.spiders.gov_support import crawl_bad, crawl_twice, parse, truncate
from tests.spiders.supreme_court_pages import EARLIER_TERMS
from votersdaily.sources.errors import ErrorPage, MalformedDocument, UnexpectedDocument
from votersdaily.sources.supremecourt import term_year
from votersdaily.spiders.supreme_court_orders import SupremeCourtOrdersSpider as Spider

ORDERS = recording("gov/supreme_court/scotus_orders_home.html")
RELATING = recording("gov/supreme_court/scotus_relating_2025.html")
RELATING_2015 = EARLIER_TERMS / "relating_2015.html"
ORDERS_URL = Spider.recordings["gov/supreme_court/scotus_orders_home.html"]
RELATING_URL = Spider.recordings["gov/supreme_court/scotus_relating_2025.html"]
RELATING_2015_URL = "https://www.supremecourt.gov/opinions/relatingtoorders/15"
NOT_FOUND = recording("gov/house_docs_floor/billsthisweek_20260928_NEGATIVE_file_not_found.html")
CLERK_INDEX = recording("gov/house_clerk_index/index.asp")


@pytest.fixture(scope="module")
def orders():
    return parse(Spider, ORDERS, ORDERS_URL, HtmlResponse)


@pytest.fixture(scope="module")
def relating():
    return parse(Spider, RELATING, RELATING_URL, HtmlResponse)


def test_every_order_link_is_one_event(orders):
    assert len(orders.events) == 69
    assert Counter(e["title"] for e in orders.events) == {"Order List": 16, "Miscellaneous Order": 53}
    assert len({e["datetime"] for e in orders.events}) == 43
    assert all(e["all_day"] is True and e["datetime"].endswith("T00:00:00Z") for e in orders.events)


def test_first_and_last_orders(orders):
    first, last = orders.events[0], orders.events[-1]
    # <span …>03/25/24 &nbsp;</span> <a href='/orders/courtorders/032524zor_4h25.pdf' …>Order List</a>
    assert first["datetime"] == "2024-03-25T00:00:00Z"
    assert first["unique_key"] == first["pdf_file"] == "032524zor_4h25.pdf"
    assert first["_id"] == "2024-03-25T00:00:00Z-supreme_court_orders-032524zor_4h25.pdf"
    assert first["title"] == first["order_type"] == "Order List"
    assert (first["branch"], first["entity"]) == ("Judicial", "Supreme Court")
    assert (
        first["event_url"]
        == first["pdf_url"]
        == "https://www.supremecourt.gov/orders/courtorders/032524zor_4h25.pdf"
    )
    assert first["date_text"] == "03/25/24" and first["term_year"] == 2023
    assert first["description"] is None
    assert last["datetime"] == "2023-10-02T00:00:00Z" and last["unique_key"] == "100223zor_5368.pdf"
    misc = orders.by_key()["032024zr1_olp1.pdf"]
    assert misc["title"] == "Miscellaneous Order" and misc["datetime"] == "2024-03-20T00:00:00Z"


def test_source_text_is_the_row_as_published(orders):
    text = ORDERS.read_text("utf-8")
    for e in orders.events:
        assert e["source_text"] in text
        assert e["source_text"].startswith('<div style="display:block">') and e["source_text"].endswith(
            "</div>"
        )
        assert "'/orders/courtorders/%s'" % e["pdf_file"] in e["source_text"]
    assert "03/25/24 &nbsp;" in orders.events[0]["source_text"]


def test_opinions_relating_to_orders_2025(relating):
    """Date | Docket | Name | J. | Citation: read by column name, so "607/1" is the citation and
    the justice is the J. column (the spider put "607/1" into the justice before)."""
    assert len(relating.events) == 7  # 7 rows; Boyd v. Hamm's second PDF is its revision
    keys = relating.by_key()
    boyd = keys["25a457new_j426.pdf"]
    assert boyd["datetime"] == "2025-10-23T00:00:00Z" and boyd["docket"] == "25A457"
    assert boyd["title"] == "Boyd v. Hamm (No. 25A457): opinion relating to orders"
    assert (boyd["justice_initials"], boyd["justice"], boyd["citation"]) == ("SS", "Sonia Sotomayor", "607/1")
    assert boyd["revisions"] == [
        {
            "date_text": "10/24/25",
            "pdf_url": "https://www.supremecourt.gov/opinions/25pdf/25a457_diff_pm02.pdf",
        }
    ]
    assert boyd["description"] == "Sonia Sotomayor; 607/1"
    assert keys["25-89_8n5a.pdf"]["case_name"] == "Lee v. Poudre School Dist. R–1"
    text = RELATING.read_text("utf-8")
    for e in relating.events:
        assert e["source_text"].startswith("<tr>") and e["source_text"] in text
        assert (e["branch"], e["entity"]) == ("Judicial", "Supreme Court")


def test_relating_2025_matches_juriscrapers_parse(relating):
    """juriscraper's expected parse of the same page (set 3 .compare.json) as an oracle: every PDF it
    lists is an opinion's PDF or one of its revisions, with the same date, docket, case and author."""
    oracle = json.loads(recording("gov/supreme_court/scotus_relating_2025.compare.json").read_text("utf-8"))
    by_pdf = {}
    for e in relating.events:
        for url in [e["pdf_url"]] + [r["pdf_url"] for r in e["revisions"]]:
            by_pdf[url] = e
    assert len(oracle) == len(by_pdf) == 8
    for expected in oracle:
        event = by_pdf["https://www.supremecourt.gov" + expected["download_urls"]]
        assert event["datetime"][:10] == expected["case_dates"]
        assert (event["docket"], event["case_name"]) == (expected["docket_numbers"], expected["case_names"])
        assert event["citation"] == expected["citations"]
        assert event["justice"].split(",")[0].split()[-1] == expected["judges"].split()[-1]


def test_opinions_relating_to_orders_2015_layout():
    """The older layout (Date | Docket | Name | Revised | J. | Pt.)."""
    keys = parse(Spider, RELATING_2015, RELATING_2015_URL, HtmlResponse).by_key()
    assert len(keys) == 8  # 8 table rows link 9 opinion PDFs: the ninth is Correll's "Revised" copy
    brooks, brooks_dissent = keys["15-7786_n7io.pdf"], keys["15-7786_n7io.pdf#page=2"]
    assert brooks["datetime"] == brooks_dissent["datetime"] == "2016-01-21T00:00:00Z"  # "1/21/16"
    assert (brooks["justice_initials"], brooks_dissent["justice_initials"]) == ("SS", "B")
    assert brooks_dissent["justice"] == "Stephen G. Breyer"
    assert brooks["citation"] == "577/1" and brooks["docket"] == "15-7786"
    correll = keys["15-6551_c07d.pdf"]
    assert correll["datetime"] == "2015-10-29T00:00:00Z"  # "10/29/2015": a four-digit year in the same column
    assert correll["revisions"] == [
        {
            "date_text": "10/30/15",
            "pdf_url": "https://www.supremecourt.gov/opinions/15pdf/15-6551_diff_1924.pdf",
        }
    ]


@pytest.mark.parametrize(
    "make, exception",
    [
        (lambda: truncate(ORDERS.read_bytes()), MalformedDocument),
        (NOT_FOUND.read_bytes, ErrorPage),
        (CLERK_INDEX.read_bytes, UnexpectedDocument),
        (
            lambda: recording("gov/supreme_court/scotus_slip_example.html").read_bytes(),
            UnexpectedDocument,
        ),
    ],
    ids=["truncated", "html_error_page", "other_site_page", "slip_opinions_page"],
)
def test_bad_pages_raise(make, exception):
    with pytest.raises(exception):
        parse(Spider, make(), ORDERS_URL, HtmlResponse)


def test_a_row_with_a_bad_date_is_dropped_alone():
    """Derived: the first order's date replaced by words; that order is dropped, 68 kept."""
    body = ORDERS.read_bytes().replace(b"03/25/24 &nbsp;", b"March 25 &nbsp;")
    parsed = parse(Spider, body, ORDERS_URL, HtmlResponse)
    assert len(parsed.events) == 68 and "032524zor_4h25.pdf" not in parsed.by_key()
    assert parsed.spider.crawler.stats.get_value("events/dropped/record:UnexpectedDocument") == 1


def test_order_links_outside_the_known_rows_are_dropped_with_a_reason():
    """Derived: the link <span> of the first two order rows renamed <em> (another layout): those two
    links are dropped with their reason, the other 67 orders kept; no order is lost silently."""
    body = ORDERS.read_bytes()
    cell = b'<span style="display:inline-block;"><a href=\'/orders/courtorders/'
    assert body.count(cell) == 69
    body = body.replace(cell, b'<em style="display:inline-block;"><a href=\'/orders/courtorders/', 2)
    parsed = parse(Spider, body, ORDERS_URL, HtmlResponse)
    assert len(parsed.events) == 67
    assert parsed.spider.crawler.stats.get_value("events/dropped/record:UnexpectedDocument") == 2


def test_term_year():
    assert term_year(date(2026, 10, 2)) == 2026
    assert term_year(date(2026, 9, 30)) == 2025
    # The days before the first Monday of October (5 October 2026) count to the new term, as its
    # docstring says (it said "first Monday of October").
    assert term_year(date(2026, 10, 1)) == 2026


# The fast subset crawls event spiders twice with house_votes and house_floor; this crawls one of the
# largest listings (its parser is tested on the same recordings by the tests beside it).
@pytest.mark.slow  # two listings, twice
def test_crawl_both_listings_twice(crawl, sqlite_uri, frozen_now):
    runs = crawl_twice(crawl, "supreme_court_orders", [ORDERS, RELATING], sqlite_uri, 69 + 7)
    doc = runs.docs["2024-03-25T00:00:00Z-supreme_court_orders-032524zor_4h25.pdf"]
    assert doc["source_url"] == ORDERS_URL and doc["all_day"] is True


def test_crawl_of_a_truncated_listing_is_a_logged_failure(crawl, tmp_path, sqlite_uri):
    crawl_bad(
        crawl,
        "supreme_court_orders",
        tmp_path / "orders.html",
        truncate(ORDERS.read_bytes()),
        sqlite_uri,
        "MalformedDocument",
    )


def test_smoke():
    assert Spider.frequency_hours == 6.0 and Spider.custom_settings["DOWNLOAD_DELAY"] >= 5
    assert sorted(Spider.recording_urls()) == sorted([ORDERS.resolve().as_uri(), RELATING.resolve().as_uri()])
    listings = Spider().listing_urls
    assert listings[0].startswith("https://www.supremecourt.gov/orders/ordersofthecourt/")
