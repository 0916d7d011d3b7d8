"""Character encodings: find a document's encoding and recode it to UTF-8, recording every lossy step.

Order (as LL2): a byte-order mark (UTF-8/16/32); then the XML declaration; then the HTTP charset; then
strict UTF-8; then an HTML ``<meta charset>``; then a detector (uchardet or charset-normalizer; JSON is
UTF-8 by RFC 8259, so a JSON document is never given to it). Undecodable bytes become U+FFFD and each
is recorded (offset and bytes, the first ``MAX_RECORDED`` of them, plus the total) instead of being
dropped silently as ``iconv -c`` did; an encoding only the detector vouches for is recorded with the
first byte that is not UTF-8.

The recoded text's own declaration is made true: an XML declaration's ``encoding`` and an HTML
``<meta charset>`` naming another encoding are rewritten to UTF-8 (and recorded), so no parser
falls back to a declaration that no longer holds.
"""

from __future__ import annotations

import codecs
import multiprocessing
import re
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import native

if TYPE_CHECKING:
    from collections.abc import Callable
    from multiprocessing.connection import Connection

CHUNK = 1 << 20
SNIFF_BYTES = 65536
MAX_RECORDED = 100

BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_XML_DECL = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z][A-Za-z0-9._\-]*)["']""")
#: An HTML ``<meta charset=…>`` or ``<meta http-equiv=content-type content="…; charset=…">``.
_META_CHARSET = re.compile(rb"""<meta\b[^>]*?charset\s*=\s*["']?([A-Za-z][A-Za-z0-9._:\-]*)""", re.I)
#: The same, in text: group 2 is the declared name (rewritten to UTF-8).
_TEXT_XML_DECL = re.compile(r"""^(\ufeff?\s*<\?xml[^>]*?encoding\s*=\s*["'])([^"']*)(["'])""")
_TEXT_META = re.compile(r"""(<meta\b[^>]*?charset\s*=\s*["']?)([A-Za-z][A-Za-z0-9._:\-]*)""", re.I)
#: Where a declaration can be: the prolog / the start of an HTML head.
DECLARATION_CHARS = 8192


@dataclass
class Recoded:
    path: Path
    encoding: str
    #: Where the encoding came from: bom, xml-declaration, http, detector, default.
    source: str
    number_of_replacements: int = 0
    replacements: list[dict[str, Any]] = field(default_factory=list)
    number_of_chars: int = 0
    #: Declarations rewritten to UTF-8 (``{"declaration": "xml"|"meta", "was": name}``).
    declarations: list[dict[str, Any]] = field(default_factory=list)
    #: Why the encoding may be wrong (a detector's guess for bytes that are not UTF-8), else None.
    encoding_note: str | None = None
    #: Lines of the recoded text and their ending (counted in the pass that checks or recodes it).
    lines: LineCounts = field(default_factory=lambda: LineCounts())  # noqa: PLW0108 - defined below

    def as_record(self) -> dict[str, Any]:
        return {
            "encoding": self.encoding,
            "encoding_source": self.source,
            "encoding_note": self.encoding_note,
            "number_of_replacements": self.number_of_replacements,
            "replacements": self.replacements,
            "declarations_rewritten": self.declarations,
            "number_of_lines": self.lines.number_of_lines(),
            "newline": self.lines.newline(),
        }


@dataclass
class LineCounts:
    """Characters and line endings of a text seen in pieces (UTF-8 bytes or str), in the same pass
    that validates or recodes it: no extra read of a large document."""

    chars: int = 0
    lf: int = 0
    cr: int = 0
    crlf: int = 0
    #: The first and the last character seen ("" before any): a CR LF may straddle two pieces.
    first: str = ""
    last: str = ""

    def add(self, piece: bytes | str, chars: int) -> None:
        if not piece:
            return
        if isinstance(piece, bytes):
            text_first, text_last = chr(piece[0]), chr(piece[-1])
            lf, cr, crlf = piece.count(b"\n"), piece.count(b"\r"), piece.count(b"\r\n")
        else:
            text_first, text_last = piece[0], piece[-1]
            lf, cr, crlf = piece.count("\n"), piece.count("\r"), piece.count("\r\n")
        self.merge(LineCounts(chars, lf, cr, crlf, text_first, text_last))

    def merge(self, other: LineCounts) -> None:
        """``other`` counted the text right after this one."""
        if not other.first:
            return
        joined = self.last == "\r" and other.first == "\n"
        self.chars += other.chars
        self.lf += other.lf
        self.cr += other.cr
        self.crlf += other.crlf + joined
        self.first = self.first or other.first
        self.last = other.last

    def newline(self) -> str | None:
        """The most common line ending (crlf, lf or cr), None without any."""
        counts = ((self.crlf, "crlf"), (self.lf - self.crlf, "lf"), (self.cr - self.crlf, "cr"))
        best = max(counts)
        return best[1] if best[0] else None

    def number_of_lines(self) -> int:
        ended = self.lf + self.cr - self.crlf
        return ended + (1 if self.last and self.last not in "\r\n" else 0)


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name.strip().strip("\"'")).name
    except LookupError:
        return None


def charset_of(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a Content-Type header, if any."""
    if not content_type:
        return None
    match = re.search(r"charset\s*=\s*\"?([^\s;\"]+)", content_type, re.I)
    return match.group(1) if match else None


def detect_encoding(head: bytes, http_charset: str | None = None) -> tuple[str, str]:
    """(Python codec name, source) for a document starting with ``head``."""
    for bom, name in BOMS:
        if head.startswith(bom):
            return name, "bom"
    match = _XML_DECL.match(head[:1024])
    if match:
        codec = _codec(match.group(1).decode("ascii"))
        if codec and codec not in ("utf-16", "utf-32"):  # without a BOM these declarations lie
            return codec, "xml-declaration"
    codec = _codec(http_charset)
    if codec:
        return codec, "http"
    if first_invalid_utf8(head) is None:
        return "utf-8", "detector"
    match = _META_CHARSET.search(head[:DECLARATION_CHARS])
    codec = _codec(match.group(1).decode("ascii")) if match else None
    if codec and codec not in ("utf-16", "utf-32"):
        return codec, "html-meta"
    if head.lstrip(b" \t\r\n")[:1] in (b"{", b"["):
        return "utf-8", "json"  # RFC 8259 §8.1: JSON is UTF-8; a bad byte is a replacement, not cp1250
    codec = _detect(head)
    if codec:
        return codec, "detector"
    return "cp1252", "default"


def first_invalid_utf8(head: bytes) -> int | None:
    """The offset of the first byte of ``head`` that is not UTF-8 (a sequence cut at its end is fine)."""
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(head) - 3 and exc.reason == "unexpected end of data":
            return None
        return exc.start
    return None


def declare_utf8(text: str) -> tuple[str, list[dict[str, Any]]]:
    """``text`` (the start of a document) with its XML declaration and HTML meta charsets saying
    UTF-8; the declarations that said otherwise."""
    changed: list[dict[str, Any]] = []

    def rewrite(kind: str) -> Callable[[re.Match[str]], str]:
        def sub(match: re.Match[str]) -> str:
            if _codec(match.group(2)) in ("utf-8", "ascii") or len(changed) >= MAX_RECORDED:
                return match.group(0)
            changed.append({"declaration": kind, "was": match.group(2)})
            return match.group(1) + "UTF-8" + (match.group(3) if kind == "xml" else "")

        return sub

    head, rest = text[:DECLARATION_CHARS], text[DECLARATION_CHARS:]
    head = _TEXT_XML_DECL.sub(rewrite("xml"), head, count=1)
    head = _TEXT_META.sub(rewrite("meta"), head)
    return head + rest, changed


def _detect(head: bytes) -> str | None:
    """uchardet (through faust-cchardet, as the original laundromat), else charset-normalizer."""
    try:
        import cchardet
    except ImportError:
        cchardet = None
    if cchardet is not None:
        found = cchardet.detect(head).get("encoding")
        if found:
            return _codec(found)
    from charset_normalizer import from_bytes

    best = from_bytes(head).best()
    return _codec(best.encoding) if best is not None else None


_state = threading.local()


def _record_error(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise TypeError("laundromat-record only handles decoding errors, not %r" % exc)
    bad = exc.object[exc.start : exc.end]
    _state.count += 1
    if len(_state.found) < MAX_RECORDED:
        _state.found.append({"offset": _state.base + exc.start, "bytes": bytes(bad).hex()})
    return "\ufffd", exc.end


codecs.register_error("laundromat-record", _record_error)


def recode_file(src: Path, dst: Path, http_charset: str | None = None) -> Recoded:
    """Recode ``src`` to UTF-8 at ``dst``; when ``src`` already is clean UTF-8 it is used as is."""
    with open(src, "rb") as f:
        head = f.read(SNIFF_BYTES)
    encoding, source = detect_encoding(head, http_charset)
    note = None
    if source in ("detector", "default") and encoding not in ("utf-8", "ascii"):
        note = "not UTF-8 (byte %d); %s is the %s's guess" % (first_invalid_utf8(head) or 0, encoding, source)
    if encoding in ("utf-8", "ascii"):
        counts = _valid_utf8_chars(src)
        if counts is not None:
            declared = _redeclared_copy(src, dst, head)
            return Recoded(
                path=src if declared is None else dst,
                encoding=encoding,
                source=source,
                number_of_chars=counts.chars,
                declarations=declared or [],
                lines=counts,
            )
        encoding = "utf-8"
    _state.count, _state.found, _state.base = 0, [], 0
    consumed = 0
    counts = LineCounts()
    declared = None
    with open(src, "rb") as inp, open(dst, "w", encoding="utf-8", newline="") as out:
        if encoding == "utf-8-sig":  # its decoder reports offsets past the BOM: skip the BOM here
            consumed = len(inp.read(len(codecs.BOM_UTF8)))
            encoding = "utf-8"
        decoder = codecs.getincrementaldecoder(encoding)(errors="laundromat-record")
        while True:
            chunk = inp.read(CHUNK)
            # Offsets of bad bytes are relative to the bytes the decoder holds back from the last
            # chunk (a sequence cut at the boundary) followed by this chunk.
            _state.base = consumed - len(decoder.getstate()[0])
            text = decoder.decode(chunk, final=not chunk)
            if declared is None and text:
                text, declared = declare_utf8(text)
            if text:
                out.write(text)
                counts.add(text, len(text))
            if not chunk:
                break
            consumed += len(chunk)
    return Recoded(
        path=dst,
        encoding=encoding,
        source=source,
        number_of_replacements=_state.count,
        replacements=list(_state.found),
        number_of_chars=counts.chars,
        declarations=declared or [],
        encoding_note=note,
        lines=counts,
    )


def _redeclared_copy(src: Path, dst: Path, head: bytes) -> list[dict[str, Any]] | None:
    """For a UTF-8 file whose declaration names another encoding: a copy at ``dst`` with the
    declaration made true, and what it said; None (no copy) when it tells no lie."""
    start = head[:DECLARATION_CHARS]
    if not (_XML_DECL.match(start) or _META_CHARSET.search(start)):
        return None
    cut = len(start)
    while cut and cut < len(head) and head[cut] & 0xC0 == 0x80:  # not inside a character
        cut -= 1
    text, declared = declare_utf8(head[:cut].decode("utf-8", "surrogateescape"))
    if not declared:
        return None
    with open(src, "rb") as inp, open(dst, "wb") as out:
        inp.seek(cut)
        out.write(text.encode("utf-8", "surrogateescape"))
        shutil.copyfileobj(inp, out, CHUNK)
    return declared


#: Documents at least this large are checked by two processes (one per half).
PARALLEL_CHECK_BYTES = 64 << 20


def _valid_utf8_chars(path: Path) -> LineCounts | None:
    """The characters and line endings of ``path`` when it is valid UTF-8, else None. A large document is
    checked in two halves at once (split at a character boundary), the second in a forked process."""
    size = path.stat().st_size
    if size < PARALLEL_CHECK_BYTES or not _can_fork():
        return _utf8_chars(path, 0, size)
    with open(path, "rb") as f:
        f.seek(size // 2)
        # Move the split past continuation bytes (10xxxxxx) to the start of a character.
        mid = size // 2 + next((i for i, b in enumerate(f.read(4)) if b & 0xC0 != 0x80), 0)
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_utf8_chars_to, args=(path, mid, size, send), daemon=True)
    child.start()
    send.close()
    first = _utf8_chars(path, 0, mid)
    try:
        second = recv.recv()
    except EOFError:
        second = _utf8_chars(path, mid, size)  # the child died: check the half here
    recv.close()
    child.join()
    if first is None or second is None:
        return None
    first.merge(second)
    return first


def _can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods() and not multiprocessing.current_process().daemon


def _utf8_chars_to(path: Path, start: int, end: int, conn: Connection) -> None:
    conn.send(_utf8_chars(path, start, end))
    conn.close()


def _utf8_chars(path: Path, start: int, end: int) -> LineCounts | None:
    """The characters and line endings in bytes ``start``-``end`` of ``path`` when valid UTF-8, else None."""
    if native.available():
        return _native_utf8_chars(path, start, end)
    decoder = codecs.getincrementaldecoder("utf-8")()
    counts = LineCounts()
    try:
        with open(path, "rb") as f:
            f.seek(start)
            left = end - start
            while True:
                chunk = f.read(min(CHUNK, left))
                left -= len(chunk)
                counts.add(chunk, len(decoder.decode(chunk, final=not chunk)))
                if not chunk:
                    return counts
    except UnicodeDecodeError:
        return None


def _native_utf8_chars(path: Path, start: int, end: int) -> LineCounts | None:
    """:func:`_utf8_chars` by the compiled validator (one pass, no decoded text)."""
    counts = LineCounts()
    buffer = bytearray(CHUNK)
    carry = b""  # a sequence cut by the end of the last chunk
    with open(path, "rb", buffering=0) as f:
        f.seek(start)
        left = end - start
        while left > 0:
            n = f.readinto(memoryview(buffer)[: min(CHUNK, left)])
            if not n:
                break
            left -= n
            piece = carry + buffer[:n] if carry else memoryview(buffer)[:n]
            valid, chars, lf, cr, crlf = native.utf8_counts(piece)
            carry = bytes(piece[valid:])
            if carry:
                try:  # the start of a sequence the next chunk completes, or an invalid one
                    codecs.utf_8_decode(carry, "strict", False)
                except UnicodeDecodeError:
                    return None
            if valid:
                counts.merge(LineCounts(chars, lf, cr, crlf, chr(piece[0]), chr(piece[valid - 1])))
    return None if carry else counts
