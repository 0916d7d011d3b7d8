"""Scope thresholds of a fetched page and the platform it says it runs on."""

from __future__ import annotations

import pytest

from tests.ingest.conftest import recorded_html_pages
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


def _recorded_pages() -> list[tuple[str, str]]:
    """(name, text) of every recorded HTML page."""
    return [
        (path.name, parse_html(path.read_bytes(), "https://example.org/a/b", "text/html").text)
        for path in recorded_html_pages()
    ]


#: The footer OJS 2 sites print (as in the test above), spelt as pages and case-folding spell it.
_OJS_FOOTERS = (
    'Powered by <a href="http://pkp.sfu.ca/ojs/" target="_blank">PKP OJS</a>',
    'POWERED BY\n<A HREF="HTTPS://PKP.SFU.CA/OJS/">PKP OJS</A>',
    "powered by <a href='http://p\u212ap.sfu.ca/ojs'>p\u212ap ojs</a>",  # the Kelvin sign matches "k"
    'powered by <a href="http://pkp.sfu.ca/ojs/">PKP  OJS</a>',  # no match: one space only
    "powered by <a href='http://pkp.sfu.ca/ojs/x'>pkp ojs</a>",  # no match: the quote must follow
)


def test_the_ojs_footer_search_answers_as_the_expression_alone_on_every_recorded_page():
    """:func:`powered_by_ojs` skips the case-insensitive search on pages without "pkp" in any case;
    on every recorded page, and on each with every footer spelling appended (derived variants), it
    answers what the expression alone answers."""
    from votersdaily.ingest.scope import _POWERED_BY_OJS, powered_by_ojs

    pages = _recorded_pages()
    assert len(pages) >= 10
    found = 0
    for name, text in pages:
        for variant in (text, *(text + footer for footer in _OJS_FOOTERS)):
            expected = _POWERED_BY_OJS.search(variant) is not None
            assert powered_by_ojs(variant) is expected, name
            found += expected
    assert found == 3 * len(pages)  # the first three footers match, on every page


def test_every_character_the_ojs_search_takes_for_p_or_k_lowercases_to_it():
    """What makes :func:`powered_by_ojs` exact, checked on this Python's regular-expression engine
    over all of Unicode."""
    import re
    import sys

    for letter in "pk":
        same = re.compile(letter, re.IGNORECASE)
        matching = [chr(c) for c in range(sys.maxunicode + 1) if same.fullmatch(chr(c))]
        assert "\u212a" in matching or letter == "p"
        assert {c.lower() for c in matching} == {letter}
