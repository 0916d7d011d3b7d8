"""One parse of an HTML document shared by biblio, fulltext links, scope and resources.

Meta tags are indexed once by their key, lowercased, whichever attribute names it (``name``,
``property``, ``itemprop`` or ``id``: :data:`META_KEY_ATTRS`), because real pages mix case
(``DC.Citation.Issue``) and spelling (OpenGraph's ``<meta property="og:title">``, often written
``name="og:title"``), and browsers and metadata extractors read them alike.

The bytes are decoded once, as browsers and Scrapy's ``TextResponse`` do (:func:`decode_html`), and
every parser (lxml here, trafilatura in :mod:`.htmlbody`, the regex rules) reads that text: handing
bytes to lxml lets libxml2 guess, and it falls back to Latin-1 when the charset is declared late in
the head or only in the HTTP ``Content-Type`` (UTF-8 pages came out as ``JÃ¼rgen``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import lxml.html
from cssselect import GenericTranslator
from lxml import etree
from w3lib.encoding import html_to_unicode, resolve_encoding

#: The attributes that name a meta tag's key, read alike: HTML's ``name``, RDFa and OpenGraph's
#: ``property`` (``<meta property="og:title">``), microdata's ``itemprop`` and the ``id`` some
#: publishers use (D-Lib's ``<meta id="DOI">``). ``http-equiv`` is a pragma (refresh, content type),
#: not a key, and has its own index.
META_KEY_ATTRS = ("name", "property", "itemprop", "id")


class HtmlParseError(ValueError):
    """The bytes do not parse as an HTML document."""


@dataclass
class HtmlDoc:
    url: str
    root: etree._Element
    #: The document as text (decoded by :func:`decode_html`).
    text: str
    #: The encoding it was decoded from.
    encoding: str = "utf-8"
    #: Lowercased key (in any of :data:`META_KEY_ATTRS`) → [meta elements in document order], head only.
    metas: dict[str, list[etree._Element]] = field(default_factory=dict)
    #: Lowercased ``http-equiv`` → [meta elements in document order], head only.
    pragmas: dict[str, list[etree._Element]] = field(default_factory=dict)
    has_head: bool = True

    def meta_elements(self, key: str) -> list[etree._Element]:
        """Every head meta whose key is ``key``, in any case and any key attribute (``name``,
        ``property``, ``itemprop``, ``id``): the one way every meta of a page is read."""
        return self.metas.get(meta_key(key), [])

    def has_meta(self, indexed: str) -> bool:
        """Whether a head meta has the key ``indexed``, written as the index writes it
        (:func:`meta_key`): a caller asking many keys (the biblio asks some 100 a page, most on no
        page) normalises them once, and reads only those a page has."""
        return indexed in self.metas

    def meta_contents(self, key: str) -> list[str]:
        """Non-empty ``content`` of every head meta whose key is ``key`` (:meth:`meta_elements`).
        Most keys asked are on no page (the biblio asks some 100 per page): those go no further
        than the index."""
        elements = self.meta_elements(key)
        return [c for c in (m.get("content") for m in elements) if c] if elements else []

    def pragma_elements(self, name: str) -> list[etree._Element]:
        """Head metas whose ``http-equiv`` is ``name`` (``refresh``), any case."""
        return self.pragmas.get(name.strip().lower(), [])

    def select(self, css: str) -> list[Any]:
        return css_xpath_compiled(css)(self.root)


# lxml reads the text re-encoded as UTF-8 with the encoding given: a str with an XML declaration is
# refused by lxml, and a given encoding makes libxml2 ignore the page's own <meta charset>.
_parser = lxml.html.HTMLParser(
    no_network=True, remove_comments=False, default_doctype=False, huge_tree=False, encoding="utf-8"
)

#: How far into a document a ``<meta charset>`` is looked for when it is not in the first 4 KiB
#: (where w3lib looks): anywhere in the head, up to this many bytes.
HEAD_SCAN_BYTES = 1024 * 1024
_HEAD_END = re.compile(rb"</head\b|<body\b", re.IGNORECASE)
_META = re.compile(rb"<meta\b([^>]*)>", re.IGNORECASE)
_META_CHARSET = re.compile(rb"""charset\s*=\s*["']?\s*([-\w.:]+)""", re.IGNORECASE)


def _declared_in_head_or_guessed(body: bytes) -> str:
    """The encoding a ``<meta>`` anywhere in the head declares, else UTF-8 if the bytes are valid
    UTF-8, else Windows-1252 (what browsers assume for Latin-1 and undeclared Western pages)."""
    end = _HEAD_END.search(body, 0, HEAD_SCAN_BYTES)
    head = body[: end.start() if end else HEAD_SCAN_BYTES]
    for meta in _META.finditer(head):
        found = _META_CHARSET.search(meta.group(1))
        if found:
            encoding = resolve_encoding(found.group(1).decode("ascii", "replace"))
            if encoding:
                # a meta that could be read is in an ASCII-compatible encoding (HTML spec)
                return "utf-8" if encoding.startswith(("utf-16", "utf-32")) else encoding
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return "cp1252"
    return "utf-8"


def decode_html(body: bytes, content_type: str | None = None) -> tuple[str, str]:
    """(encoding, text) of an HTML body: BOM, then the HTTP ``Content-Type`` charset, then a
    ``<meta>`` declaration (first 4 KiB, then anywhere in the head), then UTF-8 if valid, else
    Windows-1252; undecodable bytes become U+FFFD."""
    return html_to_unicode(content_type, body, auto_detect_fun=_declared_in_head_or_guessed)


def parse_html(body: bytes | str, url: str, content_type: str | None = None) -> HtmlDoc:
    """Parse ``body`` (bytes are decoded with :func:`decode_html` and ``content_type``, the
    response's full ``Content-Type`` header)."""
    if isinstance(body, bytes):
        encoding, text = decode_html(body, content_type)
    else:
        encoding, text = "utf-8", body
    try:
        root = lxml.html.document_fromstring(text.encode("utf-8", "replace"), parser=_parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as exc:
        raise HtmlParseError("%s does not parse as HTML: %s" % (url, exc)) from None
    doc = HtmlDoc(url=url, root=root, text=text, encoding=encoding)
    head = root.find("head")
    if head is None:
        doc.has_head = False
        return doc
    for meta in head.iter("meta"):
        keys = {meta_key(meta.get(attr)) for attr in META_KEY_ATTRS if (meta.get(attr) or "").strip()}
        for key in sorted(keys):
            doc.metas.setdefault(key, []).append(meta)
        pragma = (meta.get("http-equiv") or "").strip().lower()
        if pragma:
            doc.pragmas.setdefault(pragma, []).append(meta)
    return doc


def meta_key(key: str) -> str:
    """A meta's key as :attr:`HtmlDoc.metas` indexes it: stripped, lowercased."""
    return key.strip().lower()


@lru_cache(maxsize=512)
def css_xpath(css: str) -> str:
    return GenericTranslator().css_to_xpath(css)


@lru_cache(maxsize=512)
def css_xpath_compiled(css: str) -> etree.XPath:
    """:func:`css_xpath` compiled once: ``_Element.xpath`` compiled the expression at every call
    (the fulltext rules select with the same few dozen, 5 of a landing page's 6.5 us a select)."""
    return etree.XPath(css_xpath(css))
