"""Database names on the server: the deployment's prefix before every database the project uses.

The code names its databases by what they hold (``vd_events``, ``vd_log``, ``vd_scheduler``,
``ingest_file_result``, ``ll_seeds``, …, and any ``--db`` a user gives). Several deployments (staging and
production, or two teams) may share one CouchDB cluster: each sets ``VOTERSDAILY_DB_PREFIX`` and the
store backends turn every name into the server's through :func:`database_name`, the one function that
does, when they build a request or a query. Callers never see the prefix.
"""

from __future__ import annotations

from typing import Any

from votersdaily.setting_marks import DB_PREFIX

from .base import StoreError

PREFIX_ENV = "VOTERSDAILY_DB_PREFIX"


def db_prefix(settings: Any = None) -> str:
    """The configured prefix: environment first (the one rule, :mod:`..plumbing.environment`), then
    the Scrapy setting, then the default."""
    from votersdaily.defaults import DEFAULTS
    from votersdaily.plumbing.environment import setting_or_environment

    value = setting_or_environment(settings, PREFIX_ENV)
    return checked_prefix(DEFAULTS[PREFIX_ENV] if value is None else value)


def checked_prefix(prefix: str) -> str:
    if not DB_PREFIX(prefix):
        raise StoreError("database prefix %r (%s) is not %s" % (prefix, PREFIX_ENV, DB_PREFIX.what))
    return prefix


def database_name(prefix: str, db: str) -> str:
    """The name on the server of the project's database ``db``."""
    return prefix + db


def project_name(prefix: str, name: str) -> str | None:
    """The project's name for the server's database ``name``; None when it is another deployment's."""
    return name[len(prefix) :] if name.startswith(prefix) and not name.startswith("_") else None
