"""The hop loop's state and rules (docs/ingest.md §2–3), kept apart from Scrapy so it can be read
and tested on its own. The state lives in ``request.meta`` (JSON-serialisable), never on the
spider, so any front end (a Redis-fed worker) can carry it."""

from __future__ import annotations

from typing import Any

from .filemeta import ACCEPTED_MIMETYPES
from .urls import Blocklists, UnusableUrl, clean_url, matches, resolved_url

#: The default block lists (a crawl passes its own, from settings).
DEFAULT_BLOCKLISTS = Blocklists()

STATE_META = "ingest"
#: Request meta set by the downloader side when a hop's body is not usable, with the reason: over
#: INGEST_MAX_BODY_BYTES (``body-too-large``), or a Content-Encoding: gzip body that does not
#: decode (``bad-gzip-encoding``). The response still reaches the spider, with its status.
TOO_LARGE_META = "ingest_body_too_large"
BAD_GZIP_META = "ingest_bad_gzip"
#: Redirect failures whose terminal is the last URL fetched, with its status code and date
#: (sandcrawler's last CDX row); a redirect refused for its target names the target, never fetched.
CHAIN_FAILURES = ("redirect-loop", "redirects-exceeded", "bad-redirect")


def new_state(request: dict[str, Any]) -> dict[str, Any]:
    base = clean_url(request["base_url"])
    return {
        "request": request,
        "hops": [base],
        "chain": [base],  # URLs of the current redirect chain (loop detection)
        "redirect_chain": [],  # every HTTP redirect followed: {url, status_code, location}
        "redirects": 0,
        "partial": {},  # html_biblio / extract_next_hop found on earlier hops
        # set when the first hop reaches the downloader (a queued request's wait is not its time)
        "started": None,
    }


def before_fetch(url: str, lists: Blocklists = DEFAULT_BLOCKLISTS) -> str | None:
    """Status that stops the ingest before ``url`` is fetched (docs/ingest.md §2), or None."""
    if matches(url, lists.base_url):
        return "skip-url-blocklist"
    if matches(url, lists.wall):
        return "skip-wall"
    if matches(url, lists.cookie):
        return "blocked-cookie"
    return None


def after_fetch(url: str, lists: Blocklists = DEFAULT_BLOCKLISTS) -> str | None:
    """Status from the terminal URL itself (step 6)."""
    if matches(url, lists.base_url):
        return "skip-url-blocklist"
    if matches(url, lists.cookie):
        return "blocked-cookie"
    return None


def redirect_target(
    state: dict[str, Any],
    current_url: str,
    status_code: int,
    location: bytes | str | None,
    max_redirects: int,
    lists: Blocklists = DEFAULT_BLOCKLISTS,
    url_length_limit: int = 0,
) -> tuple[str | None, str | None, str | None]:
    """(next URL, failing status, error message) for a 3xx answer; a ``Location`` no fetch can use
    (:func:`~.urls.resolved_url`, longer than ``url_length_limit`` too) is ``bad-redirect``."""
    if isinstance(location, bytes):
        location = location.decode("latin-1")
    if not location or not location.strip():
        return None, "bad-redirect", "HTTP %d from %s without a Location header" % (status_code, current_url)
    try:
        target = clean_url(resolved_url(current_url, location, url_length_limit))
    except UnusableUrl as exc:
        return (
            None,
            "bad-redirect",
            "HTTP %d from %s to an unusable location: %s" % (status_code, current_url, exc),
        )
    if not target.startswith(("http://", "https://")):
        return (
            None,
            "bad-redirect",
            "HTTP %d from %s to a non-http(s) location %r" % (status_code, current_url, location[:300]),
        )
    state["redirect_chain"].append({"url": current_url, "status_code": status_code, "location": target})
    if target in state["chain"] or target == current_url:
        return None, "redirect-loop", "redirect loop: %s" % " -> ".join(state["chain"] + [target])
    if state["redirects"] >= max_redirects:
        return None, "redirects-exceeded", "more than %d HTTP redirects" % max_redirects
    blocked = after_fetch(target, lists)
    if blocked is None and matches(target, lists.wall):
        blocked = "blocked-wall"
    if blocked:
        return None, blocked, "redirected to %s" % target
    state["redirects"] += 1
    state["chain"].append(target)
    return target, None, None


def add_terminal(state: dict[str, Any], url: str) -> None:
    """A redirect chain contributes only its final URL to ``hops``."""
    if url not in state["hops"]:
        state["hops"].append(url)


def next_url(state: dict[str, Any]) -> str:
    """The URL of the hop the ingest fetches next: the last of its redirect chain (the base URL, a
    redirect's target or a landing page's link: :func:`redirect_target` and :func:`next_hop` put it
    there before its request is made)."""
    return state["chain"][-1]


def next_hop(
    state: dict[str, Any], url: str, max_hops: int, loop_is_stop: bool = False
) -> tuple[str | None, str | None, str | None]:
    """(URL to fetch next, failing status, error message) for an extracted fulltext link.
    With ``loop_is_stop`` a link back into the hops ends hopping quietly (html: we are on the
    fulltext page). As sandcrawler's ``while len(hops) <= max_hops`` loop: the link is recorded,
    and fetched while the hops number at most ``max_hops``."""
    if url in state["hops"]:
        if loop_is_stop:
            return None, None, None
        return None, "link-loop", "repeated: %s" % url
    state["hops"].append(url)
    if len(state["hops"]) > max_hops:
        return None, "max-hops-exceeded", "%d hops reached" % max_hops
    state["chain"] = [url]
    state["redirects"] = 0
    return url, None, None


def hops_exceeded(state: dict[str, Any], max_hops: int) -> bool:
    """Sandcrawler's check after its loop: ``max_hops`` recorded URLs fail even a good last fetch."""
    return len(state["hops"]) >= max_hops


def fetched_refusal(
    url: str, status_code: int, body_length: int, max_body: int, lists: Blocklists = DEFAULT_BLOCKLISTS
) -> tuple[str, str] | None:
    """(status, message) ending the ingest at a fetched hop that is not a redirect, before its body
    is examined: an error status, a blocked terminal URL, an empty or too large body."""
    if status_code not in (200, 226):
        return "terminal-bad-status", "HTTP %d from %s" % (status_code, url)
    status = after_fetch(url, lists)
    if status:
        return status, "terminal URL %s" % url
    if not body_length:
        return "empty-blob", "empty body from %s" % url
    if body_length > max_body:
        return "body-too-large", "%d bytes" % body_length
    return None


def landing_hop(
    state: dict[str, Any],
    url: str,
    biblio: dict[str, Any],
    found: dict[str, Any],
    max_hops: int,
    lists: Blocklists = DEFAULT_BLOCKLISTS,
    unusable: str | None = None,
    url_length_limit: int = 0,
) -> tuple[str | None, str | None, str | None] | None:
    """Where a landing page at ``url`` leads (docs/ingest.md §4): (URL to fetch next, failing status,
    error message), or None when the page is itself the terminal document. ``found`` is the fulltext
    link the extractor found (``pdf_url``/``next_url``); ``unusable`` the link it skipped because no
    fetch can use it (:class:`~.urls.UnusableUrl`), which a ``no-pdf-link`` names. A found link no
    fetch can use (longer than ``url_length_limit`` too) counts as none. The state keeps the first
    page's biblio with a title and, for a PDF ingest, what the extractor found."""
    if biblio.get("title") and "html_biblio" not in state["partial"]:
        state["partial"]["html_biblio"] = biblio
    itype = state["request"]["ingest_type"]
    link = found.get("pdf_url") or found.get("next_url")
    target = None
    if link:
        try:
            target = resolved_url(url, link, url_length_limit)
        except UnusableUrl as exc:
            unusable = exc.as_link(found.get("technique"))
    if itype == "pdf":
        state["partial"]["extract_next_hop"] = found
        if target is None:
            status = "blocked-wall" if matches(url, lists.wall) else "no-pdf-link"
            return None, status, "no PDF link on %s%s" % (url, ": %s" % unusable if unusable else "")
        return next_hop(state, clean_url(target), max_hops)
    if itype in ("xml", "html", "component") and target is not None:
        return next_hop(state, target, max_hops, loop_is_stop=itype == "html")
    return None


def terminal_refusal(
    url: str, mimetype: str, ingest_type: str, lists: Blocklists = DEFAULT_BLOCKLISTS
) -> tuple[str, str] | None:
    """(status, message) refusing a fetched terminal document: a login wall, or a file type this
    ingest type does not accept; None for an acceptable one."""
    if matches(url, lists.wall):
        return "blocked-wall", "terminal URL %s is a login wall" % url
    if mimetype not in ACCEPTED_MIMETYPES[ingest_type]:
        return "wrong-mimetype", "%s is not accepted for %s ingest" % (mimetype, ingest_type)
    return None
