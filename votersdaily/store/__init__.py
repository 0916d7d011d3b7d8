"""Storage: one small protocol (:class:`Store`), a CouchDB backend and an embedded SQLite backend.

``open_store(uri)`` picks the backend from the URI (docs/events.md §1):
``sqlite:///path.db`` → embedded, ``http(s)://user:pass@host:port/`` → CouchDB.
"""

from __future__ import annotations

from typing import Any

from votersdaily import locations
from votersdaily.locations import STORE_ENV
from votersdaily.rfc3986 import mask_uri

from .base import Row, Store, StoreError, StoreUnavailable
from .names import db_prefix


def store_uri(settings: Any = None) -> str:
    """The configured store URI: environment first, then the Scrapy setting, then the default; an
    embedded store's relative path is under the data home (votersdaily/locations.py)."""
    return locations.store_uri(settings)


def open_store(uri: str | None = None, settings: Any = None) -> Store:
    """The store of ``uri`` (default: the configured one; an embedded store's relative path is under
    the data home), its databases under the configured prefix (:mod:`.names`)."""
    uri = locations.absolute_store_uri(uri, settings) if uri else store_uri(settings)
    prefix = db_prefix(settings)
    if locations.is_embedded_uri(uri):
        from .embedded import EmbeddedStore

        return EmbeddedStore.from_uri(uri, prefix=prefix)
    if uri.startswith(("http://", "https://")):
        from .couch import CouchStore

        return CouchStore(uri, prefix=prefix)
    raise StoreError("unsupported store URI scheme in %r (use sqlite:/// or http(s)://)" % mask_uri(uri))


__all__ = [
    "STORE_ENV",
    "Row",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "mask_uri",
    "open_store",
    "store_uri",
]
