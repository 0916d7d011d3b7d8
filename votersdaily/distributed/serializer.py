"""JSON serialisation of requests for the Redis queue (never pickle: a queue shared by machines
must not be able to run code in its workers). Bytes are tagged and base64-encoded."""

from __future__ import annotations

import base64
import json
from typing import Any

_BYTES = "__b64__"


def _encode(value: Any) -> Any:
    if isinstance(value, bytes):
        return {_BYTES: base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        return {(k.decode("latin-1") if isinstance(k, bytes) else k): _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1 and _BYTES in value:
            return base64.b64decode(value[_BYTES])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def dumps(obj: dict[str, Any]) -> str:
    try:
        return json.dumps(_encode(obj), sort_keys=True, separators=(",", ":"))
    except TypeError as exc:
        raise TypeError(
            "a request for the Redis queue must hold JSON data only (meta, cb_kwargs): %s" % exc
        ) from None


def loads(data: str | bytes) -> dict[str, Any]:
    return _decode(json.loads(data))
