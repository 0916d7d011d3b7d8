"""Which store a URI names, written one way: what a spooled document records as its destination.

A spool file is delivered only to the store it was spooled for, so two spellings of one store must
give one identity and two stores never the same one. The identity keeps no credentials at all (a
store reached as another user, or after a wrong password was fixed, is the same store): scheme and
host in lower case, the port always written (``http`` 80, ``https`` 443), ``localhost``, ``::1`` and
``127.0.0.1`` as ``127.0.0.1``, the path with dot segments removed, unreserved characters decoded and
one trailing ``/``; an embedded store by the absolute path of its file (a relative one under the data
home, votersdaily/locations.py, whatever folder a command runs from), symbolic links resolved. A
database-name prefix (``VOTERSDAILY_DB_PREFIX``: another deployment on the same server) is part of it.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import os
import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from votersdaily.rfc3986 import mask_uri, remove_dot_segments

if TYPE_CHECKING:
    from .base import Store

DEFAULT_PORTS = {"http": 80, "https": 443}
LOOPBACK = "127.0.0.1"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
#: RFC 3986 §2.3: a percent-encoded unreserved character is the character itself.
UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")


#: How an identity names the prefix its databases are under, after the server's identity.
_PREFIXED = "%s (databases %s*)"
_PREFIXED_READ = re.compile(r"^(?P<server>.*) \(databases (?P<prefix>[^ ]*)\*\)$")


def store_identity(uri: str, prefix: str = "") -> str:
    """The one spelling of the store ``uri`` names, its databases under ``prefix``, without credentials
    (never raises: a URI that names no store is its own identity, masked)."""
    text = uri.strip()
    scheme = text.partition(":")[0].lower()
    if scheme == "sqlite":
        server = _embedded(text)
    elif scheme in DEFAULT_PORTS:
        server = _http(text, scheme) or mask_uri(text)
    else:
        server = mask_uri(text)
    return _PREFIXED % (server, prefix) if prefix else server


def server_and_prefix(identity: str) -> tuple[str, str]:
    """The server's identity and the database prefix of a store identity (:func:`store_identity`)."""
    prefixed = _PREFIXED_READ.match(identity)
    return (prefixed["server"], prefixed["prefix"]) if prefixed else (identity, "")


def identity_of(store: Store) -> str:
    """The identity of an open store: its URI and the prefix its databases are under."""
    return store_identity(store.display_uri, store.prefix)


def store_key(identity: str) -> str:
    """A short, file-name-safe key of an identity (spool file names carry it)."""
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()[:16]


def _embedded(text: str) -> str:
    from votersdaily.locations import absolute_store_uri

    from .base import StoreError
    from .embedded import EmbeddedStore

    try:  # a relative file is under the data home, as the store opens it
        path = EmbeddedStore.path_of(absolute_store_uri("sqlite" + text[len("sqlite") :]))
    except StoreError:  # no path at all
        return text
    return "sqlite:///" + (path if path == ":memory:" else os.path.realpath(path))


def _http(text: str, scheme: str) -> str | None:
    parts = urlsplit(text)
    try:
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError:  # not a number, or out of range
        return None
    host = (parts.hostname or "").rstrip(".")
    if not host:
        return None
    host = _host(host)
    netloc = "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)
    return "%s://%s%s" % (scheme, netloc, _path(parts.path))


def _host(host: str) -> str:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        with contextlib.suppress(UnicodeError):
            host = host.encode("idna").decode("ascii")
        return LOOPBACK if host in LOOPBACK_NAMES else host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return LOOPBACK if address.compressed in LOOPBACK_NAMES else address.compressed


def _path(path: str) -> str:
    def decode(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in UNRESERVED else "%" + match.group(1).upper()

    path = remove_dot_segments(PERCENT.sub(decode, path))
    return path.rstrip("/") + "/"
