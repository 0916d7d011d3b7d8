"""Apache CouchDB 3's refusal of a document over its ``max_document_size``, recorded, and a loopback
proxy that puts it in front of PouchDB Server (which has no such limit).

CouchDB 3.5.0 (built from its source, tag 3.5.0, QuickJS; recorded 2026-11-28) answers a
``POST /{db}/_bulk_docs`` holding one document of 9,000,000 bytes of JSON (its default
``max_document_size`` is 8,000,000) with HTTP 413 for the whole request, the reason that document's
id: :data:`TOO_LARGE`. :func:`refusal` applies that rule to a batch with a limit the test chooses: a
DERIVED variant of the recording (a server whose admin lowered the setting, so a test sends small
documents); what it answers has the recorded shape.
"""

from __future__ import annotations

import http.client
import http.server
import json
import re
import threading
from typing import Any

#: CouchDB 3.5.0's answer to ``_bulk_docs`` with a document over its limit (status, body).
TOO_LARGE = (413, {"error": "document_too_large", "reason": "big"})
#: A document it took, in the same recording.
TAKEN = {"ok": True, "id": "small2", "rev": "1-23202479633c2b380f79507a776743d5"}
BULK_DOCS = re.compile(r"^/([^/?]+)/_bulk_docs(\?|$)")
#: Headers of one hop, not passed on.
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length"}


def refusal(docs: list[dict[str, Any]], limit: int) -> tuple[int, dict[str, Any]] | None:
    """CouchDB's answer to a ``_bulk_docs`` of ``docs`` under a ``max_document_size`` of ``limit``
    bytes of JSON: the recorded 413 naming the first document over it, or None (it takes them)."""
    over = [doc["_id"] for doc in docs if len(json.dumps(doc)) > limit]
    if not over:
        return None
    status, body = TOO_LARGE
    return status, dict(body, reason=over[0])


class SizeLimitProxy:
    """PouchDB Server on ``target_port`` behind a loopback proxy refusing, as CouchDB 3 does, a
    ``_bulk_docs`` of ``db`` holding a document over ``limit`` bytes (:func:`refusal`); every other
    request is passed on. ``sizes``: the JSON size of each document posted to ``db`` by id (design documents aside)."""

    def __init__(self, target_port: int, db: str, limit: int | None = None) -> None:
        self.target_port = target_port
        self.db = db
        self.limit = limit
        self.sizes: dict[str, int] = {}
        self.refused = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                proxy._serve(self)

            do_HEAD = do_POST = do_PUT = do_DELETE = do_GET

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d/" % self.port

    def __enter__(self) -> SizeLimitProxy:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _serve(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        match = BULK_DOCS.match(handler.path)
        if handler.command == "POST" and match and match.group(1) == self.db:
            docs = json.loads(body)["docs"]
            self.sizes.update(
                {doc["_id"]: len(json.dumps(doc)) for doc in docs if not doc["_id"].startswith("_design/")}
            )
            refused = refusal(docs, self.limit) if self.limit is not None else None
            if refused is not None:
                self.refused += 1
                self._answer(
                    handler, refused[0], {"Content-Type": "application/json"}, json.dumps(refused[1]).encode()
                )
                return
        upstream = http.client.HTTPConnection("127.0.0.1", self.target_port, timeout=60)
        try:
            headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_HEADERS}
            upstream.request(handler.command, handler.path, body=body or None, headers=headers)
            answer = upstream.getresponse()
            data = answer.read()
            passed = {k: v for k, v in answer.getheaders() if k.lower() not in HOP_HEADERS}
            self._answer(handler, answer.status, passed, data)
        finally:
            upstream.close()

    @staticmethod
    def _answer(
        handler: http.server.BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: bytes
    ) -> None:
        handler.send_response(status)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(body)
