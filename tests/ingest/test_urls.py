"""URL cleaning (docs/ingest.md §12 examples) and fuzzy URL equality."""

from __future__ import annotations

import pytest

from votersdaily.ingest.urls import clean_url, url_fuzzy_equal


@pytest.mark.parametrize(
    "raw,clean",
    [
        ("http://BLAH.COM/file.pdf", "http://blah.com/file.pdf"),
        ("https://opensky.ucar.edu:/islandora/x", "https://opensky.ucar.edu/islandora/x"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com:80/a/./b/../c", "http://example.com/a/c"),
        ("https://example.com/\u00fc", "https://example.com/%C3%BC"),
        ("https://example.com/a#frag", "https://example.com/a#frag"),
        ("no-scheme.example.com/x", "no-scheme.example.com/x"),
    ],
)
def test_clean_url(raw, clean):
    assert clean_url(raw) == clean


def test_url_fuzzy_equal():
    a = "http://www.annalsofian.org/article.asp?issn=0972-2327;year=2017"
    assert url_fuzzy_equal(a, a.replace("www.", "").replace("http:", "https:"))
    assert url_fuzzy_equal("http://thing.com", "https://thing.com/")
    assert not url_fuzzy_equal("http://thing.com", "http://thing.com/blue")
