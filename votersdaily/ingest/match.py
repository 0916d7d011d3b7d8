"""``match0``: identify a document against a catalog of known works (a store database keyed by
DOI, loaded from JSON lines). matched (one work by DOI, or one by exact normalised title),
ambiguous (several works share the title), not-matched."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from votersdaily.store.upsert import upsert

if TYPE_CHECKING:
    from votersdaily.store.base import Store


def norm_title(title: str) -> str:
    text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode().lower()
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text).split())


def catalog_docs(works: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Catalog documents: ``doi:<doi>`` per work, plus ``title:<normalised title>`` → DOIs."""
    docs: dict[str, dict[str, Any]] = {}
    titles: dict[str, set[str]] = {}
    for work in works:
        doi = (work.get("doi") or "").strip().lower()
        if not doi.startswith("10."):
            raise ValueError("catalog record without a DOI: %s" % json.dumps(work)[:200])
        docs["doi:" + doi] = dict(work, _id="doi:" + doi, doi=doi)
        if work.get("title"):
            titles.setdefault(norm_title(work["title"]), set()).add(doi)
    for title, dois in titles.items():
        docs["title:" + title] = {"_id": "title:" + title, "dois": sorted(dois)}
    return list(docs.values())


def read_catalog_jsonl(path: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    """(works, errors): a line that is not a JSON object with a DOI (and, if any, a text title), not
    UTF-8, or longer than the ingest's request lines may be (never read whole) is an error naming its
    line, never the end of the file."""
    from votersdaily.plumbing.inputs import BadLine, bounded_lines, shown

    from .ingest_requests import MAX_LINE_BYTES

    works, errors = [], []
    for lineno, line in bounded_lines(path, MAX_LINE_BYTES):
        where = "%s:%d" % (path, lineno)
        if isinstance(line, BadLine):
            errors.append("%s: %s" % (where, line))
            continue
        if not line.strip():
            continue
        try:
            work = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append("%s: not JSON: %s" % (where, exc))
            continue
        doi = work.get("doi") if isinstance(work, dict) else None
        if not isinstance(doi, str) or not doi.strip().lower().startswith("10."):
            errors.append("%s: catalog record without a DOI: %s" % (where, line.strip()[:200]))
            continue
        if work.get("title") is not None and not isinstance(work["title"], str):
            errors.append(
                "%s: catalog record whose title is not text: %s" % (where, shown(json.dumps(work["title"])))
            )
            continue
        works.append(work)
    return works, errors


def load_catalog_jsonl(store: Store, path: str | Path, db: str) -> tuple[int, list[str]]:
    """Load the works of a JSON-lines file into ``db``: (works loaded, errors of the bad lines)."""
    works, errors = read_catalog_jsonl(path)
    store.ensure_db(db)
    docs = catalog_docs(works)
    # merge title index entries with those already stored
    existing = store.get_many(db, [d["_id"] for d in docs if d["_id"].startswith("title:")])
    for doc in docs:
        old = existing.get(doc["_id"])
        if old:
            doc["dois"] = sorted(set(doc["dois"]) | set(old.get("dois", [])))
    upsert(store, db, docs)
    return len(works), errors


def match_document(
    store: Store, db: str, dois: Iterable[str | None], title: str | None, catalog_exists: bool | None = None
) -> dict[str, Any]:
    """``{mstatus, doi, minfo}`` (minfo a JSON string, as in the file table). ``catalog_exists``:
    what the caller already knows about ``db`` (saves a request per document)."""
    if catalog_exists is None:
        catalog_exists = store.has_db(db)
    if not catalog_exists:
        return {"mstatus": "not-matched", "doi": None, "minfo": json.dumps({"reason": "no catalog"})}
    candidates = [d.strip().lower() for d in dois if d]
    for doi in candidates:
        work = store.get(db, "doi:" + doi)
        if work:
            return {
                "mstatus": "matched",
                "doi": doi,
                "minfo": json.dumps({"method": "doi", "title": work.get("title")}, sort_keys=True),
            }
    if title:
        index = store.get(db, "title:" + norm_title(title))
        dois_for_title = (index or {}).get("dois", [])
        if len(dois_for_title) == 1:
            return {
                "mstatus": "matched",
                "doi": dois_for_title[0],
                "minfo": json.dumps({"method": "title"}, sort_keys=True),
            }
        if len(dois_for_title) > 1:
            return {
                "mstatus": "ambiguous",
                "doi": None,
                "minfo": json.dumps({"method": "title", "candidates": dois_for_title}, sort_keys=True),
            }
    return {
        "mstatus": "not-matched",
        "doi": None,
        "minfo": json.dumps({"tried_dois": candidates, "tried_title": bool(title)}, sort_keys=True),
    }
