"""Fulltext body of an HTML page as TEI-XML via trafilatura (docs/ingest.md §7)."""

from __future__ import annotations

from typing import Any

import trafilatura
from lxml import etree

from . import datesearch, fingerprint

AGENT = "trafilatura/%s" % trafilatura.__version__
_FIRST_MONDAY_DOCTYPE = '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN" 2012"http://www.w3.org/TR/html4/loose.dtd">'
_TEI = "{http://www.tei-c.org/ns/1.0}"
_parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)

datesearch.install()  # htmldate's whole-page date search skips the passes that cannot match
fingerprint.install()  # the TEI's fingerprint counted a token at a time in C


class TeiXmlError(ValueError):
    """trafilatura produced TEI-XML that does not parse."""


def _extract(text: str) -> str | None:
    return trafilatura.extract(
        text, output_format="xmltei", include_comments=False, include_formatting=True, with_metadata=False
    )


def word_count(tei_xml: str) -> int:
    """Whitespace-separated tokens of all text under the TEI ``<body>`` (0 without one)."""
    try:
        root = etree.fromstring(tei_xml.encode("utf-8"), parser=_parser)
    except etree.XMLSyntaxError as exc:
        raise TeiXmlError(str(exc)) from None
    body = root.find(".//%sbody" % _TEI)
    if body is None:
        body = root.find(".//body")
    if body is None or len(body) == 0:
        return 0
    return len(" ".join(body.itertext()).split())


def extract_body(text: str) -> dict[str, Any]:
    """``{status, agent, tei_xml?, word_count?, error_msg?}`` of the decoded page (trafilatura
    given bytes guesses their encoding itself); raises :class:`TeiXmlError`."""
    try:
        tei = _extract(text)
        if not tei and text.startswith(_FIRST_MONDAY_DOCTYPE):
            tei = _extract(text[len(_FIRST_MONDAY_DOCTYPE) :])
    except Exception as exc:  # trafilatura raises anything from lxml and its helpers
        return {"status": "trafilatura-parse-error", "agent": AGENT, "error_msg": str(exc)[:1000]}
    if not tei:
        return {"status": "empty-xml", "agent": AGENT}
    return {"status": "success", "agent": AGENT, "tei_xml": tei, "word_count": word_count(tei)}
