"""The project's own settings' defaults, for crawlers built without the project settings.

``votersdaily/settings.py`` is the one place a default is written. A crawler made by
``get_crawler()`` in a test, ``scrapy runspider`` or an application that embeds a spider does not load
that module, so the project's spiders (and :class:`ProjectDefaults`, a Scrapy add-on for anything else)
fill in every missing ``VOTERSDAILY_*``, ``INGEST_*``, ``LAUNDROMAT_*`` … setting from it at the lowest
priority. Components then read ``settings.getint("NAME")`` with no fallback of their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from votersdaily import settings as project_settings
from votersdaily.plumbing.environment import apply_environment
from votersdaily.setting_marks import OWN_PREFIXES

if TYPE_CHECKING:  # the laundromat's workers read DEFAULTS and need no Scrapy (0.2 s to import)
    from scrapy.settings import BaseSettings


DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {name: getattr(project_settings, name) for name in dir(project_settings) if name.startswith(OWN_PREFIXES)}
)


def set_defaults(settings: BaseSettings) -> None:
    """Give every project setting ``settings`` lacks its default, at Scrapy's ``default`` priority,
    and every setting the environment gives its value (see :mod:`votersdaily.plumbing.environment`)."""
    for name, value in DEFAULTS.items():
        settings.setdefault(name, value, priority="default")
    apply_environment(settings)


class ProjectDefaults:
    """Scrapy add-on (``ADDONS = {"votersdaily.defaults.ProjectDefaults": 0}``) for crawlers that use the
    project's components with spiders of their own."""

    def update_settings(self, settings: BaseSettings) -> None:
        set_defaults(settings)


if TYPE_CHECKING:
    from scrapy import Spider as _MixedIntoSpider
else:
    _MixedIntoSpider = object


class ProjectSettingsMixin(_MixedIntoSpider):
    """For the project's spider bases: a crawler of any of its spiders has every project default."""

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        set_defaults(settings)
        super().update_settings(settings)
