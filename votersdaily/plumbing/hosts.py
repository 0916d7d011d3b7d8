"""The host lists of the fetch policies (``INGEST_ALLOWED_HOSTS``, ``INGEST_PRIVATE_HOSTS``,
``LAUNDROMAT_ALLOWED_HOSTS``, ``LAUNDROMAT_PRIVATE_HOSTS``): one shape and one parser for all four.

An entry is ``host`` (every port of that host) or ``host:port`` (that port only); a host is a name,
an IPv4 address or an IPv6 address (``::1``, or ``[::1]:8080`` with a port). A URL without a port
has its scheme's (80, 443). An entry that could never match a URL (a scheme, a path, a bad port, no
host) is refused when the setting is read: kept, it would refuse everything, or let through what the
operator meant to keep out. No Scrapy here: the laundromat's cleaning workers unpickle these lists.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

_LABEL = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")
_PORT = re.compile(r"^[0-9]{1,5}$")


class BadHostEntry(ValueError):
    """A host list entry that can never match a URL; the message names the setting and the entry."""


#: Hosts whose normal form is remembered: the SSRF guard asks about the same few hosts for every
#: request of a crawl (each time an IP address parse, which raises for every name).
_REMEMBERED_HOSTS = 4096


@functools.lru_cache(maxsize=_REMEMBERED_HOSTS)
def normal_host(host: str) -> str:
    """The form hosts are compared in: lower case, no brackets or trailing dot, IP addresses in their
    canonical form (``0:0::1`` is ``::1``), names in their ASCII (IDNA) form. Remembered
    (:data:`_REMEMBERED_HOSTS`): a pure function of the string."""
    host = host.strip().strip("[]").rstrip(".").lower()
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def _valid_name(host: str) -> bool:
    return 0 < len(host) <= 253 and all(_LABEL.match(label) for label in host.split("."))


def parse_entry(entry: str, setting: str) -> tuple[str, int | None]:
    """``(host, port or None)`` of one entry, or :class:`BadHostEntry` saying why it cannot match."""
    text = entry.strip()

    def bad(why: str) -> BadHostEntry:
        return BadHostEntry(
            "%s: %r %s; entries are host or host:port (e.g. 127.0.0.1:8080, example.org, [::1]:8080)"
            % (setting, entry, why)
        )

    if "://" in text or text.lower().startswith(("http:", "https:", "file:", "ftp:")):
        raise bad("has a scheme")
    if any(c in text for c in "/?#"):
        raise bad("has a path")
    if "@" in text:
        raise bad("has a user name")
    if "*" in text:
        raise bad("has a wildcard (name each host)")
    if not text.isprintable() or any(c.isspace() for c in text):
        raise bad("has spaces or control characters")
    host, port = text, None
    if text.startswith("["):
        inside, closing, rest = text[1:].partition("]")
        if not closing or (rest and not rest.startswith(":")):
            raise bad("is not [IPv6 address] or [IPv6 address]:port")
        host, port = inside, rest[1:] if rest else None
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise bad("has no IPv6 address between the brackets") from None
    elif text.count(":") > 1:
        try:
            ipaddress.IPv6Address(text)
        except ValueError:
            raise bad("is not an IPv6 address (write [address]:port for a port)") from None
    elif ":" in text:
        host, port = text.split(":")
    number = None
    if port is not None:
        if not _PORT.match(port) or not 0 < int(port) < 65536:
            raise bad("has a port that is not a number from 1 to 65535")
        number = int(port)
    if not host.strip("[]"):
        raise bad("has no host")
    normal = normal_host(host)
    try:
        ipaddress.ip_address(normal)
    except ValueError:
        if not _valid_name(normal):
            raise bad("is not a host name") from None
    return normal, number


@dataclass(frozen=True)
class HostList:
    """Hosts with every port allowed, and ``(host, port)`` pairs; picklable, empty by default."""

    any_port: frozenset[str] = frozenset()
    ports: frozenset[tuple[str, int]] = frozenset()

    @classmethod
    def parse(cls, entries: Iterable[str], setting: str) -> HostList:
        """The list a setting gives (blank entries ignored, so an empty setting is an empty list)."""
        any_port, ports = set(), set()
        for entry in entries:
            if not entry.strip():
                continue
            host, port = parse_entry(entry, setting)
            if port is None:
                any_port.add(host)
            else:
                ports.add((host, port))
        return cls(frozenset(any_port), frozenset(ports))

    def __bool__(self) -> bool:
        return bool(self.any_port or self.ports)

    def matches(self, host: str, port: int) -> bool:
        if not self:  # no list (the default): nothing to normalise
            return False
        host = normal_host(host)
        return host in self.any_port or (host, port) in self.ports


#: The empty list (no host named): a default for dataclass fields.
NO_HOSTS = HostList()
