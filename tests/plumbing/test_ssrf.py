"""The SSRF guard as Scrapy sees it: the address policy's refusals are plain exceptions (the
laundromat's cleaning workers apply the policy without Scrapy); the middleware raises them as
Scrapy's IgnoreRequest, so Scrapy drops the request instead of logging a download error, under the
policy's class names, which are the run log's vocabulary."""

from __future__ import annotations

import asyncio

import pytest
import scrapy
from scrapy.exceptions import IgnoreRequest

from votersdaily.plumbing import address_policy
from votersdaily.plumbing.address_policy import AddressPolicy
from votersdaily.plumbing.hosts import HostList
from votersdaily.plumbing.ssrf import SsrfGuardMiddleware


def test_the_guard_raises_the_policys_refusals_as_ignore_request_under_their_names():
    only_example = AddressPolicy(allowed_hosts=HostList.parse(["example.org"], "test"))
    cases = (
        (AddressPolicy(), "http://127.0.0.1/admin", address_policy.PrivateAddressRefused),
        (AddressPolicy(), "file:///etc/passwd", address_policy.PrivateAddressRefused),
        (only_example, "http://example.com/", address_policy.HostNotAllowed),
    )
    for policy, url, refusal in cases:
        with pytest.raises(refusal) as plain:
            if policy.refusal(url):  # a host to check: its address is loopback
                policy.check_addresses(url, ["127.0.0.1"])
        assert not isinstance(plain.value, IgnoreRequest), url
        with pytest.raises(IgnoreRequest) as dropped:
            asyncio.run(SsrfGuardMiddleware(policy=policy).process_request(scrapy.Request(url)))
        assert isinstance(dropped.value, refusal), url  # code catching the policy's class catches it
        assert type(dropped.value).__name__ == refusal.__name__, url
        assert str(dropped.value) == str(plain.value), url
