"""The CouchDB backend: CouchDB's HTTP API over a pooled ``requests`` session.

Works with Apache CouchDB 3.x and PouchDB Server (used by the tests). Every request asks for JSON
explicitly (PouchDB Server answers ``text/plain`` otherwise), paging uses unique ``_id`` start keys or
``skip`` (PouchDB Server ignores ``startkey_docid``), and credentials stay out of every message.

Only what a database member may do is asked of the server for reading and writing (``GET /{db}`` to
learn whether a database exists: ``_all_dbs`` is for server admins on CouchDB 3), so a least-privilege
user can crawl and read (docs/operations.md: Users and roles). A refusal is told apart by CouchDB's
``{"error", "reason"}`` answer, not by its status alone (:func:`refusal`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any
from urllib.parse import quote, unquote

import requests
from requests.adapters import HTTPAdapter

from votersdaily.rfc3986 import mask_uri, service_base

from .base import Row, StoreError, StoreRefused, StoreUnavailable, write_check_text
from .names import checked_prefix, database_name, project_name
from .revisions import misshapen, unstorable
from .views import DESIGN_NAME, install_design

PAGE_SIZE = 1000
TIMEOUT = (10, 120)
#: Requests sent once more when their connection fails before an answer (not a timeout). A pooled
#: keep-alive connection the server closes just as it is reused (Node's keep-alive timeout is 5 s,
#: CouchDB's its own) fails the first request after an idle spell, though the server is up. Reads are
#: safe to repeat; a write (``_bulk_docs``) is not repeated here: its caller retries it under the
#: store retry policy and knows its own answer when it meets it again.
SAFE_METHODS = ("GET", "HEAD")
#: The local document :meth:`CouchStore.check_writes` writes and deletes (its own per check: workers
#: checking at once never conflict).
WRITE_CHECK_ID = "votersdaily-write-check-%s"
STORE_ENV = "VOTERSDAILY_STORE"

#: CouchDB 3.4+'s reason (HTTP 403) once a user is locked out after failed logins (couch_httpd_auth.erl).
LOCKOUT_REASON = "Account is temporarily locked due to multiple authentication failures"
#: What CouchDB's ``[chttpd_auth_lockout]`` settings (3.4+) do by default (default.ini): ``threshold``
#: failed logins of one user from one address lock it out (``mode = enforce``) until ``max_lifetime``
#: milliseconds have passed since the first failure.
LOCKOUT_DEFAULTS = (
    "until max_lifetime has passed since the first failure (default 300000 ms: 5 minutes, "
    "after threshold = 5 failures)"
)
ROLES_DOC = "docs/operations.md: Users and roles"
#: CouchDB 3's error (HTTP 413) for a document over its ``[couchdb] max_document_size``.
TOO_LARGE = "document_too_large"
TOO_LARGE_REASON = (
    "the document is larger than the server's [couchdb] max_document_size (CouchDB 3's default: "
    "8000000 bytes of JSON, attachments not counted); a server admin may raise it"
)


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


def couch_error(response: requests.Response) -> tuple[str, str] | None:
    """CouchDB's ``(error, reason)`` of an answer; None when the body is not CouchDB's (a proxy's page,
    another service, an empty body)."""
    try:
        answer = response.json()
    except ValueError:
        return None
    if not isinstance(answer, dict) or not isinstance(answer.get("error"), str):
        return None
    return answer["error"], str(answer.get("reason") or "")


def wrong_password(answer: tuple[str, str] | None, user: str | None) -> bool:
    """Whether CouchDB's ``(error, reason)`` refuses a user's password: a failed login, which
    CouchDB 3.4+ counts towards locking the user out (5 by default)."""
    return (
        answer is not None and answer[0] == "unauthorized" and bool(user) and "password" in answer[1].lower()
    )


def refusal(
    response: requests.Response, request: str, display_uri: str, user: str | None, db: str | None = None
) -> StoreError:
    """The one-line error for a refused ``request`` (``"GET /vd_events"``) of the server's database
    ``db``, told by CouchDB's answer: a 401 may be wrong credentials or a task for a server admin, a 403
    a locked-out user or one who is not a member, a 404 of a proxy is no missing database.

    :class:`~.base.StoreUnavailable` for what passes (server errors, a locked-out user): a writer
    retries and spools it. A refusal of the credentials or the rights is :class:`~.base.StoreRefused`:
    spooled like an outage, never retried (retrying would only bring CouchDB's lockout sooner). An
    answer that is not CouchDB's (a wrong URL) is a plain :class:`~.base.StoreError`.
    """
    status = response.status_code
    at = "the store at %s" % display_uri
    answer = couch_error(response)
    if answer is None:
        if status >= 500:
            return StoreUnavailable(
                "%s answered %s with HTTP %d, not CouchDB's error" % (at, request, status)
            )
        return StoreError(
            "%s does not answer like CouchDB (%s: HTTP %d): check the URL in $%s"
            % (display_uri, request, status, STORE_ENV)
        )
    error, reason = answer
    said = "%s: HTTP %d %s%s" % (request, status, error, ": " + reason if reason else "")
    who = "user %r" % user if user else "a request without a user"
    if error == "forbidden" and reason == LOCKOUT_REASON:
        return StoreUnavailable(
            "%s has locked %s out after failed logins (%s): CouchDB 3.4+ refuses it from this address "
            "%s, by its [chttpd_auth_lockout] settings; fix the password in $%s, then wait"
            % (at, who, said, LOCKOUT_DEFAULTS, STORE_ENV)
        )
    if wrong_password(answer, user):
        return StoreRefused(
            "%s refused the credentials (HTTP 401): fix the user and password in $%s (a server in admin "
            "party, like the PouchDB Server scripts/pouchdb_server.py starts, takes none)" % (at, STORE_ENV)
        )
    if error in ("unauthorized", "forbidden") and "admin" in reason.lower():
        if db and request.startswith("PUT /") and "/" not in request[5:]:
            return StoreRefused(
                "database %r does not exist in %s and %s may not create it (%s): a server admin creates "
                "the databases once, e.g. with `python -m votersdaily views push` (%s)"
                % (db, at, who, said, ROLES_DOC)
            )
        return StoreRefused("%s: %s is not a server admin (%s; %s)" % (at, who, said, ROLES_DOC))
    if error in ("unauthorized", "forbidden"):
        if not user:
            return StoreRefused(
                "%s wants a user (%s): put a member's user and password in $%s (%s)"
                % (at, said, STORE_ENV, ROLES_DOC)
            )
        return StoreRefused(
            "%s may not use %s in %s (%s): a server admin makes it a member there (%s)"
            % (who, "database %r" % db if db else "this", at, said, ROLES_DOC)
        )
    if status >= 500:
        return StoreUnavailable("%s answered %s" % (at, said))
    return StoreError("%s answered %s" % (at, said))


def _fields_of(doc: dict[str, Any] | None, fields: Iterable[str]) -> dict[str, Any] | None:
    """``doc`` cut to ``_id``, ``_rev`` and ``fields`` (what ``query(fields=...)`` answers)."""
    if doc is None:
        return None
    return {"_id": doc.get("_id"), "_rev": doc.get("_rev"), **{field: doc.get(field) for field in fields}}


class CouchStore:
    def __init__(self, uri: str, timeout: tuple[float, float] = TIMEOUT, prefix: str = "") -> None:
        self.base, auth = service_base(uri)
        self.user = auth[0] if auth else None
        self.display_uri = mask_uri(uri)
        #: Put before every database name (:mod:`.names`).
        self.prefix = checked_prefix(prefix)
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers.update({"Accept": "application/json", "Content-Type": "application/json"})
        self.session.auth = auth
        #: The refusal of this store's password, once the server answered one: every later request
        #: with it would be another failed login, so none is sent (:meth:`_request`).
        self.password_refused: StoreRefused | None = None
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
        read: bool = False,
        **kwargs: Any,
    ) -> requests.Response:
        """``method path``; ``read``: a POST that only reads (``_all_docs`` by keys), safe to repeat."""
        if self.password_refused is not None:
            raise StoreRefused(
                "%s (not asked again: CouchDB 3.4+ locks a user out after 5 failed logins)"
                % self.password_refused
            )
        url = self.base + path
        attempts = 2 if read or method in SAFE_METHODS else 1
        for attempt in range(1, attempts + 1):
            try:
                response = self.session.request(method, url, timeout=self.timeout, **kwargs)
                break
            except requests.RequestException as exc:
                if (
                    attempt < attempts
                    and isinstance(exc, requests.ConnectionError)
                    and not isinstance(exc, requests.Timeout)
                ):
                    continue
                # The exception text may carry the URL; the base URL never holds credentials.
                raise StoreUnavailable(
                    "%s %s%s failed: %s" % (method, self.display_uri, path, type(exc).__name__)
                ) from None
        if response.status_code in ok or (response.status_code in allow and couch_error(response)):
            return response
        raise self.refusal(response, method, path)

    def refusal(self, response: requests.Response, method: str, path: str) -> StoreError:
        first = unquote(path.split("/", 1)[0])
        db = first if first and not first.startswith("_") else None
        refused = refusal(response, "%s /%s" % (method, path), self.display_uri, self.user, db)
        if isinstance(refused, StoreRefused) and wrong_password(couch_error(response), self.user):
            self.password_refused = refused
        return refused

    def _db(self, db: str) -> str:
        """The path of the project's database ``db`` (its name on the server: :mod:`.names`)."""
        return quote(database_name(self.prefix, db), safe="")

    def _json(self, method: str, path: str, expect: type = dict, **kwargs: Any) -> Any:
        return self._decoded(self._request(method, path, **kwargs), method, path, expect)

    def _decoded(self, response: requests.Response, method: str, path: str, expect: type = dict) -> Any:
        """The JSON ``expect`` (an object, or a list) an answer holds; StoreError when it holds
        something else (a proxy's HTML page, a maintenance notice), never a traceback later."""
        try:
            answer = response.json()
        except ValueError:
            raise StoreError(
                "%s %s%s answered non-JSON: %r" % (method, self.display_uri, path, response.text[:200])
            ) from None
        if not isinstance(answer, expect):
            raise StoreError(
                "%s %s%s answered %s, not a JSON %s: %r"
                % (
                    method,
                    self.display_uri,
                    path,
                    type(answer).__name__,
                    "list" if expect is list else "object",
                    response.text[:200],
                )
            )
        return answer

    # -- databases -----------------------------------------------------------------------------

    def ensure_db(self, db: str) -> None:
        if not self.has_db(db):
            # 412: created meanwhile by another writer. Creating needs a server admin.
            self._request("PUT", self._db(db), allow=(412,))

    def has_db(self, db: str) -> bool:
        """``GET /{db}``, which a member of the database may do (``_all_dbs`` needs a server admin)."""
        return self._request("GET", self._db(db), allow=(404,)).status_code != 404

    def drop_db(self, db: str) -> None:
        self._request("DELETE", self._db(db), allow=(404,))

    def check_writes(self, db: str) -> None:
        """A local document (``_local/``: never listed, counted or replicated; a member may write
        one) of its own name written and deleted (:meth:`Store.check_writes`). It carries
        :data:`WRITE_CHECK_BYTES` of random text, which no compression shrinks: more than the
        unused end of a file's last block, which may still take a small write on a full disk.
        A database that does not exist yet takes nothing: the store answered, which is all it tells."""
        path = "%s/_local/%s" % (self._db(db), quote(WRITE_CHECK_ID % uuid.uuid4().hex, safe=""))
        payload = write_check_text()
        body = json.dumps({"written_by": "votersdaily's write check", "payload": payload})
        written = self._request("PUT", path, data=body, allow=(404,))
        if written.status_code != 404:
            rev = self._decoded(written, "PUT", path).get("rev")
            self._request("DELETE", path, params={"rev": rev}, allow=(404,))

    def list_dbs(self) -> list[str]:
        """The project's databases (under its prefix). CouchDB 3 answers ``_all_dbs`` to server admins
        only: the commands ask :meth:`has_db` instead."""
        names = (project_name(self.prefix, name) for name in self._json("GET", "_all_dbs", expect=list))
        return [name for name in names if name is not None]

    # -- documents ---------------------------------------------------------------------------

    def get(self, db: str, doc_id: str) -> dict[str, Any] | None:
        path = "%s/%s" % (self._db(db), _doc_path(doc_id))
        response = self._request("GET", path, allow=(404,))
        return None if response.status_code == 404 else self._decoded(response, "GET", path)

    def get_many(self, db: str, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        ids = list(dict.fromkeys(ids))
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), PAGE_SIZE):
            chunk = ids[start : start + PAGE_SIZE]
            answer = self._json(
                "POST",
                "%s/_all_docs" % self._db(db),
                params={"include_docs": "true"},
                data=json.dumps({"keys": chunk}),
                read=True,
            )
            for row in answer.get("rows", []):
                doc = row.get("doc")
                if doc and not row.get("value", {}).get("deleted"):
                    found[row["id"]] = doc
        return found

    def bulk_docs(self, db: str, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not docs:
            return []
        refused = [misshapen(doc) for doc in docs]
        if not any(refused):
            try:
                body = json.dumps({"docs": docs}, ensure_ascii=False, allow_nan=False).encode("utf-8")
            except (TypeError, ValueError, RecursionError) as exc:  # a lone surrogate is a ValueError too
                refused = [unstorable(doc) for doc in docs]
                if not any(refused):  # each alone encodes: the request as a whole does not
                    raise StoreError("the documents for %s could not be encoded: %s" % (db, exc)) from exc
            else:
                return self._post_bulk_docs(db, docs, body)
        # CouchDB would refuse the whole request for one of them: each is refused on its own, as the
        # embedded store refuses it, and the rest is sent.
        sendable = [doc for doc, answer in zip(docs, refused, strict=True) if answer is None]
        answers = iter(self.bulk_docs(db, sendable))
        return [answer or next(answers) for answer in refused]

    def _post_bulk_docs(self, db: str, docs: list[dict[str, Any]], body: bytes) -> list[dict[str, Any]]:
        """``POST /{db}/_bulk_docs`` of ``docs`` (encoded as ``body``). CouchDB 3 refuses the whole
        request (HTTP 413 ``document_too_large``, its reason the document's id) for one document over
        the server's ``max_document_size``: that one is refused on its own and the rest sent again, so
        it never costs its batch (PouchDB Server has no such limit)."""
        path = "%s/_bulk_docs" % self._db(db)
        too_large: dict[int, dict[str, Any]] = {}
        sending = list(range(len(docs)))
        while True:
            response = self._request("POST", path, data=body, allow=(413,))
            if response.status_code != 413:
                break
            error, reason = couch_error(response) or ("", "")
            named = {i for i in sending if docs[i].get("_id") == reason}
            if error != TOO_LARGE or not named:
                raise self.refusal(response, "POST", path)
            too_large.update(
                (i, {"id": reason, "error": TOO_LARGE, "reason": TOO_LARGE_REASON}) for i in named
            )
            sending = [i for i in sending if i not in named]
            rest = [docs[i] for i in sending]
            body = json.dumps({"docs": rest}, ensure_ascii=False, allow_nan=False).encode("utf-8")
        answers = iter(self._decoded(response, "POST", path, expect=list))
        return [too_large[i] if i in too_large else next(answers) for i in range(len(docs))]

    def get_attachment(self, db: str, doc_id: str, name: str) -> bytes | None:
        path = "%s/%s/%s" % (self._db(db), _doc_path(doc_id), quote(name, safe=""))
        response = self._request("GET", path, allow=(404,), headers={"Accept": "*/*"})
        return None if response.status_code == 404 else response.content

    def iter_docs(self, db: str, include_design: bool = False) -> Iterator[dict[str, Any]]:
        startkey = None
        while True:
            params = {"include_docs": "true", "limit": PAGE_SIZE + 1}
            if startkey is not None:
                params["startkey"] = json.dumps(startkey)
            rows = self._json("GET", "%s/_all_docs" % self._db(db), params=params).get("rows", [])
            page = rows[:PAGE_SIZE]
            for row in page:
                if row.get("doc") is None or (row["id"].startswith("_design/") and not include_design):
                    continue
                yield row["doc"]
            if len(rows) <= PAGE_SIZE:
                return
            startkey = rows[PAGE_SIZE]["id"]

    def count(self, db: str) -> int:
        info = self._json("GET", self._db(db))
        designs = self._json(
            "GET",
            "%s/_all_docs" % self._db(db),
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
        fields: Sequence[str] | None = None,
    ) -> list[Row]:
        path = "%s/_design/%s/_view/%s" % (self._db(db), DESIGN_NAME, quote(view, safe=""))
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
            answer = self._json("POST", path, params=params, data=json.dumps({"keys": keys}), read=True)
        else:
            answer = self._json("GET", path, params=params)
        rows = [Row(r["id"], r.get("key"), r.get("doc"), r.get("value")) for r in answer.get("rows", [])]
        if fields is None or not include_docs:
            return rows
        return [Row(row.id, row.key, _fields_of(row.doc, fields), row.value) for row in rows]

    def install_views(self, db: str) -> bool:
        return install_design(self, db)

    def close(self) -> None:
        self.session.close()
