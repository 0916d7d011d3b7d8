"""supreme_court_orders: the two real supremecourt.gov listings (read in place from ../shared),
failure modes, a real crawl."""

from __future__ import annotations

from collections import Counter
from datetime import date

import pytest
from scrapy.http import HtmlResponse

from tests.conftest import recording, shared_file
from tests.spiders.gov_support import crawl_bad, crawl_twice, parse, truncate
from votersdaily.sources.errors import ErrorPage, MalformedDocument, UnexpectedDocument
from votersdaily.spiders.supreme_court_orders import SupremeCourtOrdersSpider as Spider
from votersdaily.spiders.supreme_court_orders import term_year

ORDERS_REL = "fixtures/inplace/gov/supreme_court/scotus_orders_home.html"
RELATING_REL = "fixtures/inplace/gov/supreme_court/scotus_relating_example.html"
ORDERS_URL = Spider.recordings["shared:" + ORDERS_REL]
RELATING_URL = Spider.recordings["shared:" + RELATING_REL]
NOT_FOUND = recording("gov/house_docs_floor/billsthisweek_20260928_NEGATIVE_file_not_found.html")
CLERK_INDEX = recording("gov/house_clerk_index/index.asp")


@pytest.fixture(scope="module")
def orders():
    return parse(Spider, shared_file(ORDERS_REL), ORDERS_URL, HtmlResponse)


@pytest.fixture(scope="module")
def relating():
    return parse(Spider, shared_file(RELATING_REL), RELATING_URL, HtmlResponse)


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
    text = shared_file(ORDERS_REL).read_text("utf-8")
    for e in orders.events:
        assert e["source_text"] in text
        assert e["source_text"].startswith('<div style="display:block">') and e["source_text"].endswith(
            "</div>"
        )
        assert "'/orders/courtorders/%s'" % e["pdf_file"] in e["source_text"]
    assert "03/25/24 &nbsp;" in orders.events[0]["source_text"]


def test_opinions_relating_to_orders_layout(relating):
    # 8 table rows link 9 opinion PDFs: the ninth is the "Revised" copy of Correll v. Florida.
    assert len(relating.events) == 8
    keys = relating.by_key()
    brooks, brooks_dissent = keys["15-7786_n7io.pdf"], keys["15-7786_n7io.pdf#page=2"]
    assert brooks["datetime"] == brooks_dissent["datetime"] == "2016-01-21T00:00:00Z"  # "1/21/16"
    assert brooks["title"] == "Brooks v. Alabama (No. 15-7786): opinion relating to orders"
    assert (brooks["justice"], brooks_dissent["justice"]) == ("SS", "B")
    assert (
        brooks_dissent["event_url"] == "https://www.supremecourt.gov/opinions/15pdf/15-7786_n7io.pdf#page=2"
    )
    assert brooks["reporter_part"] == "577/1" and brooks["docket"] == "15-7786"
    correll = keys["15-6551_c07d.pdf"]
    assert correll["datetime"] == "2015-10-29T00:00:00Z"  # "10/29/2015": a four-digit year in the same column
    assert correll["revised_pdf_url"] == "https://www.supremecourt.gov/opinions/15pdf/15-6551_diff_1924.pdf"
    assert correll["revised_date"] == "10/30/15"
    assert keys["5p6959t_32q3.pdf"]["case_name"] == "Holiday v. Stephens"
    assert keys["5p6959t_32q3.pdf"]["datetime"] == "2015-11-18T00:00:00Z"
    text = shared_file(RELATING_REL).read_text("utf-8")
    for e in relating.events:
        assert e["source_text"].startswith("<tr>") and e["source_text"] in text
        assert (e["branch"], e["entity"]) == ("Judicial", "Supreme Court")


@pytest.mark.parametrize(
    "make, exception",
    [
        (lambda: truncate(shared_file(ORDERS_REL).read_bytes()), MalformedDocument),
        (lambda: NOT_FOUND.read_bytes(), ErrorPage),
        (lambda: CLERK_INDEX.read_bytes(), UnexpectedDocument),
        (
            lambda: shared_file(ORDERS_REL).read_bytes().replace(b"03/25/24 &nbsp;", b"March 25 &nbsp;"),
            UnexpectedDocument,
        ),
    ],
    ids=["truncated", "html_error_page", "other_site_page", "bad_date"],
)
def test_bad_pages_raise(make, exception):
    with pytest.raises(exception):
        parse(Spider, make(), ORDERS_URL, HtmlResponse)


def test_term_year():
    assert term_year(date(2026, 10, 2)) == 2026
    assert term_year(date(2026, 9, 30)) == 2025


def test_crawl_both_listings_twice(crawl, sqlite_uri, frozen_now):
    paths = [shared_file(ORDERS_REL), shared_file(RELATING_REL)]
    runs = crawl_twice(crawl, "supreme_court_orders", paths, sqlite_uri, 69 + 8)
    doc = runs.docs["2024-03-25T00:00:00Z-supreme_court_orders-032524zor_4h25.pdf"]
    assert doc["source_url"] == ORDERS_URL and doc["all_day"] is True


def test_crawl_of_a_truncated_listing_is_a_logged_failure(crawl, tmp_path, sqlite_uri):
    crawl_bad(
        crawl,
        "supreme_court_orders",
        tmp_path / "orders.html",
        truncate(shared_file(ORDERS_REL).read_bytes()),
        sqlite_uri,
        "MalformedDocument",
    )


def test_smoke():
    assert Spider.frequency_hours == 6.0 and Spider.custom_settings["DOWNLOAD_DELAY"] >= 5
    assert all(name.startswith("shared:fixtures/inplace/") for name in Spider.recordings)
    listings = Spider().listing_urls
    assert listings[0].startswith("https://www.supremecourt.gov/orders/ordersofthecourt/")
