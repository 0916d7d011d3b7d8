"""The address policy's rule for an address: public, or refused."""

from __future__ import annotations

import pytest

from votersdaily.plumbing.address_policy import is_public


@pytest.mark.parametrize(
    "address,public",
    [
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("169.254.169.254", False),
        ("::1", False),
        ("::ffff:192.168.0.1", False),
        ("8.8.8.8", True),
    ],
)
def test_is_public(address, public):
    assert is_public(address) is public
