"""The three Supreme Court spiders on the real listings of every term recorded (2010-2025: slip
opinions, opinions relating to orders, in-chambers opinions, argument audio; tests/spiders/
supreme_court_pages.py): every table is read by what its columns mean, whatever their order,
markup and extra columns; an empty listing is an empty success; a row that cannot be read is
dropped with its reason; a page without a listing table is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lxml import html as lxml_html
from parsel import Selector
from scrapy.http import HtmlResponse

from tests.conftest import recording
from tests.spiders.gov_support import crawl_bad, ok, parse, run_logs
from tests.spiders.supreme_court_pages import (
    EARLIER_TERMS,
    PAGES,
    SPIDER_OF,
    CourtPage,
    opinion_oracle_mismatches,
)
from votersdaily.sources.errors import UnexpectedDocument
from votersdaily.sources.supremecourt import ARGUMENT_AUDIO, column_meaning, current_term, header_columns
from votersdaily.spiders.supreme_court_arguments import SupremeCourtArgumentsSpider
from votersdaily.spiders.supreme_court_opinions import SupremeCourtOpinionsSpider
from votersdaily.spiders.supreme_court_orders import SupremeCourtOrdersSpider

BY_NAME = {page.name: page for page in PAGES}
SPIDERS = (SupremeCourtOrdersSpider, SupremeCourtOpinionsSpider, SupremeCourtArgumentsSpider)
RELATING_2025 = BY_NAME["scotus_relating_2025.html"]
SLIP_2022 = BY_NAME["scotus_slip_example.html"]


def read(page: CourtPage, body: bytes | None = None):
    return parse(page.spider, body if body is not None else page.path, page.url, HtmlResponse)


def dropped(parsed) -> dict:
    return {
        k: v for k, v in parsed.spider.crawler.stats.get_stats().items() if k.startswith("events/dropped/")
    }


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_row_of_every_term_is_an_event(page):
    parsed = read(page)
    assert len(parsed.events) == len(parsed.by_key()) == page.events
    assert dropped(parsed) == {}
    text = page.path.read_bytes().decode("utf-8")  # CRLF kept: source_text is the row as published
    assert all(e["source_text"].startswith("<tr") and e["source_text"] in text for e in parsed.events)
    assert page.header in listing_headers(text)


def listing_headers(text: str) -> set[str]:
    """The header rows of the page's listing tables, as published (cell texts joined by " | ")."""
    headers = set()
    for tr in Selector(text=text).xpath("//tr"):
        cells = tr.xpath("th | td")
        if header_columns(cells) is not None:
            headers.add(" | ".join(" ".join(c.xpath("string(.)").get().split()) for c in cells))
    return headers


@pytest.mark.parametrize(
    "page", [p for p in PAGES if p.oracle and p.kind != ARGUMENT_AUDIO], ids=lambda p: p.name
)
def test_opinions_match_juriscrapers_parse_of_the_same_page(page):
    assert opinion_oracle_mismatches(read(page).events, page.oracle) == []


@pytest.mark.parametrize(
    "page", [p for p in PAGES if p.oracle and p.kind == ARGUMENT_AUDIO], ids=lambda p: p.name
)
def test_arguments_match_juriscrapers_parse_of_the_same_page(page):
    oracle = json.loads(Path(page.oracle).read_text("utf-8"))
    mine = {(e["docket"], e["datetime"][:10]): e["case_name"] for e in read(page).events}
    assert {(x["docket_numbers"], x["case_dates"]): x["case_names"] for x in oracle} == mine


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
@pytest.mark.parametrize("spider", SPIDERS, ids=[s.name for s in SPIDERS])
def test_every_court_page_is_read_or_refused_never_a_crash(spider, page):
    """Each spider on each real page of the Court: its own kinds give their events (none for an
    empty listing), every other listing is an UnexpectedDocument."""
    if SPIDER_OF[page.kind] is spider:
        assert len(parse(spider, page.path, page.url, HtmlResponse).events) == page.events
    else:
        with pytest.raises(UnexpectedDocument):
            parse(spider, page.path, page.url, HtmlResponse)


# -- what each layout holds ----------------------------------------------------------------------


def test_slip_2015_revised_column_and_an_unescaped_space_in_a_link():
    """R- | Date | Docket | Name | Revised | J. | Pt.: the revised PDF is in its own column; the PDF
    link holds a raw space, escaped as a browser would."""
    events = read(BY_NAME["slip_2015.html"]).by_key()
    ferc = events["14-840- new_o75q.pdf"]
    assert ferc["pdf_url"] == "https://www.supremecourt.gov/opinions/15pdf/14-840-%20new_o75q.pdf"
    assert ferc["revisions"] == [
        {
            "date_text": "1/28/16",
            "pdf_url": "https://www.supremecourt.gov/opinions/15pdf/14-840_diff_pok0.pdf",
        }
    ]
    assert (ferc["release_number"], ferc["justice"], ferc["citation"]) == (16, "Elena Kagan", "577/2")
    assert ferc["datetime"] == "2016-01-25T00:00:00Z" and ferc["term_year"] == 2015


def test_slip_2014_r_column_without_revised_and_the_page_as_published():
    """R- | Date | Docket | Name | J. | Pt. (no Revised): the one opinion's J. cell holds "574/1" on
    the page itself, kept as published, never moved into another field."""
    (lopez,) = read(BY_NAME["slip_2014.html"]).events
    assert (lopez["case_name"], lopez["docket"], lopez["release_number"]) == ("Lopez v. Smith", "13-946", 1)
    assert (lopez["justice_initials"], lopez["justice"], lopez["citation"]) == ("574/1", "", "574/1")


def test_slip_2011_relative_links_and_every_release_number():
    events = read(BY_NAME["slip_2011_trimmed.html"]).events
    assert sorted(e["release_number"] for e in events) == list(range(1, 29))
    douglas = events[0]
    assert (
        douglas["pdf_url"] == "https://www.supremecourt.gov/opinions/11pdf/09-958.pdf"
    )  # href "11pdf/09-958.pdf"
    assert (douglas["justice"], douglas["citation"], douglas["term_year"]) == (
        "Stephen G. Breyer",
        "565/2",
        2011,
    )


def test_relating_2012_in_the_in_chambers_layout():
    """Date | Docket | Name | J. | Pt.: the header the in-chambers listing uses, on a relating page."""
    events = read(BY_NAME["relating_2012.html"]).events
    plata = events[0]
    assert plata["title"] == "Brown v. Plata (No. 13A57): opinion relating to orders"
    assert (plata["justice"], plata["citation"], plata["datetime"]) == (
        "Antonin Scalia",
        "570/2",
        "2013-08-02T00:00:00Z",
    )
    assert plata["pdf_url"] == "https://www.supremecourt.gov/opinions/12pdf/13a57_19m2.pdf"


def test_in_chambers_page_of_several_terms_takes_each_rows_term():
    """Term Year | Date | Docket | Name | Revised | J. | Pt., under a heading that names no term."""
    (navarro,) = read(BY_NAME["chambers_all_terms_2025.html"]).events
    assert (navarro["term_year"], navarro["docket"], navarro["justice"]) == (
        2023,
        "23A843",
        "John G. Roberts, Jr.",
    )
    assert navarro["title"] == "Navarro v. United States (No. 23A843): in-chambers opinion"


def test_argument_audio_2014_header_of_td_scope_col_cells():
    """<td scope="col"><b>Argument Session: October 06, 2014 - …</b></td><td …>Date Argued</td>: a
    header without <th>, its first cell naming the session."""
    events = read(BY_NAME["audio_2014.html"]).by_key()
    heien = events["13-604"]
    assert heien["title"] == "Heien v. North Carolina (No. 13-604): oral argument"
    assert heien["event_url"] == "https://www.supremecourt.gov/oral_arguments/audio/2014/13-604"
    assert heien["datetime"] == "2014-10-06T00:00:00Z" and heien["reargument"] is False
    assert events["126-Orig"]["case_name"] == "Kansas v. Nebraska"


def test_argument_audio_of_four_terms_with_a_header_before_each_session():
    """The 2014 site's page of terms 2010-2013: one table a term, a caption row, then a header row
    before each session and empty rows between; audio pages named by ``?argument=``."""
    events = read(BY_NAME["audio_2010_2013.html"]).events
    assert {e["event_url"].rsplit("TY=", 1)[1] for e in events} == {"2010", "2011", "2012", "2013"}
    assert (min(e["datetime"] for e in events), max(e["datetime"] for e in events)) == (
        "2010-10-04T00:00:00Z",
        "2014-04-30T00:00:00Z",
    )
    argentina = events[0]
    assert (argentina["unique_key"], argentina["docket"]) == ("12-842", "12-842")
    assert argentina["case_name"] == "Republic of Argentina v. NML Capital Ltd."
    assert argentina["event_url"].endswith("argument_audio_detail.aspx?argument=12-842&TY=2013")


def test_a_reargument_is_marked_in_either_sites_spelling(frozen_now):
    """The 2014 site writes a reargued case's link "10-1491 (Reargued)" (Kiobel v. Royal Dutch
    Petroleum, reargued on 1 October 2012; its first argument of 28 February 2012 is "10-1491" on
    the same page); the 2017 site names the audio page "15-1498rearg". Both are rearguments: the
    2014 one was stored with ``reargument: false``."""
    events = read(BY_NAME["audio_2010_2013.html"]).by_key()
    reargued, first = events["10-1491 (Reargued)"], events["10-1491"]
    assert (reargued["datetime"], reargued["reargument"]) == ("2012-10-01T00:00:00Z", True)
    assert (first["datetime"], first["reargument"]) == ("2012-02-28T00:00:00Z", False)
    assert reargued["dockets"] == first["dockets"] == ["10-1491"]
    # Every argument of every recorded term: a reargument exactly where the page marks one.
    marked = {
        e["unique_key"]
        for page in PAGES
        if page.spider is SupremeCourtArgumentsSpider
        for e in read(page).events
        if e["reargument"]
    }
    assert marked == {"10-1491 (Reargued)", "15-1498rearg", "15-1204rearg"}


def test_column_meanings():
    assert [column_meaning(h) for h in ("R-", "J.", "Pt.", "Term Year", "Date Argued", "Oral Argument")] == [
        "release number",
        "author",
        "part",
        "term",
        "date",
        "case",
    ]
    assert column_meaning("Argument Session: February 24, 2014 - March 5, 2014") == "case"
    assert column_meaning("Search: All Documents Docket Advanced Search") is None


# -- variants derived from the real pages (each says how) ------------------------------------------


def _move_last_column_first(body: bytes) -> bytes:
    """Derived: in every row of every table the last cell becomes the first (header and data alike)."""
    root = lxml_html.document_fromstring(body)
    for tr in root.iter("tr"):
        cells = [c for c in tr if c.tag in ("td", "th")]
        if len(cells) > 1:
            tr.insert(0, cells[-1])
    return lxml_html.tostring(root, encoding="utf-8", doctype="<!DOCTYPE html>")


def _same_events(a, b) -> bool:
    drop = ("source_text", "access_datetime")
    return [{k: v for k, v in e.items() if k not in drop} for e in a.events] == [
        {k: v for k, v in e.items() if k not in drop} for e in b.events
    ]


@pytest.mark.parametrize("name", ["scotus_relating_2025.html", "slip_2015.html", "audio_2014.html"])
def test_columns_in_another_order_give_the_same_events(name):
    page = BY_NAME[name]
    moved = read(page, _move_last_column_first(page.path.read_bytes()))
    assert len(moved.events) == page.events and _same_events(moved, read(page))


def test_header_markup_does_not_matter():
    """Derived: the 2022 slip page's <th> header cells written as <td scope="col">."""
    body = SLIP_2022.path.read_bytes().replace(b"<th ", b'<td scope="col" ').replace(b"</th>", b"</td>")
    assert body.count(b'<td scope="col" ') >= 12 and b"<th" not in body
    assert _same_events(read(SLIP_2022, body), read(SLIP_2022))


def test_a_header_with_two_date_columns_is_refused():
    """Derived: the 2025 relating page's Docket header cell renamed "Date"."""
    body = RELATING_2025.path.read_bytes().replace(b'scope="col">Docket</th>', b'scope="col">Date</th>')
    with pytest.raises(UnexpectedDocument, match="more than one date column"):
        read(RELATING_2025, body)


def test_a_listing_page_without_a_listing_table_is_refused():
    """Derived: the 2015 slip page with its Date header renamed, so no header names a date column."""
    page = BY_NAME["slip_2015.html"]
    body = page.path.read_bytes().replace(b'scope="col">Date</th>', b'scope="col">When</th>')
    with pytest.raises(UnexpectedDocument, match="no listing table"):
        read(page, body)


def test_a_row_not_lined_up_with_its_header_is_dropped_alone():
    """Derived: the first row of the 2025 relating page loses its J. cell ("SS")."""
    body = RELATING_2025.path.read_bytes()
    cell = b'<td style="text-align: center;">SS</td>'
    assert body.count(cell) >= 1
    parsed = read(RELATING_2025, body.replace(cell, b"", 1))
    assert len(parsed.events) == RELATING_2025.events - 1
    assert dropped(parsed) == {"events/dropped/record:UnexpectedDocument": 1}


def test_an_empty_listing_is_an_empty_success(crawl, sqlite_uri):
    """The 2015 in-chambers page before its first opinion: a header and no rows."""
    page = BY_NAME["chambers_2015_empty.html"]
    ok(crawl("supreme_court_opinions", [page.path], sqlite_uri))
    from votersdaily.store import open_store

    store = open_store(sqlite_uri)
    (log,) = run_logs(store, "supreme_court_opinions")
    assert (log["result"], log["insert_count"], log["empty"], log.get("dropped") or {}) == (
        "success",
        0,
        True,
        {},
    )


def test_a_header_whose_rows_all_misalign_fails_the_run_with_every_row_named(crawl, tmp_path, sqlite_uri):
    """Derived: the 2025 relating page with a header cell more than its rows have cells: which
    column is missing cannot be known, so no row is read and the run says so."""
    body = RELATING_2025.path.read_bytes().replace(
        b'scope="col">Citation</th>', b'scope="col">Citation</th><th>Pt.</th>'
    )
    parsed = read(RELATING_2025, body)
    assert parsed.events == [] and dropped(parsed) == {"events/dropped/record:UnexpectedDocument": 7}
    log = crawl_bad(
        crawl, "supreme_court_orders", tmp_path / "relating.html", body, sqlite_uri, "AllRecordsDropped"
    )
    assert log["dropped"] == {"record:UnexpectedDocument": 7}


def test_earlier_terms_are_tests_only():
    """Pages of earlier terms are read by the tests, never replayed by ``crawl --all --offline``."""
    shipped = {Path(n).name for s in SPIDERS for n in s.recordings}
    assert shipped.isdisjoint(p.name for p in EARLIER_TERMS.glob("*.html"))
    assert recording("gov/supreme_court/scotus_slip_example.html").name in shipped


@pytest.mark.parametrize(
    ("now", "term"),
    [
        ("2026-10-01T03:59:59Z", 2025),  # 11:59:59 p.m. on 30 September in Washington (EDT)
        ("2026-10-01T04:00:00Z", 2026),  # midnight, 1 October, in Washington
        ("2027-01-01T04:59:59Z", 2026),  # New Year's Eve in Washington (EST): the same term either way
    ],
)
def test_the_term_turns_by_the_date_in_washington(monkeypatch, now, term):
    """``current_term()`` read the UTC date: from 8 p.m. Eastern on 30 September it named the next
    term (the arguments spider asked for its empty listing). The frozen framework clock, as a crawl's."""
    monkeypatch.setenv("VOTERSDAILY_FROZEN_NOW", now)
    assert current_term() == term
    (listing,) = SupremeCourtArgumentsSpider().listing_urls
    assert listing.endswith("/oral_arguments/argument_audio/%d" % term)
