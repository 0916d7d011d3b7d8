"""HTML helpers for listing pages and feed bodies: clean text, document links, completeness."""

from __future__ import annotations

import re
from urllib.parse import urljoin

from lxml import etree
from lxml import html as lxml_html

from .errors import ErrorPage, MalformedDocument

#: Words that mark a served error page in its <title> (answered with HTTP 200 by some sites).
ERROR_TITLE_WORDS = ("not found", "error", "unavailable", "access denied", "forbidden")


def fold(text: str | None) -> str:
    """Whitespace folded to single spaces (U+00A0 and line breaks included), ends trimmed."""
    return " ".join((text or "").split())


def fragment_root(markup: str) -> etree._Element | None:
    """A parsed HTML fragment (wrapped in one <div>), or None when there is nothing to parse."""
    if not markup or not markup.strip():
        return None
    try:
        return lxml_html.fragment_fromstring(markup, create_parent="div")
    except (etree.ParserError, ValueError):
        return None


def html_text(markup: str | None) -> str:
    """The readable text of an HTML fragment: tags dropped, entities decoded, whitespace folded."""
    root = fragment_root(markup or "")
    if root is None:
        return ""
    for bad in root.xpath(".//script|.//style"):
        bad.drop_tree()
    return fold(" ".join(root.itertext()))


def link_urls(markup: str | None, base_url: str, suffixes: tuple[str, ...] = (".pdf",)) -> list[str]:
    """Absolute URLs of the fragment's links whose path ends with one of ``suffixes``, in order, once."""
    root = fragment_root(markup or "")
    if root is None:
        return []
    seen: dict[str, None] = {}
    for href in root.xpath(".//a/@href"):
        url = urljoin(base_url, href.strip())
        if url.split("#", 1)[0].split("?", 1)[0].lower().endswith(suffixes):
            seen.setdefault(url, None)
    return list(seen)


def require_complete_page(body: bytes, url: str = "") -> None:
    """Refuse an HTML page that was cut off (no closing </html>): HTML parsers silently recover
    from truncation, which would store a partial listing as if it were the whole one."""
    if not body.strip():
        raise MalformedDocument("empty page at %s" % url)
    if b"</html>" not in body[-4096:].lower():
        raise MalformedDocument("%s is truncated: no closing </html>" % url)


def raise_if_error_page(title: str, url: str = "") -> None:
    """An error page served with a success status, recognised by its <title>."""
    if any(word in title.lower() for word in ERROR_TITLE_WORDS):
        raise ErrorPage("%s answered an error page: %s" % (url, title))


def enclosing_markup(page: str, href: str, tag: str, occurrence: int = 0) -> str | None:
    """The exact source text of the ``<tag>…</tag>`` around the ``occurrence``-th link to ``href``.

    Listing rows (``<div>``/``<tr>`` holding one link) are cut from the page as the publisher wrote
    them, so ``source_text`` is the row byte for byte rather than a parser's re-serialisation.
    Returns None when the link or its enclosing element cannot be found (the caller falls back).
    """
    # The parsed href has its character references decoded: the page may write ``&`` as ``&amp;``.
    written = "(?:&|&amp;|&#38;)".join(re.escape(part) for part in href.split("&"))
    link = re.compile(r"""href\s*=\s*(['"])%s\1""" % written, re.I)
    matches = list(link.finditer(page))
    if occurrence >= len(matches):
        return None
    pos = matches[occurrence].start()
    opening = re.compile(r"<%s[\s>]" % re.escape(tag), re.I)
    starts = [m.start() for m in opening.finditer(page, 0, pos)]
    if not starts:
        return None
    end = re.compile(r"</%s\s*>" % re.escape(tag), re.I).search(page, pos)
    if end is None:
        return None
    return page[starts[-1] : end.end()]
