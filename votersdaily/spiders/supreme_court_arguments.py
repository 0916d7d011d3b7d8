"""Supreme Court oral arguments, from supremecourt.gov's "Argument Audio" listing of a term.

One all-day event per argued case on its argument date (``10/02/17``: an Eastern date; the listing
gives no time), keyed by the name of the case's audio page (``16-285``; a reargument has its own
page, ``15-1498rearg``, and so its own event; the 2014 site's ``argument_audio_detail.aspx?argument=
12-842&TY=2013`` pages by their ``argument``). A reargument is marked either way the site writes it
(version 1.2): the 2017 site's page name ``15-1498rearg``, the 2014 site's link ``10-1491
(Reargued)`` (Kiobel, reargued on 1 October 2012; its first argument, ``10-1491``, was on 28
February). The table is recognised by what its header cells mean, whatever their markup:
``<th>Oral Argument | Date Argued</th>`` since 2017, ``<td scope="col">`` cells reading "Argument
Session: October 06, 2014 - October 15, 2014 | Date Argued" before, repeated before each session
(:mod:`votersdaily.sources.supremecourt`). The case cell holds the docket as the link to the audio
page and the case name beside it (``16-285 Epic Systems Corp. v. Lewis``, ``13-604. Heien v. North
Carolina``). The listing is published as arguments happen, so it grows through the term; a page of
another kind is an UnexpectedDocument, a row without its link is dropped alone.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from votersdaily.requestmeta import SOURCE_URL_META
from votersdaily.sources.canonical_ids import docket_keys
from votersdaily.sources.errors import UnexpectedDocument
from votersdaily.sources.supremecourt import (
    ARGUMENT_AUDIO,
    AUDIO,
    CASE,
    DATE,
    DOCKET,
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

REARGUMENT_SUFFIX = "rearg"
#: The 2014 site's note on a reargued case's link: ``10-1491 (Reargued)``.
REARGUED_RE = re.compile(r"\(\s*reargued\s*\)", re.I)
#: The query parameter naming the case on the 2014 site's audio pages (``?argument=12-842&TY=2013``).
ARGUMENT_PARAM = "argument"


class SupremeCourtArgumentsSpider(EventSpider):
    name = "supreme_court_arguments"
    version = "1.2"
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
        listing_kind(response, (ARGUMENT_AUDIO,))
        return table_rows(response)

    def parse_record(self, row: Row, response: Response) -> dict[str, Any] | None:
        href, docket = self._parse_audio_link(row, response.url)
        key = self._parse_unique_key(href)
        case_name = self._parse_case_name(row.text(CASE), docket)
        return {
            "datetime": parse_date(row.text(DATE), response.url),
            "title": "%s (No. %s): oral argument" % (case_name, docket),
            "description": None,  # the listing names the case only
            "unique_key": key,
            "source_text": row.source_text,
            "event_url": absolute_url(response.meta.get(SOURCE_URL_META) or response.url, href),
            "case_name": case_name,
            "docket": docket,
            **docket_keys(docket, DOCKET if row.text(DOCKET) else "%s link" % CASE),
            "reargument": self._parse_reargument(key, docket),
            "date_text": row.text(DATE),
        }

    @staticmethod
    def _parse_audio_link(row: Row, url: str) -> tuple[str, str]:
        """The audio page's link (an audio column's, else the case cell's) and the docket (a docket
        column, else the case cell's link text)."""
        case_links = row.links(CASE)
        links = row.links(AUDIO) or case_links
        if not links or not links[0][0]:
            raise UnexpectedDocument("%s: argument row %r has no audio page link" % (url, row.text(CASE)))
        docket = row.text(DOCKET) or (case_links[0][1] if case_links else "")
        if not docket:
            raise UnexpectedDocument("%s: argument row %r names no docket" % (url, row.text(CASE)))
        return links[0][0], docket

    @staticmethod
    def _parse_unique_key(href: str) -> str:
        """``16-285`` for ``audio/2017/16-285``; ``12-842`` for ``…_detail.aspx?argument=12-842&TY=2013``."""
        named = parse_qs(urlsplit(href).query).get(ARGUMENT_PARAM)
        return named[0].strip() if named and named[0].strip() else file_name(href)

    @staticmethod
    def _parse_reargument(key: str, docket: str) -> bool:
        """Whether the argument is a reargument: the audio page's name ends ``rearg`` (2017 site:
        ``15-1498rearg``) or the docket link says so (2014 site: ``10-1491 (Reargued)``)."""
        return key.lower().endswith(REARGUMENT_SUFFIX) or REARGUED_RE.search(docket) is not None

    @staticmethod
    def _parse_case_name(cell_text: str, docket: str) -> str:
        """The cell reads ``16-285 Epic Systems Corp. v. Lewis`` or ``13-604. Heien v. North Carolina``:
        the docket link, then the name."""
        if cell_text.startswith(docket):
            return cell_text[len(docket) :].lstrip(" .:").strip()
        return cell_text
