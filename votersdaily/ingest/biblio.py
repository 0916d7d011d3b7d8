"""Bibliographic metadata from HTML meta tags (docs/ingest.md §9): BiblioMetadata as a dict."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from votersdaily.datetimes import PartialDate, parse_partial_date

from .fulltext import COMPONENT_PATTERNS, HTML_PATTERNS, PDF_PATTERNS, XML_PATTERNS, match_fulltext_url
from .htmldoc import HtmlDoc, meta_key

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

#: A meta key read only where its ``scheme`` is ``doi`` (``<meta name="dc.identifier" scheme="doi">``).
DOI_SCHEME = ("dc.identifier", "doi")
#: Scalar fields: first non-empty content wins. A selector is a meta key, read in any key
#: attribute and any case (``HtmlDoc.meta_elements``: ``name``, ``property``, ``itemprop``, ``id``).
SCALAR_SELECTORS: dict[str, tuple[str | tuple[str, str], ...]] = {
    "title": (
        "citation_title",
        "eprints.title",
        "prism.title",
        "bepress_citation_title",
        "og:title",
        "dcterms.title",
        "dc.title",
    ),
    "subtitle": ("prism.subtitle",),
    "doi": (
        "citation_doi",
        "DOI",
        "prism.doi",
        "bepress_citation_doi",
        "dc.identifier.doi",
        DOI_SCHEME,
    ),
    "pmid": ("citation_pmid",),
    "abstract": (
        "citation_abstract",
        "bepress_citation_abstract",
        "eprints.abstract",
        "dcterms.abstract",
        "prism.teaser",
        "dc.description",
        "og:description",
    ),
    "container_name": (
        "citation_journal_title",
        "bepress_citation_journal_title",
        "citation_conference_title",
        "bepress_citation_conference_title",
        "prism.publicationName",
        "eprints.publication",
        "dc.relation.ispartof",
        "dc.source",
        "og:site_name",
    ),
    "container_abbrev": ("citation_journal_abbrev",),
    "raw_date": (
        "citation_publication_date",
        "bepress_citation_publication_date",
        "prism.publicationDate",
        "citation_date",
        "bepress_citation_date",
        "citation_online_date",
        "bepress_citation_online_date",
        "datePublished",
        "article:published",
        "eprints.datestamp",
        "eprints.date",
        "dc.date.created",
        "dc.issued",
        "dcterms.date",
        "dc.date",
    ),
    "release_year": ("citation_year", "prism:copyrightYear"),
    "first_page": (
        "citation_firstpage",
        "bepress_citation_firstpage",
        "prism.startingPage",
        "dc.citation.spage",
    ),
    "last_page": (
        "citation_lastpage",
        "bepress_citation_lastpage",
        "prism.endingPage",
        "dc.citation.epage",
    ),
    "issue": (
        "citation_issue",
        "bepress_citation_issue",
        "prism.issueIdentifier",
        "dc.citation.issue",
    ),
    "volume": (
        "citation_volume",
        "bepress_citation_volume",
        "prism.volume",
        "dc.citation.volume",
    ),
    "number": (
        "citation_technical_report_number",
        "bepress_citation_technical_report_number",
        "citation_number",
        "bepress_citation_number",
        "prism.number",
    ),
    "container_issn": (
        "citation_issn",
        "bepress_citation_issn",
        "prism.issn",
        "prism.eIssn",
        "eprints.issn",
        "dc.source.issn",
    ),
    "publisher": (
        "citation_publisher",
        "bepress_citation_publisher",
        "eprints.publisher",
        "citation_technical_report_institution",
        "dcterms.publisher",
        "dc.publisher",
    ),
    "raw_release_type": (
        "citation_article_type",
        "bepress_citation_article_type",
        "prism.contentType",
        "eprints.type",
        "dc.type",
    ),
    "lang": (
        "citation_language",
        "bepress_citation_language",
        "dcterms.language",
        "dc.language",
        "og:locale",
    ),
}

#: List fields: all values of the first selector that has a (usable) value.
LIST_SELECTORS: dict[str, tuple[str, ...]] = {
    "contrib_names": (
        "citation_author",
        "bepress_citation_author",
        "eprints.creators_name",
        "dcterms.creator",
        "article:author",
        "dc.creator",
        "dc.contributor",
    ),
    "raw_references": ("citation_reference",),
    "raw_identifiers": ("eprints.id_number", "dcterms.identifier", "dc.identifier"),
}

RELEASE_TYPES = {"research article": "article-journal", "text.serial.journal": "article-journal"}


#: A value that is an address, not a name (OpenGraph's ``article:author`` is a profile URL).
_PROFILE_URL = re.compile(r"^https?://", re.I)


#: Selectors, each with its meta key as a page's index writes it (:func:`meta_key`).
Indexed = tuple[tuple[str | tuple[str, str], str], ...]


def _indexed(selectors: tuple[str | tuple[str, str], ...]) -> Indexed:
    """``selectors``, each with its meta key as a page's index writes it."""
    return tuple((s, meta_key(s if isinstance(s, str) else s[0])) for s in selectors)


#: :data:`SCALAR_SELECTORS` and :data:`LIST_SELECTORS` with their keys as indexed: a page is asked
#: only for keys it has (the some 100 keys are normalised once, not at every page).
_SCALAR_INDEXED = {name: _indexed(selectors) for name, selectors in SCALAR_SELECTORS.items()}
_LIST_INDEXED = {name: _indexed(selectors) for name, selectors in LIST_SELECTORS.items()}


def _scalar(doc: HtmlDoc, selectors: Indexed) -> str | None:
    for selector, key in selectors:
        if not doc.has_meta(key):
            continue
        if isinstance(selector, tuple):
            scheme = selector[1]
            for meta in doc.meta_elements(key):
                content = (meta.get("content") or "").strip()
                if (meta.get("scheme") or "").lower() == scheme and content:
                    return content
            continue
        contents = [c.strip() for c in doc.meta_contents(selector) if c.strip()]
        if contents:
            return contents[0]
    return None


def _list(doc: HtmlDoc, name: str, selectors: Indexed) -> list[str] | None:
    """Every value of the first selector with a usable one. A contributor is a name: OpenGraph's
    ``article:author`` is a profile URL, which names no one."""
    for _, key in selectors:
        if not doc.has_meta(key):
            continue
        values = [c.strip() for c in doc.meta_contents(key) if c.strip()]
        if name == "contrib_names":
            values = [v for v in values if not _PROFILE_URL.match(v)]
        if values:
            return values
    return None


def parse_release_date(raw: str | None) -> PartialDate | None:
    """'Apr 22, 2019', '2020/09/10', '2019-04-18', '2017/01', '2017' → the date at the precision the
    page gives (never completed from today); unparseable or without a year → None."""
    if not raw or not raw.strip():
        return None
    raw = raw.strip()
    m = re.fullmatch(r"(\d{4})(?:[-/](\d{1,2})(?:[-/](\d{1,2})(?:[T ]\d.*)?)?)?", raw)
    try:
        if m:
            year, month, day = (int(g) if g else None for g in m.groups())
            assert year is not None  # noqa: S101 - the pattern requires it
            date(year, month or 1, day or 1)  # a real year, month and day, or ValueError
            return PartialDate(year, month, day)
        return parse_partial_date(raw)
    except (ValueError, OverflowError, TypeError):
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


def extract_biblio(
    doc: HtmlDoc, unusable: dict[str, str] | None = None, url_length_limit: int = 0
) -> dict[str, Any]:
    """BiblioMetadata as a dict, null fields omitted, ``release_date`` at the page's precision
    (``YYYY-MM-DD``, ``YYYY-MM`` or ``YYYY``) and ``release_year`` its year unless the page states one.
    A fulltext link skipped because no fetch can use it (longer than ``url_length_limit`` too) is said
    in ``unusable`` (field name → why, for the first such link of the field)."""
    if not doc.has_head:
        return {}
    meta: dict[str, Any] = {}
    for name, indexed in _SCALAR_INDEXED.items():
        value = _scalar(doc, indexed)
        if value:
            meta[name] = value
    for name, indexed in _LIST_INDEXED.items():
        values = _list(doc, name, indexed)
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
        meta["release_date"] = released.iso()
    if "release_year" in meta:
        year = meta.pop("release_year")
        if year.isdigit():
            meta["release_year"] = int(year)
    if released and "release_year" not in meta:
        meta["release_year"] = released.year
    raw_type = meta.pop("raw_release_type", None)
    if raw_type and raw_type.strip().lower() in RELEASE_TYPES:
        meta["release_type"] = RELEASE_TYPES[raw_type.strip().lower()]
    for name, patterns in (
        ("pdf_fulltext_url", PDF_PATTERNS),
        ("xml_fulltext_url", XML_PATTERNS),
        ("html_fulltext_url", HTML_PATTERNS),
        ("component_url", COMPONENT_PATTERNS),
    ):
        skipped: list[str] = []
        found = match_fulltext_url(doc, patterns, skipped, url_length_limit)
        if found:
            meta[name] = found[0]
        if skipped and unusable is not None:
            unusable[name] = skipped[0]
    return {k: meta[k] for k in BIBLIO_FIELDS if meta.get(k) not in (None, "", [])}
