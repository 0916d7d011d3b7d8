"""Ingest requests (sandcrawler's request shape, docs/ingest.md §1) and where they come from:
``-a url=``, a JSON-lines file, or a database of the store. Sources are plain iterators of dicts so
other front ends (a Redis queue) can feed :meth:`IngestSpider.make_ingest_request` the same way."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

INGEST_TYPES = ("pdf", "xml", "html", "src", "component")
#: Preferred mimetype per type (what a fetch asks for in ``Accept``).
PREFERRED_MIMETYPE = {
    "pdf": "application/pdf",
    "xml": "text/xml",
    "html": "text/html",
    "src": "application/gzip",
}
MAX_BASE_URL = 8192


class IngestRequestError(ValueError):
    """An ingest request that cannot be processed (missing base_url, unknown ingest_type...)."""


class RequestSourceError(IngestRequestError):
    """Where the requests come from cannot be read (missing file, no such database): the run fails."""


def normalize_request(raw: Any) -> dict[str, Any]:
    """Validate a request; the legacy type ``file`` is rewritten to ``pdf`` inside the request (as
    upstream), everything else is kept verbatim."""
    if not isinstance(raw, dict):
        raise IngestRequestError("an ingest request must be a JSON object, got %s" % type(raw).__name__)
    base_url = raw.get("base_url")
    if not isinstance(base_url, str) or not base_url.strip():
        raise IngestRequestError("ingest request without a base_url: %s" % json.dumps(raw)[:300])
    if len(base_url) > MAX_BASE_URL:
        raise IngestRequestError("base_url longer than %d characters" % MAX_BASE_URL)
    if not base_url.strip().lower().startswith(("http://", "https://")):
        raise IngestRequestError("base_url is not an http(s) URL: %r" % base_url[:300])
    request = dict(raw)
    if request.get("ingest_type", "pdf") == "file":
        request["ingest_type"] = "pdf"
    request.setdefault("ingest_type", "pdf")
    if request["ingest_type"] not in INGEST_TYPES:
        raise IngestRequestError(
            "ingest_type %r is not one of %s" % (request["ingest_type"], ", ".join(INGEST_TYPES))
        )
    return request


def from_args(urls: list[str], ingest_type: str = "pdf", **extra: Any) -> Iterator[dict[str, Any]]:
    for url in urls:
        request = {"base_url": url, "ingest_type": ingest_type}
        request.update({k: v for k, v in extra.items() if v is not None})
        yield request


def iter_jsonl(path: str | Path) -> Iterator[tuple[str, dict[str, Any] | Exception]]:
    """(where, request-or-error) per non-empty line; a bad line is an error, not the end."""
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = "%s:%d" % (path, lineno)
            try:
                yield where, json.loads(line)
            except json.JSONDecodeError as exc:
                yield where, IngestRequestError("line is not JSON: %s" % exc)


def from_store_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """An ``ingest_requests`` document → the request (without CouchDB's keys)."""
    return {k: v for k, v in doc.items() if not k.startswith("_")}


def request_doc_id(request: dict[str, Any]) -> str:
    """Id of a request in the ``ingest_requests`` database (link_source, link_source_id, type, url)."""
    return "%s|%s|%s|%s" % (
        request.get("link_source") or "",
        request.get("link_source_id") or "",
        request.get("ingest_type") or "pdf",
        request["base_url"],
    )
