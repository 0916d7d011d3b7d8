"""Remote JSON-LD ``@context``s, loaded for the parser: a guarded fetch, a cache, and limits.

pyoxigraph's JSON-LD parser loads no remote context, so a document naming one gave no statement.
Before parsing, every remote context reference (``"@context": "<url>"``, in a list, or as
``@import``) is replaced by the context it names, recursively, with limits: at most
``max_count`` contexts per document, ``max_bytes`` each, and ``max_count`` × ``max_bytes`` of context
inlined in all (a context named twice is copied twice into what the parser reads).

* The cache directory holds one file per context URL (:func:`cache_name`): the operator may pre-fill
  it (schema.org's context, which every JSON-LD-in-HTML page names) and then nothing is fetched;
  fetched contexts are written there too.
* Fetching goes through :func:`~votersdaily.plumbing.pinned_fetch.fetch_limited`, the one guarded
  fetch outside the reactor, under the same
  :class:`~votersdaily.plumbing.address_policy.AddressPolicy` as every other URL from crawled content (``LAUNDROMAT_ALLOW_PRIVATE``, ``LAUNDROMAT_PRIVATE_HOSTS``,
  ``LAUNDROMAT_ALLOWED_HOSTS``): only http and https, no loopback, private, link-local or reserved
  address after DNS, the connection made to the very address that was checked, every redirect
  checked again, the body read up to a bound within the time limit.
"""

from __future__ import annotations

import contextlib
import http.client
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urljoin

from votersdaily import locations
from votersdaily.defaults import DEFAULTS

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from votersdaily.plumbing.address_policy import AddressPolicy

#: Context URLs that name one context (schema.org answers its context under all of them).
ALIASES = {
    "http://schema.org": "https://schema.org/",
    "http://schema.org/": "https://schema.org/",
    "https://schema.org": "https://schema.org/",
}
#: Where an alias's context is fetched from.
SOURCES = {"https://schema.org/": "https://schema.org/docs/jsonldcontext.jsonld"}
MAX_REDIRECTS = 3
#: Remote contexts inlined into one document at most (each level of a context cycle counts).
MAX_INLINED = 1000
ACCEPT = "application/ld+json, application/json;q=0.9, */*;q=0.1"


class ContextError(Exception):
    """A remote context could not be loaded (refused address, limit, HTTP error, not JSON)."""


@dataclass(frozen=True)
class ContextOptions:
    #: Folder of cached (and operator-provided) contexts; None: no cache on disk.
    cache_dir: str | None = None
    max_count: int = DEFAULTS["LAUNDROMAT_CONTEXT_MAX_COUNT"]
    max_bytes: int = DEFAULTS["LAUNDROMAT_CONTEXT_MAX_BYTES"]
    timeout: float = DEFAULTS["LAUNDROMAT_CONTEXT_TIMEOUT"]
    #: Fetch from private/loopback addresses too (the operator's switch; tests); used when no
    #: ``policy`` is given.
    allow_private: bool = DEFAULTS["LAUNDROMAT_ALLOW_PRIVATE"]
    #: Fetch at all (False: only contexts in the cache directory).
    fetch: bool = DEFAULTS["LAUNDROMAT_FETCH_CONTEXTS"]
    #: The crawl's address policy (:func:`.fetching.address_policy`); None: one from ``allow_private``.
    policy: AddressPolicy | None = None

    def address_policy(self) -> AddressPolicy:
        from votersdaily.plumbing.address_policy import AddressPolicy

        if self.policy is not None:
            return self.policy
        return AddressPolicy(allow_private=self.allow_private, setting="LAUNDROMAT_ALLOW_PRIVATE")

    @classmethod
    def from_settings(cls, settings: BaseSettings, output_dir: Path) -> ContextOptions:
        from .fetching import address_policy

        configured = settings.get("LAUNDROMAT_CONTEXT_CACHE_DIR")
        return cls(
            cache_dir=str(
                locations.under_home(configured, settings) if configured else Path(output_dir) / "contexts"
            ),
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
    from votersdaily.plumbing.address_policy import HostNotAllowed, PrivateAddressRefused
    from votersdaily.plumbing.pinned_fetch import DownloadTooLarge, fetch_limited

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
    """Loads the remote contexts of one document (``max_count`` distinct ones at most)."""

    def __init__(self, options: ContextOptions) -> None:
        self.options = options
        #: The ``@context`` value of each loaded context document, as written (not inlined).
        self.documents: dict[str, object] = {}
        #: Context URLs loaded for this document, in order (recorded on the document).
        self.urls: list[str] = []
        #: The size of each loaded context document, in bytes.
        self.sizes: dict[str, int] = {}
        #: Why the cache folder did not take a context fetched for this document, if it did not.
        self.cache_error: str | None = None

    def context(self, url: str) -> object:
        """The ``@context`` value of the document at ``url``, as written."""
        key = ALIASES.get(url, url)
        if key in self.documents:
            return self.documents[key]
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
        self.documents[key] = document["@context"]
        self.sizes[key] = len(body)
        return document["@context"]

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
        """Keep a fetched context in the cache folder. The cache is a copy and the body is in hand:
        a folder that cannot take it (a full disk, a read-only folder) costs the document nothing
        (it cost all its statements); what was written is removed, and why is kept in
        :attr:`cache_error` for the crawl to say once."""
        if not self.options.cache_dir:
            return
        folder = Path(self.options.cache_dir)
        tmp = folder / (cache_name(key) + ".part")
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(body)
            tmp.replace(folder / cache_name(key))
        except OSError as exc:
            with contextlib.suppress(OSError):  # a read-only folder: nothing was written
                tmp.unlink(missing_ok=True)
            self.cache_error = exc.strerror or str(exc)


def inline_contexts(document: object, base: str | None, loader: ContextLoader) -> object:
    """``document`` with every remote context reference replaced by the context it names (resolved
    against ``base``)."""
    return _Inliner(loader, nesting_depth(document)).value(document, base, frozenset())


class _Inliner:
    """Inlines the remote contexts of one document.

    A scoped context may name a context that includes it again (JSON-LD 1.1 allows such cycles:
    a processor loads each level when the document reaches it). Each level of scoped context needs
    a level of the document's nesting, so a cycle is inlined as deep as the document is nested and
    no deeper (an empty context stands for the levels the document cannot reach), with at most
    :data:`MAX_INLINED` contexts inlined in all. A context inlined with no cycle cut is reused. A
    context that includes itself with no scoped context in between never ends: it is an error.
    """

    def __init__(self, loader: ContextLoader, depth: int) -> None:
        self.loader = loader
        self.depth = depth
        #: The remote contexts being inlined, each with the scoped-context level it was named at.
        self.stack: list[tuple[str, int]] = []
        self.scoped = 0
        self.inlined = 0
        self.cuts = 0
        self.reused: dict[str, object] = {}
        #: Bytes of context the document holds once inlined (a reused context counts each time it
        #: is used: the parser is given one copy per use), and how many it may hold: what
        #: ``max_count`` contexts of ``max_bytes`` would be, each used once.
        self.inlined_bytes = 0
        self.max_inlined_bytes = loader.options.max_bytes * loader.options.max_count
        self.reused_bytes: dict[str, int] = {}

    def value(self, value: object, base: str | None, json_terms: frozenset[str] | None) -> object:
        """A document's node (``json_terms``: its properties whose values are JSON literals, kept
        as written) or, with ``json_terms`` None, a part of a context."""
        if isinstance(value, list):
            return [self.value(item, base, json_terms) for item in value]
        if not isinstance(value, dict):
            return value
        context = None
        if "@context" in value:
            scoped = json_terms is None  # a term definition's (scoped) context
            self.scoped += scoped
            try:
                context = self.context(value["@context"], base)
            finally:
                self.scoped -= scoped
        if context is not None and json_terms is not None:
            json_terms = json_terms | _json_terms(context)
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key == "@context":
                out[key] = context
            elif key == "@import" and isinstance(item, str):
                imported = self.remote(urljoin(base or "", item))
                if not isinstance(imported, dict):
                    raise ContextError("@import of %s is not a context object" % item)
                out.update({k: v for k, v in imported.items() if k not in value})
            elif json_terms is not None and (key == "@value" or key in json_terms):
                out[key] = item  # a literal's value: "@context" in it is data
            else:
                out[key] = self.value(item, base, json_terms)
        return out

    def context(self, item: object, base: str | None) -> object:
        """A ``@context`` value with its remote references inlined."""
        if isinstance(item, str):
            return self.remote(urljoin(base or "", item))
        if isinstance(item, list):
            flat: list[Any] = []
            for entry in item:
                resolved = self.context(entry, base)
                flat.extend(resolved if isinstance(resolved, list) and isinstance(entry, str) else [resolved])
            return flat
        return self.value(item, base, None)

    def remote(self, url: str) -> object:
        key = ALIASES.get(url, url)
        if key in self.reused:
            self._grow(self.reused_bytes[key])
            return self.reused[key]
        levels = [scoped for named, scoped in self.stack if named == key]
        if self.scoped in levels:
            raise ContextError("recursive context inclusion: %s includes itself" % key)
        if len(levels) >= self.depth:
            self.cuts += 1
            return {}  # a level of a context cycle that the document cannot reach
        self.inlined += 1
        if self.inlined > MAX_INLINED:
            raise ContextError("more than %d remote contexts inlined (a context cycle)" % MAX_INLINED)
        cuts, before = self.cuts, self.inlined_bytes
        self.stack.append((key, self.scoped))
        try:
            value = self.context(self.loader.context(key), key)
        finally:
            self.stack.pop()
        self._grow(self.loader.sizes[key])
        if self.cuts == cuts:
            self.reused[key] = value
            self.reused_bytes[key] = self.inlined_bytes - before
        return value

    def _grow(self, size: int) -> None:
        """Count ``size`` more bytes of inlined context; past the bound the document fails (a few
        small contexts that name each other twice would otherwise expand to gigabytes)."""
        self.inlined_bytes += size
        if self.inlined_bytes > self.max_inlined_bytes:
            raise ContextError(
                "remote contexts inlined into the document would pass %d bytes (contexts that name "
                "each other more than once)" % self.max_inlined_bytes
            )


def _json_terms(context: object) -> frozenset[str]:
    """The terms (and their IRIs) that a context types ``@json``: their values are JSON literals."""
    terms: set[str] = set()
    for entry in context if isinstance(context, list) else [context]:
        if isinstance(entry, dict):
            for term, definition in entry.items():
                if isinstance(definition, dict) and definition.get("@type") == "@json":
                    terms.add(term)
                    if isinstance(definition.get("@id"), str):
                        terms.add(definition["@id"])
    return frozenset(terms)


def nesting_depth(value: object) -> int:
    """How deeply JSON objects and arrays nest in ``value`` (0 for a scalar)."""
    if isinstance(value, dict):
        return 1 + max((nesting_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((nesting_depth(v) for v in value), default=0)
    return 0


def has_remote_context(value: object, json_terms: frozenset[str] = frozenset()) -> bool:
    """True when a JSON-LD document names a context by URL anywhere (or imports one); a JSON
    literal's content is data, not looked into."""
    if isinstance(value, list):
        return any(has_remote_context(item, json_terms) for item in value)
    if not isinstance(value, dict):
        return False
    context = value.get("@context")
    if isinstance(context, str) or (isinstance(context, list) and any(isinstance(i, str) for i in context)):
        return True
    if context is not None:
        json_terms = json_terms | _json_terms(context)
    for key, item in value.items():
        if key == "@import" and isinstance(item, str):
            return True
        if key == "@context":
            if has_remote_context(item):
                return True
        elif key != "@value" and key not in json_terms and has_remote_context(item, json_terms):
            return True
    return False
