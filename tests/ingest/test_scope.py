"""Scope thresholds of a fetched page and the platform it says it runs on."""

from __future__ import annotations

import pytest

from votersdaily.ingest.htmldoc import parse_html
from votersdaily.ingest.scope import guess_scope


def test_scope_rules():
    doc = parse_html(b"<html><head></head><body>x</body></html>", "http://example.com/a/b")
    assert guess_scope("http://example.com/", doc, {}, 5000, None) == "homepage-domain"
    assert guess_scope("http://example.com/a/b", doc, {}, 19, None) == "stub"
    assert guess_scope("http://example.com/a/b", doc, {}, 501, "wordpress") == "article-fulltext"
    assert guess_scope("http://example.com/a/b", doc, {}, 501, None) == "unknown"
    assert guess_scope("http://example.com/a/b", doc, {"title": "x"}, 1201, "ojs3") == "article-fulltext"
    assert (
        guess_scope("http://example.com/a/b", doc, {"title": "x"}, 1201, "ojs3", ojs_fulltext_fix=False)
        == "fulltext"
    )
    assert (
        guess_scope("http://example.com/a/b", doc, {"html_fulltext_url": "https://example.com/c"}, 9, None)
        == "landingpage"
    )


@pytest.mark.parametrize(
    "footer, platform",
    [
        (b'<p>Powered by <a href="http://pkp.sfu.ca/ojs/" target="_blank">PKP OJS</a></p>', "ojs"),
        (b'<p>powered by <a href="https://pkp.sfu.ca/ojs/">pkp ojs</a></p>', "ojs"),
        (b"<p>Powered by a PKP-free CMS</p>", None),
    ],
)
def test_ojs_footer_is_recognised_in_any_case(footer, platform):
    from votersdaily.ingest.scope import guess_platform

    doc = parse_html(
        b"<html><head><title>t</title></head><body>%s</body></html>" % footer, "http://example.com/"
    )
    assert guess_platform(doc) == platform
