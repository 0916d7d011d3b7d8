"""CPU-bound steps of an ingest, run in a worker thread so the reactor keeps downloading:
file metadata (with the un-stripped gzip fix), landing-page analysis, HTML terminal processing,
PDF extraction."""

from __future__ import annotations

import gzip
import io
import zlib
from dataclasses import dataclass, field

from .biblio import extract_biblio
from .filemeta import describe, gen_file_metadata, is_htmlish
from .fulltext import extract_publisher_fulltext_url
from .htmlbody import TeiXmlError, extract_body
from .htmldoc import HtmlDoc, HtmlParseError, parse_html
from .pdf import extract_pdf
from .resources import extract_resources
from .scope import guess_platform, guess_scope

_GZIP_TYPES = ("application/gzip", "application/x-gzip", "application/x-gunzip", "application/gzipped",
               "application/gzip-compressed", "application/x-gzip-compressed", "gzip/document")


class BadGzip(ValueError):
    """A gzip body (sent without Content-Encoding) that does not decode within the limits."""


def gunzip_limited(blob: bytes, max_size: int) -> bytes:
    """Decode every gzip member of ``blob``; more than ``max_size`` bytes out is an error
    (decompression bombs)."""
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
            raise BadGzip("gzip body decodes to more than %d bytes" % max_size)
        if not d.eof:
            raise BadGzip("truncated gzip body")
        data = d.unused_data.lstrip(b"\x00")
    return out.getvalue()


@dataclass
class Fetched:
    """The decoded body and its metadata."""

    body: bytes
    file_meta: dict
    magic: str = ""
    gunzipped: bool = False


def describe_body(body: bytes, header_mimetype: str | None, max_size: int) -> Fetched:
    """File metadata over ``body``; a gzip body whose header did not say gzip is decoded first."""
    meta = gen_file_metadata(body)
    gunzipped = False
    if meta["mimetype"] == "application/gzip" and (header_mimetype or "") not in _GZIP_TYPES:
        body = gunzip_limited(body, max_size)
        gunzipped = True
        if not body:
            return Fetched(body, {}, "", True)
        meta = gen_file_metadata(body)
    return Fetched(body, meta, describe(body), gunzipped)


@dataclass
class Landing:
    """What an HTML hop says about where the fulltext is."""

    biblio: dict
    next_hop: dict = field(default_factory=dict)
    parse_error: str | None = None


def analyse_landing(body: bytes, url: str, ingest_type: str) -> tuple[Landing, HtmlDoc | None]:
    try:
        doc = parse_html(body, url)
    except HtmlParseError as exc:
        return Landing({}, {}, str(exc)), None
    biblio = extract_biblio(doc)
    landing = Landing(biblio)
    if ingest_type == "pdf":
        if biblio.get("pdf_fulltext_url"):
            landing.next_hop = {"pdf_url": biblio["pdf_fulltext_url"], "technique": "html_biblio"}
        else:
            landing.next_hop = extract_publisher_fulltext_url(url, doc)
    else:
        key = {"xml": "xml_fulltext_url", "html": "html_fulltext_url", "component": "component_url"}.get(ingest_type)
        if key and biblio.get(key):
            landing.next_hop = {"next_url": biblio[key], "technique": key}
    return landing, doc


def process_html(doc: HtmlDoc, biblio: dict, ojs_fix: bool) -> dict:
    """``{status?, html_body, platform, scope, resources, tei_xml}`` for the terminal page."""
    try:
        body = extract_body(doc.raw)
    except TeiXmlError as exc:
        return {"status": "html-teixml-error", "error_message": str(exc)[:1600]}
    platform = guess_platform(doc)
    scope = guess_scope(doc.url, doc, biblio, body.get("word_count"), platform, ojs_fulltext_fix=ojs_fix)
    tei_xml = body.pop("tei_xml", None)
    return {"html_body": body, "platform": platform, "scope": scope, "tei_xml": tei_xml,
            "resources": extract_resources(doc)}


def html_mimetype_ok(mimetype: str) -> bool:
    return is_htmlish(mimetype)


def process_pdf(body: bytes, max_pages: int) -> tuple[dict, str]:
    return extract_pdf(body, max_pages=max_pages)


def gzip_bytes(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)
