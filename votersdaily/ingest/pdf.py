"""Metadata of an accepted PDF with pypdf (the ``pdf_meta`` of the result, the ``pdf0`` family of
the file table), its text with poppler's ``pdftotext`` (:mod:`.pdftext`; pypdf's where poppler gives
none), and its page-0 thumbnail with poppler's ``pdftoppm`` (:mod:`.thumbnail`)."""

from __future__ import annotations

import hashlib
import io
import logging
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from pypdf import PdfReader
from pypdf.errors import PdfReadError

from votersdaily.datetimes import PartialDate
from votersdaily.defaults import DEFAULTS

from . import pdf_pypdf
from .pdftext import pdf_text
from .thumbnail import RENDER_TIMEOUT, PageZeroRender

if TYPE_CHECKING:
    from collections.abc import Mapping

logger = logging.getLogger(__name__)
logging.getLogger("pypdf").setLevel(logging.ERROR)

pdf_pypdf.install()  # pypdf's per-document work done once or in C, its own results

#: The information dictionary's date keys.
_DATE_KEYS = ("CreationDate", "ModDate")
#: A PDF date (ISO 32000-1 §7.9.4): ``D:YYYYMMDDHHmmSSOHH'mm``, every part after the year optional.
_PDF_DATE_RE = re.compile(
    r"(?:D:)?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?"
    r"(?:([Zz])(?:00'?(?:00'?)?)?|([+-])(\d{2})(?:'?(\d{2})'?)?)?"
)


def pdf_date_iso(raw: str) -> str | None:
    """A PDF date as ISO 8601 at the precision it gives, or None when it is not one.

    ``D:20070223175637+02'00'`` is ``2007-02-23T15:56:37Z`` (UTC); ``D:2007`` is ``2007`` and
    ``D:200702`` is ``2007-02`` (the standard's defaults for a missing month or day are not the
    document's); a time without an offset has, per the standard, no known relation to UTC and stays
    a wall time (``2007-02-23T17:56:37``); a time with an offset but not to the second is written
    with that offset, to the minute or hour given.
    """
    m = _PDF_DATE_RE.fullmatch(raw.strip())
    if not m:
        return None
    year, month, day, hour, minute, second, zulu, sign, off_h, off_m = m.groups()
    try:
        stamp = datetime(
            int(year), int(month or 1), int(day or 1), int(hour or 0), int(minute or 0), int(second or 0)
        )
        offset = timedelta(hours=int(off_h or 0), minutes=int(off_m or 0)) * (-1 if sign == "-" else 1)
        zone = timezone(offset) if sign else UTC if zulu else None
    except ValueError:
        return None
    if hour is None:
        return PartialDate(int(year), int(month) if month else None, int(day) if day else None).iso()
    spec = "seconds" if second else "minutes" if minute else "hours"
    if zone is None:
        return stamp.isoformat(timespec=spec)
    if second:
        return stamp.replace(tzinfo=zone).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return stamp.replace(tzinfo=zone).isoformat(timespec=spec)


def extract_pdf(
    blob: bytes,
    max_pages: int = DEFAULTS["INGEST_PDF_MAX_PAGES"],
    max_text_chars: int = 5_000_000,
    thumbnail: bool = DEFAULTS["INGEST_PDF_THUMBNAILS"],
    sha1hex: str | None = None,
) -> tuple[dict[str, Any], str, bytes | None]:
    """(``pdf_meta``, full text, page-0 JPEG or None). ``pdf_meta`` has sandcrawler's keys
    (PdfExtractResult.to_pdftext_dict() as its ingest stores it: ``text`` and ``file_meta`` null,
    ``pdf_info`` the document information dictionary, ``pdf_extra`` page sizes, count, ids and
    version) plus ours (``text_extractor``: ``pdftotext``, ``pypdf`` or None, ``has_text``,
    ``text_chars``, ``word_count``). ``status`` is ``success``, ``encrypted`` or ``parse-error``
    (with ``error_msg``); the text is of the first ``max_pages`` pages, ``max_text_chars`` at most. ``sha1hex``: the blob's SHA-1 when the caller has it already.

    The thumbnail renders in its own process while the text is read (:class:`PageZeroRender`),
    started once the page tree says there is a first page."""
    if sha1hex is None:
        sha1hex = hashlib.sha1(blob, usedforsecurity=False).hexdigest()
    renders: list[PageZeroRender] = []
    try:
        meta, text = _read_pdf(blob, sha1hex, max_pages, max_text_chars, thumbnail, renders)
        thumb = renders[0].result() if renders and meta["status"] == "success" else None
    finally:
        for render in renders:  # one not collected (a parse error, an exception) is stopped
            render.cancel()
    if meta["status"] != "success":
        return meta, "", None
    meta["has_page0_thumbnail"] = thumb is not None
    return meta, text, thumb


def _read_pdf(
    blob: bytes,
    sha1hex: str,
    max_pages: int,
    max_text_chars: int,
    thumbnail: bool,
    renders: list[PageZeroRender],
) -> tuple[dict[str, Any], str]:
    """(``pdf_meta``, text) of :func:`extract_pdf`; the thumbnail's render, when wanted and there
    is a first page, is started and appended to ``renders``."""
    try:
        reader = PdfReader(io.BytesIO(blob), strict=False)
        if reader.is_encrypted:
            try:
                reader.decrypt("")
            except Exception:
                return _pdf_meta(sha1hex, "encrypted", "encrypted PDF"), ""
        page_count = len(reader.pages)
        if thumbnail and page_count:
            renders.append(PageZeroRender(blob, RENDER_TIMEOUT))
        info = _pdf_info(reader.metadata or {})
        first_page = reader.pages[0] if page_count else None
        permanent_id, update_id = _trailer_ids(reader)
        meta_xml = _meta_xml(reader)
        text, text_extractor = _text(blob, reader, page_count, max_pages, max_text_chars)
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, RecursionError, OSError) as exc:
        return _pdf_meta(sha1hex, "parse-error", str(exc)[:1000]), ""
    box = first_page.mediabox if first_page is not None else None  # pypdf builds it at each call
    extra = {
        "page0_height": float(box.height) if box is not None else None,
        "page0_width": float(box.width) if box is not None else None,
        "page_count": page_count,
        "permanent_id": permanent_id,
        "update_id": update_id,
        "pdf_version": (reader.pdf_header or "").replace("%PDF-", "") or None,
    }
    meta = _pdf_meta(sha1hex, "success", None)
    meta.update(
        meta_xml=meta_xml,
        pdf_info=info,
        pdf_extra=extra,
        text_extractor=text_extractor,
        has_text=bool(text.strip()),
        text_chars=len(text),
        word_count=len(text.split()),
    )
    return meta, text


def _text(
    blob: bytes, reader: PdfReader, page_count: int, max_pages: int, max_text_chars: int
) -> tuple[str, str | None]:
    """(the text, what read it): poppler's, as ``pdftotext`` writes it (:mod:`.pdftext`); pypdf's
    where poppler gave none (it could not open a PDF pypdf reads, or is not installed), so that a
    PDF that was read is never stored without its text. No text, read by nothing, without a page
    or with ``max_pages`` 0."""
    if not page_count or max_pages < 1:
        return "", None
    poppler = pdf_text(blob, max_pages)
    if poppler.text is not None:
        return poppler.text[:max_text_chars], "pdftotext"
    logger.debug("pypdf reads the text: %s", poppler.reason)
    texts = []
    chars = 0
    for page in reader.pages[:max_pages]:
        texts.append(page.extract_text() or "")
        chars += len(texts[-1])
        if chars > max_text_chars:
            break
    return "\n\f".join(texts)[:max_text_chars], "pypdf"


def _pdf_meta(sha1hex: str, status: str, error_msg: str | None) -> dict[str, Any]:
    return {
        "key": sha1hex,
        "sha1hex": sha1hex,
        "status": status,
        "file_meta": None,
        "error_msg": error_msg,
        "text": None,
        "has_page0_thumbnail": False,
        "meta_xml": None,
        "pdf_info": None,
        "pdf_extra": None,
        "source": None,
    }


def _pdf_info(info: Mapping[str, Any]) -> dict[str, Any]:
    """The information dictionary with poppler's key names (``Title``, ``CreationDate``, ...);
    dates as ISO 8601 at their own precision (:func:`pdf_date_iso`), the raw value when unreadable."""
    out: dict[str, Any] = {}
    for key in list(info.keys()):
        value = _info(info, key)
        if value is None:
            continue
        name = str(key).lstrip("/")
        out[name] = (pdf_date_iso(value) or value) if name in _DATE_KEYS else value
    return out


def _trailer_ids(reader: PdfReader) -> tuple[str | None, str | None]:
    """The trailer's /ID pair as hex (poppler's ``permanent_id`` and ``update_id``)."""
    try:
        ids = reader.trailer.get("/ID")
        if ids and len(ids) == 2:
            return bytes(ids[0]).hex(), bytes(ids[1]).hex()
    except (TypeError, ValueError, AttributeError):
        pass
    return None, None


def _meta_xml(reader: PdfReader) -> str | None:
    """The catalog's XMP metadata stream as text (poppler's ``metadata``), or None."""
    try:
        stream = reader.trailer["/Root"].get("/Metadata")  # type: ignore[attr-defined]  # pypdf types it PdfObject; /Root is a dictionary
        data = stream.get_object().get_data() if stream is not None else None
    except (KeyError, TypeError, ValueError, AttributeError, PdfReadError):
        return None
    return data.decode("utf-8", "replace") if data else None


def _info(info: Mapping[str, Any], key: str) -> str | None:
    try:
        value = info.get(key)
    except Exception:
        return None
    if value is None:
        return None
    value = str(value).strip()
    return value or None
