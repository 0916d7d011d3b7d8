"""Bibliographic metadata from HTML meta tags (docs/ingest.md §9): BiblioMetadata as a dict."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from dateutil import parser as dateparser

from .fulltext import COMPONENT_PATTERNS, HTML_PATTERNS, PDF_PATTERNS, XML_PATTERNS, match_fulltext_url
from .htmldoc import HtmlDoc

#: Every BiblioMetadata field, in upstream's order.
BIBLIO_FIELDS = (
    "title",
    "subtitle",
    "contrib_names",
    "release_date",
    "release_year",
    "release_type",
    "release_stage",
    "withdrawn_status",
    "lang",
    "country_code",
    "volume",
    "issue",
    "number",
    "pages",
    "first_page",
    "last_page",
    "license",
    "publisher",
    "container_name",
    "container_abbrev",
    "container_issn",
    "container_type",
    "raw_references",
    "doi",
    "pmid",
    "pmcid",
    "isbn13",
    "publisher_ident",
    "oai_id",
    "abstract",
    "pdf_fulltext_url",
    "html_fulltext_url",
    "xml_fulltext_url",
    "component_url",
)

N = "name"
#: Scalar fields: first non-empty content wins. A selector is (attribute, value).
SCALAR_SELECTORS: dict[str, tuple[tuple[str, str], ...]] = {
    "title": (
        (N, "citation_title"),
        (N, "eprints.title"),
        (N, "prism.title"),
        (N, "bepress_citation_title"),
        (N, "og:title"),
        (N, "dcterms.title"),
        (N, "dc.title"),
    ),
    "subtitle": ((N, "prism.subtitle"),),
    "doi": (
        (N, "citation_doi"),
        (N, "DOI"),
        ("id", "DOI"),
        (N, "prism.doi"),
        (N, "bepress_citation_doi"),
        (N, "dc.identifier.doi"),
        ("scheme=doi", "dc.identifier"),
    ),
    "pmid": ((N, "citation_pmid"),),
    "abstract": (
        (N, "citation_abstract"),
        (N, "bepress_citation_abstract"),
        (N, "eprints.abstract"),
        (N, "dcterms.abstract"),
        (N, "prism.teaser"),
        (N, "dc.description"),
        (N, "og:description"),
    ),
    "container_name": (
        (N, "citation_journal_title"),
        (N, "bepress_citation_journal_title"),
        (N, "citation_conference_title"),
        (N, "bepress_citation_conference_title"),
        (N, "prism.publicationName"),
        (N, "eprints.publication"),
        (N, "dc.relation.ispartof"),
        (N, "dc.source"),
        ("property", "og:site_name"),
    ),
    "container_abbrev": ((N, "citation_journal_abbrev"),),
    "raw_date": (
        (N, "citation_publication_date"),
        (N, "bepress_citation_publication_date"),
        (N, "prism.publicationDate"),
        (N, "citation_date"),
        (N, "bepress_citation_date"),
        (N, "citation_online_date"),
        (N, "bepress_citation_online_date"),
        ("itemprop", "datePublished"),
        (N, "article:published"),
        (N, "eprints.datestamp"),
        (N, "eprints.date"),
        (N, "dc.date.created"),
        (N, "dc.issued"),
        (N, "dcterms.date"),
        (N, "dc.date"),
    ),
    "release_year": (("itemprop", "citation_year"), ("itemprop", "prism:copyrightYear")),
    "first_page": (
        (N, "citation_firstpage"),
        (N, "bepress_citation_firstpage"),
        (N, "prism.startingPage"),
        (N, "dc.citation.spage"),
    ),
    "last_page": (
        (N, "citation_lastpage"),
        (N, "bepress_citation_lastpage"),
        (N, "prism.endingPage"),
        (N, "dc.citation.epage"),
    ),
    "issue": (
        (N, "citation_issue"),
        (N, "bepress_citation_issue"),
        (N, "prism.issueIdentifier"),
        (N, "dc.citation.issue"),
    ),
    "volume": (
        (N, "citation_volume"),
        (N, "bepress_citation_volume"),
        (N, "prism.volume"),
        (N, "dc.citation.volume"),
    ),
    "number": (
        (N, "citation_technical_report_number"),
        (N, "bepress_citation_technical_report_number"),
        (N, "citation_number"),
        (N, "bepress_citation_number"),
        (N, "prism.number"),
    ),
    "container_issn": (
        (N, "citation_issn"),
        (N, "bepress_citation_issn"),
        (N, "prism.issn"),
        (N, "prism.eIssn"),
        (N, "eprints.issn"),
        (N, "dc.source.issn"),
    ),
    "publisher": (
        (N, "citation_publisher"),
        (N, "bepress_citation_publisher"),
        (N, "eprints.publisher"),
        (N, "citation_technical_report_institution"),
        (N, "dcterms.publisher"),
        (N, "dc.publisher"),
    ),
    "raw_release_type": (
        (N, "citation_article_type"),
        (N, "bepress_citation_article_type"),
        (N, "prism.contentType"),
        (N, "eprints.type"),
        (N, "dc.type"),
    ),
    "lang": (
        (N, "citation_language"),
        (N, "bepress_citation_language"),
        (N, "dcterms.language"),
        (N, "dc.language"),
        (N, "og:locale"),
    ),
}

#: List fields: all values of the first selector that matches at least one element.
LIST_SELECTORS: dict[str, tuple[tuple[str, str], ...]] = {
    "contrib_names": (
        (N, "citation_author"),
        (N, "bepress_citation_author"),
        (N, "eprints.creators_name"),
        (N, "dcterms.creator"),
        (N, "article:author"),
        (N, "dc.creator"),
        (N, "dc.contributor"),
    ),
    "raw_references": ((N, "citation_reference"),),
    "raw_identifiers": ((N, "eprints.id_number"), (N, "dcterms.identifier"), (N, "dc.identifier")),
}

RELEASE_TYPES = {"research article": "article-journal", "text.serial.journal": "article-journal"}


def _scalar(doc: HtmlDoc, selectors: tuple[tuple[str, str], ...]) -> str | None:
    for attr, value in selectors:
        if attr == "scheme=doi":
            for meta in doc.meta_elements(N, value):
                if (meta.get("scheme") or "").lower() == "doi" and meta.get("content"):
                    return meta.get("content").strip()
            continue
        contents = doc.meta_contents(attr, value)
        if contents:
            return contents[0].strip()
    return None


def _list(doc: HtmlDoc, selectors: tuple[tuple[str, str], ...]) -> list[str] | None:
    for attr, value in selectors:
        elements = doc.meta_elements(attr, value)
        if elements:
            values = [
                m.get("content").strip() for m in elements if m.get("content") and m.get("content").strip()
            ]
            return values or None
    return None


def parse_release_date(raw: str | None) -> date | None:
    """'Apr 22, 2019', '2020/09/10', '2019-04-18' → a date; unparseable → None."""
    if not raw:
        return None
    raw = raw.strip()
    m = re.fullmatch(r"(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?:[T ].*)?", raw)
    try:
        if m:
            return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        return dateparser.parse(raw, default=None).date()
    except (ValueError, OverflowError, TypeError, AttributeError):
        return None


def clean_doi(value: str | None) -> str | None:
    if not value:
        return None
    value = value.strip()
    if value.lower().startswith("doi:"):
        value = value[4:].strip()
    for prefix in ("https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/"):
        if value.lower().startswith(prefix):
            value = value[len(prefix) :]
    return value if value.startswith("10.") and "/" in value else None


def extract_biblio(doc: HtmlDoc) -> dict[str, Any]:
    """BiblioMetadata as a dict, null fields omitted, ``release_date`` as ``YYYY-MM-DD``."""
    if not doc.has_head:
        return {}
    meta: dict[str, Any] = {}
    for name, selectors in SCALAR_SELECTORS.items():
        value = _scalar(doc, selectors)
        if value:
            meta[name] = value
    for name, selectors in LIST_SELECTORS.items():
        values = _list(doc, selectors)
        if values:
            meta[name] = values
    if "doi" in meta:
        meta["doi"] = clean_doi(meta["doi"]) or meta["doi"]
    for ident in meta.pop("raw_identifiers", ()):
        if "doi" not in meta and (
            ident.lower().startswith("doi:10.") or (ident.startswith("10.") and "/" in ident)
        ):
            meta["doi"] = clean_doi(ident)
    released = parse_release_date(meta.pop("raw_date", None))
    if released:
        meta["release_date"] = released.isoformat()
    if "release_year" in meta:
        year = meta.pop("release_year")
        if year.isdigit():
            meta["release_year"] = int(year)
    raw_type = meta.pop("raw_release_type", None)
    if raw_type and raw_type.strip().lower() in RELEASE_TYPES:
        meta["release_type"] = RELEASE_TYPES[raw_type.strip().lower()]
    for name, patterns in (
        ("pdf_fulltext_url", PDF_PATTERNS),
        ("xml_fulltext_url", XML_PATTERNS),
        ("html_fulltext_url", HTML_PATTERNS),
        ("component_url", COMPONENT_PATTERNS),
    ):
        found = match_fulltext_url(doc, patterns)
        if found:
            meta[name] = found[0]
    return {k: meta[k] for k in BIBLIO_FIELDS if meta.get(k) not in (None, "", [])}
