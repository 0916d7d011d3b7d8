"""One check of the configured store before a command does any work.

A wrong password, a store that is not running or a mistyped URI would otherwise surface as a
traceback from deep inside a crawl; :func:`checked_store` turns each into one line that says what is
wrong and how to fix it (the Troubleshooting section of docs/operations.md lists them).
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from votersdaily.locations import SQLITE_PREFIX, absolute_store_uri, embedded_path, is_embedded_uri

from . import STORE_ENV, mask_uri, open_store, store_uri
from .base import Store, StoreError, StoreRefused, StoreUnavailable

if TYPE_CHECKING:
    import requests

USE = "use sqlite:///path/to/file.db or http://user:password@host:5984/ in $%s or --store" % STORE_ENV


class StoreMissing(StoreError):
    """A command that only reads was pointed at a store that does not exist."""


def require_database(store: Store, *names: str) -> None:
    """:class:`StoreMissing` (the store closed) unless one of the databases ``names`` exists: a read
    command on a store nothing was crawled into (another store, another database prefix) says so,
    instead of an empty calendar or site and exit 0."""
    if any(store.has_db(name) for name in names):
        return
    store.close()
    raise StoreMissing(
        "no database %s in %s: nothing was crawled into this store; run a crawl first, or check "
        "$%s and $VOTERSDAILY_DB_PREFIX" % (" or ".join(repr(n) for n in names), store.display_uri, STORE_ENV)
    )


class StoreMisconfigured(StoreError):
    """The store URI cannot name a store (not a URI, an unknown scheme, no host, a bad port): the
    user's to fix, nothing was tried."""


def checked_store(uri: str | None = None, *, must_exist: bool = False) -> Store:
    """The store of ``uri`` (default: the configured one), after one request that proves it answers
    and accepts the credentials. ``must_exist``: a read command, which must not create an empty
    embedded store as a side effect. Raises :class:`StoreError` with a one-line message."""
    uri = absolute_store_uri(uri) if uri else store_uri()
    if uri_scheme(uri) == "sqlite":
        return _embedded(uri, must_exist)
    return _couch(uri)


def unavailable_line(uri: str, exc: StoreError) -> str:
    """What a person is told of the store of ``uri`` that a crawl found unavailable (``exc``): the
    check's own line, which says what is wrong and what to do (``cannot reach the store at … (connection
    refused): start CouchDB or PouchDB Server there, …``), when the check fails too; else ``exc``'s
    words. A refusal (401/403) is said as it came: asking again would be another failed login."""
    if not isinstance(exc, StoreRefused):
        try:
            checked_store(uri).close()
        except StoreError as found:
            return str(found)
    return "store %s is unavailable (%s)" % (mask_uri(uri), exc)


def uri_scheme(uri: str, *, spooled_for: bool = False) -> str:
    """The scheme of a store URI that can name a store (``sqlite``, ``http``, ``https``: nothing is
    asked of any server), or :class:`StoreMisconfigured` saying why it cannot. ``spooled_for``: the
    URI only names the store spooled documents were meant for (``flush --from``), which may end with
    a database (written before that was refused: they are delivered to the right store)."""
    shown = mask_uri(uri)
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 (raises ValueError for a port that is not a number in range)
    except ValueError as exc:  # http://[::1 (an IPv6 literal not closed), a port out of range
        if "port" in str(exc).lower():
            raise StoreMisconfigured("store URI %r has an invalid port: %s" % (shown, USE)) from None
        raise StoreMisconfigured("store URI %r is not a URI (%s): %s" % (shown, exc, USE)) from None
    scheme = parts.scheme.lower() if "://" in uri or is_embedded_uri(uri) else ""
    if not scheme:
        raise StoreMisconfigured("store URI %r is not a URI: %s" % (shown, USE))
    if scheme not in ("sqlite", "http", "https"):
        raise StoreMisconfigured("store URI %r has an unknown scheme %r: %s" % (shown, scheme, USE))
    if scheme != "sqlite" and not parts.hostname:
        raise StoreMisconfigured("store URI %r names no host: %s" % (shown, USE))
    if scheme != "sqlite" and not spooled_for and (db := named_database(parts.path)) is not None:
        raise StoreMisconfigured(
            "store URI %r ends with the database %r: a store URI names the server (%s), the project "
            "names its databases itself" % (shown, db, mask_uri(server_of(uri)))
        )
    if scheme == "sqlite":
        problem = embedded_problem(uri)
        if problem is not None:
            raise StoreMisconfigured("store URI %r %s: %s" % (shown, problem, USE))
    return scheme


def named_database(path: str) -> str | None:
    """The project's database an http(s) store URI's ``path`` ends with (``/vd_events``, with the
    deployment's prefix or without), or None: its requests would go inside that database (a
    ``PUT /vd_events/vd_log`` makes a document there) and what was refused spooled for ever."""
    from votersdaily.defaults import DEFAULTS
    from votersdaily.schema import EVENTS_DB, LOG_DB

    from .names import db_prefix

    last = unquote(path.rstrip("/").rpartition("/")[2])
    names = {EVENTS_DB, LOG_DB} | {value for name, value in DEFAULTS.items() if name.endswith("_DB")}
    try:
        prefix = db_prefix()
    except StoreError:  # a prefix no name can start with: said on its own, before any store is opened
        prefix = ""
    return next((name for name in sorted(names) if last in (name, prefix + name)), None)


def server_of(uri: str) -> str:
    """``uri`` without its path, query and fragment: the server's root."""
    parts = urlsplit(uri)
    return urlunsplit((parts.scheme, parts.netloc, "/", "", ""))


def _database_problem(path: Path) -> str | None:
    """Why the file at ``path`` is not an embedded store (nor an empty file, one to be), or None:
    something other than an SQLite database, or another program's (tables the store never makes;
    opening it would add the store's tables to it and turn on WAL). Asked of SQLite, never by opening
    the file ourselves: closing any other descriptor of a file drops the locks this process's own
    connections hold on it (POSIX locks), and a store open in this process would then fail ("disk
    I/O error"). Read-only and ``immutable``: the look leaves no ``-wal``/``-shm`` file beside a
    store it only looked at."""
    import sqlite3

    from .embedded import TABLES

    try:
        with contextlib.closing(sqlite3.connect(path.as_uri() + "?mode=ro&immutable=1", uri=True)) as db:
            tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:  # unreadable, locked, …: the store says so when it opens it
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB:
            return "names %s, which is not an SQLite database" % path
        return None
    foreign = sorted(name for name in tables - TABLES if not name.startswith("sqlite_"))
    if foreign:
        return (
            "names %s, an SQLite database of another program (its tables: %s), which the store never changes"
            % (
                path,
                ", ".join(foreign[:5]) + (", …" if len(foreign) > 5 else ""),
            )
        )
    return None


def embedded_problem(uri: str) -> str | None:
    """Why an embedded-store URI can never name a store, from the file system alone (nothing is
    opened or created), or None. Local facts, not an outage: SQLite's own error would come after the
    crawl started (under ``scrapy crawl``, a traceback) and spool for a store that can never open."""
    if not embedded_path(uri):
        return "names no file"
    path = Path(absolute_store_uri(uri)[len(SQLITE_PREFIX) :])
    if str(path) == ":memory:":
        return None
    if path.is_dir():
        return "names a folder, not a file"
    if path.is_file():
        return _database_problem(path)
    above = next((folder for folder in path.parents if os.path.lexists(folder)), None)
    if above is not None and not above.is_dir():
        return "names a file under %s, which is not a folder" % above
    return None


def _embedded(uri: str, must_exist: bool) -> Store:
    from .embedded import EmbeddedStore, cannot_open_line

    path = EmbeddedStore.path_of(uri)
    if must_exist and path != ":memory:" and not Path(path).is_file():
        raise StoreMissing(
            "no store at %s (the file does not exist): run a crawl first, or point %s at your store"
            % (uri, STORE_ENV)
        )
    try:
        store = open_store(uri)
        store.has_db("vd_log")  # opened for sure: one that cannot be, for now, opens at a call
    except StoreUnavailable as exc:  # its own line: a full folder named
        raise StoreError(str(exc)) from None
    except Exception as exc:  # sqlite3.Error or OSError: not a database, a read-only folder, …
        raise StoreError(cannot_open_line(uri, path, exc)) from None
    return store


def _couch(uri: str) -> Store:
    # Imported here: a command on the embedded store needs no HTTP client (requests: 0.06 s).
    import requests

    from .couch import CouchStore

    shown = mask_uri(uri)
    store = open_store(uri)
    assert isinstance(store, CouchStore), "an http(s) URI opens a CouchStore"  # noqa: S101 - invariant
    try:
        response = store.session.get(store.base + "_session", timeout=store.timeout)
    except requests.exceptions.SSLError as exc:  # a ConnectionError too, but no refused connection
        store.close()
        raise StoreUnavailable(
            "cannot reach the store at %s (TLS failed: %s): use http:// if the server speaks plain HTTP "
            "there, else fix its certificate" % (shown, tls_reason(exc))
        ) from None
    except requests.ConnectionError as exc:
        store.close()
        reason = "host not found" if "resolve" in str(exc).lower() else "connection refused"
        raise StoreUnavailable(
            "cannot reach the store at %s (%s): start CouchDB or PouchDB Server there, "
            "or fix host and port in $%s" % (shown, reason, STORE_ENV)
        ) from None
    except requests.RequestException as exc:
        store.close()
        raise StoreUnavailable(
            "cannot reach the store at %s (%s): is it a CouchDB server?" % (shown, type(exc).__name__)
        ) from None
    if response.status_code != 200 or "userCtx" not in _json_or_empty(response):
        store.close()
        refused = store.refusal(response, "GET", "_session")
        if response.status_code == 404 and urlsplit(uri).path.strip("/"):  # a path on the server
            raise StoreMisconfigured(
                "%s: a store URI names the server (%s), not a path on it"
                % (refused, mask_uri(server_of(uri)))
            )
        raise refused
    return store


def tls_reason(exc: Exception) -> str:
    """OpenSSL's reason code for a failed handshake (``WRONG_VERSION_NUMBER``: the server answered in
    plain HTTP; ``CERTIFICATE_VERIFY_FAILED``), not urllib3's pool and retry wording around it."""
    found = re.search(r"\[SSL: ([A-Z_]+)\]", str(exc))
    return found[1] if found else type(exc).__name__


def _json_or_empty(response: requests.Response) -> dict[str, Any]:
    try:
        answer = response.json()
    except ValueError:
        return {}
    return answer if isinstance(answer, dict) else {}
