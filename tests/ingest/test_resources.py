"""Sub-resource filtering (votersdaily/ingest/resources.py) on recorded pages."""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

from tests.ingest.conftest import recorded_html_pages
from votersdaily.ingest.htmldoc import parse_html
from votersdaily.ingest.resources import BLOCKED_HOSTS, BLOCKED_PATHS, is_blocked


def blocked_by_comparison(url: str, blocked_hosts: tuple[str, ...]) -> bool:
    """The rule as it was written before the set lookup: each blocked host compared in turn."""
    host = (urlsplit(url).hostname or "").lower()
    if any(host == h or host.endswith("." + h) for h in blocked_hosts):
        return True
    return bool(BLOCKED_PATHS.search(url))


def _recorded_urls() -> list[str]:
    """Every link and source URL of every recorded HTML page, made absolute."""
    urls = []
    for path in recorded_html_pages():
        doc = parse_html(path.read_bytes(), "https://example.org/a/b", "text/html")
        for element in doc.root.iter("a", "link", "script", "img", "iframe", "source", "embed"):
            value = element.get("href") or element.get("src")
            if value and "://" in urljoin(doc.url, value.strip()):
                urls.append(urljoin(doc.url, value.strip()))
    return urls


def test_the_blocked_host_lookup_answers_as_the_comparison_with_every_host():
    """On every URL of the recorded pages, and on URLs derived from each blocked host (the host,
    a subdomain, the host glued to another name, under another domain, in capitals, with a port),
    with the default list and with one holding odd entries (empty, dotted at either end)."""
    recorded = _recorded_urls()
    assert len(recorded) > 500
    derived = []
    for host in BLOCKED_HOSTS:
        for variant in (host, "cdn." + host, "evil" + host, host + ".evil.org", host.upper(), host + ":8080"):
            derived += ["https://%s/x.js" % variant, "http://%s/" % variant]
    odd = ("", ".example.org", "example.", "org", "a.b.example.org", *BLOCKED_HOSTS[:3])
    odd_urls = [
        "https://example.org/",
        "https://x.example.org/p",
        "https://b.example.org/",
        "https://example./",
    ]
    checked = 0
    for hosts in (BLOCKED_HOSTS, odd, ()):
        for url in recorded + derived + odd_urls:
            assert is_blocked(url, hosts) is blocked_by_comparison(url, hosts), (url, hosts)
            checked += blocked_by_comparison(url, hosts)
    assert checked > len(derived)  # the blocked answers were exercised too
