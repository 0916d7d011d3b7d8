"""Seed keys: URIs normalised per RFC 3986 §6.2.2 (plus scheme-based rules), then MD5.

Syntax-based normalisation (§6.2.2): lower-case scheme and host (6.2.2.1), upper-case hex digits of
percent-encodings (6.2.2.1), decode percent-encoded unreserved characters (6.2.2.2), remove dot
segments (6.2.2.3). Scheme-based normalisation (§6.2.3) for http, https, ftp, ws, wss: drop the
default port and an empty port, and give an empty path with an authority the path ``/``.
The key is the MD5 of the UTF-8 bytes of the normalised string (hex, lower case).
"""

from __future__ import annotations

import hashlib
import re

from votersdaily.rfc3986 import remove_dot_segments

#: RFC 3986 appendix B.
_URI_RE = re.compile(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$", re.S)
_PCT_RE = re.compile(r"%([0-9A-Fa-f]{2})")
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*$")
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
DEFAULT_PORTS = {"http": "80", "https": "443", "ftp": "21", "ws": "80", "wss": "443"}


def _normalise_percent(part: str) -> str:
    def repl(match: re.Match[str]) -> str:
        octet = int(match.group(1), 16)
        if octet in _UNRESERVED:
            return chr(octet)
        return "%" + match.group(1).upper()

    return _PCT_RE.sub(repl, part)


def is_relative(uri: str) -> bool:
    """True when ``uri`` has no scheme (a relative reference: it cannot be fetched)."""
    match = _URI_RE.match(uri.strip())
    scheme = match.group(1) if match else None
    return not (scheme and _SCHEME_RE.match(scheme))


def normalise_uri(uri: str) -> str:
    """The RFC 3986 §6.2.2 (+ §6.2.3 for well-known schemes) normal form of ``uri``."""
    match = _URI_RE.match(uri.strip())
    assert match is not None, "every component of the RFC 3986 appendix B pattern is optional"  # noqa: S101 - invariant
    scheme, authority, path, query, fragment = match.groups()
    if scheme is not None and not _SCHEME_RE.match(scheme):
        # Not a scheme after all (e.g. "a b:c"): treat the whole as a path.
        scheme, authority, path = None, None, uri.strip()
    if scheme is not None:
        scheme = scheme.lower()
    if authority is not None:
        userinfo, sep, hostport = authority.rpartition("@")
        host, port = hostport, None
        if hostport.startswith("["):
            end = hostport.find("]")
            if end >= 0:
                host, rest = hostport[: end + 1], hostport[end + 1 :]
                port = rest[1:] if rest.startswith(":") else None
        elif ":" in hostport:
            host, port = hostport.rsplit(":", 1)
        host = _normalise_percent(host.lower())  # lower first: the hex digits of %XX stay upper case
        if port is not None and (port == "" or port == DEFAULT_PORTS.get(scheme or "")):
            port = None
        authority = (
            (_normalise_percent(userinfo) + sep if sep else "")
            + host
            + (":" + port if port is not None else "")
        )
    path = _normalise_percent(path)
    if scheme is not None or path.startswith("/"):
        path = remove_dot_segments(path)
    if authority is not None and path == "" and scheme in DEFAULT_PORTS:
        path = "/"
    out = ""
    if scheme is not None:
        out += scheme + ":"
    if authority is not None:
        out += "//" + authority
    out += path
    if query is not None:
        out += "?" + _normalise_percent(query)
    if fragment is not None:
        out += "#" + _normalise_percent(fragment)
    return out


def md5_hex(text: str) -> str:
    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def uri_key(uri: str) -> str:
    """The seed key of ``uri``: MD5 (hex) of its normal form."""
    return md5_hex(normalise_uri(uri))


def child_key(parent_key: str, name: str) -> str:
    """The key of a record derived from ``parent_key`` (archive entries, downloads): MD5 of "parent name"."""
    return md5_hex("%s %s" % (parent_key, name))
