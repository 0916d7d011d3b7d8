"""File metadata over the bytes themselves (docs/ingest.md §11): sizes, hashes, libmagic mimetype."""

from __future__ import annotations

import base64
import hashlib
import re
import threading
from typing import Any

import magic

SNIFF_BYTES = 1024 * 1024
_local = threading.local()


def _magic(mime: bool) -> magic.Magic:
    # libmagic handles are not thread-safe: one per thread.
    key = "mime" if mime else "text"
    m = getattr(_local, key, None)
    if m is None:
        m = magic.Magic(mime=mime)
        setattr(_local, key, m)
    return m


def sniff_mimetype(blob: bytes) -> str:
    """The mimetype libmagic sees in (the first MiB of) ``blob``, with the XHTML/JATS refinements."""
    mimetype = _magic(True).from_buffer(blob[:SNIFF_BYTES]) or "application/octet-stream"
    if mimetype in ("application/xml", "text/xml"):
        head = blob[:1024]
        if b"<htm" in head and b'xmlns="http://www.w3.org/1999/xhtml"' in head:
            mimetype = "application/xhtml+xml"
        elif b"<article " in head and b"<html" not in head:
            mimetype = "application/jats+xml"
    return mimetype


def describe(blob: bytes) -> str:
    """libmagic's human description (the file table's ``magic`` column)."""
    return _magic(False).from_buffer(blob[:SNIFF_BYTES])


def hashes(blob: bytes) -> dict[str, Any]:
    return {
        "sha1hex": hashlib.sha1(blob, usedforsecurity=False).hexdigest(),
        "sha256hex": hashlib.sha256(blob).hexdigest(),
        "md5hex": hashlib.md5(blob, usedforsecurity=False).hexdigest(),
    }


def gen_file_metadata(blob: bytes, allow_empty: bool = False) -> dict[str, Any]:
    """Exactly ``{size_bytes, sha1hex, sha256hex, md5hex, mimetype}``; mimetype never from headers."""
    if blob is None or (not blob and not allow_empty):
        raise ValueError("no bytes to describe")
    return {"size_bytes": len(blob), **hashes(blob), "mimetype": sniff_mimetype(blob)}


def sha1_b32(sha1hex: str) -> str:
    """Base32 of the raw 20-byte SHA-1 (CDX ``sha1b32``; the file table key)."""
    return base64.b32encode(bytes.fromhex(sha1hex)).decode("ascii")


def b32_hex(value: str) -> str:
    """A ``sha1:``-prefixed or bare base32 or hex SHA-1 → lowercase hex; anything else → ValueError."""
    value = value.strip().split()[0].lower() if value.strip() else ""
    if value.startswith("sha1:"):
        value = value[5:]
    if len(value) == 40:
        return value
    if len(value) == 32:
        return base64.b32decode(value.upper()).hex()
    raise ValueError("not a base32 or hex SHA-1: %r" % value)


#: Sniffed mimetypes accepted as the terminal document, per ingest type (docs/ingest.md §2).
#: ``zip``/``rar`` are listed without upstream's trailing-space bug.
ACCEPTED_MIMETYPES: dict[str, tuple[str, ...]] = {
    "pdf": ("application/pdf",),
    "xml": ("application/xml", "text/xml", "application/jats+xml"),
    "html": ("text/html", "application/xhtml+xml"),
    "src": (
        "text/x-tex",
        "application/gzip",
        "application/x-bzip",
        "application/x-bzip2",
        "application/zip",
        "application/x-tar",
        "application/msword",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ),
    "component": (
        "image/jpeg",
        "image/tiff",
        "image/png",
        "image/gif",
        "audio/mpeg",
        "video/mp4",
        "video/mpeg",
        "text/plain",
        "text/csv",
        "text/x-r-source",
        "text/tab-separated-values",
        "text/x-rst",
        "application/x-rlang-transport",
        "application/json",
        "application/xml",
        "application/pdf",
        "application/gzip",
        "application/x-bzip",
        "application/x-bzip2",
        "application/x-7z-compressed",
        "application/x-tar",
        "application/zip",
        "application/x-rar",
        "application/vnd.ms-powerpoint",
        "application/vnd.ms-excel",
        "application/msword",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ),
}


#: Declared (HTTP) types that make a body that starts like HTML an HTML document.
HTML_DECLARED = ("text/html", "application/xhtml+xml")
_HTML_START = re.compile(
    rb"(?:\xef\xbb\xbf)?(?:\s|<!--.*?-->)*(?:<!doctype\s+html|<html[\s>]|<head[\s>]|<body[\s>])",
    re.IGNORECASE | re.DOTALL,
)


def starts_like_html(blob: bytes) -> bool:
    """The body opens (after a BOM, whitespace and comments) with an HTML doctype, ``<html>``,
    ``<head>`` or ``<body>``."""
    return _HTML_START.match(blob, 0, 64 * 1024) is not None


def html_by_declaration(sniffed: str, declared: str | None, blob: bytes) -> bool:
    """libmagic called an HTML page something else (``application/javascript`` for a page opening
    with blank lines and inline scripts), but the server said HTML and the bytes start like HTML."""
    return declared in HTML_DECLARED and not is_htmlish(sniffed) and starts_like_html(blob)


def is_htmlish(mimetype: str) -> bool:
    return (
        "html" in mimetype or "xhtml" in mimetype or "application/xml" in mimetype or "text/xml" in mimetype
    )
