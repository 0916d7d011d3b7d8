"""The RFC 3986 pieces shared by the laundromat, the ingest, the store and the scrapyd client."""

from __future__ import annotations

import pytest

from votersdaily.rfc3986 import mask_uri, remove_dot_segments, service_base


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # RFC 3986 §5.2.4's own two walk-throughs, and §5.4.1's reference paths merged with /b/c/
        ("/a/b/c/./../../g", "/a/g"),
        ("mid/content=5/../6", "mid/6"),
        ("/b/c/./g", "/b/c/g"),
        ("/b/c/g/", "/b/c/g/"),
        ("/b/c/.", "/b/c/"),
        ("/b/c/./", "/b/c/"),
        ("/b/c/..", "/b/"),
        ("/b/c/../g", "/b/g"),
        ("/b/c/../..", "/"),
        ("/b/c/../../../g", "/g"),
        ("/b/c/g.", "/b/c/g."),
        ("/b/c/.g", "/b/c/.g"),
        ("/b/c/..g", "/b/c/..g"),
        ("/b/c/./../g", "/b/g"),
        ("/b/c/g/./h", "/b/c/g/h"),
        ("/b/c/g;x=1/../y", "/b/c/y"),
        ("..", ""),
        ("./a", "a"),
    ],
)
def test_remove_dot_segments(path, expected):
    assert remove_dot_segments(path) == expected


def test_mask_uri_hides_only_the_password():
    assert mask_uri("http://admin:s3cret@127.0.0.1:5984/db?q#f") == "http://admin:***@127.0.0.1:5984/db?q#f"
    assert mask_uri("redis://:pw@[::1]:6379/0") == "redis://:***@[::1]:6379/0"
    assert mask_uri("http://admin@host/") == "http://admin@host/"


def test_service_base_moves_credentials_into_basic_auth():
    assert service_base("http://deployer:s3cret%21@127.0.0.1:6800") == (
        "http://127.0.0.1:6800/",
        ("deployer", "s3cret!"),
    )
    assert service_base("https://[::1]:6984/prefix/?x=1#f") == ("https://[::1]:6984/prefix/", None)
