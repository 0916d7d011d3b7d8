"""A crawl's objects from before it started are left out of Python's cyclic garbage collector.

A crawl process holds some 100,000 objects from its start-up (modules, classes, functions, Scrapy's
and Twisted's machinery) that live as long as it does. Every full collection walks all of them,
and a crawl that keeps documents in flight (the store's batches, a reparse's bookkeeping) triggers
full collections often. :func:`gc.freeze` moves them to a permanent generation when the engine
starts, so collections walk only what the crawl made; :func:`gc.unfreeze` gives them back when it
stops (a process that runs several crawls, the tests', leaks nothing). Objects are still freed by
reference counting meanwhile: only cycles among the frozen ones wait for the unfreeze.

The young generation is also collected less often while a crawl runs
(``VOTERSDAILY_GC_YOUNG_THRESHOLD`` allocations, not Python's 700): an item and the documents it
becomes are freed by reference counting within a few thousand allocations, but a collection every
700 walks those still in flight (a writer's batch) and promotes them, so older generations are walked
again and again (20,000 events: 1,100 collections, 0.9 s of CPU; 0.02 s at 50,000). Cycles are still
collected, a little later. Python's thresholds are back when the engine stops.

A command that ends its process after the crawl (``scrapy crawl``) freezes everything as the
interpreter exits (:func:`freeze_at_exit`): its last collections would walk every object of the
process only to free what the process's end frees anyway (0.2-0.9 s after a laundromat crawl, as
long as the cleaning of a small document). Files and stores are closed by the code that opened
them, never by a collection at exit.
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


@contextmanager
def collections_paused() -> Iterator[None]:
    """No collection while a bulk read builds objects that all live on (a reparse's read of every
    stored event of its parser, before the crawl's thresholds hold: 200,000 rows cost some 900
    collections at Python's threshold, each walking what is already read, alive). One that was
    already paused stays so."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def freeze_at_exit() -> None:
    """Leave every object out of the collections Python makes as it exits (a process that runs its
    crawl and ends)."""
    atexit.register(gc.freeze)


class FreezeStartupObjects:
    """Extension: :func:`gc.freeze` and the young threshold at ``engine_started``; both undone at
    ``engine_stopped``."""

    def __init__(self, freeze: bool, young_threshold: int) -> None:
        self.freeze = freeze
        self.young_threshold = young_threshold
        self._thresholds: tuple[int, int, int] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FreezeStartupObjects:
        freeze = crawler.settings.getbool("VOTERSDAILY_GC_FREEZE")
        young = crawler.settings.getint("VOTERSDAILY_GC_YOUNG_THRESHOLD")
        if not freeze and not young:
            raise NotConfigured(
                "the garbage collector runs as Python's defaults say (VOTERSDAILY_GC_FREEZE=False, "
                "VOTERSDAILY_GC_YOUNG_THRESHOLD=0)"
            )
        extension = cls(freeze, young)
        crawler.signals.connect(extension.engine_started, signal=signals.engine_started)
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        return extension

    def engine_started(self) -> None:
        if self.freeze:
            gc.freeze()
        if self.young_threshold:
            self._thresholds = gc.get_threshold()
            gc.set_threshold(self.young_threshold, *self._thresholds[1:])

    def engine_stopped(self) -> None:
        if self.freeze:
            gc.unfreeze()
        if self._thresholds is not None:
            gc.set_threshold(*self._thresholds)
            self._thresholds = None
