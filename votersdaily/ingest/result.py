"""The output shapes of docs/ingest.md §8: terminal, cdx, html resources, 14-digit datetimes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from votersdaily.clock import now_utc

from .filemeta import sha1_b32
from .urls import surt

#: Statuses where the ingest found what it was asked for.
SUCCESS = "success"


def dt14(value: datetime | None = None) -> str:
    """``YYYYMMDDhhmmss`` in UTC (the CDX/wayback timestamp). The current second's is formatted once
    (:data:`_LAST_SECOND`): a crawl stamps every hop and sub-resource, hundreds a second."""
    if value is not None:
        return value.strftime("%Y%m%d%H%M%S")
    global _LAST_SECOND  # noqa: PLW0603 - one (second, text) pair, replaced whole
    now = now_utc()
    last, text = _LAST_SECOND
    if now != last:
        text = now.strftime("%Y%m%d%H%M%S")
        _LAST_SECOND = (now, text)
    return text


#: The last second :func:`dt14` formatted for the clock (``now_utc``: UTC, whole seconds) and its text.
_LAST_SECOND: tuple[datetime | None, str] = (None, "")


def iso_seconds(value: str) -> str:
    """14-digit timestamp → ``2020-10-28T23:51:03`` (html_resources ``timestamp``)."""
    return "%s-%s-%sT%s:%s:%s" % (value[0:4], value[4:6], value[6:8], value[8:10], value[10:12], value[12:14])


def terminal(url: str, dt: str | None, status_code: int | None, sha1hex: str | None = None) -> dict[str, Any]:
    out = {"terminal_url": url, "terminal_dt": dt, "terminal_status_code": status_code}
    if sha1hex:
        out["terminal_sha1hex"] = sha1hex
    return out


def header_mimetype(content_type: bytes | str | None) -> str | None:
    if not content_type:
        return None
    if isinstance(content_type, bytes):
        content_type = content_type.decode("latin-1")
    return content_type.split(";")[0].strip().lower() or None


def cdx(
    url: str, dt: str, mimetype: str, status_code: int, sha1hex: str, warc: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A CDX row; the ``warc_*`` keys only when the record was written to a WARC file."""
    row = {
        "surt": surt(url),
        "datetime": dt,
        "url": url,
        "mimetype": mimetype,
        "status_code": status_code,
        "sha1b32": sha1_b32(sha1hex),
        "sha1hex": sha1hex,
    }
    if warc:
        row.update(
            warc_path=warc["warc_path"], warc_offset=warc["warc_offset"], warc_csize=warc["warc_csize"]
        )
    return row


def failed(
    request: dict[str, Any], status: str, error_message: str | None = None, **extra: Any
) -> dict[str, Any]:
    result = {"request": request, "hit": False, "status": status}
    if error_message:
        result["error_message"] = error_message[:1600]
    result.update(extra)
    return result


def finished(
    state: dict[str, Any], status: str, error_message: str | None = None, **fields: Any
) -> dict[str, Any]:
    """The result of an ingest that went through the hop loop (docs/ingest.md §8): its hops, what
    earlier hops found (``partial``), the redirects followed and ``fields``; a field given as None is
    left out, except ``platform``, which is always written."""
    result = {"request": state["request"], "hit": status == SUCCESS, "status": status, "hops": state["hops"]}
    if error_message and status != SUCCESS:
        result["error_message"] = error_message[:1600]
    result.update(state["partial"])
    for key, value in fields.items():
        if value is not None or key == "platform":
            result[key] = value
    if state["redirect_chain"]:
        result["redirect_chain"] = state["redirect_chain"]
    return result


class IngestItem(dict[str, Any]):
    """What the spider yields: ``result`` (the ingest_file_result document) and ``side`` (what
    goes elsewhere: TEI-XML, PDF text, GROBID TEI, file magic, the terminal file's WARC location)."""

    def __repr__(self) -> str:
        # Scrapy's "Scraped from" DEBUG line formats the item: not megabytes of TEI and PDF text.
        result = self.get("result") or {}
        return "<IngestItem %s %s %s>" % (
            result.get("status"),
            (result.get("request") or {}).get("ingest_type"),
            (result.get("request") or {}).get("base_url"),
        )
