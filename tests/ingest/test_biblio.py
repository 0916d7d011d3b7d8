"""Bibliographic metadata of real publisher pages (sandcrawler's, read in place from ../shared):
every meta key read in every spelling (``name``, OpenGraph's ``property``, ``itemprop``, ``id``;
any case), and dates kept at the precision the page gives, never completed with today. Each variant derived from a real page says how it was derived."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from tests.ingest.conftest import scholarly
from votersdaily.ingest.biblio import extract_biblio, parse_release_date
from votersdaily.ingest.fulltext import PDF_PATTERNS, match_fulltext_url
from votersdaily.ingest.htmldoc import parse_html
from votersdaily.ingest.scope import guess_platform

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


# -- item 3: a meta key in any attribute, any case ---------------------------------------------------


def test_opengraph_title_in_its_own_spelling():
    """Derived: the eLife page without its ``dc.title``: its only title is then OpenGraph's, written
    as OpenGraph specifies, ``<meta property="og:title">`` (read before only as ``name=``)."""
    body = without(page("elife_article.html"), rb'<meta name="dc\.title"[^>]*>')
    assert biblio(body, ELIFE_URL)["title"] == ELIFE_TITLE


def test_opengraph_description_is_an_abstract():
    """The real eLife page: its only description meta is ``property="og:description"``."""
    assert biblio(page("elife_article.html"), ELIFE_URL)["abstract"].startswith(
        "The ascidian Ciona integrates visual information from two photoreceptor types"
    )


@pytest.mark.parametrize(
    "spelling",
    [
        b'name="citation_title"',
        b'property="citation_title"',
        b'itemprop="citation_title"',
        b'id="citation_title"',
        b'name="CITATION_Title"',
        b'property="Citation_Title"',
        b"NAME='citation_title'",
        b'name=" citation_title "',
    ],
)
def test_every_key_attribute_and_case_reads_the_same(spelling):
    """Derived: the PLOS page's ``citation_title`` meta written in another key attribute or case;
    the page's ``og:title`` removed, so only that meta can give the title."""
    body = without(page("plos_one_article.html"), rb'<meta property="og:title"[^>]*>')
    real = biblio(page("plos_one_article.html"), PLOS_URL)
    assert body.count(b'name="citation_title"') == 1
    derived = biblio(body.replace(b'name="citation_title"', spelling), PLOS_URL)
    assert derived["title"] == real["title"].strip()
    assert {k: v for k, v in derived.items() if k != "title"} == {
        k: v for k, v in real.items() if k != "title"
    }


def test_list_fields_and_fulltext_links_in_the_property_spelling():
    """Derived: every ``citation_author`` and the ``citation_pdf_url`` of the PLOS page written with
    ``property=``: the same authors and PDF link."""
    body = page("plos_one_article.html")
    derived = body.replace(b'name="citation_author"', b'property="citation_author"').replace(
        b'name="citation_pdf_url"', b'property="citation_pdf_url"'
    )
    assert derived != body
    real, read = biblio(body, PLOS_URL), biblio(derived, PLOS_URL)
    assert read["contrib_names"] == real["contrib_names"] and len(real["contrib_names"]) == 11
    assert read["pdf_fulltext_url"] == real["pdf_fulltext_url"]


def test_a_profile_url_is_no_contributor_name():
    """Derived: the PLOS page's authors written as ``dc.creator`` after an OpenGraph
    ``article:author`` profile URL, which comes first in the order of keys but names no one."""
    body = page("plos_one_article.html").replace(b'name="citation_author"', b'name="dc.creator"')
    body = body.replace(
        PLOS_DATE, PLOS_DATE + b'\n<meta property="article:author" content="https://www.facebook.com/PLOS"/>'
    )
    assert biblio(body, PLOS_URL)["contrib_names"][0] == "Yang Li"


def test_platform_rules_read_metas_through_the_same_index():
    """Derived: the PLOS page's ``og:image`` pointed at the Galenos CMS (double quotes, upper-case
    key): the platform rule matches it whatever the spelling, not one literal string."""
    body = re.sub(
        rb'<meta property="og:image" content="[^"]*"/>',
        b'<meta property="OG:image" content="http://cms.galenos.com.tr"/>',
        page("plos_one_article.html"),
    )
    assert guess_platform(parse_html(body, PLOS_URL)) == "galenos"
    assert guess_platform(parse_html(page("plos_one_article.html"), PLOS_URL)) != "galenos"


@pytest.mark.parametrize("attribute, read", [(b'http-equiv="Refresh"', True), (b'name="refresh"', False)])
def test_refresh_is_a_pragma_not_a_key(attribute, read):
    """Derived: the real First Monday galley with a meta refresh to a PDF added to its head, at an
    OJS interstitial address: ``http-equiv`` (any case) is followed; a ``name="refresh"`` is a
    key like any other, not a pragma."""
    body = page("first_monday_ojs3_fulltext.html")
    assert body.count(b"</head>") == 1
    body = body.replace(
        b"</head>",
        b'<meta %s content="0; URL=https://firstmonday.org/article/10274/9729.pdf"></head>' % attribute,
    )
    doc = parse_html(body, "https://firstmonday.org/ojs/index.php/fm/article/viewPDFInterstitial/10274/9729")
    found = match_fulltext_url(doc, PDF_PATTERNS)
    if read:
        assert found == (
            "https://firstmonday.org/article/10274/9729.pdf",
            "HTML meta refresh (viewPDFInterstitial)",
        )
    else:
        assert found is None or found[1] != "HTML meta refresh (viewPDFInterstitial)"


# -- item 2: dates at the page's precision, never completed ------------------------------------------


def test_real_pages_give_their_whole_dates():
    assert biblio(page("plos_one_article.html"), PLOS_URL)["release_date"] == "2019-04-22"  # "Apr 22, 2019"
    elife = biblio(page("elife_article.html"), ELIFE_URL)
    assert (elife["release_date"], elife["release_year"]) == ("2019-04-18", 2019)


@pytest.mark.parametrize(
    "stated, release_date",
    [
        (b"2017/01", "2017-01"),  # a page that once came out as 2017-01-26, the day of the run
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


def test_meta_matching_is_case_insensitive():
    doc = parse_html(
        b'<html><head><meta name="DC.Citation.Issue" content="7"><meta name="DC.Title" content="T">'
        b'<meta name="citation_doi" content="doi:10.123/ABC"><meta name="citation_title" content="">'
        b"</head><body></body></html>",
        "http://example.com/a",
    )
    biblio = extract_biblio(doc)
    assert biblio == {"issue": "7", "title": "T", "doi": "10.123/ABC"}


def test_first_monday_has_only_a_title_element():
    doc = parse_html(scholarly("first_monday_ojs3_fulltext.html").read_bytes(), "http://example.com/a/b")
    assert extract_biblio(doc) == {}  # the head has a <title> and no meta biblio (FIXTURES.md)
