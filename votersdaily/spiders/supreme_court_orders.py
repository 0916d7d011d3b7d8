"""Supreme Court orders, from supremecourt.gov's "Orders of the Court" term listing and its
"Opinions Relating to Orders".

Orders: one all-day event per order list or miscellaneous order, on the date the listing gives
(``MM/DD/YY``, a two-digit year, Eastern date), keyed by the order PDF's file name
(``032524zor_4h25.pdf``). Links are relative and single-quoted; they are resolved against the page's
upstream URL, also when a recording is replayed from a file. Each order is a ``<div>`` of a date
``<span>`` and a link ``<span>``; an order link outside such a row (another layout) is a record that
fails with its reason, so a listing the spider cannot read is never a silent empty success.

Opinions relating to orders: one event per table row, keyed by the PDF file name plus its
``#page=`` fragment when two opinions share one PDF. The table looks like the slip-opinion table and
its columns changed over the years (``Date | Docket | Name | J. | Pt.`` in 2012, ``Date | Docket |
Name | Revised | J. | Pt.`` in 2015 and 2020, ``Date | Docket | Name | J. | Citation`` in 2025): cells
are read by what their column means (:mod:`votersdaily.sources.supremecourt`), and a slip-opinion or
argument page given to this spider is an UnexpectedDocument, never a crash. Dates mix ``1/21/16`` and
``10/29/2015`` in one column.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from votersdaily.requestmeta import SOURCE_URL_META
from votersdaily.sources.canonical_ids import docket_keys
from votersdaily.sources.errors import UnexpectedDocument
from votersdaily.sources.html import enclosing_markup, fold
from votersdaily.sources.supremecourt import (
    DATE,
    ORDERS,
    POLITENESS,
    RELATING,
    SITE,
    absolute_url,
    current_term,
    file_name,
    listing_kind,
    opinion_description,
    opinion_fields,
    parse_date,
    table_rows,
)

from .base import EventSpider

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy import Selector
    from scrapy.http import Response

    from votersdaily.sources.supremecourt import Row

ORDER_LINK = 'contains(@href, "/orders/courtorders/")'
ORDER_LINKS = "//a[%s]" % ORDER_LINK
ORDER_ROWS = '//div[contains(@class, "column2")]//div[span/a[%s]]' % ORDER_LINK
#: An order link the rows do not hold: a record of its own that fails (never a silent loss).
STRAY = "order link outside the rows"
TERM_HEADING = '//span[contains(@id, "lblTermYear")]/text()'
TERM_RE = re.compile(r"(\d{4})")


class SupremeCourtOrdersSpider(EventSpider):
    name = "supreme_court_orders"
    version = "1.2"
    branch = "Judicial"
    entity = "Supreme Court"
    frequency_hours = 6.0
    recordings = {
        "gov/supreme_court/scotus_orders_home.html": "https://www.supremecourt.gov/orders/ordersofthecourt/23",
        # The page's form posts to ./25 of this listing.
        "gov/supreme_court/scotus_relating_2025.html": "https://www.supremecourt.gov/opinions/relatingtoorders/25",
    }
    custom_settings = {**EventSpider.custom_settings, **POLITENESS}

    @property
    def listing_urls(self) -> tuple[str, ...]:
        yy = "%02d" % (current_term() % 100)
        return (
            "%s/orders/ordersofthecourt/%s" % (SITE, yy),
            "%s/opinions/relatingtoorders/%s" % (SITE, yy),
        )

    def parse_records(self, response: Response) -> Iterable[Any]:
        """("order", row div, term) for an orders listing, ("relating", table row) for the opinions
        relating to orders; any other page is refused."""
        if listing_kind(response, (ORDERS, RELATING)) == RELATING:
            return [(RELATING, row) for row in table_rows(response)]
        term = TERM_RE.search(fold(response.xpath(TERM_HEADING).get()))
        year = int(term.group(1)) if term else None
        seen: dict[str, int] = {}
        rows = response.xpath(ORDER_ROWS)
        stray = len(response.xpath(ORDER_LINKS)) - len(rows.xpath("span/a[%s]" % ORDER_LINK))
        return [(ORDERS, row, year, seen) for row in rows] + [(STRAY, response.url)] * max(stray, 0)

    def parse_record(self, record: Any, response: Response) -> dict[str, Any] | None:
        base = response.meta.get(SOURCE_URL_META) or response.url
        if record[0] == STRAY:
            raise UnexpectedDocument(
                "%s links an order PDF outside the rows of the listing's known layout" % record[1]
            )
        if record[0] == ORDERS:
            _, row, year, seen = record
            return self._order(row, year, seen, response, base)
        return self._relating(record[1], response, base)

    # -- "Orders of the Court: Term Year 2023" -----------------------------------------------------

    def _order(
        self, row: Selector, year: int | None, seen: dict[str, int], response: Response, base: str
    ) -> dict[str, Any]:
        href = row.xpath("span/a/@href").get("").strip()
        kind = fold(row.xpath("span/a//text()").get())
        date_text = fold(row.xpath("span[1]/text()").get())
        return {
            "datetime": parse_date(date_text, response.url),
            "title": kind,
            "description": None,  # the listing has no text beyond the kind of order
            "unique_key": file_name(href),
            "source_text": self._parse_source_text(response.text, href, seen) or row.get(),
            "event_url": absolute_url(base, href),
            "order_type": kind,
            "pdf_url": absolute_url(base, href),
            "pdf_file": file_name(href),
            "date_text": date_text,
            "term_year": year,
            **docket_keys("", "Order list"),  # an order list names its cases only in its PDF
        }

    @staticmethod
    def _parse_source_text(page: str, href: str, seen: dict[str, int]) -> str | None:
        """The row div exactly as published; ``seen`` counts repeated links to the same PDF."""
        index = seen.get(href, 0)
        seen[href] = index + 1
        return enclosing_markup(page, href, "div", index)

    # -- "Opinions Relating to Orders" (a table, read by column name) -------------------------------

    def _relating(self, row: Row, response: Response, base: str) -> dict[str, Any]:
        fields = opinion_fields(row, base, response.url)
        return {
            "datetime": parse_date(row.text(DATE), response.url),
            "title": "%s (No. %s): opinion relating to orders" % (fields["case_name"], fields["docket"]),
            "description": opinion_description(fields),
            "unique_key": fields["pdf_file"],
            "source_text": row.source_text,
            "event_url": fields["pdf_url"],
            "order_type": "Opinion Relating to Orders",
            **fields,
            **docket_keys(fields["docket"], "Docket"),
        }
