"""Reading gzipped WARC files back, record by record, naming every damaged one by file and offset.

The writer (:mod:`.warc_writer`) gzips each record as a member of its own, so a record is checked on
its own: the member is decompressed (zlib checks its CRC-32 and length), the record's
``WARC-Block-Digest`` is checked, and only then is it handed over. What fails (a flipped byte, a file
cut inside a record, bytes that are no WARC record) becomes a :class:`WarcDamage` naming the file, the
offset where the damage starts and where reading resumed, and reading goes on at the next gzip member
that decompresses (found by its header bytes): one bad byte costs one record, not the rest of the file.
A reason never carries the damaged bytes raw (:func:`printable`).
"""

from __future__ import annotations

import base64
import hashlib
import io
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeadersParser

#: The first bytes of a gzip member (magic and the deflate method).
GZIP_MAGIC = b"\x1f\x8b\x08"
_CHUNK = 1 << 16
#: How much of a reason a message keeps.
REASON_CHARS = 200
#: HTTP status or request lines, unchecked (the block digest has vouched for the bytes).
_HTTP_PARSER = StatusAndHeadersParser([], verify=False)


class DamagedWarc(Exception):
    """A WARC file or one of its records could not be read back (the file and offset are named)."""


def printable(text: str, limit: int = REASON_CHARS) -> str:
    """``text`` with everything but printable ASCII escaped (``\\x1f``, ``\\u00e9``) and cut to
    ``limit`` characters: what a damaged record says may enter a message, never its bytes raw."""
    escaped = "".join(ch if " " <= ch <= "~" else ascii(ch)[1:-1] for ch in text)
    return escaped if len(escaped) <= limit else escaped[: limit - 1] + "…"


@dataclass(frozen=True)
class WarcDamage:
    """Bytes of a WARC file that hold no readable record: from ``offset`` to ``resumed_at`` (None:
    to the end of the file, or the whole file when it could not be opened)."""

    path: Path
    offset: int
    resumed_at: int | None
    reason: str

    def describe(self) -> str:
        where = (
            "reading resumed at offset %d" % self.resumed_at if self.resumed_at is not None else "to its end"
        )
        return "damaged WARC %s at offset %d (%s): %s" % (self.path, self.offset, where, self.reason)

    def covers(self, offset: int) -> bool:
        return self.offset <= offset and (self.resumed_at is None or offset < self.resumed_at)


@dataclass(frozen=True)
class WarcRecordAt:
    """One record that read back whole, where it starts and how many compressed bytes it takes.
    ``record`` is warcio's, with unread streams."""

    path: Path
    offset: int
    length: int
    record: Any


class _BadMember(Exception):
    """A gzip member that does not decompress, or holds no sound WARC record."""


def iter_records(path: Path) -> Iterator[WarcRecordAt | WarcDamage]:
    """Every record of the gzipped WARC file ``path`` in file order, and every stretch of damage in
    between (a file that cannot be opened is one damage at offset 0)."""
    try:
        handle = open(path, "rb")
    except OSError as exc:
        yield WarcDamage(path, 0, None, "cannot be read (%s)" % printable(exc.strerror or str(exc)))
        return
    with handle:
        offset = 0
        while True:
            handle.seek(offset)
            if not handle.read(1):
                return
            try:
                length, data = _member_at(handle, offset)
            except _BadMember as exc:
                resumed = _next_sound_member(handle, offset + 1)
                yield WarcDamage(path, offset, resumed, printable(str(exc)))
                if resumed is None:
                    return
                offset = resumed
                continue
            for record in _records(data):
                yield WarcRecordAt(path, offset, length, record)
            offset += length


def read_record_at(path: Path, offset: int) -> Any:
    """The first record of the gzip member at ``offset`` of ``path`` (checked like :func:`iter_records`);
    raises :class:`DamagedWarc` naming the file and offset when it cannot be read back."""
    try:
        with open(path, "rb") as handle:
            _, data = _member_at(handle, offset)
    except OSError as exc:
        raise DamagedWarc(
            "WARC %s cannot be read (%s)" % (path, printable(exc.strerror or str(exc)))
        ) from None
    except _BadMember as exc:
        raise DamagedWarc("damaged WARC %s at offset %d: %s" % (path, offset, printable(str(exc)))) from None
    return next(_records(data))


def _member_at(handle: BinaryIO, offset: int) -> tuple[int, bytes]:
    """The compressed length of the gzip member at ``offset`` and its decompressed bytes, once every
    record in it read back whole with its block digest right."""
    data, length = _decompress_member(handle, offset)
    if not data.startswith(b"WARC/"):  # (warcio would even unpack a gzip inside the gzip)
        raise _BadMember("not a WARC record: it starts with %r" % data[:40])
    records = 0
    try:
        # The block unparsed (no_record_parse): its digest covers exactly these bytes. (warcio's own
        # check also compares a payload digest, which it gets wrong for records of file: URLs.)
        for record in ArchiveIterator(io.BytesIO(data), no_record_parse=True):
            records += 1
            _check_block_digest(record.rec_headers.get_header("WARC-Block-Digest"), record.raw_stream.read())
        # Then parsed as a caller will read it.
        for record in _records(data):
            record.content_stream().read()
    except _BadMember:
        raise
    except Exception as exc:  # warcio raises its own and parser errors on bytes that are no WARC
        raise _BadMember("not a sound WARC record (%s: %s)" % (type(exc).__name__, exc)) from None
    if not records:
        raise _BadMember("no WARC record in this gzip member")
    return length, data


def _check_block_digest(declared: str | None, block: bytes) -> None:
    """``WARC-Block-Digest`` (``algorithm:value``, base32 or hex) against the block's bytes."""
    if not declared:
        return
    algorithm, _, value = declared.partition(":")
    try:
        digest = hashlib.new(algorithm.lower().replace("-", ""), block).digest()
    except ValueError:
        return  # an algorithm this Python does not have: nothing to check against
    if value.upper() not in (base64.b32encode(digest).decode("ascii"), digest.hex().upper()):
        raise _BadMember("the record's block digest does not match its bytes (%s)" % declared)


def _records(data: bytes) -> Iterator[Any]:
    """warcio's records of a checked member (each must be read before the next is asked for), with
    their HTTP headers parsed also when the target is no http(s) URL (a replayed ``file:`` recording),
    which warcio leaves unparsed."""
    for record in ArchiveIterator(io.BytesIO(data)):
        if record.http_headers is None and (record.content_type or "").startswith("application/http"):
            record.http_headers = _HTTP_PARSER.parse(record.raw_stream)
        yield record


def _decompress_member(handle: BinaryIO, offset: int) -> tuple[bytes, int]:
    handle.seek(offset)
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
    out: list[bytes] = []
    fed = 0
    while not inflater.eof:
        chunk = handle.read(_CHUNK)
        if not chunk:
            raise _BadMember("the file ends inside this record (cut short)")
        fed += len(chunk)
        try:
            out.append(inflater.decompress(chunk))
        except zlib.error as exc:
            raise _BadMember("the gzip member does not decompress (%s)" % exc) from None
    return b"".join(out), fed - len(inflater.unused_data)


def _next_sound_member(handle: BinaryIO, start: int) -> int | None:
    """The offset of the first gzip member at or after ``start`` that holds a sound record."""
    position = start
    while True:
        candidate = _find(handle, GZIP_MAGIC, position)
        if candidate is None:
            return None
        try:
            _member_at(handle, candidate)
        except _BadMember:
            position = candidate + 1
            continue
        return candidate


def _find(handle: BinaryIO, needle: bytes, start: int) -> int | None:
    position = start
    while True:
        handle.seek(position)
        block = handle.read(_CHUNK + len(needle) - 1)
        if len(block) < len(needle):
            return None
        found = block.find(needle)
        if found >= 0:
            return position + found
        position += _CHUNK
