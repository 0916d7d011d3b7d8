"""Distributed workers: N processes on N machines share one Redis request queue and duplicate filter.

scrapy-redis provides the connection and the duplicate filter; its queues pop destructively (a worker
that dies loses what it was working on), so :mod:`.queue` keeps the requests in a Redis stream read
by one consumer group: a read is a lease (a pending entry of the worker's consumer), the worker
renews its leases while it lives and acks a request only once everything it produced has been
written to the store, and another worker takes over the requests whose lease expired (their worker
is gone). Requests can thus be processed more than once after a crash, never zero times; the store's
revision-aware upserts make a repeat harmless. Redis must keep its data (:mod:`.persistence`); a
queue it lost anyway is reported as lost (:class:`.queue.RedisQueueLost`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from votersdaily.plumbing.environment import environment_name, setting_or_environment

if TYPE_CHECKING:
    import redis
    from scrapy import Spider
    from scrapy.settings import BaseSettings

REDIS_ENV = environment_name("REDIS_URL")

#: Settings that turn a spider into a Redis-fed worker (see :class:`.redis_worker.WorkerMixin`).
WORKER_SETTINGS = {
    "SCHEDULER": "votersdaily.distributed.redis_scheduler.ReliableScheduler",
    "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
}


def as_text(value: bytes | str | float) -> str:
    """A Redis answer's value as text (redis-py gives bytes unless decode_responses is set)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def queue_name(spider_or_cls: Spider | type[Spider], settings: BaseSettings | None = None) -> str:
    """The Redis key prefix a spider's requests live under: its deployment's database prefix
    (``VOTERSDAILY_DB_PREFIX``) and its name (workers share their base spider's). Two deployments
    on one Redis thus keep their queues and duplicate filters apart, as their databases are: without
    the prefix, one deployment's workers did the other's requests into their own databases, and the
    shared duplicate filter made the second deployment's enqueue queue nothing."""
    from votersdaily.store.names import db_prefix

    return db_prefix(settings) + spider_queue_name(spider_or_cls)


def spider_queue_name(spider_or_cls: Spider | type[Spider]) -> str:
    """The spider's part of its queue's name: its own, or a worker's base spider's."""
    return getattr(spider_or_cls, "queue_name", None) or spider_or_cls.name


def redis_url(settings: BaseSettings) -> str:
    """The Redis URL: the VOTERSDAILY_REDIS_URL environment variable, else the REDIS_URL setting."""
    url = setting_or_environment(settings, "REDIS_URL")
    if not url:
        raise NotConfigured(
            "distributed workers need Redis: set REDIS_URL or $%s (redis://host:6379/0)" % REDIS_ENV
        )
    return url


def redis_server(settings: BaseSettings) -> redis.Redis:
    from scrapy.settings import Settings
    from scrapy_redis import connection

    settings = Settings(settings.copy_to_dict())
    settings.set("REDIS_URL", redis_url(settings), priority="cmdline")
    server = connection.from_settings(settings)
    server.ping()
    return server
