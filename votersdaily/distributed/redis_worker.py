"""Turn a spider into a Redis-fed worker: ``class IngestWorker(WorkerMixin, IngestSpider)``.

The worker takes its requests from the shared queue (``python -m votersdaily enqueue`` fills it) and
sends the requests its callbacks yield back to it, so every worker shares every hop. It keeps the
base spider's callbacks, items and pipelines; requests in the queue name callbacks by method name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import WORKER_SETTINGS

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from scrapy import Spider as _MixedIntoSpider
    from scrapy.http import Request
else:
    _MixedIntoSpider = object


class WorkerMixin(_MixedIntoSpider):
    #: The base spider's name: its queue and duplicate filter (``<queue_name>:requests``).
    queue_name: str = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        base = dict(getattr(cls, "custom_settings", None) or {})
        cls.custom_settings = {**base, **WORKER_SETTINGS}

    async def start(self) -> AsyncIterator[Request]:
        """No start requests of its own: the work comes from the Redis queue."""
        return
        yield  # an async generator
