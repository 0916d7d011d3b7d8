"""Sub-resources of an HTML page (docs/ingest.md §10): what a browser would fetch to render it, made
absolute, with trackers and ads filtered out and duplicates removed."""

from __future__ import annotations

import functools
import re
from typing import Any
from urllib.parse import urlsplit

from votersdaily import settings as defaults

from .htmldoc import HtmlDoc
from .urls import UnusableUrl, resolved_url

#: (tag, attribute, resource_type, extra condition) in upstream's vocabulary.
_SOURCES = (
    ("script", "src", "script"),
    ("link", "href", "stylesheet"),
    ("img", "src", "image"),
    ("audio", "src", "audio"),
    ("video", "src", "media"),
    ("source", "src", "media"),
    ("track", "src", "media"),
    ("embed", "src", "media"),
    ("iframe", "src", "subdocument"),
)
_TAGS = {tag: (attr, kind) for tag, attr, kind in _SOURCES}
_SKIP_PREFIXES = ("about:", "data:", "magnet:", "urn:", "mailto:", "javascript:")

#: Hosts never fetched as sub-resources, by default (INGEST_RESOURCE_DOMAIN_BLOCKLIST); host
#: rules match the host and its subdomains.
BLOCKED_HOSTS = tuple(defaults.INGEST_RESOURCE_DOMAIN_BLOCKLIST)
BLOCKED_PATHS = re.compile(
    r"(/favicon\.ico(?:$|[?#])|apis\.google\.com/js/plusone|www\.google\.com/recaptcha/|/js/_getUACode\.js"
    r"|cairn-int\.info//about\.php\?cairn_guest=|/platform/track/|/ga\.js(?:$|\?)|/analytics\.js(?:$|\?)"
    r"|/gtag/js|/pixel(?:\.gif)?(?:$|\?)|/beacon(?:$|[/?]))",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=8)
def _host_set(blocked_hosts: tuple[str, ...]) -> frozenset[str]:
    return frozenset(blocked_hosts)


def is_blocked(url: str, blocked_hosts: tuple[str, ...] = BLOCKED_HOSTS) -> bool:
    """The URL's host is a blocked host or under one (``host == h or host.endswith("." + h)``), or
    it matches the tracker paths. The host and each of its suffixes after a dot are looked up in a
    set, not compared with every blocked host (33 by default) in turn."""
    host = (urlsplit(url).hostname or "").lower()
    hosts = _host_set(blocked_hosts)
    if host in hosts:
        return True
    dot = host.find(".")
    while dot >= 0:
        if host[dot + 1 :] in hosts:
            return True
        dot = host.find(".", dot + 1)
    return bool(BLOCKED_PATHS.search(url))


def _usable(value: str | None) -> str | None:
    if not value:
        return None
    value = value.strip()
    if not value or value.lower().startswith(_SKIP_PREFIXES):
        return None
    if "/" not in value and "." not in value and " " in value:
        return None  # placeholder text ("Ce fichier n'existe pas")
    for doubled in ("https://https://", "http://http://"):
        if value.startswith(doubled):
            value = value[len(doubled) // 2 :]
    return value


def extract_resources(
    doc: HtmlDoc, blocked_hosts: tuple[str, ...] = BLOCKED_HOSTS, unusable: list[str] | None = None
) -> list[dict[str, Any]]:
    """``[{url, resource_type}]`` in document order, deduplicated on (url, type); none from
    ``blocked_hosts`` or matching the tracker paths, nor one whose URL no fetch can use
    (:class:`~.urls.UnusableUrl`: why is added to ``unusable``)."""
    seen: set[tuple[str, str]] = set()
    found: list[dict[str, Any]] = []
    for element in doc.root.iter(*_TAGS):
        attr, kind = _TAGS[element.tag]
        if element.tag == "link":
            rel = (element.get("rel") or "").lower().split()
            if "stylesheet" not in rel:
                continue
        value = _usable(element.get(attr))
        if value is None:
            continue
        try:
            url = resolved_url(doc.url, value)
        except UnusableUrl as exc:
            if unusable is not None:
                unusable.append(str(exc))
            continue
        if not url.startswith(("http://", "https://")) or is_blocked(url, blocked_hosts):
            continue
        key = (url, kind)
        if key not in seen:
            seen.add(key)
            found.append({"url": url, "resource_type": kind})
    return found
