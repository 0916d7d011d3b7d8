"""Two pieces of pypdf's per-document work done once, or in C, with pypdf's own results.

Profiles of the extraction processes (``examine_hop`` in a loop on the benchmark's PDF and the
recorded ones) showed pypdf repeating work that does not depend on the document:

- :func:`named_encoding_table`: every page's text extraction decodes the 256 bytes of the WinAnsi
  table one by one (``encoding_dict_from_named_encoding("cp1252")``, 0.1-0.2 ms a page): decoded
  once per process, a fresh copy to each caller (pypdf changes a font's table in place).
- :func:`read_hex_string`: a hex string (``<FEFF0041...>``: the trailer's ids, the information
  dictionary's values, the glyph codes of ``TJ`` arrays) is read one byte at a time through four
  Python calls a byte (65 µs for a 48-byte title; a tenth of the recorded PDFs' extraction): read
  here with one regular expression and ``binascii``, the same bytes, the same stream position and
  the same errors.

:func:`install` points pypdf's callers at them, only where pypdf's own functions are in place;
``tests/ingest/test_extraction_corpus.py`` holds the extraction to pypdf's own on every recorded PDF.
They match pypdf from 7.0, the floor in ``pyproject.toml`` (pypdf 5 and 6 raise another error for a
hex string with a character that is not hexadecimal).
"""

from __future__ import annotations

import binascii
import functools
import importlib
import io
import re
from typing import TYPE_CHECKING, Any

from pypdf import _codecs
from pypdf.errors import STREAM_TRUNCATED_PREMATURELY, PdfStreamError
from pypdf.generic import _utils as generic_utils

if TYPE_CHECKING:
    from types import ModuleType

#: pypdf's modules that build a named encoding's table for every page's text (the WinAnsi default
#: font of each ``extract_text``) and for core fonts.
ENCODING_TABLE_USERS = ("pypdf._text_extraction._text_extractor", "pypdf.generic._font")
#: pypdf's module whose object reader reads hex strings.
HEX_STRING_USERS = ("pypdf.generic._data_structures",)

_OWN_TABLE = getattr(_codecs, "encoding_dict_from_named_encoding", None)
_OWN_HEX = getattr(generic_utils, "read_hex_string_from_stream", None)


@functools.cache
def _encoding_table(encoding: str) -> dict[int, str]:
    assert _OWN_TABLE is not None  # noqa: S101 - installed only where pypdf has it
    return _OWN_TABLE(encoding)


def named_encoding_table(encoding: str) -> dict[int, str]:
    """pypdf's ``encoding_dict_from_named_encoding``, each table decoded once per process."""
    return dict(_encoding_table(encoding))


#: What pypdf's reader skips between a hex string's digits (``pypdf._utils.WHITESPACES``).
_WHITESPACE = b"\x00\t\n\f\r "
#: Hex digits and that whitespace: what pypdf reads on until ``>`` or the first other byte.
_HEX_RUN = re.compile(rb"[0-9A-Fa-f\x00\t\n\f\r ]*")


def read_hex_string(stream: Any, forced_encoding: Any = None) -> Any:
    """pypdf's ``read_hex_string_from_stream`` on an in-memory stream (any other goes to pypdf's):
    the byte after the current one (pypdf skips the ``<`` unread) up to ``>``, whitespace dropped,
    an odd last digit followed by ``0``; the stream left after the ``>``, or after the byte that is
    not a hex digit (``PdfStreamError``), or at its end (``PdfStreamError``, truncated)."""
    if not isinstance(stream, io.BytesIO):
        assert _OWN_HEX is not None  # noqa: S101 - installed only where pypdf has it
        return _OWN_HEX(stream, forced_encoding)
    with stream.getbuffer() as view:
        size = len(view)
        start = min(stream.tell() + 1, size)
        end = _HEX_RUN.match(view, start).end()  # type: ignore[union-attr]  # * always matches
        if end >= size:
            stream.seek(size)
            raise PdfStreamError(STREAM_TRUNCATED_PREMATURELY)
        stream.seek(end + 1)
        stop = view[end]
        if stop != ord(">"):
            raise PdfStreamError(f"Invalid hexadecimal character {bytes((stop,))!r} in hex string")
        digits = bytes(view[start:end]).translate(None, _WHITESPACE)
    if len(digits) % 2:
        digits += b"0"
    return generic_utils.create_string_object(binascii.unhexlify(digits), forced_encoding)


def _replace(module_names: tuple[str, ...], name: str, own: object, ours: object) -> None:
    for module_name in module_names:
        try:
            module: ModuleType = importlib.import_module(module_name)
        except ImportError:
            continue
        if own is not None and getattr(module, name, None) is own:
            setattr(module, name, ours)


def install() -> None:
    """Point pypdf's callers at this module's functions (left alone: a pypdf whose modules or
    functions differ from those these replace)."""
    _replace(ENCODING_TABLE_USERS, "encoding_dict_from_named_encoding", _OWN_TABLE, named_encoding_table)
    _replace(HEX_STRING_USERS, "read_hex_string_from_stream", _OWN_HEX, read_hex_string)


def uninstall() -> None:
    """pypdf's own functions back (the tests' reference path)."""
    _replace(ENCODING_TABLE_USERS, "encoding_dict_from_named_encoding", named_encoding_table, _OWN_TABLE)
    _replace(HEX_STRING_USERS, "read_hex_string_from_stream", read_hex_string, _OWN_HEX)
