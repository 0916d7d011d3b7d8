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


def recorded_urls() -> list[str]:
    """Every absolute link and resource URL of every recorded HTML page (real publishers' and
    government sites' URLs: queries, fragments, ports, percent-escapes, non-ASCII)."""
    import re
    from urllib.parse import urljoin

    from tests.ingest.conftest import recorded_html_pages

    found = []
    for page in recorded_html_pages():
        text = page.read_bytes().decode("utf-8", "replace")
        for link in re.findall(r"""(?:href|src)\s*=\s*["']([^"'<>]{1,500})["']""", text):
            found.append(urljoin("https://recorded.example.org/a/b.html", link.strip()))
    return list(dict.fromkeys(found))


def test_one_search_finds_a_block_list_entry_where_the_loop_does():
    """``matches`` (one expression) answers as the loop over the entries on every recorded URL,
    and on derived variants holding each default entry (the entries have ``?``, ``.``, ``=``:
    each is plain text, never a pattern), against each default list, none, and an empty entry."""
    from votersdaily.ingest.urls import Blocklists, matches, matches_each

    lists = Blocklists()
    entries = lists.base_url + lists.wall + lists.cookie
    urls = recorded_urls()
    assert len(urls) > 500
    # derived variants: each entry inside a recorded URL; the entries' dots as any character
    urls += ["%s%s" % (urls[i % len(urls)], entry) for i, entry in enumerate(entries)]
    urls += [entry.replace(".", "x").replace("?", "") for entry in entries]
    hits = 0
    for patterns in (lists.base_url, lists.wall, lists.cookie, (), ("",), ("a.b", "?x=")):
        for url in urls:
            assert matches(url, patterns) == matches_each(url, patterns), (url, patterns)
            hits += matches_each(url, patterns)
    assert hits > len(entries)


def test_a_remembered_clean_url_is_the_one_made_afresh():
    """``clean_url`` remembers its results: on every recorded URL (and the examples above) the
    remembered result, asked twice, is the one computed without the memory."""
    urls = [*recorded_urls(), "http://BLAH.COM/file.pdf", "https://example.com/\u00fc", "x.org/y"]
    fresh = [clean_url.__wrapped__(url) for url in urls]
    assert [clean_url(url) for url in urls] == fresh
    assert [clean_url(url) for url in urls] == fresh
