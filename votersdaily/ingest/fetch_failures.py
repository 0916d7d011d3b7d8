"""The status of an ingest whose fetch failed: the live-fetch equivalents of docs/ingest.md §3."""

from __future__ import annotations

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadTimeoutError,
    IgnoreRequest,
)
from twisted.internet.error import ConnectionRefusedError, DNSLookupError, TCPTimedOutError, TimeoutError

from votersdaily.plumbing.address_policy import HostNotAllowed, PrivateAddressRefused

#: Scrapy >= 2.14 wraps Twisted's download errors in its own classes; both are recognised.
TIMEOUTS = (TimeoutError, TCPTimedOutError, DownloadTimeoutError)


def failure_status(exc: BaseException) -> tuple[str, str]:
    """The status for a fetch that raised ``exc`` (live-fetch equivalents of docs/ingest.md §3)."""
    message = "%s: %s" % (type(exc).__name__, exc)
    text = str(exc)
    if isinstance(exc, PrivateAddressRefused):
        return "blocked-private-address", text
    if isinstance(exc, HostNotAllowed):
        return "skip-host-not-allowed", text
    if "maxsize" in text.lower() or "DOWNLOAD_MAXSIZE" in text or "max size" in text.lower():
        return "body-too-large", text
    if isinstance(exc, IgnoreRequest) and "robots.txt" in text:
        return "blocked-robots", text
    if isinstance(exc, (DNSLookupError, CannotResolveHostError)):
        return "invalid-host-resolution", message
    if isinstance(exc, TIMEOUTS):
        return "read-timeout", message
    if isinstance(exc, (ConnectionRefusedError, DownloadConnectionRefusedError)):
        return "connection-refused", message
    if type(exc).__name__ in ("CancelledError", "DownloadCancelledError"):
        return "body-too-large", message
    return "fetch-error", message
