"""Ingest requests (sandcrawler's request shape, docs/ingest.md §1) and where they come from:
``-a url=``, a JSON-lines file, or a database of the store. Sources are plain iterators of dicts so
other front ends (a Redis queue) can feed :meth:`IngestSpider.make_ingest_request` the same way."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from votersdaily.plumbing.inputs import (
    CONTROL,
    CONTROL_IN_TEXT,
    BadLine,
    BadSpiderArgument,
    bounded_lines,
    checked_url,
    input_file,
    shown,
    strict_json,
)

from .urls import over_length_limit

INGEST_TYPES = ("pdf", "xml", "html", "src", "component")
#: What ``-a ingest_type=`` takes: the types, and the legacy ``file`` (read as ``pdf``).
ARGUMENT_INGEST_TYPES = (*INGEST_TYPES, "file")
#: Preferred mimetype per type (what a fetch asks for in ``Accept``).
PREFERRED_MIMETYPE = {
    "pdf": "application/pdf",
    "xml": "text/xml",
    "html": "text/html",
    "src": "application/gzip",
}
MAX_BASE_URL = 8192
#: Sandcrawler's request keys (docs/ingest.md §1): short texts (slugs, identifiers), objects carried
#: along to the result (``ext_ids`` and ``fatcat`` map names to texts), and ``force_recrawl``.
TEXT_KEYS = ("link_source", "link_source_id", "ingest_request_source", "release_stage", "rel", "oa_status")
OBJECT_KEYS = ("ext_ids", "fatcat", "edit_extra")
KNOWN_KEYS = ("base_url", "ingest_type", *TEXT_KEYS, "force_recrawl", *OBJECT_KEYS)
#: Characters of a text field (a DOI is at most a few hundred).
MAX_TEXT = 1024
#: Bytes of one object field as JSON, and of one line of a requests file.
MAX_OBJECT_BYTES = 16 * 1024
MAX_LINE_BYTES = 64 * 1024


class IngestRequestError(ValueError):
    """An ingest request that cannot be processed (missing base_url, unknown ingest_type...)."""


class RequestSourceError(IngestRequestError):
    """Where the requests come from cannot be read (missing file, no such database): the run fails."""


class NoIngestRequests(RequestSourceError):
    """The run was given no requests at all (no ``-a url=``, no ``-a requests=``): a job with
    nothing to do because it was started wrong, which fails the run."""


def _checked_text(key: str, value: Any, limit: int = MAX_TEXT) -> None:
    if not isinstance(value, str):
        raise IngestRequestError("%s must be a string, got %s" % (key, type(value).__name__))
    if len(value) > limit:
        raise IngestRequestError("%s is longer than %d characters: %s" % (key, limit, shown(value)))
    if CONTROL.search(value):
        raise IngestRequestError("%s holds a control character: %s" % (key, shown(value)))


def _checked_object(key: str, value: Any) -> None:
    if not isinstance(value, dict):
        raise IngestRequestError("%s must be a JSON object, got %s" % (key, type(value).__name__))
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if size > MAX_OBJECT_BYTES:
        raise IngestRequestError("%s is larger than %d bytes as JSON (%d)" % (key, MAX_OBJECT_BYTES, size))
    if key == "edit_extra":  # free metadata for fatcat: any JSON, but text that is text
        for text in _strings(value):
            if CONTROL_IN_TEXT.search(text):
                raise IngestRequestError("%s holds a control character: %s" % (key, shown(text)))
        return
    for name, item in value.items():  # ext_ids, fatcat: identifier name -> identifier (or null)
        _checked_text("%s key" % key, name, 64)
        if item is not None:
            _checked_text("%s.%s" % (key, name), item)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for name, item in value.items():
            yield name
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _checked_base_url(raw: dict[str, Any]) -> str:
    base_url = raw.get("base_url")
    if not isinstance(base_url, str) or not base_url.strip():
        raise IngestRequestError(
            "ingest request without a base_url (keys: %s)" % ", ".join(sorted(raw))[:300]
        )
    if len(base_url) > MAX_BASE_URL:
        raise IngestRequestError(
            "base_url is longer than %d characters: %s" % (MAX_BASE_URL, shown(base_url))
        )
    try:
        return checked_url(base_url, "base_url", ("http", "https"))
    except ValueError as exc:
        raise IngestRequestError(str(exc)) from None


def normalize_request(raw: Any) -> dict[str, Any]:
    """Validate a request: known keys only, each of its shape and bounded (a text field's length, an
    object's size, no control characters), base_url an http(s) URL with a host. The legacy type
    ``file`` is rewritten to ``pdf`` inside the request (as upstream); everything else is kept verbatim."""
    if not isinstance(raw, dict):
        raise IngestRequestError("an ingest request must be a JSON object, got %s" % type(raw).__name__)
    unknown = sorted(str(key) for key in raw if key not in KNOWN_KEYS)
    if unknown:
        raise IngestRequestError(
            "unknown key %s; an ingest request has %s"
            % (", ".join(shown(key) for key in unknown[:5]), ", ".join(KNOWN_KEYS))
        )
    _checked_base_url(raw)
    for key in TEXT_KEYS:
        if raw.get(key) is not None:
            _checked_text(key, raw[key])
    for key in OBJECT_KEYS:
        if raw.get(key) is not None:
            _checked_object(key, raw[key])
    if raw.get("force_recrawl") not in (None, True, False):
        raise IngestRequestError(
            "force_recrawl must be true or false, got %s" % shown(str(raw["force_recrawl"]))
        )
    request = dict(raw)
    if request.get("ingest_type", "pdf") == "file":
        request["ingest_type"] = "pdf"
    request.setdefault("ingest_type", "pdf")
    if request["ingest_type"] not in INGEST_TYPES:
        raise IngestRequestError(
            "ingest_type %s is not one of %s" % (shown(str(request["ingest_type"])), ", ".join(INGEST_TYPES))
        )
    return request


def fetchable_request(raw: Any, url_length_limit: int) -> dict[str, Any]:
    """:func:`normalize_request`, with a base_url a crawl whose URLLENGTH_LIMIT is
    ``url_length_limit`` fetches: one longer is a bad request, as one longer than MAX_BASE_URL is
    (Scrapy would drop its start request unsaid). What the crawl checks, and ``ingest enqueue``
    before it queues a request."""
    request = normalize_request(raw)
    too_long = over_length_limit(request["base_url"], url_length_limit)
    if too_long:
        raise IngestRequestError(
            "base_url %s cannot be fetched (%s)" % (shown(request["base_url"]), too_long)
        )
    return request


def from_args(urls: list[str], ingest_type: str = "pdf", **extra: Any) -> Iterator[dict[str, Any]]:
    for url in urls:
        request = {"base_url": url, "ingest_type": ingest_type}
        request.update({k: v for k, v in extra.items() if v is not None})
        yield request


def iter_jsonl(path: str | Path) -> Iterator[tuple[str, dict[str, Any] | Exception]]:
    """(where, request-or-error) per non-empty line; a bad line (not JSON, not UTF-8, longer than
    MAX_LINE_BYTES: never read whole into memory) is an error, not the end."""
    for lineno, line in bounded_lines(path, MAX_LINE_BYTES):
        where = "%s:%d" % (path, lineno)
        if isinstance(line, BadLine):
            yield where, IngestRequestError(str(line))
        elif line.strip():
            try:
                yield where, strict_json(line)
            except ValueError as exc:  # JSONDecodeError, or NaN and the like (strict_json)
                yield where, IngestRequestError("line is not JSON: %s" % exc)


def requests_file(spider: str, value: str) -> Path:
    """The absolute path of ``-a requests=FILE``, or :class:`BadSpiderArgument` (one line, before
    the run) when it is no file to read (:func:`input_file`) or no JSON-lines file: its first line
    is not a JSON object (a list of URLs, a PDF, a JSON array given by mistake). A later bad line is
    one rejected request, as sandcrawler's (the run log lists it)."""
    path = input_file(spider, "requests", value)
    if not path.is_file():
        return path  # a pipe: its lines are the run's, read once
    for lineno, line in bounded_lines(path, MAX_LINE_BYTES):
        if isinstance(line, BadLine):
            problem = str(line).removeprefix("line ")
        elif not line.strip():
            continue
        else:
            try:
                first = json.loads(line)
            except json.JSONDecodeError as exc:
                problem = "is not JSON (%s): %s" % (exc.msg, shown(line, 40))
            else:
                if isinstance(first, dict):
                    return path
                problem = "is a JSON %s, not an object" % _json_kind(first)
        raise BadSpiderArgument(
            "%s: -a requests=%s: %s line %d %s; a requests file holds one ingest request (a JSON object) a line"
            % (spider, value, path, lineno, problem)
        )
    return path


def _json_kind(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


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
