"""Bibliographic metadata of real publisher pages (sandcrawler's, read in place from ../shared): dates
kept at the precision the page gives, never completed with today (issue 27 item 2). Each variant
derived from a real page says how it was derived."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from tests.ingest.conftest import scholarly
from votersdaily.ingest.biblio import extract_biblio, parse_release_date
from votersdaily.ingest.htmldoc import parse_html

PLOS_URL = "https://journals.plos.org/plosone/article?id=10.1371/journal.pone.0213978"
ELIFE_URL = "https://elifesciences.org/articles/44753"
ELIFE_TITLE = "Parallel visual circuitry in a basal chordate"
PLOS_DATE = b'<meta name="citation_date" content="Apr 22, 2019"/>'


def page(name: str) -> bytes:
    return scholarly(name).read_bytes()


def biblio(body: bytes, url: str) -> dict:
    return extract_biblio(parse_html(body, url))


def without(body: bytes, *patterns: bytes) -> bytes:
    """Derived: each meta matching a pattern removed (the pattern must match, so the test fails
    rather than passes vacuously when the page changes)."""
    for pattern in patterns:
        body, count = re.subn(pattern, b"", body)
        assert count, pattern
    return body


# -- item 2: dates at the page's precision, never completed ------------------------------------------


def test_real_pages_give_their_whole_dates():
    assert biblio(page("plos_one_article.html"), PLOS_URL)["release_date"] == "2019-04-22"  # "Apr 22, 2019"
    elife = biblio(page("elife_article.html"), ELIFE_URL)
    assert (elife["release_date"], elife["release_year"]) == ("2019-04-18", 2019)


@pytest.mark.parametrize(
    "stated, release_date",
    [
        (b"2017/01", "2017-01"),  # the page: it said 2017-01-26, the day of the run
        (b"2017-01", "2017-01"),
        (b"January 2017", "2017-01"),
        (b"2017", "2017"),
        (b"2017/01/26", "2017-01-26"),
    ],
)
def test_a_partial_date_keeps_its_precision(stated, release_date, dateutil_today):
    """Derived: the PLOS page's ``citation_date`` content replaced by ``stated``; read "on" two
    different days (dateutil's clock moved), the result is the same and has no invented part."""
    body = page("plos_one_article.html")
    assert body.count(PLOS_DATE) == 1
    body = body.replace(PLOS_DATE, b'<meta name="citation_date" content="' + stated + b'"/>')
    seen = []
    for today in (datetime(2017, 1, 26), datetime(2031, 12, 31)):
        dateutil_today(today)
        read = biblio(body, PLOS_URL)
        seen.append((read["release_date"], read["release_year"]))
    assert seen == [(release_date, 2017)] * 2


@pytest.mark.parametrize("stated", [b"26 January", b"Jan 26", b"Monday", b"Spring"])
def test_a_date_without_its_year_is_left_out(stated):
    """Derived as above: a day and month without a year cannot be dated without inventing one."""
    body = page("plos_one_article.html").replace(
        PLOS_DATE, b'<meta name="citation_date" content="' + stated + b'"/>'
    )
    read = biblio(body, PLOS_URL)
    assert "release_date" not in read and "release_year" not in read


def test_release_date_parser():
    assert [parse_release_date(t).iso() for t in ("2017", "2017/01", "2017 Jan", "2019-04-18T10:00:00Z")] == [
        "2017",
        "2017-01",
        "2017-01",
        "2019-04-18",
    ]
    assert [parse_release_date(t) for t in ("2017/13", "2017-02-30", "26 January", "", None)] == [None] * 5
