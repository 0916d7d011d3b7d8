"""The shared queue on a real redis-server: a Redis stream with one consumer group, leases as
pending entries per consumer, renewals, acks, take-over of expired leases, dead-letter by delivery
count, and the epoch that tells a lost queue from an empty one."""

from __future__ import annotations

import time

import pytest
import scrapy

from votersdaily.distributed import serializer
from votersdaily.distributed.queue import GROUP, REQUEUED, RedisQueueLost, StreamQueue

pytestmark = pytest.mark.slow  # separate processes: Redis, workers, killed and restarted services


class _Spider(scrapy.Spider):
    name = "queue_test"

    def parse(self, response):
        yield from ()


def _queue(redis_server, consumer: str, lease: float = 30, max_attempts: int = 2) -> StreamQueue:
    queue = StreamQueue(
        redis_server.client(),
        _Spider(),
        "t:requests",
        serializer=serializer,
        lease=lease,
        max_attempts=max_attempts,
        consumer=consumer,
    )
    queue.ensure()
    return queue


def _request(path: str) -> scrapy.Request:
    return scrapy.Request("http://127.0.0.1/" + path, callback=_Spider().parse)


def test_the_queue_is_a_stream_whose_leases_are_pending_entries_per_consumer(redis_server):
    a, b = _queue(redis_server, "a"), _queue(redis_server, "b")
    assert a.push_many([(_request("1"), "fp1"), (_request("2"), "fp2"), (_request("1"), "fp1")]) == [
        True,
        True,
        False,
    ], "the duplicate filter's fingerprint is added with the entry"
    r = redis_server.client()
    assert r.type("t:requests") == b"stream" and r.sismember("t:dupefilter", "fp1")
    (group,) = r.xinfo_groups("t:requests")
    assert (group["name"], group["pending"]) == (GROUP.encode(), 0)
    first, second = a.lease(), b.lease()
    assert (first.request.url, second.request.url) == ("http://127.0.0.1/1", "http://127.0.0.1/2")
    assert (first.previous, first.deliveries) == ("", 1)
    pending = {
        p["message_id"].decode(): p["consumer"].decode()
        for p in r.xpending_range("t:requests", GROUP, "-", "+", 10)
    }
    assert pending == {first.id: "a", second.id: "b"}
    assert a.lease() is None and (a.sizes().waiting, a.sizes().pending) == (0, 2)
    assert b.ack([first.id]) == 0, "only the holder acks"
    assert a.ack([first.id]) == 1 and r.xlen("t:requests") == 1, "an acked entry is deleted"
    assert a.counters()["enqueued"] == "2" and a.counters()["acked"] == "1"


def test_an_expired_lease_is_taken_over_and_renewals_keep_a_live_one(redis_server):
    a, b = _queue(redis_server, "a", lease=0.3), _queue(redis_server, "b", lease=0.3)
    a.push_many([(_request("kept"), ""), (_request("dropped"), "")])
    kept, dropped = a.lease(), a.lease()
    for _ in range(3):
        time.sleep(0.15)
        assert a.renew([kept.id]).renewed == 1
    taken = b.lease()
    assert (taken.id, taken.previous, taken.deliveries, taken.recovered) == (dropped.id, "a", 2, True)
    assert b.lease() is None, "the renewed lease is not taken"
    renewal = a.renew([kept.id, dropped.id])
    assert (renewal.renewed, renewal.taken) == (1, [dropped.id]), "a renewal says which leases another took"
    assert a.ack([dropped.id]) == 0 and b.ack([dropped.id]) == 1
    assert a.counters()["recovered"] == "1"


def test_a_request_delivered_max_times_goes_to_the_dead_stream(redis_server):
    a = _queue(redis_server, "a", lease=0.1, max_attempts=2)
    b = _queue(redis_server, "b", lease=0.1, max_attempts=2)
    a.push(_request("crashes-its-worker"))
    a.lease()
    time.sleep(0.15)
    assert b.lease().deliveries == 2
    time.sleep(0.15)
    assert a.lease() is None and a.buried_last == 1
    r = redis_server.client()
    ((_, dead),) = r.xrange("t:requests:dead")
    assert dead[b"reason"] == b"expired" and dead[b"deliveries"] == b"2" and dead[b"consumer"] == b"b"
    assert serializer.loads(dead[b"request"])["url"] == "http://127.0.0.1/crashes-its-worker"
    assert r.xlen("t:requests") == 0 and a.counters()["dead"] == "1"


def test_failed_requests_count_as_deliveries_released_ones_do_not(redis_server):
    queue = _queue(redis_server, "a", max_attempts=2)
    queue.push(_request("b"))
    for _ in range(3):
        lease = queue.lease()
        assert queue.release([lease.id]) == 1  # a shutdown: not a delivery
    lease = queue.lease()
    assert (lease.previous, lease.deliveries, lease.recovered) == (REQUEUED, 1, False)
    assert queue.retry([lease.id]) == (1, 0)
    lease = queue.lease()
    assert queue.retry([lease.id]) == (0, 1), "the second failure gives it up (max_attempts=2)"
    r = redis_server.client()
    assert (len(queue), queue.in_processing(), r.xlen("t:requests:dead")) == (0, 0, 1)
    assert "recovered" not in queue.counters(), "only expired leases count as recovered"


def test_a_lease_whose_answer_was_lost_is_found_again(redis_server):
    queue = _queue(redis_server, "a")
    queue.push(_request("x"))
    lease = queue.lease()
    # The worker never saw the answer: the lease is its consumer's pending entry all the same.
    assert [(i, r.url) for i, r in queue.mine()] == [(lease.id, "http://127.0.0.1/x")]
    assert _queue(redis_server, "b").mine() == []


def test_a_flushed_redis_is_a_lost_queue_not_an_empty_one(redis_server):
    queue = _queue(redis_server, "a")
    queue.push(_request("x"))
    redis_server.client().flushall()
    with pytest.raises(RedisQueueLost) as lost:
        queue.lease()
    assert (lost.value.known, lost.value.found) == (queue.epoch, None)
    with pytest.raises(RedisQueueLost):
        queue.push(_request("y"))
    assert redis_server.client().xlen("t:requests") == 0, "nothing pushed into a queue of another epoch"
    assert queue.ensure() is True and queue.lease() is None, "a new epoch, then an empty queue"


def _legacy_queue(redis_server, spider) -> list[str]:
    """The keys the previous version (a sorted set with Lua leases) left for queue ``t:requests``:
    three waiting requests of two priorities, one leased by an old worker (token, deadline, payload,
    score), one given up in the dead list, and its bookkeeping; the URLs, in the order they must run."""
    r = redis_server.client()
    encode = StreamQueue(r, spider, "t:requests", serializer=serializer)._encode_request
    waiting = {encode(_request("low")): 0, encode(_request("high")): -2, encode(_request("low2")): 0}
    r.zadd("t:requests", waiting)
    r.zadd("t:requests:processing", {"token-1": 1})
    r.hset("t:requests:payloads", "token-1", encode(_request("leased")))
    r.hset("t:requests:scores", "token-1", 0)
    r.rpush("t:requests:dead", encode(_request("dead")))
    r.hset("t:requests:attempts", "abc", 1)
    r.set("t:requests:requeued", 4)
    return ["high", "low", "low2", "leased"]


def test_a_queue_of_the_previous_format_is_moved_into_the_stream_nothing_dropped(redis_server):
    from votersdaily.distributed.legacy import migrate

    spider = _Spider()
    order = _legacy_queue(redis_server, spider)
    r = redis_server.client()
    queue = StreamQueue(r, spider, "t:requests", serializer=serializer, consumer="a")
    moved = migrate(r, queue)
    assert (moved.waiting, moved.leased, moved.dead) == (3, 1, 1)
    assert r.type("t:requests") == b"stream"
    urls = [queue.lease().request.url for _ in order]
    assert urls == ["http://127.0.0.1/" + u for u in order], "priority order first, old leases after"
    ((_, dead),) = r.xrange("t:requests:dead")
    assert dead[b"reason"] == b"legacy" and serializer.loads(dead[b"request"])["url"].endswith("/dead")
    assert sorted(k.decode() for k in r.keys("t:requests*")) == [
        "t:requests",
        "t:requests:dead",
        "t:requests:meta",
    ]
    assert (queue.counters()["enqueued"], queue.counters()["migrated"]) == ("4", "4")
    assert not migrate(r, queue), "a second migration finds nothing"


def test_a_migration_interrupted_after_setting_aside_is_finished_by_the_next_opener(redis_server):
    from votersdaily.distributed.legacy import migrate, set_aside

    spider = _Spider()
    order = _legacy_queue(redis_server, spider)
    r = redis_server.client()
    assert set_aside(r, "t:requests")  # ... and the process died here
    queue = StreamQueue(r, spider, "t:requests", serializer=serializer, consumer="a")
    moved = migrate(r, queue)
    assert (moved.waiting, moved.leased, moved.dead) == (3, 1, 1)
    assert [queue.lease().request.url for _ in order] == ["http://127.0.0.1/" + u for u in order]


def test_a_request_retried_and_leased_again_by_the_same_worker_keeps_its_new_lease(redis_server):
    """A stream entry keeps its id when it is delivered again: while a checkpoint hands a failed
    request back, the same worker may lease it again; forgetting the old delivery must leave the
    new lease tracked (it was forgotten, never acked, and ran a third time after its lease expired)."""
    from scrapy.utils.test import get_crawler

    from votersdaily.distributed.redis_scheduler import ReliableScheduler

    crawler = get_crawler(_Spider, {"REDIS_URL": redis_server.url, "VOTERSDAILY_REDIS_MAX_ATTEMPTS": 3})
    scheduler = ReliableScheduler(crawler, redis_server.client())
    scheduler.queue = queue = _queue(redis_server, "worker", max_attempts=3)
    queue.push(_request("fails-once"))
    first = queue.lease()
    scheduler.leased[first.id] = first.request
    scheduler.failed.add(first.request)  # its item pipeline raised
    held = dict(scheduler.leased)  # what the checkpoint decided on
    assert queue.retry([first.id]) == (1, 0)
    again = queue.lease()  # the engine asked meanwhile: the same entry, delivered again
    assert again.id == first.id and again.request is not first.request
    scheduler.leased[again.id] = again.request
    scheduler._forget([first.id], held)  # the checkpoint, once the retry answered
    assert scheduler.leased == {again.id: again.request}, "the new lease is still this worker's"
    assert again.request not in scheduler.failed, "and starts without the old delivery's failure"
    assert queue.ack([again.id]) == 1


def test_a_redis_gone_before_the_scheduler_opens_is_an_outage_and_the_queue_is_joined_when_back(
    redis_server, caplog
):
    """Redis answered the worker's start-up check and went away before Scrapy opened the scheduler:
    the open says so in one warning and waits, as for an outage mid-run (before, the error escaped
    ``open``, the engine's close failed with "Engine slot not assigned" and the worker hung), and the
    queue is joined (its format, its epoch, the worker's line) once Redis answers again."""
    import asyncio
    import logging

    from scrapy.utils.defer import deferred_from_coro
    from scrapy.utils.test import get_crawler

    from tests.support.inprocess import session_reactor
    from votersdaily.distributed.redis_scheduler import ReliableScheduler

    crawler = get_crawler(_Spider, {"REDIS_URL": redis_server.url})
    scheduler = ReliableScheduler(crawler, redis_server.client())
    scheduler.link.first_delay = scheduler.link.max_delay = 0.2
    redis_server.kill()

    async def outage_at_open() -> dict:
        crawler.engine = crawler._create_engine()  # a real engine, not started (the scheduler asks it)
        scheduler.open(_Spider())
        seen = {"up_after_open": scheduler.link.up, "joined_after_open": scheduler._joined}
        await asyncio.to_thread(redis_server.start)
        for _ in range(150):
            if scheduler.link.up and scheduler._joined:
                break
            await asyncio.sleep(0.1)
        seen["epoch"] = scheduler.queue.epoch if scheduler.queue is not None else None
        seen["up"], seen["joined"] = scheduler.link.up, scheduler._joined
        await scheduler._close()
        return seen

    with caplog.at_level(logging.INFO, logger="votersdaily.distributed"):
        seen = session_reactor().call(lambda: deferred_from_coro(outage_at_open()), 60)
    assert (seen["up_after_open"], seen["joined_after_open"]) == (False, False)
    assert (seen["up"], seen["joined"]) == (True, True) and seen["epoch"]
    messages = [r.getMessage() for r in caplog.records]
    assert sum("is unreachable" in m for m in messages) == 1, messages
    assert sum(m.startswith("Redis worker ") and "on queue queue_test:requests" in m for m in messages) == 1
    assert any("is back after" in m for m in messages), messages
    assert not [r for r in caplog.records if r.exc_info], "no traceback"
