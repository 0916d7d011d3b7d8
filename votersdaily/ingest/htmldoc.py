"""One parse of an HTML document shared by biblio, fulltext links, scope and resources.

Meta tags are indexed once with lowercased ``name``/``property``/``id``/``itemprop`` values, because
real pages mix case (``DC.Citation.Issue``) and upstream (selectolax) matched case-insensitively.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import lxml.html
from cssselect import GenericTranslator
from lxml import etree

META_ATTRS = ("name", "property", "id", "itemprop", "http-equiv")


class HtmlParseError(ValueError):
    """The bytes do not parse as an HTML document."""


@dataclass
class HtmlDoc:
    url: str
    root: etree._Element
    raw: bytes
    #: (attribute, lowercased value) → [meta elements in document order], head only.
    metas: dict[tuple[str, str], list] = field(default_factory=dict)
    has_head: bool = True

    def meta_contents(self, attr: str, value: str) -> list[str]:
        """Non-empty ``content`` of every head meta whose ``attr`` equals ``value`` (any case)."""
        return [c for c in (m.get("content") for m in self.metas.get((attr, value.lower()), ())) if c]

    def meta_elements(self, attr: str, value: str) -> list:
        return self.metas.get((attr, value.lower()), [])

    def select(self, css: str) -> list:
        return self.root.xpath(css_xpath(css))


_parser = lxml.html.HTMLParser(no_network=True, remove_comments=False, default_doctype=False, huge_tree=False)


def parse_html(body: bytes, url: str) -> HtmlDoc:
    try:
        root = lxml.html.document_fromstring(body, parser=_parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as exc:
        raise HtmlParseError("%s does not parse as HTML: %s" % (url, exc)) from None
    doc = HtmlDoc(url=url, root=root, raw=body)
    head = root.find("head")
    if head is None:
        doc.has_head = False
        return doc
    for meta in head.iter("meta"):
        for attr in META_ATTRS:
            value = meta.get(attr)
            if value:
                doc.metas.setdefault((attr, value.strip().lower()), []).append(meta)
    return doc


@lru_cache(maxsize=512)
def css_xpath(css: str) -> str:
    return GenericTranslator().css_to_xpath(css)
