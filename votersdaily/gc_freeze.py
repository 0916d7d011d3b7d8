"""A crawl's objects from before it started are left out of Python's cyclic garbage collector.

A crawl process holds some 100,000 objects from its start-up (modules, classes, functions, Scrapy's
and Twisted's machinery) that live as long as it does. Every full collection walks all of them,
and a crawl that keeps documents in flight (the store's batches, a reparse's bookkeeping) triggers
full collections often. :func:`gc.freeze` moves them to a permanent generation when the engine
starts, so collections walk only what the crawl made; :func:`gc.unfreeze` gives them back when it
stops (a process that runs several crawls, the tests', leaks nothing). Objects are still freed by
reference counting meanwhile: only cycles among the frozen ones wait for the unfreeze.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class FreezeStartupObjects:
    """Extension: :func:`gc.freeze` at ``engine_started``, :func:`gc.unfreeze` at ``engine_stopped``."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FreezeStartupObjects:
        if not crawler.settings.getbool("VOTERSDAILY_GC_FREEZE"):
            raise NotConfigured(
                "the start-up objects stay in the garbage collector (VOTERSDAILY_GC_FREEZE=False)"
            )
        extension = cls()
        crawler.signals.connect(extension.engine_started, signal=signals.engine_started)
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        return extension

    def engine_started(self) -> None:
        gc.freeze()

    def engine_stopped(self) -> None:
        gc.unfreeze()
