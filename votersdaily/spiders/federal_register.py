"""Documents published in the Federal Register, from its API (``/api/v1/documents.json``).

One all-day event per document on its ``publication_date`` (a date without a time), keyed by
``document_number``. A result that cannot become an event is dropped alone, with its reason: the
public-inspection feed lists withdrawn documents with ``publication_date: null`` among a hundred
good ones. Pages are followed through ``next_page_url`` (a ``search_after_cursor`` URL) up
to ``max_pages`` (spider argument, else the ``FEDERAL_REGISTER_MAX_PAGES`` setting). Documents given
with ``-a url=`` are parsed alone: their ``next_page_url`` points at the live API, so it is followed
only with ``-a follow=true``.

Branch and entity: every document is an Executive-branch publication. Presidential Documents
(executive orders, proclamations, memoranda, determinations) are the President's own acts and are
filed under the entity "White House", like the White House's own feed; every other document (rules,
proposed rules, notices of the agencies) under "Federal Register", with its agencies in ad hoc keys.

Ids (version 1.1): the bills and Public Laws a document's title or abstract names, a bill in the
Congress sitting on its publication date. An agency's own docket numbers are no Supreme Court
dockets and are not read.

Text (version 1.2): the API leaves SGML character entities in its text fields (``T[uuml]rkiye`` in
the abstract and the excerpts of 2026-20272, beside a real "Türkiye" in its title); they are
decoded in every text field it gives (``title``, ``abstract``, ``excerpts``), not in one alone.
"""

from __future__ import annotations

import re
from datetime import date
from html.entities import name2codepoint
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from votersdaily.plumbing.inputs import whole_number, yes_or_no
from votersdaily.sources.canonical_ids import BILL_IDS, PUBLIC_LAWS, id_keys, named_in_text
from votersdaily.sources.congress import sitting_on
from votersdaily.sources.errors import UnexpectedDocument
from votersdaily.sources.json_text import JsonText, load_with_text, require

from .base import EventSpider

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from scrapy.http import Request, Response

    from votersdaily.items import EventItem

PRESIDENTIAL = "Presidential Document"
API = "https://www.federalregister.gov/api/v1/documents.json"
#: The default field set plus the presidential-document fields the API returns only on request.
FIELDS = (
    "title",
    "type",
    "abstract",
    "document_number",
    "html_url",
    "pdf_url",
    "public_inspection_pdf_url",
    "publication_date",
    "agencies",
    "excerpts",
    "presidential_document_type",
    "executive_order_number",
    "signing_date",
)
#: SGML character entities the API sometimes leaves in text (``T[uuml]rkiye``).
SGML_ENTITY_RE = re.compile(r"\[([A-Za-z]{1,2}(?:uml|acute|grave|circ|tilde|cedil|ring|slash|lig)|szlig)\]")
NEXT_PAGE_META = "vd_next_page"
PAGE_META = "vd_page"


def _unsgml(text: str) -> str:
    return SGML_ENTITY_RE.sub(
        lambda m: chr(name2codepoint[m.group(1)]) if m.group(1) in name2codepoint else m.group(0), text
    )


class FederalRegisterSpider(EventSpider):
    name = "federal_register"
    version = "1.2"
    branch = "Executive"
    entity = "Federal Register"
    frequency_hours = 6.0  # published once per business day, early morning Eastern
    listing_urls = (
        API + "?" + urlencode([("per_page", "100"), ("order", "newest")] + [("fields[]", f) for f in FIELDS]),
    )
    recordings = {
        "gov/federal_register/documents_executive_orders.json": "https://www.federalregister.gov/api/v1/documents.json?per_page=10&order=newest"
        "&conditions%5Bpresidential_document_type%5D%5B%5D=executive_order",
        "gov/federal_register/documents_newest20.json": "https://www.federalregister.gov/api/v1/documents.json?per_page=20&order=newest",
    }
    custom_settings = {
        **EventSpider.custom_settings,
        "DOWNLOAD_DELAY": 1.0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    }

    def __init__(
        self, *args: Any, max_pages: str | int | None = None, follow: str | bool | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.max_pages_arg = whole_number("max_pages", max_pages, least=1)
        self.follow_given = yes_or_no("follow", follow)

    @property
    def max_pages(self) -> int:
        if self.max_pages_arg is not None:
            return self.max_pages_arg
        return self.settings.getint("FEDERAL_REGISTER_MAX_PAGES")

    # -- pages ---------------------------------------------------------------------------------

    def parse_document(self, response: Response) -> Iterator[EventItem | Request]:
        yield from super().parse_document(response)
        next_url = response.meta.get(NEXT_PAGE_META)
        page = response.meta.get(PAGE_META, 1)
        if not next_url or (self.given_urls and not self.follow_given):
            return
        if page >= self.max_pages:
            self.logger.info(
                "federal_register: stopping after %d page(s) (max_pages); next would be %s", page, next_url
            )
            return
        next_page = self.linked_url(response, next_url, "next_page_url")
        if next_page is not None:
            yield self.document_request(next_page, meta={PAGE_META: page + 1})

    def parse_records(self, response: Response) -> Iterable[Any]:
        doc = load_with_text(response.body, response.url)
        require(doc, (), dict, response.url)
        if "errors" in doc.value and "results" not in doc.value:
            raise UnexpectedDocument("%s answered API errors: %s" % (response.url, doc.value["errors"]))
        next_url = doc.value.get("next_page_url")
        if isinstance(next_url, str) and next_url.strip():
            response.meta[NEXT_PAGE_META] = next_url.strip()
        if "results" not in doc.value and doc.value.get("count") == 0:
            return []  # an empty search comes without a results array
        return require(doc, ("results",), list, response.url).members

    # -- one document → one event --------------------------------------------------------------

    def parse_record(self, result: JsonText, response: Response) -> dict[str, Any]:
        url = response.url
        data = result.value
        if not isinstance(data, dict) or not data.get("document_number"):
            raise UnexpectedDocument("%s: a result without a document_number" % url)
        agencies = self._parse_agencies(data)
        published = self._parse_publication_date(data, url)
        title = self._parse_title(data)
        abstract = self._parse_abstract(data)
        return {
            "datetime": published,
            "title": title,
            "description": abstract,
            "unique_key": data["document_number"],
            "source_text": result.text,
            "event_url": data.get("html_url") or "",
            "entity": "White House" if data.get("type") == PRESIDENTIAL else self.entity,
            "document_number": data["document_number"],
            "document_type": data.get("type") or "",
            "publication_date": data.get("publication_date"),
            "abstract": abstract,
            "html_url": data.get("html_url") or "",
            "pdf_url": data.get("pdf_url") or "",
            "public_inspection_pdf_url": data.get("public_inspection_pdf_url") or "",
            "agencies": agencies,
            "agency_names": [a["name"] for a in agencies if a["name"]],
            "excerpts": self._parse_excerpts(data),
            "presidential_document_type": data.get("presidential_document_type"),
            "executive_order_number": data.get("executive_order_number"),
            "signing_date": data.get("signing_date"),
            **self._parse_ids(title, abstract, sitting_on(published)[0]),
        }

    @staticmethod
    def _parse_publication_date(data: dict[str, Any], url: str) -> date:
        try:
            return date.fromisoformat(str(data.get("publication_date") or ""))
        except ValueError:
            raise UnexpectedDocument(
                "%s: document %s has publication_date %r"
                % (url, data.get("document_number"), data.get("publication_date"))
            ) from None

    @staticmethod
    def _parse_ids(title: str, abstract: str, congress: int) -> dict[str, list[Any]]:
        """``bill_ids`` and ``public_laws`` the title and abstract name, with their evidence."""
        found = named_in_text(title, "title", congress) + named_in_text(abstract, "abstract", congress)
        return id_keys(found, (BILL_IDS, PUBLIC_LAWS))

    @staticmethod
    def _parse_title(data: dict[str, Any]) -> str:
        """The title, whitespace folded and SGML entities left in by the API decoded."""
        return _unsgml(" ".join(str(data.get("title") or "").split()))

    @staticmethod
    def _parse_excerpts(data: dict[str, Any]) -> Any:
        """The excerpts as the API gives them (text, or null when it gives none), SGML entities
        decoded as in the abstract; whitespace is kept (a search's excerpts may hold markup)."""
        excerpts = data.get("excerpts")
        return _unsgml(excerpts) if isinstance(excerpts, str) else excerpts

    @staticmethod
    def _parse_abstract(data: dict[str, Any]) -> str:
        """The abstract, SGML entities left in by the API decoded; "" when the document has none."""
        return _unsgml(" ".join(str(data.get("abstract") or "").split()))

    @staticmethod
    def _parse_agencies(data: dict[str, Any]) -> list[dict[str, Any]]:
        agencies = data.get("agencies") or []
        return [
            {
                "name": a.get("name") or a.get("raw_name") or "",
                "raw_name": a.get("raw_name") or "",
                "id": a.get("id"),
                "parent_id": a.get("parent_id"),
                "slug": a.get("slug") or "",
                "url": a.get("url") or "",
            }
            for a in agencies
            if isinstance(a, dict)
        ]
