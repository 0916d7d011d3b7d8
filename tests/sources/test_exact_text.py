"""The exact-source-text helpers (JSON members, XML elements), the RSS reader and the HTML helpers,
on the real recordings and on bad input cut from them."""

from __future__ import annotations

import json

import pytest

from tests.conftest import recording
from votersdaily.sources.errors import ErrorPage, MalformedDocument, UnexpectedDocument
from votersdaily.sources.html import enclosing_markup, html_text, link_urls, require_complete_page
from votersdaily.sources.json_text import load_with_text, require
from votersdaily.sources.rss import parse_rfc822, parse_rss, wordpress_excerpt_text
from votersdaily.sources.xml_text import element_texts

FR = recording("gov/federal_register/documents_newest20.json")
FEED = recording("gov/white_house/presidential-actions_feed.xml")
ROLL037 = recording("gov/house_roll_call/clerk-2023-roll037-committee.excerpt.xml")


def test_json_members_keep_their_text():
    text = FR.read_text("utf-8")
    doc = load_with_text(FR.read_bytes())
    assert doc.value == json.loads(text)
    results = require(doc, ("results",), list)
    assert len(results.members) == 20
    for member in results.members:
        assert member.text in text and json.loads(member.text) == member.value
    assert doc["next_page_url"].text == json.dumps(doc.value["next_page_url"])


@pytest.mark.parametrize(
    "body, exception",
    [
        (b'{"a": [1, 2', MalformedDocument),
        (b'{"a": 1,}', MalformedDocument),
        (b'{"a": 1} {"b": 2}', MalformedDocument),
        (b"\xff\xfe{}", MalformedDocument),
        (b"   ", MalformedDocument),
        (b"<!DOCTYPE html><html><head><title>File Not Found</title></head></html>", ErrorPage),
    ],
)
def test_json_bad_input(body, exception):
    with pytest.raises(exception):
        load_with_text(body)


def test_json_shape_checks():
    doc = load_with_text(b'{"results": {"a": 1}}')
    with pytest.raises(UnexpectedDocument):
        require(doc, ("results",), list)
    with pytest.raises(UnexpectedDocument):
        require(doc, ("missing",), list)


def test_xml_element_texts_are_exact():
    body = FEED.read_bytes()
    texts = element_texts(body, "item")
    assert len(texts) == 30 and all(t in body.decode("utf-8") for t in texts)
    assert element_texts(b'<a><m/><m x=">">1</m><p:m xmlns:p="u">2</p:m></a>', "m") == [
        "<m/>",
        '<m x=">">1</m>',
        '<p:m xmlns:p="u">2</p:m>',
    ]


def test_xml_element_texts_refuse_doctypes_and_broken_documents():
    assert element_texts(ROLL037.read_bytes(), "recorded-vote") is None  # has a DOCTYPE: never scanned
    assert element_texts(FEED.read_bytes()[:5000], "item") is None


def test_rss_reader_on_the_real_feed():
    feed = parse_rss(FEED.read_bytes(), "https://www.whitehouse.gov/presidential-actions/feed/")
    assert feed.title == "Presidential Actions – The White House"
    assert feed.last_build.isoformat() == "2026-09-29T21:23:49+00:00"
    assert len(feed.items) == 30 and feed.items[0].guid_is_permalink is False


def test_rfc822_dates():
    assert parse_rfc822("Wed, 22 Jul 2026 14:37:21 GMT").isoformat() == "2026-07-22T14:37:21+00:00"
    assert parse_rfc822("Mon, 05 Oct 2026 15:02:00 -0400").isoformat() == "2026-10-05T15:02:00-04:00"
    assert parse_rfc822("Mon, 05 Oct 2026 15:02:00 -0000").utcoffset().total_seconds() == 0
    assert parse_rfc822("") is None
    with pytest.raises(ValueError):
        parse_rfc822("yesterday")


def test_html_helpers():
    markup = '<p>A&#160;b <a href="/x/eo.pdf">EO</a> <a href="https://e.org/y.PDF#p=2">Y</a> <a href="/z.htm">Z</a></p>'
    assert html_text(markup) == "A b EO Y Z"
    assert link_urls(markup, "https://www.whitehouse.gov/p/") == [
        "https://www.whitehouse.gov/x/eo.pdf",
        "https://e.org/y.PDF#p=2",
    ]
    page = "<tr><td>1</td><td><a href='/a.pdf'>A</a></td></tr>\n<tr><td><a href='/a.pdf'>B</a></td></tr>"
    assert enclosing_markup(page, "/a.pdf", "tr", 1) == "<tr><td><a href='/a.pdf'>B</a></td></tr>"
    assert enclosing_markup(page, "/b.pdf", "tr") is None
    with pytest.raises(MalformedDocument):
        require_complete_page(b"<html><body><table>", "u")
    assert (
        wordpress_excerpt_text(
            '<p>Text [&#8230;]</p>\n<p>The post <a href="u">T</a> appeared first on <a href="v">The White House</a>.</p>'
        )
        == "Text […]"
    )
