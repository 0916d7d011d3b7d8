"""Supreme Court opinions: the slip opinions of a term ("Opinions of the Court") and the in-chambers
opinions of single Justices, from their supremecourt.gov listings.

One all-day event per opinion on its release date (``6/30/23``: Eastern date, two- or four-digit
year), keyed by the PDF's file name (``600us1r58_7khn.pdf``), which the Court never reuses; a
corrected version is listed beside it ("Revisions: 10/24/25") and kept in ``revisions``.

The slip table (``R- | Date | Docket | Name | J. | Citation``) looks like the tables of orders and
opinions relating to orders, and the in-chambers table (``Date | Docket | Name | J. | Pt.``) differs
only in its last columns: the page's kind comes from its heading and every cell is read by the name
of its column (:mod:`votersdaily.sources.supremecourt`). The ``J.`` column holds the author's
initials (``NG``, ``KJ``, ``PC`` for per curiam), resolved to names; a slip page splits the term into
several tables (one per sitting), each with its own header row. A page of another kind, or a table
with an unknown header, is an UnexpectedDocument; a row without a PDF link is dropped alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from votersdaily.requestmeta import SOURCE_URL_META
from votersdaily.sources.supremecourt import (
    IN_CHAMBERS,
    POLITENESS,
    SITE,
    SLIP,
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
    version = "1.0"
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
        return [(kind, term, row) for row in table_rows(response, kind)]

    def parse_record(self, record: Any, response: Response) -> dict[str, Any] | None:
        kind, term, row = record
        fields = opinion_fields(row, response.meta.get(SOURCE_URL_META) or response.url, response.url)
        return {
            "datetime": parse_date(row.text("Date"), response.url),
            "title": self._parse_title(kind, fields),
            "description": opinion_description(fields),
            "unique_key": fields["pdf_file"],
            "source_text": row.source_text,
            "event_url": fields["pdf_url"],
            "opinion_type": kind,
            "term_year": term,
            **fields,
        }

    @staticmethod
    def _parse_title(kind: str, fields: dict[str, Any]) -> str:
        """``303 Creative LLC v. Elenis (No. 21-476): opinion of the Court``."""
        what = "opinion of the Court" if kind == SLIP else "in-chambers opinion"
        return "%s (No. %s): %s" % (fields["case_name"], fields["docket"], what)
