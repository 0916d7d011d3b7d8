"""GROBID over its HTTP API: the multipart request and the TEI → metadata reading.

The request is a Scrapy request (so it goes through the same downloader, limits and SSRF guard);
:func:`grobid_result` turns the answer into the result's ``grobid`` dict.
"""

from __future__ import annotations

import uuid
from typing import Any

import scrapy
from lxml import etree

NS = {"tei": "http://www.tei-c.org/ns/1.0"}
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
#: The keys of sandcrawler's ``metadata.biblio`` (GrobidClient.metadata()).
BIBLIO_KEYS = ("title", "authors", "journal", "date", "doi")
_parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def grobid_request(base_url: str, pdf: bytes, **kwargs: Any) -> scrapy.Request:
    """POST ``pdf`` to ``<base_url>/api/processFulltextDocument`` as multipart form field ``input``."""
    boundary = "vd-%s" % uuid.uuid4().hex
    body = b"".join(
        [
            b"--%s\r\n" % boundary.encode(),
            b'Content-Disposition: form-data; name="input"; filename="document.pdf"\r\n',
            b"Content-Type: application/pdf\r\n\r\n",
            pdf,
            b"\r\n",
            b"--%s\r\n" % boundary.encode(),
            b'Content-Disposition: form-data; name="consolidateHeader"\r\n\r\n0\r\n',
            b"--%s--\r\n" % boundary.encode(),
        ]
    )
    return scrapy.Request(
        base_url.rstrip("/") + "/api/processFulltextDocument",
        method="POST",
        body=body,
        headers={"Content-Type": "multipart/form-data; boundary=%s" % boundary, "Accept": "application/xml"},
        dont_filter=True,
        **kwargs,
    )


def _text(node: etree._Element | None) -> str | None:
    if node is None:
        return None
    value = " ".join("".join(node.itertext()).split())
    return value or None


def _person(pers: etree._Element) -> str | None:
    parts = [_text(n) for n in pers.xpath("./tei:forename|./tei:surname", namespaces=NS)]
    return " ".join(p for p in parts if p) or None


def parse_tei(tei_xml: bytes) -> dict[str, Any]:
    """Header metadata of a GROBID TEI document: title, authors, date, DOI, journal, abstract,
    language, the biblio-glutton match (``fatcat_release``), citation count, GROBID version."""
    root = etree.fromstring(tei_xml, parser=_parser)
    header = root.find("tei:teiHeader", NS)
    meta: dict[str, Any] = {}
    text = root.find("tei:text", NS)
    meta["language_code"] = (text.get(_XML_LANG) if text is not None else None) or (
        header.get(_XML_LANG) if header is not None else None
    )
    app = root.find(".//tei:appInfo/tei:application", NS)
    if app is not None:
        meta["grobid_version"] = app.get("version")
        meta["grobid_timestamp"] = app.get("when")
    if header is not None:
        meta["title"] = _text(header.find(".//tei:titleStmt/tei:title", NS))
        analytic = header.find(".//tei:sourceDesc/tei:biblStruct/tei:analytic", NS)
        authors = []
        if analytic is not None:
            for author in analytic.findall("tei:author", NS):
                pers = author.find("tei:persName", NS)
                name = _person(pers) if pers is not None else None
                if name:
                    authors.append({"name": name})
        meta["authors"] = authors
        monogr = header.find(".//tei:sourceDesc/tei:biblStruct/tei:monogr", NS)
        if monogr is not None:
            meta["journal"] = {
                k: v
                for k, v in {
                    "name": _text(monogr.find("tei:title", NS)),
                    "publisher": _text(monogr.find("tei:imprint/tei:publisher", NS)),
                    "volume": _text(monogr.find("tei:imprint/tei:biblScope[@unit='volume']", NS)),
                    "issue": _text(monogr.find("tei:imprint/tei:biblScope[@unit='issue']", NS)),
                }.items()
                if v
            }
            date = monogr.find("tei:imprint/tei:date[@type='published']", NS)
            if date is not None:
                meta["date"] = date.get("when") or _text(date)
        doi = header.find(".//tei:sourceDesc/tei:biblStruct/tei:idno[@type='DOI']", NS)
        meta["doi"] = _text(doi)
        # biblio-glutton's consolidation writes the matched fatcat release as an idno
        meta["fatcat_release"] = _text(
            header.find(".//tei:sourceDesc/tei:biblStruct/tei:idno[@type='fatcat']", NS)
        )
        meta["abstract"] = _text(header.find(".//tei:profileDesc/tei:abstract", NS))
    meta["citation_count"] = len(root.findall(".//tei:back//tei:listBibl/tei:biblStruct", NS))
    body = root.find(".//tei:text/tei:body", NS)
    meta["body_words"] = len(" ".join(body.itertext()).split()) if body is not None else 0
    return {k: v for k, v in meta.items() if v not in (None, "", {}, [])}


def grobid_result(status_code: int, body: bytes) -> tuple[dict[str, Any], bytes | None]:
    """(the result's ``grobid`` dict without TEI, the TEI bytes or None)."""
    if status_code != 200:
        return {
            "status": "error",
            "status_code": status_code,
            "error_msg": body[:1000].decode("utf-8", "replace"),
        }, None
    try:
        parsed = parse_tei(body)
    except etree.XMLSyntaxError as exc:
        return {"status": "bad-grobid-xml", "status_code": status_code, "error_msg": str(exc)[:1000]}, None
    return {
        "status": "success",
        "status_code": status_code,
        "fatcat_release": parsed.get("fatcat_release"),
        "grobid_version": parsed.get("grobid_version"),
        "metadata": result_metadata(parsed),
    }, body


def result_metadata(parsed: dict[str, Any]) -> dict[str, Any]:
    """The result's ``grobid.metadata`` as sandcrawler's ingest has it: ``biblio`` (title, authors,
    journal, date, doi), ``grobid_timestamp``, ``language_code``; ``grobid_version`` and
    ``fatcat_release`` are the result's own keys (once). The abstract stays out (sandcrawler drops
    "encumbered" text); the citation and body word counts are ours."""
    out: dict[str, Any] = {"biblio": {k: parsed[k] for k in BIBLIO_KEYS if parsed.get(k)}}
    for key in ("grobid_timestamp", "language_code", "citation_count", "body_words"):
        if parsed.get(key) not in (None, ""):
            out[key] = parsed[key]
    return out


def tei_json(tei_xml: bytes) -> dict[str, Any]:
    """The JSON form of a TEI document kept in ``grobid0:tei_json``: header metadata plus the body
    text, paragraph by paragraph."""
    root = etree.fromstring(tei_xml, parser=_parser)
    body = root.find(".//tei:text/tei:body", NS)
    paragraphs = [] if body is None else [_text(p) for p in body.iter("{%s}p" % NS["tei"])]
    return dict(parse_tei(tei_xml), body=[p for p in paragraphs if p])


def quality(grobid: dict[str, Any]) -> str:
    """Our meaning of ``grobid0:quality``: good (title and authors), marginal (parsed, no title or
    authors), bad (GROBID failed)."""
    if grobid.get("status") != "success":
        return "bad"
    biblio = (grobid.get("metadata") or {}).get("biblio") or {}
    return "good" if biblio.get("title") and biblio.get("authors") else "marginal"
