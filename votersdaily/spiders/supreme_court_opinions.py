"""Supreme Court opinions: the slip opinions of a term ("Opinions of the Court") and the in-chambers
opinions of single Justices, from their supremecourt.gov listings.

One all-day event per opinion on its release date (``6/30/23``: Eastern date, two- or four-digit
year), keyed by the PDF's file name (``600us1r58_7khn.pdf``), which the Court never reuses; a
corrected version is listed beside it ("Revisions: 10/24/25") and kept in ``revisions``.

The slip table (``R- | Date | Docket | Name | J. | Citation`` in 2022; ``Pt.`` for ``Citation`` and
a ``Revised`` column in earlier terms) looks like the tables of opinions relating to orders, and the
in-chambers table (``Date | Docket | Name | J. | Pt.``; a ``Term Year`` column when the page lists
several terms) differs only in its columns: the page's kind comes from its heading and every cell is
read by what its column means (:mod:`votersdaily.sources.supremecourt`). The ``J.`` column holds the
author's initials (``NG``, ``KJ``, ``PC`` for per curiam), resolved to names; a slip page splits the
term into several tables (one per sitting), each with its own header row. ``term_year`` is the row's
term column, else the term of the page's heading. A page of another kind, or without a listing
table, is an UnexpectedDocument; a listing with no rows yet (an in-chambers page early in a term)
is empty; a row without a PDF link, or not lined up with its header, is dropped alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from votersdaily.requestmeta import SOURCE_URL_META
from votersdaily.sources.canonical_ids import docket_keys
from votersdaily.sources.supremecourt import (
    DATE,
    IN_CHAMBERS,
    POLITENESS,
    SITE,
    SLIP,
    TERM,
    Row,
    current_term,
    listing_kind,
    opinion_description,
    opinion_fields,
    parse_date,
    table_rows,
    term_of,
)

from .base import EventSpider

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy.http import Response


class SupremeCourtOpinionsSpider(EventSpider):
    name = "supreme_court_opinions"
    version = "1.1"
    branch = "Judicial"
    entity = "Supreme Court"
    frequency_hours = 6.0  # opinions are released on announced days, around 10:00 Eastern
    recordings = {
        # The page's form posts to ./22 of this listing.
        "gov/supreme_court/scotus_slip_example.html": "https://www.supremecourt.gov/opinions/slipopinion/22",
    }
    custom_settings = {**EventSpider.custom_settings, **POLITENESS}

    @property
    def listing_urls(self) -> tuple[str, ...]:
        yy = "%02d" % (current_term() % 100)
        return ("%s/opinions/slipopinion/%s" % (SITE, yy), "%s/opinions/in-chambers.aspx" % SITE)

    def parse_records(self, response: Response) -> Iterable[Any]:
        kind = listing_kind(response, (SLIP, IN_CHAMBERS))
        term = term_of(response)
        return [(kind, term, row) for row in table_rows(response)]

    def parse_record(self, record: Any, response: Response) -> dict[str, Any] | None:
        kind, term, row = record
        fields = opinion_fields(row, response.meta.get(SOURCE_URL_META) or response.url, response.url)
        return {
            "datetime": parse_date(row.text(DATE), response.url),
            "title": self._parse_title(kind, fields),
            "description": opinion_description(fields),
            "unique_key": fields["pdf_file"],
            "source_text": row.source_text,
            "event_url": fields["pdf_url"],
            "opinion_type": kind,
            "term_year": self._parse_term_year(row, term),
            **fields,
            **docket_keys(fields["docket"], "Docket"),
        }

    @staticmethod
    def _parse_term_year(row: Row, page_term: int | None) -> int | None:
        """The row's own term (``Term Year``: a page of several terms), else the page's."""
        text = row.text(TERM)
        return int(text) if text.isdigit() else page_term

    @staticmethod
    def _parse_title(kind: str, fields: dict[str, Any]) -> str:
        """``303 Creative LLC v. Elenis (No. 21-476): opinion of the Court``."""
        what = "opinion of the Court" if kind == SLIP else "in-chambers opinion"
        return "%s (No. %s): %s" % (fields["case_name"], fields["docket"], what)
