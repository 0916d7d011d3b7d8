"""Database names on the server: the deployment's prefix before every database the project uses.

The code names its databases by what they hold (``vd_events``, ``vd_log``, ``vd_scheduler``,
``ingest_file_result``, ``ll_seeds``, …, and any ``--db`` a user gives). Several deployments (staging and
production, or two teams) may share one CouchDB cluster: each sets ``VOTERSDAILY_DB_PREFIX`` and the
store backends turn every name into the server's through :func:`database_name`, the one function that
does, when they build a request or a query. Callers never see the prefix.
"""

from __future__ import annotations

import re
from typing import Any

from .base import StoreError

PREFIX_ENV = "VOTERSDAILY_DB_PREFIX"
#: CouchDB's rule for the start of a database name (docs: "Database name"), empty for no prefix.
_PREFIX_RE = re.compile(r"(?:[a-z][a-z0-9_$()+/-]*)?\Z")


def db_prefix(settings: Any = None) -> str:
    """The configured prefix: environment first (the one rule, :mod:`..plumbing.environment`), then
    the Scrapy setting, then the default."""
    from votersdaily.defaults import DEFAULTS
    from votersdaily.plumbing.environment import setting_or_environment

    value = setting_or_environment(settings, PREFIX_ENV)
    return checked_prefix(DEFAULTS[PREFIX_ENV] if value is None else value)


def checked_prefix(prefix: str) -> str:
    if not _PREFIX_RE.match(prefix):
        raise StoreError(
            "database prefix %r (%s) is not the start of a CouchDB database name: a lowercase letter, "
            "then lowercase letters, digits or _$()+-/" % (prefix, PREFIX_ENV)
        )
    return prefix


def database_name(prefix: str, db: str) -> str:
    """The name on the server of the project's database ``db``."""
    return prefix + db


def project_name(prefix: str, name: str) -> str | None:
    """The project's name for the server's database ``name``; None when it is another deployment's."""
    return name[len(prefix) :] if name.startswith(prefix) and not name.startswith("_") else None


def project_databases(settings: Any) -> list[str]:
    """Every database the crawls and commands use with ``settings``, by the project's names: what a
    server admin creates, and makes a member user's, for a least-privilege deployment
    (docs/operations.md: Users and roles). The ingest's blob database only with
    ``INGEST_BLOB_BACKEND = "store"``."""
    # Imported here: the ingest's modules are not needed to open a store.
    from votersdaily.deploy.periodic import SCHEDULER_DB
    from votersdaily.ingest.filetable import table_name
    from votersdaily.ingest.persist import HTML_META_DB, RESULTS_DB
    from votersdaily.laundromat import DB as SEEDS_DB
    from votersdaily.schema import EVENTS_DB, LOG_DB

    ingest = [settings.get("INGEST_REQUESTS_DB"), settings.get("INGEST_CATALOG_DB"), RESULTS_DB, HTML_META_DB]
    ingest.append(
        table_name(settings.get("INGEST_FILE_TABLE_VERSION"), settings.get("INGEST_FILE_TABLE_ENV"))
    )
    if settings.get("INGEST_BLOB_BACKEND") == "store":
        ingest.append(settings.get("INGEST_BLOB_DB"))
    return [EVENTS_DB, LOG_DB, SCHEDULER_DB, *ingest, SEEDS_DB]
