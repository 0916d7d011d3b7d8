"""From a landing page to its fulltext: declared links and publishers' URL rules."""

from __future__ import annotations

import pytest

from votersdaily.ingest.htmldoc import parse_html


def test_html_fulltext_url_and_its_self_link_rule():
    """HTML → ``html_fulltext_url``: the declared fulltext page wins; a link back to the page itself
    is kept only as a last resort (so the hop loop stops instead of following it)."""
    from votersdaily.ingest.fulltext import HTML_PATTERNS, match_fulltext_url

    page = (
        b'<html><head><meta name="citation_fulltext_html_url" content="/full/1">'
        b'<link rel="alternate" type="text/html" href="/abs/1"></head><body></body></html>'
    )
    assert match_fulltext_url(parse_html(page, "https://journal.example/abs/1"), HTML_PATTERNS) == (
        "https://journal.example/full/1",
        "citation_fulltext_html_url",
    )
    only_self = b'<html><head><meta name="citation_fulltext_html_url" content="/abs/1"></head></html>'
    assert match_fulltext_url(parse_html(only_self, "https://journal.example/abs/1"), HTML_PATTERNS) == (
        "https://journal.example/abs/1",
        "citation_fulltext_html_url",
    )


@pytest.mark.parametrize(
    "url, expected",
    [
        (
            "https://arxiv.org/abs/2101.00001",
            {"pdf_url": "https://arxiv.org/pdf/2101.00001", "technique": "arxiv-url"},
        ),
        (
            "https://www.protocols.io/view/some-protocol-abc1",
            {
                "pdf_url": "https://www.protocols.io/view/some-protocol-abc1.pdf",
                "technique": "protocolsio-url",
            },
        ),
        ("https://osf.io/abc12", {"next_url": "https://osf.io/abc12/download", "technique": "osf-by-url"}),
        ("https://journal.example/article/1", {}),
    ],
)
def test_publisher_rules_by_url(url, expected):
    from votersdaily.ingest.fulltext import extract_publisher_fulltext_url

    assert (
        extract_publisher_fulltext_url(url, parse_html(b"<html><body><p>x</p></body></html>", url))
        == expected
    )
