"""Safe XML for untrusted government documents: no DTD loading, no entity expansion, no network."""

from __future__ import annotations

from collections.abc import Iterable

from lxml import etree

from .errors import ErrorPage, MalformedDocument, UnexpectedDocument


def safe_parser(recover: bool = False) -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        recover=recover,
        remove_comments=False,
    )


def parse_xml(body: bytes, expected_roots: Iterable[str], url: str = "") -> etree._Element:
    """Parse ``body`` and check its root element is one of ``expected_roots``.

    Raises :class:`MalformedDocument` when it does not parse, :class:`ErrorPage` for the error
    bodies sources serve with HTTP 200 (``<xml>Error …</xml>``, HTML error pages) and
    :class:`UnexpectedDocument` for any other root.
    """
    expected = tuple(expected_roots)
    if not body.strip():
        raise MalformedDocument("empty document at %s" % url)
    head = body.lstrip()[:512].lower()
    if head.startswith((b"<!doctype html", b"<html")):
        raise ErrorPage("%s is an HTML page, not %s XML%s" % (url, "/".join(expected), _title(body)))
    try:
        root = etree.fromstring(body, parser=safe_parser())
    except etree.XMLSyntaxError as exc:
        raise MalformedDocument("%s does not parse as XML: %s" % (url, exc)) from None
    tag = etree.QName(root).localname if isinstance(root.tag, str) else str(root.tag)
    if tag not in expected:
        text = " ".join("".join(root.itertext()).split())[:200]
        if tag in ("xml", "error", "html") or "error" in text.lower():
            raise ErrorPage("%s answered an error body <%s>: %s" % (url, tag, text))
        raise UnexpectedDocument("%s has root <%s>, expected <%s>" % (url, tag, "> or <".join(expected)))
    return root


def _title(body: bytes) -> str:
    try:
        doc = etree.fromstring(body, parser=etree.HTMLParser(no_network=True, recover=True))
    except (etree.XMLSyntaxError, ValueError):
        return ""
    if doc is None:
        return ""
    titles = doc.xpath("//title/text()")
    return (": %s" % " ".join(titles[0].split())) if titles else ""


def outer_xml(element: etree._Element) -> str:
    """The element's own markup, as the source wrote it (the event's ``source_text``)."""
    return etree.tostring(element, encoding="unicode", with_tail=False)


def text_of(element: etree._Element | None, path: str | None = None) -> str:
    """Whitespace-normalised text of ``element`` (or of its first ``path`` match); "" if absent."""
    if element is None:
        return ""
    if path is not None:
        element = element.find(path)
        if element is None:
            return ""
    return " ".join("".join(element.itertext()).split())


def required_attribute(element: etree._Element, name: str, url: str = "") -> str:
    """The stripped attribute ``name`` (a record's key); a record without it is malformed."""
    value = (element.get(name) or "").strip()
    if not value:
        raise MalformedDocument("%s has a %s without %s" % (url, element.tag, name))
    return value
