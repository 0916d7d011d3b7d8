"""Remote JSON-LD ``@context``s, loaded for the parser: a guarded fetch, a cache, and limits.

pyoxigraph's JSON-LD parser loads no remote context, so a document naming one gave no statement.
Before parsing, every remote context reference (``"@context": "<url>"``, in a list, or as
``@import``) is replaced by the context it names, recursively, with limits: at most
``max_count`` contexts per document, ``max_bytes`` each.

* The cache directory holds one file per context URL (:func:`cache_name`): the operator may pre-fill
  it (schema.org's context, which every JSON-LD-in-HTML page names) and then nothing is fetched;
  fetched contexts are written there too.
* Fetching goes through :func:`.fetching.fetch_limited`, the laundromat's one guarded fetch outside
  the reactor, under the same :class:`~votersdaily.ingest.ssrf.AddressPolicy` as every other URL
  from crawled content (``LAUNDROMAT_ALLOW_PRIVATE``, ``LAUNDROMAT_PRIVATE_HOSTS``,
  ``LAUNDROMAT_ALLOWED_HOSTS``): only http and https, no loopback, private, link-local or reserved
  address after DNS, the connection made to the very address that was checked, every redirect
  checked again, the body read up to a bound within the time limit.
"""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, urljoin

if TYPE_CHECKING:
    from ..ingest.ssrf import AddressPolicy

#: Context URLs that name one context (schema.org answers its context under all of them).
ALIASES = {
    "http://schema.org": "https://schema.org/",
    "http://schema.org/": "https://schema.org/",
    "https://schema.org": "https://schema.org/",
}
#: Where an alias's context is fetched from.
SOURCES = {"https://schema.org/": "https://schema.org/docs/jsonldcontext.jsonld"}
MAX_REDIRECTS = 3
ACCEPT = "application/ld+json, application/json;q=0.9, */*;q=0.1"


class ContextError(Exception):
    """A remote context could not be loaded (refused address, limit, HTTP error, not JSON)."""


@dataclass(frozen=True)
class ContextOptions:
    #: Folder of cached (and operator-provided) contexts; None: no cache on disk.
    cache_dir: str | None = None
    max_count: int = 10
    max_bytes: int = 1 << 20
    timeout: float = 10.0
    #: Fetch from private/loopback addresses too (the operator's switch; tests); used when no
    #: ``policy`` is given.
    allow_private: bool = False
    #: Fetch at all (False: only contexts in the cache directory).
    fetch: bool = True
    #: The crawl's address policy (:func:`.fetching.address_policy`); None: one from ``allow_private``.
    policy: AddressPolicy | None = None

    def address_policy(self) -> AddressPolicy:
        from ..ingest.ssrf import AddressPolicy

        if self.policy is not None:
            return self.policy
        return AddressPolicy(allow_private=self.allow_private, setting="LAUNDROMAT_ALLOW_PRIVATE")

    @classmethod
    def from_settings(cls, settings, output_dir: Path) -> ContextOptions:
        from .fetching import address_policy

        return cls(
            cache_dir=settings.get("LAUNDROMAT_CONTEXT_CACHE_DIR") or str(Path(output_dir) / "contexts"),
            max_count=settings.getint("LAUNDROMAT_CONTEXT_MAX_COUNT"),
            max_bytes=settings.getint("LAUNDROMAT_CONTEXT_MAX_BYTES"),
            timeout=settings.getfloat("LAUNDROMAT_CONTEXT_TIMEOUT"),
            allow_private=settings.getbool("LAUNDROMAT_ALLOW_PRIVATE"),
            fetch=settings.getbool("LAUNDROMAT_FETCH_CONTEXTS"),
            policy=address_policy(settings),
        )


def cache_name(url: str) -> str:
    """The cache file name of a context URL: the URL percent-encoded whole, plus ``.jsonld``
    (``https%3A%2F%2Fschema.org%2F.jsonld`` for schema.org)."""
    return quote(ALIASES.get(url, url), safe="") + ".jsonld"


def fetch_context(url: str, options: ContextOptions) -> bytes:
    """The body of ``url`` through the laundromat's guarded fetch; any refusal or failure is a
    :class:`ContextError` (recorded on the document)."""
    from ..ingest.ssrf import HostNotAllowed, PrivateAddressRefused
    from .fetching import DownloadTooLarge, fetch_limited

    try:
        return fetch_limited(
            url,
            options.address_policy(),
            max_bytes=options.max_bytes,
            timeout=options.timeout,
            accept=ACCEPT,
            max_redirects=MAX_REDIRECTS,
        ).body
    except DownloadTooLarge:
        raise ContextError("context %s is larger than %d bytes" % (url, options.max_bytes)) from None
    except (PrivateAddressRefused, HostNotAllowed) as exc:
        raise ContextError(str(exc)) from None
    except (OSError, http.client.HTTPException) as exc:
        raise ContextError("fetching %s failed: %s: %s" % (url, type(exc).__name__, exc)) from None


class ContextLoader:
    """Loads the remote contexts of one document (``max_count`` of them at most)."""

    def __init__(self, options: ContextOptions):
        self.options = options
        self.loaded: dict[str, object] = {}
        #: Context URLs loaded for this document, in order (recorded on the document).
        self.urls: list[str] = []

    def context(self, url: str) -> object:
        """The ``@context`` value of the document at ``url``."""
        key = ALIASES.get(url, url)
        if key in self.loaded:
            return self.loaded[key]
        if len(self.urls) >= self.options.max_count:
            raise ContextError("more than %d remote contexts" % self.options.max_count)
        self.urls.append(key)
        body = self._cached(key)
        if body is None:
            if not self.options.fetch:
                raise ContextError("remote context %s is not in the context cache" % key)
            body = fetch_context(SOURCES.get(key, key), self.options)
            self._store(key, body)
        try:
            document = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise ContextError("remote context %s is not JSON: %s" % (key, exc)) from None
        if not isinstance(document, dict) or "@context" not in document:
            raise ContextError("remote context %s has no @context" % key)
        value = _context_value(document["@context"], key, self)
        self.loaded[key] = value
        return value

    def _cached(self, key: str) -> bytes | None:
        if not self.options.cache_dir:
            return None
        path = Path(self.options.cache_dir) / cache_name(key)
        if not path.is_file():
            return None
        if path.stat().st_size > self.options.max_bytes:
            raise ContextError("cached context %s is larger than %d bytes" % (key, self.options.max_bytes))
        return path.read_bytes()

    def _store(self, key: str, body: bytes) -> None:
        if not self.options.cache_dir:
            return
        folder = Path(self.options.cache_dir)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / (cache_name(key) + ".part")
        tmp.write_bytes(body)
        tmp.replace(folder / cache_name(key))


def inline_contexts(value: object, base: str | None, loader: ContextLoader) -> object:
    """``value`` (a JSON-LD document or a context) with every remote context reference replaced by
    the context it names (resolved against ``base``)."""
    if isinstance(value, list):
        return [inline_contexts(item, base, loader) for item in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        if key == "@context":
            out[key] = _context_value(item, base, loader)
        elif key == "@import" and isinstance(item, str):
            imported = loader.context(urljoin(base or "", item))
            if not isinstance(imported, dict):
                raise ContextError("@import of %s is not a context object" % item)
            out.update({k: v for k, v in imported.items() if k not in value})
        else:
            out[key] = inline_contexts(item, base, loader)
    return out


def _context_value(item: object, base: str | None, loader: ContextLoader) -> object:
    if isinstance(item, str):
        return loader.context(urljoin(base or "", item))
    if isinstance(item, list):
        flat: list = []
        for entry in item:
            resolved = _context_value(entry, base, loader)
            flat.extend(resolved if isinstance(resolved, list) and isinstance(entry, str) else [resolved])
        return flat
    return inline_contexts(item, base, loader)


def has_remote_context(value: object) -> bool:
    """True when a JSON-LD document names a context by URL anywhere (or imports one)."""
    if isinstance(value, list):
        return any(has_remote_context(item) for item in value)
    if not isinstance(value, dict):
        return False
    for key, item in value.items():
        if key == "@context" and (
            isinstance(item, str) or (isinstance(item, list) and any(isinstance(i, str) for i in item))
        ):
            return True
        if key == "@import" and isinstance(item, str):
            return True
        if has_remote_context(item):
            return True
    return False
