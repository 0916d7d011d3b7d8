"""The status of an ingest whose fetch failed, per exception."""

from __future__ import annotations

import pytest
from scrapy.exceptions import IgnoreRequest
from twisted.internet.error import ConnectionRefusedError, DNSLookupError, TimeoutError

from votersdaily.ingest.fetch_failures import failure_status
from votersdaily.plumbing.ssrf import PrivateAddressRefused


@pytest.mark.parametrize(
    "exc, status",
    [
        (PrivateAddressRefused("10.0.0.1 is private"), "blocked-private-address"),
        (DNSLookupError("no.such.host"), "invalid-host-resolution"),
        (TimeoutError(), "read-timeout"),
        (ConnectionRefusedError(), "connection-refused"),
        (IgnoreRequest("Forbidden by robots.txt"), "blocked-robots"),
        (ValueError("anything else"), "fetch-error"),
    ],
)
def test_fetch_failure_statuses(exc, status):
    assert failure_status(exc)[0] == status
