"""Where data goes: every file and folder the project writes, resolved once to an absolute path.

One *data home* anchors them all, found in this order (``python -m votersdaily where`` prints it):

1. ``$VOTERSDAILY_HOME``, then the ``VOTERSDAILY_HOME`` setting, when set;
2. the Scrapy project the command runs in: the folder of the closest ``scrapy.cfg`` from the
   working folder upward (where Scrapy keeps its own ``.scrapy``), so a command run from any
   subfolder of a checkout writes to the checkout;
3. else the platform's per-user data folder (``$XDG_DATA_HOME/votersdaily``, by default
   ``~/.local/share/votersdaily``), so the installed command writes to one place from anywhere.

Each location below is a setting, which an environment variable of its name overrides (as every
project setting: votersdaily/plumbing/environment.py). An absolute value
is used as it is; a relative one is under the data home, never under the working folder. One
function per location; the components that write call it, so the rule lives here alone.

This module imports nothing from Scrapy: the laundromat's cleaning workers read it without Scrapy.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from .plumbing.environment import environment_value

HOME_ENV = "VOTERSDAILY_HOME"
STORE_ENV = "VOTERSDAILY_STORE"
SPOOL_ENV = "VOTERSDAILY_SPOOL_DIR"
ARCHIVE_ENV = "VOTERSDAILY_ARCHIVE_DIR"
#: The folder under the platform's data folder, and Scrapy's project file.
APP_NAME = "votersdaily"
SCRAPY_CFG = "scrapy.cfg"
SQLITE_SCHEME = "sqlite:"
SQLITE_PREFIX = SQLITE_SCHEME + "///"


#: The votersdaily package's folder, and the folder that holds it.
PACKAGE = Path(__file__).resolve().parent
#: Files that make the folder holding the package a checkout of the repository (not site-packages,
#: nor a pip ``--target`` folder that merely holds other things beside it).
CHECKOUT_FILES = ("pyproject.toml", SCRAPY_CFG)


def checkout_root() -> Path | None:
    """The source checkout the package is run from (an editable install too), if it is run from one."""
    root = PACKAGE.parent
    return root if all((root / name).is_file() for name in CHECKOUT_FILES) else None


class LocationUnset(ValueError):
    """A location setting is empty where the component needs a place to write."""


def _setting(settings: Any, name: str) -> Any:
    """``name`` from ``settings`` (Scrapy settings or a mapping) if they have it, else its default
    (votersdaily/settings.py): a command that reads no Scrapy settings gets the same answer."""
    if settings is not None and name in settings:
        return settings.get(name)
    return _default(name)


def _default(name: str) -> Any:
    from . import settings as project_settings

    return getattr(project_settings, name, None)


def _configured(settings: Any, name: str) -> str:
    """The raw value of a location: the environment variable of a project setting first (the one
    rule of votersdaily/plumbing/environment.py), then the setting ('' if unset)."""
    value = environment_value(name) or _setting(settings, name)
    return str(value).strip() if value is not None else ""


def project_root(start: Path | None = None) -> Path | None:
    """The folder of the closest ``scrapy.cfg`` from ``start`` (the working folder) upward, as
    Scrapy's ``closest_scrapy_cfg`` finds it; None outside any project."""
    here = Path(start or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        if (folder / SCRAPY_CFG).is_file():
            return folder
    return None


def platform_data_dir() -> Path:
    """The per-user data folder of the platform, for commands run outside any project."""
    if sys.platform == "win32":
        base = os.getenv("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = str(Path.home() / "Library" / "Application Support")
    else:
        base = os.getenv("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser().absolute() / APP_NAME


def home_and_reason(settings: Any = None) -> tuple[Path, str]:
    """The data home and why it is that folder (what ``where`` prints)."""
    env = (environment_value(HOME_ENV) or "").strip()
    if env:
        return Path(env).expanduser().absolute(), "$%s" % HOME_ENV
    value = settings.get("VOTERSDAILY_HOME") if settings is not None else None
    if value and str(value).strip():
        return Path(str(value).strip()).expanduser().absolute(), "the VOTERSDAILY_HOME setting"
    root = project_root()
    if root is not None:
        return root, "the Scrapy project (%s) the command runs in" % (root / SCRAPY_CFG)
    return platform_data_dir(), "the platform's data folder (no scrapy.cfg here or above)"


def data_home(settings: Any = None) -> Path:
    """The folder every relative location is under (see the module docstring)."""
    return home_and_reason(settings)[0]


def under_home(value: str | os.PathLike[str], settings: Any = None) -> Path:
    """``value`` as an absolute path: itself if absolute (``~`` expanded), else under the data home."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else data_home(settings) / path


def _folder(settings: Any, name: str) -> Path:
    value = _configured(settings, name)
    if not value:
        raise LocationUnset("%s is empty: name the folder to write to" % name)
    return under_home(value, settings)


# -- the store -----------------------------------------------------------------------------------


def is_embedded_uri(uri: str) -> bool:
    """Whether ``uri`` names an embedded store (``sqlite:``, in any case)."""
    return uri[: len(SQLITE_SCHEME)].lower() == SQLITE_SCHEME


def embedded_path(uri: str) -> str:
    """The file an embedded-store URI names, as written: ``sqlite:///relative.db`` and
    ``sqlite:////absolute.db`` (SQLAlchemy's spelling), also ``sqlite://x.db`` and ``sqlite:x.db``;
    '' when it names none (``sqlite:///``)."""
    path = uri[len(SQLITE_SCHEME) :]
    if path.startswith("///"):
        return path[3:]
    return path[2:] if path.startswith("//") else path


def absolute_store_uri(uri: str, settings: Any = None) -> str:
    """``uri`` with a relative embedded-store path made absolute under the data home, in the one
    spelling ``sqlite:///<path>`` (however the scheme and slashes were written: each names a file
    the store opens, and a relative one would be under the working folder); any other URI (CouchDB,
    an embedded one naming no file) as it is."""
    if not is_embedded_uri(uri):
        return uri
    path = embedded_path(uri)
    if not path:
        return uri
    if path == ":memory:" or path.startswith("/"):
        return SQLITE_PREFIX + path
    return SQLITE_PREFIX + str(under_home(path, settings))


def store_uri(settings: Any = None) -> str:
    """The store: ``$VOTERSDAILY_STORE``, else the ``VOTERSDAILY_STORE`` setting; an embedded store's
    file is under the data home unless its path is absolute."""
    uri = _configured(settings, STORE_ENV) or _default("VOTERSDAILY_STORE")
    return absolute_store_uri(uri, settings)


# -- what runs write besides the store -----------------------------------------------------------


def spool_dir(settings: Any = None) -> Path:
    """Documents the store could not take (``$VOTERSDAILY_SPOOL_DIR``, ``VOTERSDAILY_SPOOL_DIR``)."""
    return _folder(settings, SPOOL_ENV)


def archive_dir(settings: Any = None) -> Path:
    """The source archive of the event spiders (``$VOTERSDAILY_ARCHIVE_DIR``, ``VOTERSDAILY_ARCHIVE_DIR``)."""
    return _folder(settings, ARCHIVE_ENV)


def ingest_blob_dir(settings: Any = None) -> Path:
    """The ingest's extracted documents when ``INGEST_BLOB_BACKEND`` is ``folder`` (``INGEST_BLOB_DIR``)."""
    return _folder(settings, "INGEST_BLOB_DIR")


def ingest_teixml_feed(settings: Any = None) -> Path | None:
    """The ingest's JSON-lines TEI feed file (``INGEST_TEIXML_FEED``); None when switched off."""
    value = _configured(settings, "INGEST_TEIXML_FEED")
    return under_home(value, settings) if value else None


def ingest_warc_dir(settings: Any = None) -> Path:
    """The ingest's WARC files (``INGEST_WARC_DIR``)."""
    return _folder(settings, "INGEST_WARC_DIR")


def laundromat_output_dir(settings: Any = None) -> Path:
    """The laundromat's downloaded (``files/``) and cleaned (``cleaned/``) files (``LAUNDROMAT_OUTPUT_DIR``)."""
    return _folder(settings, "LAUNDROMAT_OUTPUT_DIR")


def laundromat_context_cache_dir(settings: Any = None) -> Path:
    """Cached remote JSON-LD contexts (``LAUNDROMAT_CONTEXT_CACHE_DIR``; empty: the output's ``contexts/``)."""
    value = _configured(settings, "LAUNDROMAT_CONTEXT_CACHE_DIR")
    return under_home(value, settings) if value else laundromat_output_dir(settings) / "contexts"


def http_cache_dir(settings: Any = None) -> Path:
    """Scrapy's HTTP cache of the event spiders (``HTTPCACHE_DIR``): relative, under the data home's
    ``.scrapy`` folder, where Scrapy keeps it in a project."""
    path = Path(_configured(settings, "HTTPCACHE_DIR") or _default("HTTPCACHE_DIR")).expanduser()
    return path if path.is_absolute() else data_home(settings) / ".scrapy" / path


class Location(NamedTuple):
    resolve: Callable[[Any], Path | str | None]
    #: What is kept there (``where`` prints it).
    holds: str
    #: What it is, in a sentence ("refusing … it is the spool").
    called: str


#: Every location by the setting that names it (``where``, the run log's ``outputs`` and the places
#: ``site build`` never replaces read this).
BY_SETTING: Mapping[str, Location] = MappingProxyType(
    {
        "VOTERSDAILY_STORE": Location(store_uri, "events, run logs and every other database", "the store"),
        "VOTERSDAILY_SPOOL_DIR": Location(spool_dir, "documents the store could not take yet", "the spool"),
        "VOTERSDAILY_ARCHIVE_DIR": Location(
            archive_dir, "the event spiders' source archive (WARC)", "the source archive"
        ),
        "INGEST_BLOB_DIR": Location(
            ingest_blob_dir, "ingest: extracted TEI and thumbnails", "the ingest's blobs"
        ),
        "INGEST_TEIXML_FEED": Location(
            ingest_teixml_feed, "ingest: the html-teixml feed", "the ingest's TEI feed"
        ),
        "INGEST_WARC_DIR": Location(
            ingest_warc_dir, "ingest: WARC files (INGEST_WARC_ENABLED)", "the ingest's WARCs"
        ),
        "LAUNDROMAT_OUTPUT_DIR": Location(
            laundromat_output_dir, "laundromat: downloaded and cleaned files", "the laundromat's output"
        ),
        "LAUNDROMAT_CONTEXT_CACHE_DIR": Location(
            laundromat_context_cache_dir, "laundromat: JSON-LD contexts", "the laundromat's JSON-LD contexts"
        ),
        "HTTPCACHE_DIR": Location(
            http_cache_dir, "Scrapy's HTTP cache of the event spiders", "the HTTP cache"
        ),
    }
)


#: Where every run may write besides the store (whose URI ``store/check.py:bad_store_uri`` checks):
#: the spool, which keeps what the store does not take. A spider's ``output_settings`` add to it.
RUN_LOCATIONS = (SPOOL_ENV,)
#: Locations that name a file, not a folder.
FILE_LOCATIONS = frozenset({"INGEST_TEIXML_FEED"})


def _in_use(settings: Any, name: str) -> bool:
    """Whether a run writes to location ``name`` at all: the ingest's WARC folder only with
    ``INGEST_WARC_ENABLED``, its blob folder only with the ``folder`` backend."""
    if name == "INGEST_WARC_DIR":
        return _switched_on(settings, "INGEST_WARC_ENABLED")
    if name == "INGEST_BLOB_DIR":
        return _configured(settings, "INGEST_BLOB_BACKEND") == "folder"
    return True


def archive_written(settings: Any) -> tuple[str, ...]:
    """The event spiders' archive folder setting, when their runs write the archive
    (``VOTERSDAILY_ARCHIVE_ENABLED``): what a crawl of them checks with :func:`misplaced` (a reparse,
    which reads it, checks it whatever that says)."""
    return (ARCHIVE_ENV,) if _switched_on(settings, "VOTERSDAILY_ARCHIVE_ENABLED") else ()


def _switched_on(settings: Any, name: str) -> bool:
    """Whether the yes-or-no setting ``name`` says yes, the environment first (as :func:`_configured`)."""
    return _configured(settings, name).lower() in ("true", "1", "yes", "on")


def not_a_folder(path: Path) -> tuple[Path, str] | None:
    """What stops ``path`` from being, or being made, a folder: itself or the nearest of its
    parents that exists, when that is something else, and what it is; None when nothing does."""
    for existing in (path, *path.parents):
        if existing.is_dir():
            return None
        if existing.exists() or existing.is_symlink():
            return existing, "a file" if existing.is_file() else "no folder"
    return None


def misplaced(settings: Any = None, names: tuple[str, ...] = RUN_LOCATIONS) -> list[str]:
    """One line for each location of ``names`` that names a file where a folder must be, a folder
    where a file must be, or a place under a file: a run would write nothing there (the spool: the
    documents the store did not take would be lost), so a command refuses it before any work."""
    problems = []
    in_use = tuple(name for name in names if _in_use(settings, name))
    for name, value in locations(settings, in_use).items():
        target = Path(value)
        if name in FILE_LOCATIONS and target.is_dir():
            problems.append("%s names %s, which is a folder, not a file" % (name, value))
            continue
        blocked = not_a_folder(target.parent if name in FILE_LOCATIONS else target)
        if blocked is not None:
            where, what = blocked
            under = "" if where == target else ", under %s" % where
            problems.append("%s names %s%s, which is %s, not a folder" % (name, value, under, what))
    return problems


def locations(settings: Any = None, names: tuple[str, ...] | None = None) -> dict[str, str]:
    """The absolute location of each setting of ``names`` (default: all), as strings; a switched-off
    location (an empty feed file) is left out."""
    found = {}
    for name in names if names is not None else tuple(BY_SETTING):
        try:
            value = BY_SETTING[name].resolve(settings)
        except LocationUnset:
            continue
        if value is not None:
            found[name] = str(value)
    return found
