"""Scrapy's spider loader, without importing every spider module to crawl one spider.

Scrapy's ``SpiderLoader`` imports every module under ``SPIDER_MODULES`` as it is made, to map names to
classes: ``scrapy crawl laundromat`` paid for the ingest's and the twelve event spiders' modules
(0.1 s). :class:`NamedModuleSpiderLoader` (``SPIDER_LOADER_CLASS``) loads a spider from the module
the project's layout names for it, when that module holds a spider of that name:

* ``<package>.<name>`` for a package of ``SPIDER_MODULES`` (``votersdaily.spiders.house_votes``);
* a module of ``SPIDER_MODULES`` inside a package named for the spider (``votersdaily.laundromat.spider``).

Everything else (another name, ``list()``, ``find_by_request()``, a named module that fails to
import) goes to Scrapy's own loader, which scans every module as before. One difference remains:
Scrapy lets the last of two spiders with the same name win (and warns); here the named module's wins.
"""

from __future__ import annotations

import builtins
import importlib
from importlib.util import find_spec
from typing import TYPE_CHECKING

from scrapy.spiderloader import SpiderLoader
from scrapy.utils.spider import iter_spider_classes

if TYPE_CHECKING:
    from collections.abc import Iterator

    from scrapy import Request, Spider
    from scrapy.settings import BaseSettings


class NamedModuleSpiderLoader:
    def __init__(self, settings: BaseSettings) -> None:
        self.settings = settings
        self.spider_modules: list[str] = settings.getlist("SPIDER_MODULES")
        self._everything: SpiderLoader | None = None

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> NamedModuleSpiderLoader:
        return cls(settings)

    def every_spider(self) -> SpiderLoader:
        """Scrapy's loader (every spider module imported), made at its first use."""
        if self._everything is None:
            self._everything = SpiderLoader.from_settings(self.settings)
        return self._everything

    def load(self, spider_name: str) -> type[Spider]:
        if self._everything is None:
            for module in self.named_modules(spider_name):
                try:
                    found = importlib.import_module(module)
                except ImportError:  # Scrapy's loader reports it (or only warns: SPIDER_LOADER_WARN_ONLY)
                    break
                for spidercls in iter_spider_classes(found):
                    if spidercls.name == spider_name:
                        return spidercls
        return self.every_spider().load(spider_name)

    def list(self) -> list[str]:
        return self.every_spider().list()

    def find_by_request(self, request: Request) -> builtins.list[str]:  # list: the method above
        return self.every_spider().find_by_request(request)

    def named_modules(self, spider_name: str) -> Iterator[str]:
        """The modules the layout names for ``spider_name`` that exist (without importing them)."""
        if not spider_name.isidentifier():
            return
        for root in self.spider_modules:
            if root.rsplit(".", 2)[-2:-1] == [spider_name]:
                yield root
                continue
            spec = find_spec(root)
            is_package = spec is not None and spec.submodule_search_locations is not None
            if is_package and find_spec("%s.%s" % (root, spider_name)) is not None:
                yield "%s.%s" % (root, spider_name)
