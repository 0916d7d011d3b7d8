"""Storage: one small protocol (:class:`Store`), a CouchDB backend and an embedded SQLite backend.

``open_store(uri)`` picks the backend from the URI (docs/events.md §1):
``sqlite:///path.db`` → embedded, ``http(s)://user:pass@host:port/`` → CouchDB.
"""

from __future__ import annotations

import os
from typing import Any

from votersdaily.rfc3986 import mask_uri

from .base import Row, Store, StoreError, StoreUnavailable

STORE_ENV = "VOTERSDAILY_STORE"
DEFAULT_STORE_URI = "sqlite:///votersdaily.db"


def store_uri(settings: Any = None) -> str:
    """The configured store URI: environment first, then the Scrapy setting, then the default."""
    uri = os.environ.get(STORE_ENV)
    if not uri and settings is not None:
        uri = settings.get("VOTERSDAILY_STORE")
    return uri or DEFAULT_STORE_URI


def open_store(uri: str | None = None) -> Store:
    uri = uri or store_uri()
    if uri.startswith("sqlite:"):
        from .embedded import EmbeddedStore

        return EmbeddedStore.from_uri(uri)
    if uri.startswith(("http://", "https://")):
        from .couch import CouchStore

        return CouchStore(uri)
    raise StoreError("unsupported store URI scheme in %r (use sqlite:/// or http(s)://)" % mask_uri(uri))


__all__ = [
    "DEFAULT_STORE_URI",
    "STORE_ENV",
    "Row",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "mask_uri",
    "open_store",
    "store_uri",
]
