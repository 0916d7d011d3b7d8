"""Turn a spider into a Redis-fed worker: ``class IngestWorker(WorkerMixin, IngestSpider)``.

The worker takes its requests from the shared queue (``python -m votersdaily enqueue`` fills it) and
sends the requests its callbacks yield back to it, so every worker shares every hop. It keeps the
base spider's callbacks, items and pipelines; requests in the queue name callbacks by method name.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Self

from scrapy.exceptions import NotConfigured

from votersdaily.store import mask_uri

from . import WORKER_SETTINGS, redis_server, redis_url
from .link import REDIS_DOWN, REDIS_REFUSED, redis_down_line
from .persistence import LOSS, RedisNotDurable, read_persistence

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from scrapy import Spider as _MixedIntoSpider
    from scrapy.crawler import Crawler
    from scrapy.http import Request
    from scrapy.settings import BaseSettings
else:
    _MixedIntoSpider = object

logger = logging.getLogger(__name__)


class WorkerMixin(_MixedIntoSpider):
    #: The base spider's name: its queue and duplicate filter (``<queue_name>:requests``).
    queue_name: str = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        base = dict(getattr(cls, "custom_settings", None) or {})
        cls.custom_settings = {**base, **WORKER_SETTINGS}

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        check_redis(crawler.settings)
        return super().from_crawler(crawler, *args, **kwargs)

    @classmethod
    def check_before_start(cls, settings: BaseSettings) -> None:
        """What ``scrapy crawl`` asks before starting the crawl (votersdaily/commands/crawl.py), so
        that a Redis the worker cannot use is one line, not a traceback from Scrapy's start task
        (what it finds is said once, by the worker's own check)."""
        check_redis(settings, say_found=False)

    async def start(self) -> AsyncIterator[Request]:
        """No start requests of its own: the work comes from the Redis queue."""
        return
        yield  # an async generator


def check_redis(settings: BaseSettings, *, say_found: bool = True) -> None:
    """Before a worker starts: its Redis answers and keeps its data (an append-only file), or it is
    told to go on without (VOTERSDAILY_REDIS_REQUIRE_PERSISTENCE=False, loudly); ``say_found``
    False: the refusals only, for a check the worker's own repeats."""
    where = mask_uri(redis_url(settings))
    try:
        found = read_persistence(redis_server(settings))
    except (*REDIS_DOWN, REDIS_REFUSED) as exc:  # a refusal: a database it lacks, writes (a full disk)
        raise NotConfigured(redis_down_line(where, exc, "REDIS_URL / $VOTERSDAILY_REDIS_URL")) from None
    problem = found.problem(where)
    if problem is None:
        if say_found:
            logger.info("Redis at %s keeps its data (%s): %s", where, found.describe(), found.guarantee())
    elif settings.getbool("VOTERSDAILY_REDIS_REQUIRE_PERSISTENCE"):
        raise RedisNotDurable(found.refusal(where))
    elif say_found:
        logger.warning("%s. Going on: VOTERSDAILY_REDIS_REQUIRE_PERSISTENCE is False (%s)", problem, LOSS)
