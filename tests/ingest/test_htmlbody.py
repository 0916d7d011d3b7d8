"""The body text of an HTML page (trafilatura) and its guard on the TEI."""

from __future__ import annotations

import pytest


def test_tei_that_does_not_parse_is_a_teixml_error():
    """``html-teixml-error`` guards trafilatura's output. No page produces it with trafilatura 2.x:
    the TEI is serialised by lxml (always well-formed) and never nests deeper than the page, which
    trafilatura parses under the same libxml2 limits (a page nested past 256 levels already fails
    inside trafilatura: ``trafilatura-parse-error``, checked below on a real extraction). So the
    guard is checked on TEI text directly."""
    from votersdaily.ingest.htmlbody import TeiXmlError, extract_body, word_count

    assert (
        word_count(
            '<TEI xmlns="http://www.tei-c.org/ns/1.0"><text><body><p>two words</p></body></text></TEI>'
        )
        == 2
    )
    with pytest.raises(TeiXmlError):
        word_count('<TEI xmlns="http://www.tei-c.org/ns/1.0"><text><body><p>unclosed</body></TEI>')
    deep = (
        "<html><body><article><p>%s</p><p>%s deep %s</p></article></body></html>"
        % (" ".join("w%d" % i for i in range(300)), "<b>x " * 300, "</b>" * 300)
    ).encode()
    assert extract_body(deep)["status"] == "trafilatura-parse-error"
