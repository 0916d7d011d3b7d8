"""Sitemaps (sitemaps.org 0.9 urlset / sitemapindex, XML or text, gzipped or not) and semantic sitemaps
(DERI's ``sc:dataset`` extension): where the seeds come from.

Parsed with a safe XML parser (no DTD, no entity expansion, no network); at most
``MAX_SITEMAP_BYTES`` of uncompressed text (the protocol's 50 MB limit) is read.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

from lxml import etree
from scrapy.utils.gz import gunzip

from votersdaily.sources.xml import safe_parser

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
SC_NS = "http://sw.deri.org/2007/07/sitemapextension/scschema.xsd"
#: Older semantic sitemaps use the extension's page URI as their namespace.
SC_NAMESPACES = (SC_NS, "http://sw.deri.org/2007/07/sitemapextension/")
MAX_SITEMAP_BYTES = 52_428_800


class SitemapError(ValueError):
    """The document is not a sitemap, or breaks the protocol's limits."""


@dataclass
class SitemapUrl:
    loc: str
    lastmod: str | None = None
    changefreq: str | None = None
    priority: float | None = None


@dataclass
class Dataset:
    label: str | None = None
    uri: str | None = None
    linked_data_prefixes: list[str] = field(default_factory=list)
    sparql_endpoints: list[str] = field(default_factory=list)
    sample_uris: list[str] = field(default_factory=list)
    data_dumps: list[str] = field(default_factory=list)
    changefreq: str | None = None
    lastmod: str | None = None


@dataclass
class Sitemap:
    kind: str  # "urlset", "sitemapindex" or "text"
    urls: list[SitemapUrl] = field(default_factory=list)
    sitemaps: list[SitemapUrl] = field(default_factory=list)
    datasets: list[Dataset] = field(default_factory=list)


def gunzip_limited(body: bytes, limit: int = MAX_SITEMAP_BYTES) -> bytes:
    """Uncompress a gzip body, refusing more than ``limit`` bytes of output (a gzip bomb).

    Scrapy's own gunzip, as its SitemapSpider uses it: a truncated body yields what came through."""
    try:
        return gunzip(body, max_size=limit)
    except ValueError:  # Scrapy's private _DecompressionMaxSizeExceeded
        raise SitemapError("gzipped sitemap uncompresses to more than %d bytes" % limit) from None


def looks_like_sitemap(body: bytes) -> bool:
    """Cheap check on a document's start: an XML sitemap (maybe gzipped)?"""
    if body[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(31).decompress(body[:65536], 8192)
        except zlib.error:
            return False
    else:
        head = body[:8192]
    return SITEMAP_NS.encode() in head and (
        b"<urlset" in head or b"<sitemapindex" in head or b":urlset" in head
    )


def _text(element: etree._Element, tag: str) -> str | None:
    found = element.find(tag)
    if found is None or found.text is None:
        return None
    return found.text.strip() or None


def _texts(element: etree._Element, tags: tuple[str, ...]) -> list[str]:
    out = []
    for tag in tags:
        out += [e.text.strip() for e in element.iter(tag) if e.text and e.text.strip()]
    return out


def _url(element: etree._Element) -> SitemapUrl | None:
    loc = _text(element, "{%s}loc" % SITEMAP_NS)
    if not loc:
        return None
    priority = _text(element, "{%s}priority" % SITEMAP_NS)
    try:
        prio = float(priority) if priority is not None else None
    except ValueError:
        prio = None
    if prio is not None and not math.isfinite(prio):  # NaN, inf: no priority (and no JSON number)
        prio = None
    return SitemapUrl(
        loc=loc,
        lastmod=_text(element, "{%s}lastmod" % SITEMAP_NS),
        changefreq=_text(element, "{%s}changefreq" % SITEMAP_NS),
        priority=prio,
    )


def _dataset(element: etree._Element) -> Dataset:
    def sc(local: str) -> tuple[str, ...]:
        return tuple("{%s}%s" % (ns, local) for ns in SC_NAMESPACES)

    labels = _texts(element, sc("datasetLabel"))
    uris = _texts(element, sc("datasetURI"))
    return Dataset(
        label=labels[0] if labels else None,
        uri=uris[0] if uris else None,
        linked_data_prefixes=_texts(element, sc("linkedDataPrefix")),
        sparql_endpoints=_texts(element, sc("sparqlEndpointLocation")),
        sample_uris=_texts(element, sc("sampleURI")),
        data_dumps=_texts(element, sc("dataDumpLocation")),
        changefreq=_text(element, "{%s}changefreq" % SITEMAP_NS)
        or next(iter(_texts(element, sc("changefreq"))), None),
        lastmod=_text(element, "{%s}lastmod" % SITEMAP_NS),
    )


def parse_sitemap(body: bytes) -> Sitemap:
    """A sitemap from its bytes: XML urlset (with semantic ``sc:dataset``s), sitemapindex, or text."""
    if body[:2] == b"\x1f\x8b":
        body = gunzip_limited(body)
    if len(body) > MAX_SITEMAP_BYTES:
        raise SitemapError("sitemap larger than %d bytes" % MAX_SITEMAP_BYTES)
    stripped = body.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not stripped.startswith(b"<"):
        urls = []
        for raw_line in stripped.decode("utf-8", "replace").splitlines():
            line = raw_line.strip()
            if line and not line.startswith("#"):
                urls.append(SitemapUrl(loc=line))
        return Sitemap(kind="text", urls=urls)
    try:
        root = etree.fromstring(body, parser=safe_parser())
    except etree.XMLSyntaxError as exc:
        raise SitemapError("sitemap does not parse as XML: %s" % exc) from None
    tag = etree.QName(root)
    if tag.namespace != SITEMAP_NS or tag.localname not in ("urlset", "sitemapindex"):
        raise SitemapError("not a sitemap: root element <%s>" % root.tag)
    if tag.localname == "sitemapindex":
        entries = [_url(e) for e in root.iter("{%s}sitemap" % SITEMAP_NS)]
        return Sitemap(kind="sitemapindex", sitemaps=[e for e in entries if e])
    found = [_url(e) for e in root.iterchildren("{%s}url" % SITEMAP_NS)]
    datasets = [_dataset(e) for ns in SC_NAMESPACES for e in root.iterchildren("{%s}dataset" % ns)]
    return Sitemap(kind="urlset", urls=[u for u in found if u], datasets=datasets)
