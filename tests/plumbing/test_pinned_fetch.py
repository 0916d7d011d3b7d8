"""The blocking, pinned fetch outside the reactor (votersdaily/plumbing/pinned_fetch.py), against a
local site and a second local server standing for an internal service (the laundromat's ``hostile``
fixture)."""

from __future__ import annotations

import pytest

from votersdaily.plumbing.address_policy import AddressPolicy, HostNotAllowed, PrivateAddressRefused
from votersdaily.plumbing.hosts import HostList
from votersdaily.plumbing.pinned_fetch import DownloadTooLarge, fetch_limited


def test_fetch_limited_applies_the_policy_outside_the_reactor(site, hostile):
    """The blocking fetcher (JSON-LD contexts in worker processes): the allowed site is read, a
    redirect to the internal server is refused before any connection, sizes are bounded."""
    context = site.route("/context.jsonld", '{"@context": {"name": "http://schema.org/name"}}')
    to_internal = site.route("/ctx-redirect", status=302, headers={"Location": hostile.url + "/secret.nt"})
    policy = AddressPolicy(private_hosts=HostList.parse(["127.0.0.1:%d" % site.port], "test"))
    fetched = fetch_limited(context, policy, max_bytes=1000, timeout=10)
    assert fetched.body.startswith(b'{"@context"') and fetched.url == context
    with pytest.raises(PrivateAddressRefused):
        fetch_limited(to_internal, policy, max_bytes=1000, timeout=10)
    for url in (hostile.url + "/secret.nt", "file:///etc/passwd", "http://169.254.169.254/"):
        with pytest.raises(PrivateAddressRefused):
            fetch_limited(url, policy, max_bytes=1000, timeout=10)
    with pytest.raises(DownloadTooLarge):
        fetch_limited(context, policy, max_bytes=10, timeout=10)
    with pytest.raises(HostNotAllowed):
        fetch_limited(
            context,
            AddressPolicy(allowed_hosts=HostList.parse(["example.org"], "test")),
            max_bytes=10,
            timeout=10,
        )
    assert hostile.hits == {}
