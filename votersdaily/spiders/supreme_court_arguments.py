"""Supreme Court oral arguments, from supremecourt.gov's "Argument Audio" listing of a term.

One all-day event per argued case on its ``Date Argued`` (``10/02/17``: an Eastern date; the
listing gives no time), keyed by the name of the case's audio page (``16-285``; a reargument has
its own page, ``15-1498rearg``, and so its own event). The table (``Oral Argument | Date Argued``)
is recognised by its header row; its first cell holds the docket as the link to the audio page and
the case name beside it. The listing is published as arguments happen, so it grows through the
term; a page of another kind is an UnexpectedDocument, a row without its link is dropped alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from votersdaily.requestmeta import SOURCE_URL_META
from votersdaily.sources.errors import UnexpectedDocument
from votersdaily.sources.supremecourt import (
    ARGUMENT_AUDIO,
    POLITENESS,
    SITE,
    Row,
    absolute_url,
    current_term,
    file_name,
    listing_kind,
    parse_date,
    table_rows,
)

from .base import EventSpider

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy.http import Response

CASE = "Oral Argument"
REARGUMENT_SUFFIX = "rearg"


class SupremeCourtArgumentsSpider(EventSpider):
    name = "supreme_court_arguments"
    version = "1.0"
    branch = "Judicial"
    entity = "Supreme Court"
    frequency_hours = 12.0  # audio is posted on the Friday of each argument week
    recordings = {
        # The page's form posts to ./2017 of this listing.
        "gov/supreme_court/scotus_oral_args_example.html": "https://www.supremecourt.gov/oral_arguments/argument_audio/2017",
    }
    custom_settings = {**EventSpider.custom_settings, **POLITENESS}

    @property
    def listing_urls(self) -> tuple[str, ...]:
        return ("%s/oral_arguments/argument_audio/%d" % (SITE, current_term()),)

    def parse_records(self, response: Response) -> Iterable[Any]:
        return table_rows(response, listing_kind(response, (ARGUMENT_AUDIO,)))

    def parse_record(self, row: Row, response: Response) -> dict[str, Any] | None:
        links = row.links(CASE)
        if not links or not links[0][0]:
            raise UnexpectedDocument(
                "%s: argument row %r has no audio page link" % (response.url, row.text(CASE))
            )
        href, docket = links[0]
        page = file_name(href)
        case_name = self._parse_case_name(row.text(CASE), docket)
        return {
            "datetime": parse_date(row.text("Date Argued"), response.url),
            "title": "%s (No. %s): oral argument" % (case_name, docket),
            "description": None,  # the listing names the case only
            "unique_key": page,
            "source_text": row.source_text,
            "event_url": absolute_url(response.meta.get(SOURCE_URL_META) or response.url, href),
            "case_name": case_name,
            "docket": docket,
            "reargument": page.endswith(REARGUMENT_SUFFIX),
            "date_text": row.text("Date Argued"),
        }

    @staticmethod
    def _parse_case_name(cell_text: str, docket: str) -> str:
        """The cell reads ``16-285 Epic Systems Corp. v. Lewis``: the docket link, then the name."""
        return cell_text[len(docket) :].strip() if cell_text.startswith(docket) else cell_text
