"""CPU-bound steps of an ingest, run in a worker process (:mod:`.workers`) so the reactor keeps
downloading: file metadata (with the un-stripped gzip fix), landing-page analysis, HTML terminal
processing, PDF extraction, XML checks.

:func:`examine_hop` does everything one fetched hop needs in one call (one round trip to the worker,
one HTML parse shared by biblio, fulltext links, scope, platform and resources); its arguments and
result are plain picklable values."""

from __future__ import annotations

import gzip
import io
import zlib
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

from lxml import etree

from votersdaily.sources.xml import safe_parser

from .biblio import extract_biblio
from .config import IngestConfig
from .filemeta import (
    ACCEPTED_MIMETYPES,
    describe,
    gen_file_metadata,
    html_by_declaration,
    is_htmlish,
)
from .fulltext import extract_publisher_fulltext_url
from .htmldoc import HtmlDoc, HtmlParseError, parse_html
from .resources import BLOCKED_HOSTS, extract_resources
from .result import header_mimetype
from .scope import guess_platform, guess_scope
from .thumbnail import Page0, PendingRender, page0_renderable, warm_renderer
from .urls import surt

_GZIP_TYPES = (
    "application/gzip",
    "application/x-gzip",
    "application/x-gunzip",
    "application/gzipped",
    "application/gzip-compressed",
    "application/x-gzip-compressed",
    "gzip/document",
)


class BadGzip(ValueError):
    """A gzip body that does not decode (``bad-gzip-encoding``)."""


class GzipTooLarge(BadGzip):
    """A gzip body that decodes to more than the limit (``body-too-large``: decompression bombs)."""


def gunzip_limited(blob: bytes, max_size: int) -> bytes:
    """Decode every gzip member of ``blob``; more than ``max_size`` bytes out is an error
    (decompression bombs). Not ``scrapy.utils.gz.gunzip``: that one returns what a truncated or
    corrupt body yields, where the ingest must report ``bad-gzip-encoding`` as sandcrawler does."""
    out = io.BytesIO()
    data = blob
    while data:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            chunk = d.decompress(data, max_size + 1 - out.tell())
        except zlib.error as exc:
            raise BadGzip("bad gzip encoding: %s" % exc) from None
        out.write(chunk)
        if out.tell() > max_size:
            raise GzipTooLarge("gzip body decodes to more than %d bytes" % max_size)
        if not d.eof:
            raise BadGzip("truncated gzip body")
        data = d.unused_data.lstrip(b"\x00")
    return out.getvalue()


@dataclass
class Fetched:
    """The decoded body and its metadata."""

    body: bytes
    file_meta: dict[str, Any]
    magic: str = ""
    gunzipped: bool = False
    #: libmagic's mimetype when the declared HTML type was used instead (``html_by_declaration``).
    sniffed_mimetype: str | None = None


def describe_body(
    body: bytes,
    content_type: str | None,
    max_size: int,
    with_magic: bool = True,
    html_by_header: bool = True,
) -> Fetched:
    """File metadata over ``body``; a gzip body whose header did not say gzip is decoded first.
    ``content_type`` is the response's header; ``with_magic``: also libmagic's description (only
    the terminal file's is ever stored); ``html_by_header``: HTML that libmagic calls something
    else is HTML when the header says so and the body starts like HTML."""
    declared = header_mimetype(content_type)
    meta = gen_file_metadata(body)
    gunzipped = False
    if meta["mimetype"] == "application/gzip" and (declared or "") not in _GZIP_TYPES:
        body = gunzip_limited(body, max_size)
        gunzipped = True
        if not body:
            return Fetched(body, {}, "", True)
        meta = gen_file_metadata(body)
    sniffed = None
    if html_by_header and html_by_declaration(meta["mimetype"], declared, body):
        sniffed, meta["mimetype"] = meta["mimetype"], declared
    return Fetched(body, meta, describe(body) if with_magic else "", gunzipped, sniffed)


@dataclass
class Landing:
    """What an HTML hop says about where the fulltext is."""

    biblio: dict[str, Any]
    next_hop: dict[str, Any] = field(default_factory=dict)
    parse_error: str | None = None
    #: Why the first fulltext link of this ingest's type that no fetch can use was skipped (for the
    #: next link, if any).
    unusable_link: str | None = None


#: The biblio field holding each ingest type's fulltext link.
FULLTEXT_FIELDS = {
    "pdf": "pdf_fulltext_url",
    "xml": "xml_fulltext_url",
    "html": "html_fulltext_url",
    "component": "component_url",
}


def analyse_landing(
    body: bytes, url: str, ingest_type: str, content_type: str | None = None, url_length_limit: int = 0
) -> tuple[Landing, HtmlDoc | None]:
    """Where the page leads; a fulltext link longer than ``url_length_limit`` (the crawl's
    URLLENGTH_LIMIT) is one no fetch can use, skipped for the next."""
    try:
        doc = parse_html(body, url, content_type)
    except HtmlParseError as exc:
        return Landing({}, {}, str(exc)), None
    unusable: dict[str, str] = {}
    biblio = extract_biblio(doc, unusable, url_length_limit)
    key = FULLTEXT_FIELDS.get(ingest_type)
    landing = Landing(biblio, unusable_link=unusable.get(key) if key else None)
    if ingest_type == "pdf":
        if biblio.get("pdf_fulltext_url"):
            landing.next_hop = {"pdf_url": biblio["pdf_fulltext_url"], "technique": "html_biblio"}
        else:
            skipped: list[str] = []
            landing.next_hop = extract_publisher_fulltext_url(url, doc, skipped, url_length_limit)
            landing.unusable_link = landing.unusable_link or next(iter(skipped), None)
    elif key and biblio.get(key):
        landing.next_hop = {"next_url": biblio[key], "technique": key}
    return landing, doc


def process_html(
    doc: HtmlDoc, biblio: dict[str, Any], ojs_fix: bool, blocked_hosts: tuple[str, ...] = BLOCKED_HOSTS
) -> dict[str, Any]:
    """``{status?, html_body, platform, scope, resources, tei_xml, unusable_resources}`` for the
    terminal page; ``unusable_resources``: why sub-resources were skipped (no fetch can use their
    URLs)."""
    # trafilatura and pypdf (0.1 s to import) are imported where they are called, not by loading the
    # spiders (every `scrapy crawl`); the ingest's worker processes preload them (workers.PRELOAD).
    from .htmlbody import TeiXmlError, extract_body

    try:
        body = extract_body(doc.text)
    except TeiXmlError as exc:
        return {"status": "html-teixml-error", "error_message": str(exc)[:1600]}
    platform = guess_platform(doc)
    scope = guess_scope(doc.url, doc, biblio, body.get("word_count"), platform, ojs_fulltext_fix=ojs_fix)
    tei_xml = body.pop("tei_xml", None)
    unusable: list[str] = []
    resources = extract_resources(doc, blocked_hosts, unusable)
    for resource in resources:
        resource["surt"] = surt(resource["url"])
    return {
        "html_body": body,
        "platform": platform,
        "scope": scope,
        "tei_xml": tei_xml,
        "resources": resources,
        "unusable_resources": unusable,
    }


def process_html_bytes(
    body: bytes,
    url: str,
    content_type: str | None,
    biblio: dict[str, Any],
    ojs_fix: bool,
    blocked_hosts: tuple[str, ...],
) -> dict[str, Any]:
    """:func:`process_html` from the bytes (a worker cannot be handed a parsed tree)."""
    try:
        doc = parse_html(body, url, content_type)
    except HtmlParseError as exc:
        return {"status": "html-selectolax-error", "error_message": str(exc)}
    return process_html(doc, biblio, ojs_fix, blocked_hosts)


def process_pdf(
    body: bytes, config: IngestConfig, sha1hex: str | None = None
) -> tuple[dict[str, Any], str, bytes | None]:
    """(pdf_meta, text, None): the page-0 thumbnail is rendered apart (:func:`start_page0`, or the
    spider's :meth:`~votersdaily.ingest.spider.IngestSpider._page0`), so an extraction process never
    waits for ``pdftoppm``. ``sha1hex``: the body's, when already known."""
    from .pdf import extract_pdf  # imported here: see process_html

    return extract_pdf(body, max_pages=config.pdf_max_pages, thumbnail=False, sha1hex=sha1hex)


def start_page0(body: bytes, config: IngestConfig) -> PendingRender | None:
    """The PDF handed to this process's warm renderer (:mod:`.thumbnail`, a process of its own: a
    crash there costs the thumbnail, never this call) when INGEST_PDF_THUMBNAILS wants a
    thumbnail, before the text is read, so that the page renders meanwhile; None without a warm
    renderer: a render is then a ``pdftoppm`` process, which an extraction process never waits for,
    and the spider renders it (:meth:`~votersdaily.ingest.spider.IngestSpider._page0`)."""
    renderer = warm_renderer() if config.pdf_thumbnails else None
    return renderer.start(body) if renderer is not None else None


def prestart_page0(config: IngestConfig) -> None:
    """This process's warm renderer started ahead of the PDF a landing page leads to (its start then
    overlaps the PDF's fetch), when INGEST_PDF_THUMBNAILS wants thumbnails and none runs yet."""
    renderer = warm_renderer() if config.pdf_thumbnails else None
    if renderer is not None:
        renderer.prestart()


def warm_page0(
    pdf: tuple[dict[str, Any], str, bytes | None], pending: PendingRender | None
) -> tuple[tuple[dict[str, Any], str, bytes | None], Page0 | None]:
    """(``pdf`` with its page-0 thumbnail, the render's outcome) once the text is read, for a PDF
    that was read and has a first page (:func:`~.thumbnail.page0_renderable`); else ``pdf`` as it
    is and None (the render, if one was started, is read and dropped). Rendered here, the
    thumbnail comes back with the text: one hand-off less per PDF."""
    meta, text, _ = pdf
    wanted = page0_renderable(meta)
    page0 = pending.outcome(compare=wanted) if pending is not None else None
    if page0 is None or not wanted:
        return pdf, None
    return (dict(meta, has_page0_thumbnail=page0.jpeg is not None), text, page0.jpeg), page0


def xml_error(body: bytes) -> str | None:
    """Why ``body`` is not well-formed XML (entities never expanded, no DTD fetched), or None."""
    try:
        etree.fromstring(body, parser=safe_parser())
    except etree.XMLSyntaxError as exc:
        return str(exc) or "XML syntax error"
    return None


@dataclass
class HopFacts:
    """What :func:`examine_hop` found in one fetched body (picklable)."""

    file_meta: dict[str, Any]
    gunzipped: bool = False
    #: libmagic's mimetype when ``file_meta`` carries the declared HTML type instead.
    sniffed_mimetype: str | None = None
    #: The decoded body, only when it differs from the response body (un-stripped gzip).
    body: bytes | None = None
    magic: str = ""
    landing: Landing | None = None
    #: :func:`process_html` output when this page is the terminal HTML document.
    html: dict[str, Any] | None = None
    #: (pdf_meta, text, page-0 thumbnail) when this is the terminal PDF.
    pdf: tuple[dict[str, Any], str, bytes | None] | None = None
    #: The page-0 render's outcome when this process rendered it (:func:`start_page0`).
    page0: Page0 | None = None
    #: ``xml_error()`` of a terminal XML document ("" when well-formed).
    xml_error: str | None = None


def examine_hop(
    body: bytes,
    url: str,
    content_type: str | None,
    ingest_type: str,
    hops: list[str],
    config: IngestConfig,
) -> HopFacts:
    """File metadata of a fetched hop, its landing-page analysis when it is HTML, and, when the hop
    rules (docs/ingest.md §2) make it the terminal document, the type's processing.
    ``hops`` is the hop list including this URL; ``content_type`` the response's header (its
    charset decodes HTML). Raises :class:`BadGzip`."""
    fetched = describe_body(
        body, content_type, config.max_body, with_magic=False, html_by_header=config.html_by_declared_type
    )
    facts = HopFacts(
        fetched.file_meta,
        fetched.gunzipped,
        fetched.sniffed_mimetype,
        fetched.body if fetched.gunzipped else None,
    )
    if not fetched.body:
        return facts
    body = fetched.body
    mimetype = facts.file_meta["mimetype"]
    doc = None
    if is_htmlish(mimetype):
        facts.landing, doc = analyse_landing(body, url, ingest_type, content_type, config.url_length_limit)
        next_hop = facts.landing.next_hop
        if ingest_type == "pdf":
            if next_hop:
                prestart_page0(config)
            return facts  # a landing page: the next hop or no-pdf-link
        if (
            ingest_type in ("xml", "html", "component")
            and next_hop
            and (ingest_type != "html" or urljoin(url, next_hop["next_url"]) not in hops)
        ):
            return facts  # the spider follows the fulltext link
    if mimetype not in ACCEPTED_MIMETYPES[ingest_type]:
        return facts
    facts.magic = describe(body)
    if ingest_type == "pdf" or (ingest_type == "component" and mimetype == "application/pdf"):
        pending = start_page0(body, config)
        try:
            pdf = process_pdf(body, config, facts.file_meta["sha1hex"])
        except BaseException:
            if pending is not None:  # the renderer is free again
                pending.outcome(compare=False)
            raise
        facts.pdf, facts.page0 = warm_page0(pdf, pending)
    elif ingest_type == "xml":
        facts.xml_error = xml_error(body) or ""
    elif ingest_type == "html" and doc is not None and facts.landing is not None:
        facts.html = process_html(
            doc, facts.landing.biblio, config.ojs_fulltext_fix, config.resource_domain_blocklist
        )
    return facts


def gzip_bytes(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)
