"""URL cleaning, fuzzy equality, SURT keys and the blocklists of docs/ingest.md §1 and §12."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit, urlunsplit

from w3lib.url import safe_url_string

from votersdaily import settings as defaults
from votersdaily.plumbing.inputs import shown
from votersdaily.rfc3986 import remove_dot_segments

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

_DEFAULT_PORTS = {"http": 80, "https": 443, "ftp": 21}


#: The defaults of the URL, wall and cookie block lists (INGEST_*_BLOCKLIST in settings.py).
BASE_URL_BLOCKLIST = tuple(defaults.INGEST_URL_BLOCKLIST)
WALL_BLOCKLIST = tuple(defaults.INGEST_WALL_BLOCKLIST)
COOKIE_BLOCKLIST = tuple(defaults.INGEST_COOKIE_BLOCKLIST)


@dataclass(frozen=True)
class Blocklists:
    """The substring block lists one crawl uses: each list from its setting (which replaces the
    default) plus its ``*_EXTRA`` setting (which adds to it)."""

    base_url: tuple[str, ...] = BASE_URL_BLOCKLIST
    wall: tuple[str, ...] = WALL_BLOCKLIST
    cookie: tuple[str, ...] = COOKIE_BLOCKLIST

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Blocklists:
        return cls(
            base_url=configured_list(settings, "INGEST_URL_BLOCKLIST"),
            wall=configured_list(settings, "INGEST_WALL_BLOCKLIST"),
            cookie=configured_list(settings, "INGEST_COOKIE_BLOCKLIST"),
        )


def configured_list(settings: BaseSettings, name: str) -> tuple[str, ...]:
    """``name`` (replacing the default) plus ``name_EXTRA``, empty entries dropped, order kept."""
    values = settings.getlist(name) + settings.getlist(name + "_EXTRA")
    return tuple(dict.fromkeys(v.strip() for v in values if v and v.strip()))


def matches(url: str, patterns: tuple[str, ...]) -> bool:
    """Plain, case-sensitive substring match, as upstream: whether any of ``patterns`` is in ``url``
    (one search of :func:`_any_of`'s expression, not a Python loop over the 34 default entries;
    :func:`matches_each` is the loop, which the tests hold it to)."""
    found = _any_of(patterns)
    return found is not None and found.search(url) is not None


def matches_each(url: str, patterns: tuple[str, ...]) -> bool:
    """:func:`matches` as a loop over the patterns (what it computes, for the tests)."""
    return any(p in url for p in patterns)


@functools.lru_cache(maxsize=64)
def _any_of(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """One expression finding any of ``patterns`` as plain text (each escaped), or None for none; a
    crawl has three block lists, so this is made three times."""
    return re.compile("|".join(map(re.escape, patterns))) if patterns else None


#: Cleaned URLs remembered: a chain cleans each URL it follows, and its terminal URL again for the
#: CDX row's key (:func:`surt`).
_REMEMBERED_URLS = 4096


@functools.lru_cache(maxsize=_REMEMBERED_URLS)
def clean_url(url: str) -> str:
    """WHATWG-style canonical form: lowercase scheme/host, no default or empty port, ``/`` for an
    empty path, dot segments resolved, non-ASCII percent-encoded as UTF-8, IDN → punycode; the
    fragment and query order are kept. A string without a scheme is returned unchanged. A result is
    remembered (:data:`_REMEMBERED_URLS`): a pure function of the string."""
    url = url.strip()
    if "://" not in url:
        return url
    url = safe_url_string(url)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    netloc = parts.netloc
    userinfo, _, hostport = netloc.rpartition("@")
    host, sep, port = hostport.partition(":") if not hostport.startswith("[") else (hostport, "", "")
    if hostport.startswith("["):
        close = hostport.find("]")
        host, port = hostport[: close + 1], hostport[close + 2 :]
        sep = ":" if port else ""
    host = host.lower()
    if sep and (not port or (port.isdigit() and int(port) == _DEFAULT_PORTS.get(scheme))):
        port = ""
    hostport = host + (":" + port if port else "")
    netloc = (userinfo + "@" if userinfo else "") + hostport
    path = remove_dot_segments(parts.path) or "/"
    return urlunsplit((scheme, netloc, path, parts.query, parts.fragment)) + (
        "#" if url.endswith("#") and not parts.fragment else ""
    )


class UnusableUrl(ValueError):
    """A URL read from a response (a ``Location``, a landing page's fulltext link, a sub-resource)
    that no fetch can use; the message quotes it and says why."""

    def as_link(self, technique: str | None) -> str:
        """What the ingest says of a landing page's link found by ``technique`` that it skipped."""
        return "its %s link %s" % (technique, self)


def resolved_url(base: str, link: str, url_length_limit: int = 0) -> str:
    """``link``, read from the response of ``base``, made absolute (``urljoin``); :class:`UnusableUrl`
    when no fetch could use it: it does not parse (an unclosed IPv6 bracket, a port that is no number
    or out of range, an IPv6 literal that is none), or, as an http(s) URL, names no host. Such a URL
    made the hop, its CDX key (:func:`clean_url`) or Scrapy's request raise, and the ingest had no
    result at all; checked here, its ingest fails with a status, or the link is skipped. So is a URL
    longer than ``url_length_limit`` (:func:`over_length_limit`), which Scrapy would drop unsaid."""
    try:
        url = urljoin(base, link.strip())
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is no number in range
        clean_url(url)  # what the hop and the CDX key make of it (an IPv6 literal that is none)
    except ValueError as exc:
        raise UnusableUrl("%s cannot be fetched (%s)" % (shown(link), exc)) from None
    if parts.scheme.lower() in ("http", "https") and not parts.hostname:
        raise UnusableUrl("%s cannot be fetched (it names no host)" % shown(link))
    too_long = over_length_limit(url, url_length_limit)
    if too_long:
        raise UnusableUrl("%s cannot be fetched (%s)" % (shown(link), too_long))
    return url


def over_length_limit(url: str, limit: int) -> str | None:
    """Why a request for ``url`` is longer than ``limit`` (the crawl's URLLENGTH_LIMIT, 0 for none),
    or None. Scrapy's UrlLengthMiddleware drops such a request with a line at INFO and no word to its
    callback, so an ingest whose hop it was had no result at all. Measured as the hop requests it:
    percent-encoded as Scrapy's request encodes it, cleaned (:func:`clean_url`: a redirect's target, a
    PDF link) or not (an html or xml ingest's next link), whichever is longer."""
    if not limit:
        return None
    length = max(len(clean_url(url)), len(safe_url_string(url)))
    if length <= limit:
        return None
    return "%d characters as fetched, over URLLENGTH_LIMIT %d" % (length, limit)


def url_fuzzy_equal(a: str, b: str) -> bool:
    """Equal ignoring scheme, ``www.``, ``:80`` and one trailing slash (misc.url_fuzzy_equal)."""

    def norm(u: str) -> str:
        u = clean_url(u).replace("www.", "").replace(":80/", "/")
        return u.split("://", 1)[1] if "://" in u else u

    x, y = norm(a), norm(b)
    return x == y or (x.rstrip("/") == y.rstrip("/") and abs(len(x) - len(y)) <= 1)


_WWW = re.compile(r"^www\d*\.")


def surt(url: str) -> str:
    """Sort-friendly URI Reordering Transform as used in CDX keys: ``org,plos,journals)/path?a=1&b=2``."""
    parts = urlsplit(clean_url(url))
    host = _WWW.sub("", (parts.hostname or "").lower())
    if re.fullmatch(r"[\d.]+|\[?[0-9a-f:]+\]?", host):
        key = host  # IP addresses are not reversed
    else:
        key = ",".join(reversed([h for h in host.split(".") if h]))
    if parts.port and parts.port != _DEFAULT_PORTS.get(parts.scheme):
        key += ":%d" % parts.port
    path = (parts.path or "/").lower()
    query = "&".join(sorted(q for q in parts.query.lower().split("&") if q))
    return key + ")" + path + ("?" + query if query else "")
