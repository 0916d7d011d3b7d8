"""Supreme Court orders, from supremecourt.gov's "Orders of the Court" term listing.

One all-day event per order list or miscellaneous order, on the date the listing gives (``MM/DD/YY``,
a two-digit year, Eastern date), keyed by the order PDF's file name (``032524zor_4h25.pdf``). The
older "Opinions Relating to Orders" layout (a table, dates as ``1/21/16`` or ``10/29/2015``) is read
too: one event per table row, keyed by the PDF file name plus its ``#page=`` fragment when two
opinions share one PDF. Links are relative and single-quoted; they are resolved against the page's
upstream URL, also when a recording is replayed from a file.
"""

from __future__ import annotations

import re
from datetime import date
from urllib.parse import urljoin, urlsplit

from ..clock import now_utc
from ..sources.eastern import parse_local_date
from ..sources.errors import UnexpectedDocument
from ..sources.html import enclosing_markup, fold, raise_if_error_page, require_complete_page
from .base import SOURCE_URL_META, EventSpider

SITE = "https://www.supremecourt.gov"
ORDER_ROWS = '//div[contains(@class, "column2")]//div[span/a[contains(@href, "/orders/courtorders/")]]'
TERM_HEADING = '//span[contains(@id, "lblTermYear")]/text()'
RELATING_ROWS = '//table//tr[td/a[contains(@href, "/opinions/")]]'
RELATING_HEADER = '//table//tr[th[normalize-space() = "Docket"]]'
TERM_RE = re.compile(r"(\d{4})")
DATE_FORMATS = ("%m/%d/%y", "%m/%d/%Y")


def term_year(today: date) -> int:
    """The Court's term is named for the year it opens (first Monday of October)."""
    return today.year if today.month >= 10 else today.year - 1


class SupremeCourtOrdersSpider(EventSpider):
    name = "supreme_court_orders"
    version = "1.0"
    branch = "Judicial"
    entity = "Supreme Court"
    frequency_hours = 6.0
    recordings = {
        "shared:fixtures/inplace/gov/supreme_court/scotus_orders_home.html": "https://www.supremecourt.gov/orders/ordersofthecourt/23",
        # The recorder did not note the URL; the page's form posts to ./15 of this listing.
        "shared:fixtures/inplace/gov/supreme_court/scotus_relating_example.html": "https://www.supremecourt.gov/opinions/relatingtoorders/15",
    }
    custom_settings = {
        **EventSpider.custom_settings,
        # A small court site behind Akamai: one request at a time, slowly.
        "DOWNLOAD_DELAY": 5.0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    }

    @property
    def listing_urls(self):
        yy = "%02d" % (term_year(now_utc().date()) % 100)
        return (
            "%s/orders/ordersofthecourt/%s" % (SITE, yy),
            "%s/opinions/relatingtoorders/%s" % (SITE, yy),
        )

    def parse_events(self, response):
        require_complete_page(response.body, response.url)
        base = response.meta.get(SOURCE_URL_META) or response.url
        page = response.text
        if response.xpath(ORDER_ROWS) or response.xpath(TERM_HEADING):
            return self._orders(response, page, base)
        if response.xpath(RELATING_HEADER):
            return self._relating(response, page, base)
        raise_if_error_page(fold(response.xpath("//title/text()").get()), response.url)
        raise UnexpectedDocument(
            "%s is neither an orders listing nor an opinions-relating-to-orders table" % response.url
        )

    # -- "Orders of the Court: Term Year 2023" -----------------------------------------------------

    def _orders(self, response, page: str, base: str) -> list[dict]:
        term = TERM_RE.search(fold(response.xpath(TERM_HEADING).get()))
        events, seen = [], {}
        for row in response.xpath(ORDER_ROWS):
            href = row.xpath("span/a/@href").get().strip()
            kind = fold(row.xpath("span/a//text()").get())
            date_text = fold(row.xpath("span[1]/text()").get())
            events.append(
                {
                    "datetime": self._parse_date(date_text, response.url),
                    "title": kind,
                    "description": None,  # the listing has no text beyond the kind of order
                    "unique_key": self._parse_file_name(href),
                    "source_text": self._parse_source_text(page, href, "div", seen) or row.get(),
                    "event_url": self._parse_url(base, href),
                    "order_type": kind,
                    "pdf_url": self._parse_url(base, href),
                    "pdf_file": self._parse_file_name(href),
                    "date_text": date_text,
                    "term_year": int(term.group(1)) if term else None,
                }
            )
        return events

    # -- "2015 Term Opinions Relating to Orders" (the older table layout) --------------------------

    def _relating(self, response, page: str, base: str) -> list[dict]:
        events, seen = [], {}
        for row in response.xpath(RELATING_ROWS):
            cells = row.xpath("td")
            if len(cells) < 3:
                continue
            href = cells[2].xpath("a/@href").get().strip()
            case = fold(cells[2].xpath("string(.)").get())
            docket = fold(cells[1].xpath("string(.)").get())
            date_text = fold(cells[0].xpath("string(.)").get())
            revised = cells[3].xpath("a") if len(cells) > 3 else []
            events.append(
                {
                    "datetime": self._parse_date(date_text, response.url),
                    "title": "%s (No. %s): opinion relating to orders" % (case, docket),
                    "description": None,
                    "unique_key": self._parse_file_name(href),
                    "source_text": self._parse_source_text(page, href, "tr", seen) or row.get(),
                    "event_url": self._parse_url(base, href),
                    "order_type": "Opinion Relating to Orders",
                    "case_name": case,
                    "docket": docket,
                    "justice": fold(cells[4].xpath("string(.)").get()) if len(cells) > 4 else "",
                    "reporter_part": fold(cells[5].xpath("string(.)").get()) if len(cells) > 5 else "",
                    "pdf_url": self._parse_url(base, href),
                    "pdf_file": self._parse_file_name(href),
                    "revised_pdf_url": self._parse_url(base, revised[0].xpath("@href").get().strip())
                    if revised
                    else None,
                    "revised_date": fold(revised[0].xpath("string(.)").get()) if revised else None,
                    "date_text": date_text,
                }
            )
        return events

    # -- fields ------------------------------------------------------------------------------------

    @staticmethod
    def _parse_date(text: str, url: str) -> date:
        try:
            return parse_local_date(text, *DATE_FORMATS)
        except ValueError:
            raise UnexpectedDocument("%s: row date %r is not MM/DD/YY" % (url, text)) from None

    @staticmethod
    def _parse_file_name(href: str) -> str:
        """``/orders/courtorders/032524zor_4h25.pdf`` → ``032524zor_4h25.pdf`` (``#page=2`` kept)."""
        parts = urlsplit(href)
        name = parts.path.rsplit("/", 1)[-1]
        return "%s#%s" % (name, parts.fragment) if parts.fragment else name

    @staticmethod
    def _parse_url(base: str, href: str) -> str:
        if urlsplit(base).scheme not in ("http", "https"):
            base = SITE + "/"
        return urljoin(base, href)

    @staticmethod
    def _parse_source_text(page: str, href: str, tag: str, seen: dict) -> str | None:
        """The row exactly as published; ``seen`` counts repeated links to the same PDF."""
        index = seen.get(href, 0)
        seen[href] = index + 1
        return enclosing_markup(page, href, tag, index)
