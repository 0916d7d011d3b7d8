"""Download records: one ``http`` entry per hop (headers, status, uri, version, walltime), the content
metadata of the file, and the begin/end timestamps; a failed download keeps its metadata and error.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from scrapy.http import Response

from votersdaily.store import mask_uri

from .uris import child_key

#: Headers never written to records (credentials).
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})


#: Bytes of an error body kept on a failed download record (never the whole body).
EXCERPT_BYTES = 200


def body_excerpt(path: Path) -> dict[str, Any] | None:
    """A short, labelled excerpt of an error body streamed to ``path`` (the file is removed)."""
    try:
        with open(path, "rb") as f:
            head = f.read(EXCERPT_BYTES)
            size = f.seek(0, 2)
    except FileNotFoundError:
        return None
    path.unlink(missing_ok=True)
    if not head:
        return None
    return {
        "label": "body excerpt (first %d of %d bytes)" % (len(head), size),
        "text": head.decode("utf-8", "replace"),
    }


def download_key(seed_key: str, begin: str) -> str:
    """A new key per download of a seed (a stale seed is downloaded again into a new record)."""
    return child_key(seed_key, "download " + begin)


def version_of(response: Response) -> dict[str, Any]:
    """``{major, minor}`` of the response's HTTP version (``file:`` and others: 0.0)."""
    match = re.match(r"HTTP/(\d+)(?:\.(\d+))?", str(getattr(response, "protocol", None) or ""))
    if not match:
        return {"major": 0, "minor": 0}
    return {"major": int(match.group(1)), "minor": int(match.group(2) or 0)}


def headers_of(response: Response) -> dict[str, Any]:
    out = {}
    for name, values in response.headers.items():
        key = name.decode("latin-1").lower()
        if key in SECRET_HEADERS:
            continue
        decoded = [v.decode("latin-1") for v in values]
        out[key] = decoded[0] if len(decoded) == 1 else decoded
    return out


def hop(response: Response) -> dict[str, Any]:
    """The ``http`` metadata of one request/response exchange."""
    return {
        "headers": headers_of(response),
        "status": response.status,
        "uri": mask_uri(response.url),
        "version": version_of(response),
        "walltime": round(float(response.meta.get("download_latency") or 0.0), 6),
    }


def failed_hop(uri: str, error: BaseException) -> dict[str, Any]:
    """Metadata of an exchange that ended without a response (DNS, refused, timeout, too large)."""
    return {
        "headers": {},
        "status": None,
        "uri": mask_uri(uri),
        "version": None,
        "walltime": None,
        "error": "%s: %s" % (type(error).__name__, error),
    }
