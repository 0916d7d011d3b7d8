"""File metadata (hashes, keys, MIME type) and what counts as HTML."""

from __future__ import annotations

import pytest

from tests.ingest.conftest import scholarly
from votersdaily.ingest.filemeta import b32_hex, gen_file_metadata, sha1_b32


def test_file_metadata_and_keys():
    meta = gen_file_metadata(scholarly("dummy.pdf").read_bytes())
    assert (
        meta["sha1hex"] == "90ffd2359008d82298821d16b21778c5c39aec36"
        and meta["mimetype"] == "application/pdf"
    )
    assert b32_hex("sha1:" + sha1_b32(meta["sha1hex"])) == meta["sha1hex"]
    assert gen_file_metadata(b"<html><body>hi</body></html>")["mimetype"] == "text/html"
    with pytest.raises(ValueError):
        gen_file_metadata(b"")


def test_starts_like_html():
    from votersdaily.ingest.filemeta import html_by_declaration, starts_like_html

    elife = scholarly("elife_article.html").read_bytes()
    assert starts_like_html(b"\n\n" + elife) and starts_like_html(b"\xef\xbb\xbf<!-- a -->\n <HTML lang=en>")
    assert not starts_like_html(b"var html = '<html>';") and not starts_like_html(b"<htmlx>")
    assert html_by_declaration("application/javascript", "text/html", b"\n" * 8 + elife)
    assert not html_by_declaration("application/javascript", "application/javascript", elife)
    assert not html_by_declaration("application/pdf", "text/html", scholarly("dummy.pdf").read_bytes())
    # INGEST_HTML_BY_DECLARED_TYPE=False: libmagic's word only, as sandcrawler
    from votersdaily.ingest.process import describe_body

    opening = b"\n" * 8 + elife  # DERIVED: the eLife page opening like nature.com's (conftest)
    assert describe_body(opening, "text/html", 10**8).file_meta["mimetype"] == "text/html"
    as_sandcrawler = describe_body(opening, "text/html", 10**8, html_by_header=False)
    assert as_sandcrawler.file_meta["mimetype"] == "application/javascript"
