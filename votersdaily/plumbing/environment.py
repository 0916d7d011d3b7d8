"""Settings an operator gives in the environment: one rule, one resolver.

Every project setting (``VOTERSDAILY_*``, ``INGEST_*``, ``LAUNDROMAT_*``, … : those with a default in
``votersdaily/settings.py``) may be set as an environment variable of the same name, and Scrapy's
``REDIS_URL`` as ``VOTERSDAILY_REDIS_URL``. A value from the environment wins over ``settings.py`` and
``-s``: a node's environment says where its store, spool and archive are, whatever a job asks.
An empty variable counts as unset.

Crawls get the environment in their settings once (:func:`apply_environment`, called with the
project's defaults), so components read ``crawler.settings`` as usual; commands that read settings
without a crawl start from :func:`project_settings`; code given no settings asks
:func:`setting_or_environment`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from votersdaily.setting_marks import OWN_PREFIXES

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings, Settings

#: Settings whose environment variable has another name.
ENVIRONMENT_NAMES = {"REDIS_URL": "VOTERSDAILY_REDIS_URL"}
#: Priority of a value from the environment: above Scrapy's ``cmdline`` (40), which ``-s`` has.
ENVIRONMENT_PRIORITY = 50


def environment_name(setting: str) -> str:
    """The environment variable that sets ``setting``."""
    return ENVIRONMENT_NAMES.get(setting, setting)


def environment_value(setting: str) -> str | None:
    """The value the environment gives ``setting`` (None when unset or empty, or when ``setting``
    is none of the project's: Scrapy's own settings are not read from the environment)."""
    if not setting.startswith(OWN_PREFIXES) and setting not in ENVIRONMENT_NAMES:
        return None
    return os.environ.get(environment_name(setting)) or None


def setting_or_environment(settings: BaseSettings | None, setting: str) -> Any:
    """The value of ``setting``: from the environment if it is there, else from ``settings`` (None
    without settings)."""
    value = environment_value(setting)
    if value is not None:
        return value
    return settings.get(setting) if settings is not None else None


def apply_environment(settings: BaseSettings) -> None:
    """Every setting the environment gives, put into ``settings`` (which holds the project's settings,
    from ``settings.py`` or their defaults) above ``-s``."""
    own = [name for name in settings if isinstance(name, str) and name.startswith(OWN_PREFIXES)]
    for setting in (*own, *ENVIRONMENT_NAMES):
        value = environment_value(setting)
        if value is not None:
            settings.set(setting, value, priority=ENVIRONMENT_PRIORITY)


def project_settings() -> Settings:
    """The project's settings with the environment applied (for commands that start no crawl)."""
    from scrapy.utils.project import get_project_settings

    settings = get_project_settings()
    apply_environment(settings)
    return settings
