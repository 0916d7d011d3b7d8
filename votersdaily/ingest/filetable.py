"""The per-file table of seeds/001 (``wbgrp-journal-extract-<version>-<env>``): one row per file,
keyed by the base32 SHA-1, with column families (``f``, ``file``, ``grobid0``, ``pdf0``, ``match0``)
as nested objects and column names unique across families. Large text goes to gzip-compressed
attachments named ``<family>:<column>.gz``. A row says when its families were made (``updated``); a
row written replaces the families it carries, unless the stored ones were made later, and keeps the
stored row's others (:mod:`votersdaily.store.families`)."""

from __future__ import annotations

import base64
import json
from typing import Any

from votersdaily.clock import now_iso
from votersdaily.setting_marks import DATABASE_NAME
from votersdaily.store.families import made_at

from .filemeta import sha1_b32
from .grobid import quality
from .process import gzip_bytes


def table_name(version: str | int, env: str) -> str:
    name = "wbgrp-journal-extract-%s-%s" % (version, env)
    if not DATABASE_NAME(name):
        raise ValueError(
            "file table name %r is not a valid CouchDB database name (use lowercase a-z, 0-9, "
            "_$()+-/ in INGEST_FILE_TABLE_VERSION and INGEST_FILE_TABLE_ENV)" % name
        )
    return name


def _iso(dt14: str) -> str:
    return "%s-%s-%sT%s:%s:%sZ" % (dt14[0:4], dt14[4:6], dt14[6:8], dt14[8:10], dt14[10:12], dt14[12:14])


def _attachment(data: bytes) -> dict[str, Any]:
    return {"content_type": "application/gzip", "data": base64.b64encode(gzip_bytes(data)).decode("ascii")}


def file_row(
    result: dict[str, Any], side: dict[str, Any], match0: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The row for the terminal file of a successful ingest, its families made now."""
    meta = result["file_meta"]
    term = result["terminal"]
    warc = side.get("warc") or {}
    row: dict[str, Any] = {"_id": sha1_b32(meta["sha1hex"])}
    attachments: dict[str, Any] = {}
    heritrix = {"u": term["terminal_url"], "d": _iso(term["terminal_dt"])}
    if warc:
        heritrix.update(f=warc["warc_path"], o=warc["warc_offset"])
        if warc.get("warc_record_id"):
            heritrix["i"] = warc["warc_record_id"]
    heritrix["c"] = 1
    row["f"] = {"c": json.dumps(heritrix, sort_keys=True)}
    cdx = {"surt": result["cdx"]["surt"], "url": term["terminal_url"], "dt": term["terminal_dt"]}
    if warc:
        cdx.update(warc=warc["warc_path"], offset=str(warc["warc_offset"]), c_size=str(warc["warc_csize"]))
    row["file"] = {
        "size": meta["size_bytes"],
        "mime": meta["mimetype"],
        "cdx": json.dumps(cdx, sort_keys=True),
        "meta": json.dumps(
            {
                "size": meta["size_bytes"],
                "mime": side.get("header_mimetype") or meta["mimetype"],
                "magic": side.get("magic") or "",
                "magic_mime": meta["mimetype"],
                "sha1": meta["sha1hex"],
                "md5": meta["md5hex"],
                "sha256": meta["sha256hex"],
            },
            sort_keys=True,
        ),
    }
    grobid = side.get("grobid")
    if grobid:
        row["grobid0"] = {
            "status_code": grobid.get("status_code"),
            "quality": quality(grobid),
            "status": json.dumps({k: v for k, v in grobid.items() if k != "metadata"}, sort_keys=True),
            "metadata": json.dumps(grobid.get("metadata") or {}, sort_keys=True),
        }
        if side.get("grobid_tei"):
            from .grobid import tei_json

            attachments["grobid0:tei_xml.gz"] = _attachment(side["grobid_tei"])
            attachments["grobid0:tei_json.gz"] = _attachment(
                json.dumps(tei_json(side["grobid_tei"])).encode()
            )
            row["grobid0"].update(tei_xml="grobid0:tei_xml.gz", tei_json="grobid0:tei_json.gz")
    pdf_meta = result.get("pdf_meta")
    if pdf_meta:
        row["pdf0"] = {
            "pdf_status": pdf_meta.get("status"),
            "page_count": (pdf_meta.get("pdf_extra") or {}).get("page_count"),
            "has_text": pdf_meta.get("has_text", False),
            "pdf_info": json.dumps(pdf_meta, sort_keys=True),
        }
        if side.get("pdf_text"):
            attachments["pdf0:pdf_text.gz"] = _attachment(side["pdf_text"].encode("utf-8"))
            row["pdf0"]["pdf_text"] = "pdf0:pdf_text.gz"
    if match0:
        row["match0"] = match0
    if attachments:
        row["_attachments"] = attachments
    return made_at(row, now_iso())
