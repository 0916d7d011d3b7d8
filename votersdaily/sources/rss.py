"""RSS 2.0 feeds (WordPress sites, docs.house.gov committee feeds): items with their exact XML.

Parsed with :func:`votersdaily.sources.xml.parse_xml` (no DTD, no entities, no network). Each item
keeps its own ``<item>`` markup exactly as published as ``source_text``, and its RFC 822 ``pubDate``
as an aware datetime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from lxml import etree

from .errors import UnexpectedDocument
from .html import fold, fragment_root
from .xml import outer_xml, parse_xml, text_of
from .xml_text import element_texts

CONTENT_NS = "http://purl.org/rss/1.0/modules/content/"
DC_NS = "http://purl.org/dc/elements/1.1/"


@dataclass
class FeedItem:
    title: str
    link: str
    guid: str
    guid_is_permalink: bool
    published: datetime | None
    published_text: str
    categories: list[str]
    creator: str
    description_html: str
    content_html: str
    source_text: str
    element: etree._Element = field(repr=False)


@dataclass
class Feed:
    title: str
    link: str
    description: str
    last_build: datetime | None
    items: list[FeedItem]


def parse_rfc822(text: str) -> datetime | None:
    """An RFC 822 date (``Tue, 29 Sep 2026 21:23:48 +0000``, ``… GMT``, ``… EST``) as an aware datetime.

    ``-0000`` (UTC, "local zone unknown" in RFC 2822) is read as UTC; a time with no zone at all
    is returned naive, the source's wall time (the pipeline reads it in the spider's zone), never
    assumed to be UTC. Returns None for an empty text and raises ValueError for an unparseable one
    or one without a day or a time (``Sep 2026``): nothing is completed with invented parts.
    """
    text = fold(text)
    if not text:
        return None
    try:
        value = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError) as exc:
        raise ValueError("not an RFC 822 date: %r (%s)" % (text, exc)) from None
    if value.tzinfo is None and text.endswith("-0000"):
        value = value.replace(tzinfo=UTC)
    return value


def parse_rss(body: bytes, url: str = "") -> Feed:
    """The channel and its items. Raises the :mod:`~votersdaily.sources.errors` classes for error
    bodies, malformed XML and documents that are not RSS 2.0 (no ``<channel>``)."""
    root = parse_xml(body, ("rss",), url)
    channel = root.find("channel")
    if channel is None:
        raise UnexpectedDocument("%s is <rss> without a <channel>" % url)
    elements = channel.findall("item")
    texts = element_texts(body, "item", root.getroottree().docinfo.encoding or "utf-8")
    if texts is None or len(texts) != len(elements):
        texts = [outer_xml(el) for el in elements]
    return Feed(
        title=text_of(channel, "title"),
        link=text_of(channel, "link"),
        description=text_of(channel, "description"),
        last_build=parse_rfc822(text_of(channel, "lastBuildDate")),
        items=[_item(el, text) for el, text in zip(elements, texts, strict=True)],
    )


def _item(el: etree._Element, source_text: str) -> FeedItem:
    guid_el = el.find("guid")
    return FeedItem(
        title=text_of(el, "title"),
        link=text_of(el, "link"),
        guid=text_of(guid_el),
        guid_is_permalink=guid_el is not None and guid_el.get("isPermaLink", "true").lower() != "false",
        published=parse_rfc822(text_of(el, "pubDate")),
        published_text=text_of(el, "pubDate"),
        categories=[text_of(c) for c in el.findall("category") if text_of(c)],
        creator=text_of(el, "{%s}creator" % DC_NS),
        description_html=el.findtext("description") or "",
        content_html=el.findtext("{%s}encoded" % CONTENT_NS) or "",
        source_text=source_text,
        element=el,
    )


def wordpress_excerpt_text(markup: str) -> str:
    """A WordPress feed excerpt as clean text, without the "The post … appeared first on …" footer."""
    root = fragment_root(markup)
    if root is None:
        return ""
    for para in root.xpath(".//p"):
        text = fold(para.text_content())
        if text.startswith("The post ") and " appeared first on " in text:
            para.drop_tree()
    return fold(" ".join(root.itertext()))
