"""Seed keys (RFC 3986 §6.2.2 vectors), sitemaps and semantic sitemaps, staleness, state machine."""

from __future__ import annotations

import gzip
import hashlib
import itertools
from datetime import UTC, datetime

import pytest

from votersdaily.laundromat import states
from votersdaily.laundromat.seeds import interval_for, is_due, is_stale, new_seed
from votersdaily.laundromat.sitemaps import SitemapError, looks_like_sitemap, parse_sitemap
from votersdaily.laundromat.uris import is_relative, normalise_uri, remove_dot_segments, uri_key

# RFC 3986 §6.2.2 examples and docs/laundromat.md §1's vectors.
NORMALISATION = [
    ("HTTP://www.EXAMPLE.com/%7euser/a/./b/../c", "http://www.example.com/~user/a/c"),
    ("http://example.com/a%2fb", "http://example.com/a%2Fb"),  # reserved stays encoded, hex upper-cased
    ("eXAMPLE://a/./b/../b/%63/%7bfoo%7d", "example://a/b/c/%7Bfoo%7D"),  # §6.2.2 example
    ("http://example.com/%41%42%2D%5F%2E%7E", "http://example.com/AB-_.~"),  # unreserved decoded
    ("http://a/b/c/./../../g", "http://a/g"),
    ("http://ex.org", "http://ex.org/"),  # scheme-based: empty path
    ("http://ex.org:80/x", "http://ex.org/x"),  # scheme-based: default port
    ("https://ex.org:443/x", "https://ex.org/x"),
    ("http://ex.org:8080/x", "http://ex.org:8080/x"),
    ("http://User@Ex.ORG/P?Q=%7e#F", "http://User@ex.org/P?Q=~#F"),  # userinfo, path, query keep case
    ("file:///tmp/a/../b.nt", "file:///tmp/b.nt"),
    ("http://Ex%c3%A9.ORG/", "http://ex%C3%A9.org/"),  # host lower-cased, then its percent hex upper-cased
]
# RFC 3986 §5.2.4 / §5.4 dot-segment removal.
DOT_SEGMENTS = [("/a/b/c/./../../g", "/a/g"), ("mid/content=5/../6", "mid/6"), ("/../a", "/a"), ("/.", "/")]


@pytest.mark.parametrize("uri,expected", NORMALISATION)
def test_rfc3986_normalisation(uri, expected):
    assert normalise_uri(uri) == expected
    assert uri_key(uri) == hashlib.md5(expected.encode("utf-8")).hexdigest()


@pytest.mark.parametrize("path,expected", DOT_SEGMENTS)
def test_remove_dot_segments(path, expected):
    assert remove_dot_segments(path) == expected


def test_equivalent_uris_share_a_key():
    assert uri_key("HTTP://Example.COM:80") == uri_key("http://example.com/")
    assert uri_key("http://example.com/%7Ea") == uri_key("http://example.com/~a")
    assert uri_key("http://example.com/a") != uri_key("http://example.com/A")


def test_relative_uris():
    for uri in ("relative/dump.nt", "/abs/path", "//host/x", "dump.nt.gz"):
        assert is_relative(uri)
        seed = new_seed(uri)
        assert seed["relative"] is True and not is_due(seed)
    assert not is_relative("http://x/y") and not is_relative("file:///x")


SEMANTIC = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
  xmlns:sc="http://sw.deri.org/2007/07/sitemapextension/scschema.xsd">
  <url><loc>http://ex.org/page</loc><lastmod>2026-01-02</lastmod><changefreq>monthly</changefreq>
       <priority>0.8</priority></url>
  <sc:dataset>
    <sc:datasetLabel>DBpedia</sc:datasetLabel>
    <sc:datasetURI>http://ex.org/void#ds</sc:datasetURI>
    <sc:linkedDataPrefix sc:slicing="subject-object">http://ex.org/resource/</sc:linkedDataPrefix>
    <sc:dataDumpLocation>http://ex.org/dump1.nt.gz</sc:dataDumpLocation>
    <sc:dataDumpLocation>http://ex.org/dump2.ttl.bz2</sc:dataDumpLocation>
    <changefreq>weekly</changefreq>
  </sc:dataset>
</urlset>
"""
INDEX = b"""<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>http://ex.org/s1.xml.gz</loc><lastmod>2026-05-01T10:00:00+00:00</lastmod></sitemap>
  <sitemap><loc>http://ex.org/s2.xml</loc></sitemap>
</sitemapindex>
"""


@pytest.mark.parametrize("compress", [False, True])
def test_semantic_sitemap(compress):
    body = gzip.compress(SEMANTIC) if compress else SEMANTIC
    assert looks_like_sitemap(body)
    sm = parse_sitemap(body)
    assert sm.kind == "urlset"
    assert [(u.loc, u.lastmod, u.changefreq, u.priority) for u in sm.urls] == [
        ("http://ex.org/page", "2026-01-02", "monthly", 0.8)
    ]
    (ds,) = sm.datasets
    assert ds.label == "DBpedia" and ds.uri == "http://ex.org/void#ds"
    assert ds.linked_data_prefixes == ["http://ex.org/resource/"]
    assert ds.data_dumps == ["http://ex.org/dump1.nt.gz", "http://ex.org/dump2.ttl.bz2"]
    assert ds.changefreq == "weekly"


@pytest.mark.parametrize("compress", [False, True])
def test_sitemap_index_and_text(compress):
    sm = parse_sitemap(gzip.compress(INDEX) if compress else INDEX)
    assert sm.kind == "sitemapindex"
    assert [(s.loc, s.lastmod) for s in sm.sitemaps] == [
        ("http://ex.org/s1.xml.gz", "2026-05-01T10:00:00+00:00"),
        ("http://ex.org/s2.xml", None),
    ]
    text = parse_sitemap(b"http://ex.org/a.nt\n\nhttp://ex.org/b.ttl\n")
    assert text.kind == "text" and [u.loc for u in text.urls] == ["http://ex.org/a.nt", "http://ex.org/b.ttl"]


def test_not_a_sitemap_and_entity_bomb_refused():
    with pytest.raises(SitemapError):
        parse_sitemap(b"<rss><channel/></rss>")
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>'
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>&b;</loc></url></urlset>'
    )
    sm = parse_sitemap(bomb)  # entities are not expanded
    assert all("aaaaa" not in u.loc for u in sm.urls)
    with pytest.raises(SitemapError):
        parse_sitemap(gzip.compress(b" " * (52_428_800 + 10)))


NOW = datetime(2026, 10, 2, 18, 0, tzinfo=UTC)


def test_staleness():
    seed = new_seed("http://ex.org/d.nt", interval=interval_for("daily"), now=NOW)
    assert seed["processed"] is None and is_stale(seed, NOW) and is_due(seed, NOW)
    seed["processed"] = "2026-10-01T18:00:01Z"  # processed + 1 day > now
    assert not is_stale(seed, NOW) and not is_due(seed, NOW)
    seed["processed"] = "2026-10-01T17:59:59Z"  # processed + 1 day < now
    assert is_stale(seed, NOW) and is_due(seed, NOW)
    seed["processed"] = "2026-10-01T18:00:00Z"  # equal: not yet stale (strictly less than)
    assert not is_stale(seed, NOW)
    assert (
        interval_for("weekly") == 7 * 86400
        and interval_for("bogus", 5.0) == 5.0
        and interval_for(None, 3.0) == 3.0
    )
    assert is_due(dict(seed, status=states.DOWNLOADING), NOW)  # interrupted downloads are redone


def test_state_machine_names_and_transitions():
    path = [
        "added",
        "downloading",
        "filed",
        "unarchiving",
        "unarchived",
        "guessing",
        "guessed",
        "parsing",
        "parsed",
    ]
    for a, b in itertools.pairwise(path):
        states.check_transition(a, b)
    states.check_transition("unarchiving", "depleted")
    states.check_transition("added", "downloading")
    states.check_transition("downloading", "filed")
    with pytest.raises(states.IllegalTransition):
        states.check_transition("added", "parsed")
    with pytest.raises(states.IllegalTransition):
        states.check_transition("parsed", "parsing")
