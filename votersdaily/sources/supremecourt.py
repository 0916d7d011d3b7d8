"""supremecourt.gov listing pages: each page's kind from its heading, each table by what its columns mean.

The Court has published the same listings with many tables over the terms: slip opinions as
``R- | Date | Docket | Name | J. | Pt.`` (2011, 2014), with a ``Revised`` column (2015-2017) and with
``Citation`` for ``Pt.`` (2022); opinions relating to orders as ``Date | Docket | Name | J. | Pt.``
(2012), with ``Revised`` (2015, 2020) or ``Citation`` (2025); in-chambers opinions with a ``Term Year``
column (2025); argument audio as ``Oral Argument | Date Argued`` (2017) or, in 2014, a header of
``<td scope="col">`` cells whose first says "Argument Session: October 06, 2014 - October 15, 2014",
repeated before each session in one table. So a header row is recognised by what its cells mean
(:data:`COLUMN_NAMES`), whatever their order, markup or extra columns, and every cell is read by the
meaning of its column, never by position: a new column cannot shift the justice into the citation.

A page of the right kind with no recognisable table is an UnexpectedDocument; a recognised table
with a header and no rows is an empty listing (a term before its first opinion), not an error; a
data row that does not line up with its header is a record that fails alone (dropped with its
reason), never a silent loss.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from parsel import Selector
from scrapy.http import Response
from w3lib.url import safe_url_string

from .eastern import eastern_today, parse_local_date
from .errors import UnexpectedDocument
from .html import enclosing_markup, fold, raise_if_error_page, require_complete_page

SITE = "https://www.supremecourt.gov"
#: A small court site behind Akamai: one request at a time, slowly (every Supreme Court spider).
POLITENESS = {"DOWNLOAD_DELAY": 5.0, "CONCURRENT_REQUESTS_PER_DOMAIN": 1}
DATE_FORMATS = ("%m/%d/%y", "%m/%d/%Y")

ORDERS, RELATING, SLIP, IN_CHAMBERS, ARGUMENT_AUDIO = (
    "orders",
    "relating to orders",
    "slip opinion",
    "in-chambers opinion",
    "argument audio",
)
#: Words of the page heading (``lblTitle``, else ``<title>``) → the kind of listing.
PAGE_HEADINGS = (
    ("orders of the court", ORDERS),
    ("relating to orders", RELATING),
    ("in-chambers", IN_CHAMBERS),
    ("opinions of the court", SLIP),
    ("argument audio", ARGUMENT_AUDIO),
)
HEADING = '//span[contains(@id, "lblTitle")]//text()'

#: What a listing's columns mean (the keys :class:`Row` is read by).
RELEASE, DATE, DOCKET, CASE, AUTHOR, PART, CITATION, REVISED, TERM, AUDIO, TRANSCRIPT = (
    "release number",
    "date",
    "docket",
    "case",
    "author",
    "part",
    "citation",
    "revised",
    "term",
    "audio",
    "transcript",
)
#: A header cell's words (lower case, punctuation dropped: ``R-`` is ``r``, ``J.`` is ``j``) → what
#: its column means: the Court's own headers over the terms, and the usual spellings of the same.
COLUMN_NAMES = {
    "r": RELEASE,
    "r no": RELEASE,
    "release": RELEASE,
    "date": DATE,
    "date argued": DATE,
    "argued": DATE,
    "date decided": DATE,
    "decided": DATE,
    "docket": DOCKET,
    "docket no": DOCKET,
    "docket number": DOCKET,
    "no": DOCKET,
    "name": CASE,
    "case": CASE,
    "case name": CASE,
    "oral argument": CASE,
    "j": AUTHOR,
    "justice": AUTHOR,
    "author": AUTHOR,
    "pt": PART,
    "part": PART,
    "citation": CITATION,
    "cite": CITATION,
    "revised": REVISED,
    "revisions": REVISED,
    "term": TERM,
    "term year": TERM,
    "audio": AUDIO,
    "argument audio": AUDIO,
    "transcript": TRANSCRIPT,
    "argument transcript": TRANSCRIPT,
}
#: Header cells that say more than a name ("Argument Session: October 06, 2014 - October 15, 2014").
COLUMN_PREFIXES = (("argument session ", CASE),)
#: What a header row must name for its table to be a listing of the Court (every kind has both).
REQUIRED_COLUMNS = (DATE, CASE)

#: The author key of the opinion listings ("J."): current and recent members of the Court; an
#: initial not listed here keeps its ``justice_initials`` with an empty ``justice``.
JUSTICES = {
    "A": "Samuel A. Alito, Jr.",
    "AB": "Amy Coney Barrett",
    "AS": "Antonin Scalia",
    "B": "Stephen G. Breyer",
    "BK": "Brett M. Kavanaugh",
    "D": "Decree",
    "DS": "David H. Souter",
    "EK": "Elena Kagan",
    "G": "Ruth Bader Ginsburg",
    "JS": "John Paul Stevens",
    "K": "Anthony M. Kennedy",
    "KJ": "Ketanji Brown Jackson",
    "NG": "Neil M. Gorsuch",
    "PC": "Per Curiam",
    "R": "John G. Roberts, Jr.",
    "SS": "Sonia Sotomayor",
    "T": "Clarence Thomas",
}
TERM_RE = re.compile(r"\b(\d{4})\b")


def term_year(today: date) -> int:
    """The year of the Court's term under way on ``today``: a term is named for the year it opens, and
    is taken to open on 1 October (the term's first Monday of October can be as late as the 7th: the
    days before it count to the new term)."""
    return today.year if today.month >= 10 else today.year - 1


def current_term() -> int:
    """The term under way by the framework clock (a frozen clock freezes it too), on the Court's
    calendar: the date in Washington (by UTC's date the term turned at 8 p.m. Eastern on 30 September)."""
    return term_year(eastern_today())


@dataclass
class Row:
    """One data row of a listing table: its cells by what their column means, and its exact markup.

    A row that does not line up with its header (``misaligned`` says how) raises UnexpectedDocument
    on its first read, so the spider drops that record with the reason and keeps the others.
    """

    cells: dict[str, Selector]
    source_text: str
    url: str = ""
    misaligned: str = ""

    def cell(self, column: str) -> Selector | None:
        if self.misaligned:
            raise UnexpectedDocument("%s: %s" % (self.url, self.misaligned))
        return self.cells.get(column)

    def text(self, column: str) -> str:
        cell = self.cell(column)
        return fold(cell.xpath("string(.)").get()) if cell is not None else ""

    def links(self, column: str) -> list[tuple[str, str]]:
        """(href, text) of the cell's links, in order."""
        cell = self.cell(column)
        if cell is None:
            return []
        return [
            (a.xpath("@href").get("").strip(), fold(a.xpath("string(.)").get())) for a in cell.xpath(".//a")
        ]


def page_kind(response: Response) -> str | None:
    """The listing's kind from its heading ("Opinions of the Court - 2022")."""
    heading = page_heading(response).lower()
    return next((kind for words, kind in PAGE_HEADINGS if words in heading), None)


def listing_kind(response: Response, kinds: tuple[str, ...]) -> str:
    """The page's kind if it is one of ``kinds``; a truncated page is MalformedDocument, an error
    page ErrorPage, any other page (another listing of the Court, another site) UnexpectedDocument."""
    require_complete_page(response.body, response.url)
    kind = page_kind(response)
    if kind in kinds:
        return kind
    raise_if_error_page(fold(response.xpath("//title/text()").get()), response.url)
    raise UnexpectedDocument(
        "%s is not a listing of %s but %r" % (response.url, " or ".join(kinds), page_heading(response))
    )


def page_heading(response: Response) -> str:
    """The page's heading (``lblTitle``), else its <title>."""
    return fold(" ".join(response.xpath(HEADING).getall())) or fold(response.xpath("//title/text()").get())


def term_of(response: Response) -> int | None:
    match = TERM_RE.search(page_heading(response))
    return int(match.group(1)) if match else None


def column_meaning(header_text: str) -> str | None:
    """What a header cell's column holds (:data:`COLUMN_NAMES`), or None for a column not read."""
    words = " ".join(re.sub(r"[^\w\s]", " ", header_text.lower()).split())
    if words in COLUMN_NAMES:
        return COLUMN_NAMES[words]
    return next((meaning for prefix, meaning in COLUMN_PREFIXES if words.startswith(prefix)), None)


def _width(cell: Selector) -> int:
    """How many columns a cell spans (``colspan``; a nonsense value counts as one)."""
    span = (cell.attrib.get("colspan") or "1").strip()
    return int(span) if span.isdigit() and 0 < int(span) <= 100 else 1


def header_columns(cells: list[Selector], url: str = "") -> list[str | None] | None:
    """The meaning of each column position when ``cells`` are a listing's header row, else None.

    Any markup (``<th>``, ``<td scope="col">``, bold text) and any order; an unknown column is None
    so the positions of the others stay right. A header naming one meaning twice (two date columns)
    cannot be read safely: UnexpectedDocument.
    """
    texts = [fold(cell.xpath("string(.)").get()) for cell in cells]
    meanings = [column_meaning(text) for text in texts]
    if not all(required in meanings for required in REQUIRED_COLUMNS):
        return None
    named = [m for m in meanings if m is not None]
    twice = sorted({m for m in named if named.count(m) > 1})
    if twice:
        raise UnexpectedDocument(
            "%s: the table header %r has more than one %s column" % (url, " | ".join(texts), twice[0])
        )
    columns: list[str | None] = []
    for cell, meaning in zip(cells, meanings, strict=True):
        columns += [meaning] + [None] * (_width(cell) - 1)
    return columns


def table_rows(response: Response) -> list[Row]:
    """The data rows of every listing table of the page, each read by what its columns mean.

    A header row may follow a caption row ("2013 Term Cases") and come again before each group of
    rows (a session, a sitting): each header row sets the columns of the rows below it. Rows before
    any header, and rows with neither text nor links (spacers), are not records. A page with no
    recognisable header row is an UnexpectedDocument; one with headers and no rows is an empty
    listing. Rows keep their markup as published (``<tr>…</tr>`` cut from the page).
    """
    page = response.text
    seen: dict[str, int] = {}
    rows: list[Row] = []
    headers = 0
    for table in response.xpath("//table"):
        columns: list[str | None] | None = None
        for tr in table.xpath("tr | thead/tr | tbody/tr | tfoot/tr"):
            cells = tr.xpath("th | td")
            header = header_columns(cells, response.url)
            if header is not None:
                columns, headers = header, headers + 1
            elif columns is not None and (fold(tr.xpath("string(.)").get()) or tr.xpath(".//a")):
                rows.append(_row(columns, cells, tr, page, seen, response.url))
    if not headers:
        raise UnexpectedDocument(
            "%s has no listing table: no header row names a %s column"
            % (response.url, " and a ".join(REQUIRED_COLUMNS))
        )
    return rows


def _row(
    columns: list[str | None], cells: list[Selector], tr: Selector, page: str, seen: dict[str, int], url: str
) -> Row:
    """One data row under ``columns``; a row whose cells do not fill its header's columns exactly
    is misaligned (which cell is missing cannot be known)."""
    positions = [cell for cell in cells for _ in range(_width(cell))]
    misaligned = ""
    if len(positions) != len(columns):
        misaligned = "a row of %d cells under a header of %d columns: %r" % (
            len(positions),
            len(columns),
            fold(tr.xpath("string(.)").get())[:120],
        )
    by_meaning: dict[str, Selector] = {}
    for meaning, cell in zip(columns, positions, strict=False):
        if meaning is not None:
            by_meaning.setdefault(meaning, cell)
    return Row(by_meaning, _row_markup(page, tr, seen) or tr.get(), url, misaligned)


def _row_markup(page: str, tr: Selector, seen: dict[str, int]) -> str | None:
    """The row exactly as published, found through its first link (``seen`` counts repeats)."""
    href = tr.xpath(".//a/@href").get()
    if not href:
        return None
    index = seen.get(href, 0)
    seen[href] = index + 1
    return enclosing_markup(page, href, "tr", index)


def parse_date(text: str, url: str = "") -> date:
    """``6/30/23``, ``10/02/17`` or ``10/29/2015`` (both year forms appear in one column)."""
    try:
        return parse_local_date(text, *DATE_FORMATS)
    except ValueError:
        raise UnexpectedDocument("%s: row date %r is not M/D/YY" % (url, text)) from None


def absolute_url(base: str, href: str) -> str:
    """``href`` resolved against the page's upstream URL (the site root for a replayed file), escaped
    as a browser does (``/15pdf/14-840- new_o75q.pdf`` is ``…14-840-%20new_o75q.pdf``)."""
    if urlsplit(base).scheme not in ("http", "https"):
        base = SITE + "/"
    return safe_url_string(urljoin(base, href))


def file_name(href: str) -> str:
    """``/opinions/22pdf/600us1r58_7khn.pdf`` → ``600us1r58_7khn.pdf`` (``#page=2`` kept), unescaped:
    a link written ``14-840- new_o75q.pdf`` or ``14-840-%20new_o75q.pdf`` names the same file."""
    parts = urlsplit(href)
    name = unquote(parts.path.rsplit("/", 1)[-1])
    return "%s#%s" % (name, parts.fragment) if parts.fragment else name


def opinion_fields(row: Row, base: str, url: str = "") -> dict[str, Any]:
    """The ad hoc keys of one opinion row: case, docket, author, citation, PDF and revisions.

    The case name links the opinion PDF; later links in the case cell ("Revisions: 10/24/25") or in
    a revised column are corrected versions. The citation is the citation column, else the
    volume/part ("577/1"). Raises UnexpectedDocument for a row without a PDF.
    """
    links = row.links(CASE)
    if not links or not links[0][0]:
        raise UnexpectedDocument("%s: opinion row %r has no PDF link" % (url, row.text(CASE)))
    href, case_name = links[0]
    revisions = links[1:] + row.links(REVISED)
    initials = row.text(AUTHOR)
    release = row.text(RELEASE)
    return {
        "case_name": case_name,
        "docket": row.text(DOCKET),
        "justice_initials": initials,
        "justice": JUSTICES.get(initials, ""),
        "citation": row.text(CITATION) or row.text(PART),
        "release_number": int(release) if release.isdigit() else None,
        "pdf_url": absolute_url(base, href),
        "pdf_file": file_name(href),
        "revisions": [{"date_text": text, "pdf_url": absolute_url(base, link)} for link, text in revisions],
        "date_text": row.text(DATE),
    }


def opinion_description(fields: dict[str, Any]) -> str:
    """Who wrote the opinion and where it is reported ("Sonia Sotomayor; 607/1")."""
    return "; ".join(p for p in (fields["justice"] or fields["justice_initials"], fields["citation"]) if p)
