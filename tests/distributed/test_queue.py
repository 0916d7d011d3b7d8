"""The reliable queue's scripts on a real redis-server: a lease can be found again by its token
(its answer lost with a dying Redis), failed requests count as attempts, released ones do not."""

from __future__ import annotations

import pytest
import scrapy

from votersdaily.distributed import serializer
from votersdaily.distributed.queue import ReliableQueue

pytestmark = pytest.mark.slow  # separate processes: Redis, workers, killed and restarted services


class _Spider(scrapy.Spider):
    name = "queue_test"

    def parse(self, response):
        yield from ()


def _queue(redis_server) -> ReliableQueue:
    return ReliableQueue(
        redis_server.client(), _Spider(), "t:requests", serializer=serializer, lease=30, max_attempts=2
    )


def test_a_lease_is_found_again_by_its_token(redis_server):
    queue = _queue(redis_server)
    queue.push(scrapy.Request("http://127.0.0.1/a", callback=_Spider().parse))
    token, request = queue.lease("my-token")
    assert token == "my-token" and request.url == "http://127.0.0.1/a"
    assert queue.leased("my-token").url == "http://127.0.0.1/a"
    assert queue.leased("another") is None and queue.lease("again") is None
    assert queue.ack(["my-token"]) == 1 and queue.leased("my-token") is None


def test_failed_requests_count_as_attempts_released_ones_do_not(redis_server):
    queue = _queue(redis_server)
    queue.push(scrapy.Request("http://127.0.0.1/b"))
    for _ in range(3):
        token, _request = queue.lease()
        assert queue.release([token]) == 1  # a shutdown: not an attempt
    token, _request = queue.lease()
    assert queue.retry([token]) == (1, 0)
    token, _request = queue.lease()
    assert queue.retry([token]) == (0, 1), "the second failure gives it up (max_attempts=2)"
    r = redis_server.client()
    assert (len(queue), queue.in_processing(), r.llen("t:requests:dead")) == (0, 0, 1)
    assert int(r.get("t:requests:requeued") or 0) == 0, "only reaps count as recovered"
