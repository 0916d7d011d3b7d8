"""supremecourt.gov listing pages: each page's kind from its heading, each table by its header row.

The site uses one table layout for look-alike listings: slip opinions and (some terms) opinions
relating to orders have ``R- | Date | Docket | Name | J. | Citation``, newer relating pages drop
the ``R-`` column, the 2015 relating page has ``Date | Docket | Name | Revised | J. | Pt.`` and
in-chambers opinions ``Date | Docket | Name | J. | Pt.``. Cells are therefore read by the name of
their column, never by position, and a table whose header row is not one this page kind is known to
use is refused (:class:`UnexpectedDocument`) rather than misread: a new column would otherwise shift
the justice into the citation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any
from urllib.parse import urljoin, urlsplit

from parsel import Selector
from scrapy.http import Response

from votersdaily.clock import now_utc

from .eastern import parse_local_date
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

OPINION_COLUMNS = ("R-", "Date", "Docket", "Name", "J.", "Citation")
#: Header rows (cell texts) each kind of listing is known to use.
TABLE_HEADERS: dict[str, set[tuple[str, ...]]] = {
    SLIP: {OPINION_COLUMNS},
    RELATING: {
        OPINION_COLUMNS,
        ("Date", "Docket", "Name", "J.", "Citation"),
        ("Date", "Docket", "Name", "Revised", "J.", "Pt."),
    },
    IN_CHAMBERS: {("Date", "Docket", "Name", "J.", "Pt.")},
    ARGUMENT_AUDIO: {("Oral Argument", "Date Argued")},
}

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
    """The Court's term is named for the year it opens (first Monday of October)."""
    return today.year if today.month >= 10 else today.year - 1


def current_term() -> int:
    """The term under way by the framework clock (a frozen clock freezes it too)."""
    return term_year(now_utc().date())


@dataclass
class Row:
    """One table row: its cells by column name, and its exact markup."""

    cells: dict[str, Selector]
    source_text: str

    def text(self, column: str) -> str:
        cell = self.cells.get(column)
        return fold(cell.xpath("string(.)").get()) if cell is not None else ""

    def links(self, column: str) -> list[tuple[str, str]]:
        """(href, text) of the cell's links, in order."""
        cell = self.cells.get(column)
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


def table_rows(response: Response, kind: str) -> list[Row]:
    """The data rows of every table with a header row, read by column name.

    A table whose header row is not one ``kind`` is known to use raises UnexpectedDocument. Rows
    are returned with their markup as published (``<tr>…</tr>`` cut from the page).
    """
    known = TABLE_HEADERS[kind]
    page = response.text
    seen: dict[str, int] = {}
    rows = []
    for table in response.xpath("//table[tr/th or */tr/th]"):
        header_row = table.xpath("(tr[th] | */tr[th])[1]")
        header = tuple(fold(th.xpath("string(.)").get()) for th in header_row.xpath("th"))
        if header not in known:
            raise UnexpectedDocument(
                "%s: a %s table with the header %s, not one of %s"
                % (response.url, kind, " | ".join(header), [" | ".join(h) for h in sorted(known)])
            )
        for tr in table.xpath("tr[td] | */tr[td]"):
            cells = tr.xpath("td")
            rows.append(
                Row(
                    cells=dict(zip(header, cells, strict=False)),
                    source_text=_row_markup(page, tr, seen) or tr.get(),
                )
            )
    return rows


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
    """``href`` resolved against the page's upstream URL (the site root for a replayed file)."""
    if urlsplit(base).scheme not in ("http", "https"):
        base = SITE + "/"
    return urljoin(base, href)


def file_name(href: str) -> str:
    """``/opinions/22pdf/600us1r58_7khn.pdf`` → ``600us1r58_7khn.pdf`` (``#page=2`` kept)."""
    parts = urlsplit(href)
    name = parts.path.rsplit("/", 1)[-1]
    return "%s#%s" % (name, parts.fragment) if parts.fragment else name


def opinion_fields(row: Row, base: str, url: str = "") -> dict[str, Any]:
    """The ad hoc keys of one opinion row: case, docket, author, citation, PDF and revisions.

    The case name links the opinion PDF; later links in the Name cell ("Revisions: 10/24/25") or a
    ``Revised`` column are corrected versions. Raises UnexpectedDocument for a row without a PDF.
    """
    links = row.links("Name")
    if not links or not links[0][0]:
        raise UnexpectedDocument("%s: opinion row %r has no PDF link" % (url, row.text("Name")))
    href, case_name = links[0]
    revisions = links[1:] + row.links("Revised")
    initials = row.text("J.")
    return {
        "case_name": case_name,
        "docket": row.text("Docket"),
        "justice_initials": initials,
        "justice": JUSTICES.get(initials, ""),
        "citation": row.text("Citation") or row.text("Pt."),
        "release_number": int(row.text("R-")) if row.text("R-").isdigit() else None,
        "pdf_url": absolute_url(base, href),
        "pdf_file": file_name(href),
        "revisions": [{"date_text": text, "pdf_url": absolute_url(base, link)} for link, text in revisions],
        "date_text": row.text("Date"),
    }


def opinion_description(fields: dict[str, Any]) -> str:
    """Who wrote the opinion and where it is reported ("Sonia Sotomayor; 607/1")."""
    return "; ".join(p for p in (fields["justice"] or fields["justice_initials"], fields["citation"]) if p)
