"""The address policy's rule for an address: public, or refused."""

from __future__ import annotations

import pytest

from votersdaily.plumbing.address_policy import _normal_address, is_public, literal_address


@pytest.mark.parametrize(
    "address,public",
    [
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("169.254.169.254", False),
        ("::1", False),
        ("::ffff:192.168.0.1", False),
        ("8.8.8.8", True),
        # IPv6 addresses a relay or translator takes to an IPv4 host: judged by that host too
        ("2002:7f00:1::", False),  # 6to4 of 127.0.0.1 (Python calls it global)
        ("2002:c0a8:101::1", False),  # 6to4 of 192.168.1.1
        ("2002:a9fe:a9fe::", False),  # 6to4 of 169.254.169.254, the cloud metadata address
        ("2002:808:808::1", True),  # 6to4 of 8.8.8.8
        ("64:ff9b::7f00:1", False),  # NAT64 of 127.0.0.1
        ("64:ff9b::a00:1", False),  # NAT64 of 10.0.0.1
        ("64:ff9b::808:808", True),  # NAT64 of 8.8.8.8 (an IPv6-only host's DNS64 answer)
        ("::127.0.0.1", False),  # IPv4-compatible (deprecated)
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", False),  # Teredo
        ("2606:4700:4700::1111", True),
    ],
)
def test_is_public(address, public):
    assert is_public(address) is public


ADDRESSES = [
    "127.0.0.1",
    "10.1.2.3",
    "169.254.169.254",
    "::1",
    "::ffff:192.168.0.1",
    "8.8.8.8",
    "fe80::1%eth0",
]


def test_remembered_judgements_are_the_fresh_ones():
    """The crawl asks about the same addresses for every request: the remembered answer is the
    uncached function's, asked again or not, and a literal's list is the caller's own."""
    for _ in range(2):
        assert [is_public(a) for a in ADDRESSES] == [is_public.__wrapped__(a) for a in ADDRESSES]
        for host in ["0:0::1", "127.0.0.1", "example.org", "8.8.8.8", "::ffff:192.168.0.1"]:
            assert _normal_address(host) == _normal_address.__wrapped__(host)
    first = literal_address("0:0::1")
    assert first == ["::1"]
    first.append("10.0.0.1")  # a caller that changes its list changes nobody else's
    assert literal_address("0:0::1") == ["::1"]
    assert literal_address("example.org") is None
