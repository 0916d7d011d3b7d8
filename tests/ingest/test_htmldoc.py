"""Decoding an HTML page: BOM, HTTP header, meta in the head, then detection."""

from __future__ import annotations

from tests.ingest.conftest import scholarly


def test_decoding_order_bom_http_meta_in_head_detection():
    """DERIVED from the PLOS recording (its charset meta removed, conftest.PLOS_CHARSET_META)."""
    from votersdaily.ingest.htmldoc import decode_html

    from .conftest import PLOS_CHARSET_META

    plos = scholarly("plos_one_article.html").read_bytes().replace(PLOS_CHARSET_META, b"")
    assert decode_html(plos)[0] == "utf-8"  # valid UTF-8, nothing declared
    assert decode_html(b"\xef\xbb\xbf" + plos, "text/html; charset=iso-8859-1")[0] == "utf-8"  # BOM first
    assert decode_html(plos, "text/html; charset=iso-8859-1")[0] == "cp1252"  # then HTTP (as browsers)
    late = plos.replace(b"</head>", b'<meta charset="windows-1252"></head>', 1)
    assert late.index(b'<meta charset="windows-1252">') > 4096
    assert decode_html(late)[0] == "cp1252"  # then a meta anywhere in the head
    utf16 = plos.replace(b"</head>", b'<meta charset="utf-16"></head>', 1)
    assert decode_html(utf16)[0] == "utf-8"  # a meta readable as ASCII cannot mean UTF-16
    after_head = plos.replace(b"</body>", b'<meta charset="windows-1252"></body>', 1)
    assert decode_html(after_head)[0] == "utf-8"  # not one in the body
    # bytes that are not UTF-8 and declare nothing: Windows-1252, as browsers
    encoding, text = decode_html(scholarly("genders_g58_fairlie.html").read_bytes())
    assert encoding == "cp1252" and "Hitchcock\u2019s Rope" in text
