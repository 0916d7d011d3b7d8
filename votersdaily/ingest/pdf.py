"""Text and metadata of an accepted PDF with pypdf (the ``pdf_meta`` of the result, the ``pdf0``
family of the file table)."""

from __future__ import annotations

import io
import logging
import re
from datetime import UTC, datetime

from pypdf import PdfReader
from pypdf.errors import PdfReadError

logging.getLogger("pypdf").setLevel(logging.ERROR)

_PDF_DATE = re.compile(r"D:(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?([Zz+\-])?(\d{2})?'?(\d{2})?")


def parse_pdf_date(value: str | None) -> str | None:
    """``D:20070223175637+02'00'`` → ``2007-02-23T15:56:37Z`` (UTC); unparseable → None."""
    if not value:
        return None
    m = _PDF_DATE.match(str(value).strip())
    if not m:
        return None
    year, month, day, hour, minute, second = (
        int(g) if g else d for g, d in zip(m.groups()[:6], (0, 1, 1, 0, 0, 0), strict=True)
    )
    try:
        stamp = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        return None
    sign, oh, om = m.group(7), m.group(8), m.group(9)
    if sign in ("+", "-") and oh:
        offset = (int(oh) * 60 + int(om or 0)) * 60
        stamp = stamp.timestamp() - offset if sign == "+" else stamp.timestamp() + offset
        stamp = datetime.fromtimestamp(stamp, tz=UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def extract_pdf(blob: bytes, max_pages: int = 50, max_text_chars: int = 5_000_000) -> tuple[dict, str]:
    """(``pdf_meta`` dict, full text). ``pdf_meta.status`` is ``success``, ``encrypted`` or
    ``parse-error`` (with ``error_msg``); text extraction stops after ``max_pages`` pages."""
    try:
        reader = PdfReader(io.BytesIO(blob), strict=False)
        if reader.is_encrypted:
            try:
                reader.decrypt("")
            except Exception:
                return {"status": "encrypted", "pdf_extra": {"page_count": None}}, ""
        page_count = len(reader.pages)
        texts = []
        for page in reader.pages[:max_pages]:
            texts.append(page.extract_text() or "")
            if sum(map(len, texts)) > max_text_chars:
                break
        info = reader.metadata or {}
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, RecursionError, OSError) as exc:
        return {"status": "parse-error", "error_msg": str(exc)[:1000]}, ""
    text = "\n\f".join(texts)[:max_text_chars]
    first_page = reader.pages[0] if page_count else None
    extra = {
        "page_count": page_count,
        "page0_height": float(first_page.mediabox.height) if first_page is not None else None,
        "page0_width": float(first_page.mediabox.width) if first_page is not None else None,
        "pdf_version": (reader.pdf_header or "").replace("%PDF-", "") or None,
    }
    meta = {
        "status": "success",
        "has_text": bool(text.strip()),
        "text_chars": len(text),
        "word_count": len(text.split()),
        "pdf_extra": {k: v for k, v in extra.items() if v is not None},
        "title": _info(info, "/Title"),
        "author": _info(info, "/Author"),
        "subject": _info(info, "/Subject"),
        "creator": _info(info, "/Creator"),
        "producer": _info(info, "/Producer"),
        "created": parse_pdf_date(_info(info, "/CreationDate")),
        "modified": parse_pdf_date(_info(info, "/ModDate")),
    }
    return {k: v for k, v in meta.items() if v is not None}, text


def _info(info, key: str) -> str | None:
    try:
        value = info.get(key)
    except Exception:
        return None
    if value is None:
        return None
    value = str(value).strip()
    return value or None
