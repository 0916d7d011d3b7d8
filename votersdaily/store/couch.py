"""The CouchDB backend: CouchDB's HTTP API over a pooled ``requests`` session.

Works with Apache CouchDB 3.x and PouchDB Server (used by the tests). Every request asks for JSON
explicitly (PouchDB Server answers ``text/plain`` otherwise), paging uses unique ``_id`` start keys or
``skip`` (PouchDB Server ignores ``startkey_docid``), and credentials stay out of every message.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import quote

import requests
from requests.adapters import HTTPAdapter

from votersdaily.rfc3986 import mask_uri, service_base

from .base import Row, StoreError, StoreUnavailable
from .revisions import not_unicode
from .views import DESIGN_NAME, install_design

PAGE_SIZE = 1000
TIMEOUT = (10, 120)


def _doc_path(doc_id: str) -> str:
    if doc_id.startswith("_design/"):
        return "_design/" + quote(doc_id[len("_design/") :], safe="")
    return quote(doc_id, safe="")


def _jsonify(params: dict[str, Any]) -> dict[str, Any]:
    """CouchDB view parameters are JSON values in the query string."""
    out = {}
    for name, value in params.items():
        if value is None:
            continue
        out[name] = (
            json.dumps(value) if name in ("key", "startkey", "endkey") or isinstance(value, bool) else value
        )
    return out


class CouchStore:
    def __init__(self, uri: str, timeout: tuple[float, float] = TIMEOUT) -> None:
        self.base, auth = service_base(uri)
        self.display_uri = mask_uri(uri)
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers.update({"Accept": "application/json", "Content-Type": "application/json"})
        self.session.auth = auth
        adapter = HTTPAdapter(pool_connections=4, pool_maxsize=16)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)

    # -- HTTP ------------------------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        ok: tuple[int, ...] = (200, 201, 202),
        allow: tuple[int, ...] = (),
        **kwargs: Any,
    ) -> requests.Response:
        url = self.base + path
        try:
            response = self.session.request(method, url, timeout=self.timeout, **kwargs)
        except requests.RequestException as exc:
            # The exception text may carry the URL; the base URL never holds credentials.
            raise StoreUnavailable(
                "%s %s%s failed: %s" % (method, self.display_uri, path, type(exc).__name__)
            ) from None
        if response.status_code in ok or response.status_code in allow:
            return response
        if response.status_code >= 500:
            raise StoreUnavailable(
                "%s %s%s answered %d" % (method, self.display_uri, path, response.status_code)
            )
        raise StoreError(
            "%s %s%s answered %d: %s"
            % (method, self.display_uri, path, response.status_code, response.text[:300])
        )

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._request(method, path, **kwargs)
        try:
            return response.json()
        except ValueError:
            raise StoreError(
                "%s %s%s answered non-JSON: %r" % (method, self.display_uri, path, response.text[:200])
            ) from None

    # -- databases -----------------------------------------------------------------------------

    def ensure_db(self, db: str) -> None:
        response = self._request("GET", quote(db, safe=""), allow=(404,))
        if response.status_code == 404:
            # 412: created meanwhile by another writer.
            self._request("PUT", quote(db, safe=""), allow=(412,))

    def drop_db(self, db: str) -> None:
        self._request("DELETE", quote(db, safe=""), allow=(404,))

    def list_dbs(self) -> list[str]:
        return [name for name in self._json("GET", "_all_dbs") if not name.startswith("_")]

    # -- documents ---------------------------------------------------------------------------

    def get(self, db: str, doc_id: str) -> dict[str, Any] | None:
        response = self._request("GET", "%s/%s" % (quote(db, safe=""), _doc_path(doc_id)), allow=(404,))
        return None if response.status_code == 404 else response.json()

    def get_many(self, db: str, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        ids = list(dict.fromkeys(ids))
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), PAGE_SIZE):
            chunk = ids[start : start + PAGE_SIZE]
            answer = self._json(
                "POST",
                "%s/_all_docs" % quote(db, safe=""),
                params={"include_docs": "true"},
                data=json.dumps({"keys": chunk}),
            )
            for row in answer.get("rows", []):
                doc = row.get("doc")
                if doc and not row.get("value", {}).get("deleted"):
                    found[row["id"]] = doc
        return found

    def bulk_docs(self, db: str, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not docs:
            return []
        try:
            body = json.dumps({"docs": docs}, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            # Refuse the documents that are not valid Unicode, as the embedded store does; send the rest.
            refused = [not_unicode(doc) for doc in docs]
            sendable = [doc for doc, answer in zip(docs, refused, strict=True) if answer is None]
            answers = iter(self.bulk_docs(db, sendable))
            return [answer or next(answers) for answer in refused]
        answer = self._json("POST", "%s/_bulk_docs" % quote(db, safe=""), data=body)
        if not isinstance(answer, list):
            raise StoreError("_bulk_docs on %s answered %r" % (db, answer))
        return answer

    def get_attachment(self, db: str, doc_id: str, name: str) -> bytes | None:
        path = "%s/%s/%s" % (quote(db, safe=""), _doc_path(doc_id), quote(name, safe=""))
        response = self._request("GET", path, allow=(404,), headers={"Accept": "*/*"})
        return None if response.status_code == 404 else response.content

    def iter_docs(self, db: str, include_design: bool = False) -> Iterator[dict[str, Any]]:
        startkey = None
        while True:
            params = {"include_docs": "true", "limit": PAGE_SIZE + 1}
            if startkey is not None:
                params["startkey"] = json.dumps(startkey)
            rows = self._json("GET", "%s/_all_docs" % quote(db, safe=""), params=params).get("rows", [])
            page = rows[:PAGE_SIZE]
            for row in page:
                if row.get("doc") is None or (row["id"].startswith("_design/") and not include_design):
                    continue
                yield row["doc"]
            if len(rows) <= PAGE_SIZE:
                return
            startkey = rows[PAGE_SIZE]["id"]

    def count(self, db: str) -> int:
        info = self._json("GET", quote(db, safe=""))
        designs = self._json(
            "GET",
            "%s/_all_docs" % quote(db, safe=""),
            params={"startkey": json.dumps("_design/"), "endkey": json.dumps("_design0")},
        ).get("rows", [])
        return int(info.get("doc_count", 0)) - len(designs)

    # -- views ---------------------------------------------------------------------------------

    def query(
        self,
        db: str,
        view: str,
        *,
        key: Any = None,
        keys: list[Any] | None = None,
        startkey: Any = None,
        endkey: Any = None,
        descending: bool = False,
        limit: int | None = None,
        skip: int = 0,
        include_docs: bool = True,
    ) -> list[Row]:
        path = "%s/_design/%s/_view/%s" % (quote(db, safe=""), DESIGN_NAME, quote(view, safe=""))
        params = _jsonify(
            {
                "key": key,
                "startkey": startkey,
                "endkey": endkey,
                "descending": descending or None,
                "limit": limit,
                "skip": skip or None,
                "include_docs": include_docs,
                "reduce": False,
            }
        )
        if keys is not None:
            answer = self._json("POST", path, params=params, data=json.dumps({"keys": keys}))
        else:
            answer = self._json("GET", path, params=params)
        return [Row(r["id"], r.get("key"), r.get("doc")) for r in answer.get("rows", [])]

    def install_views(self, db: str) -> bool:
        return install_design(self, db)

    def close(self) -> None:
        self.session.close()
