"""Distributed workers on a real redis-server: one stream of requests split by 3 worker processes."""

from __future__ import annotations

import signal
import sys
import time

import pytest

from tests.deploy.conftest import process_env, start_crawl
from tests.support.services import REPO, run_cli
from votersdaily.store import open_store

N = 600
WORKER_SETTINGS = (
    "TEST_DB=vd_fetch", "VOTERSDAILY_BATCH_SIZE=50", "CONCURRENT_REQUESTS=8",
    "VOTERSDAILY_REDIS_LEASE=3", "VOTERSDAILY_REDIS_ACK_INTERVAL=0.5", "VOTERSDAILY_REDIS_REAP_INTERVAL=0.5",
    "VOTERSDAILY_REDIS_IDLE_CLOSE=2",
)


def _slow_page(i: int):
    def body(handler):
        time.sleep(0.01)
        return b"document %d" % i
    return body


def _enqueue(site, redis_server, couch_uri, tmp_path, n=N):
    urls = [site.route("/doc/%d" % i, _slow_page(i), content_type="text/plain") for i in range(n)]
    listing = tmp_path / "urls.txt"
    listing.write_text("\n".join(urls) + "\n")
    env = process_env(couch_uri, VOTERSDAILY_REDIS_URL=redis_server.url)
    out = run_cli([sys.executable, "-m", "votersdaily", "enqueue", "vd_fetch", str(listing)], couch_uri,
                  env={k: env[k] for k in ("VOTERSDAILY_REDIS_URL", "SCRAPY_SETTINGS_MODULE")})
    assert out.returncode == 0, out.stderr
    assert "%d requests queued" % n in out.stdout
    # The same requests again are duplicates (shared duplicate filter).
    again = run_cli([sys.executable, "-m", "votersdaily", "enqueue", "vd_fetch", str(listing)], couch_uri,
                    env={k: env[k] for k in ("VOTERSDAILY_REDIS_URL", "SCRAPY_SETTINGS_MODULE")})
    assert "0 requests queued, %d already seen" % n in again.stdout, again.stdout + again.stderr
    return urls


def _workers(n, couch_uri, redis_server, tmp_path):
    return [
        start_crawl("vd_fetch_worker", couch_uri, *WORKER_SETTINGS, "TEST_WORKER_NAME=w%d" % i,
                    log=tmp_path / ("worker%d.log" % i), env={"VOTERSDAILY_REDIS_URL": redis_server.url})
        for i in range(n)
    ]


def _stored(couch_uri):
    store = open_store(couch_uri)
    try:
        return list(store.iter_docs("vd_fetch"))
    finally:
        store.close()


def _queue_is_empty(redis_server):
    r = redis_server.client()
    return r.zcard("vd_fetch:requests") == 0 and r.zcard("vd_fetch:requests:processing") == 0


def test_three_workers_process_each_request_exactly_once(site, redis_server, couch_uri, tmp_path):
    urls = _enqueue(site, redis_server, couch_uri, tmp_path)
    workers = _workers(3, couch_uri, redis_server, tmp_path)
    for i, w in enumerate(workers):
        assert w.wait(180) == 0, (tmp_path / ("worker%d.log" % i)).read_text()[-3000:]
    hits = {path: n for path, n in site.hits.items() if path.startswith("/doc/")}
    assert len(hits) == N and set(hits.values()) == {1}, "every request fetched exactly once"
    docs = _stored(couch_uri)
    assert sorted(d["url"] for d in docs) == sorted(urls)
    assert len({d["_id"] for d in docs}) == N
    by_worker = {w: sum(1 for d in docs if d["worker"] == w) for w in ("w0", "w1", "w2")}
    assert all(by_worker.values()), "the work was shared: %r" % by_worker
    assert _queue_is_empty(redis_server)


def test_a_killed_workers_requests_are_recovered(site, redis_server, couch_uri, tmp_path):
    urls = _enqueue(site, redis_server, couch_uri, tmp_path)
    workers = _workers(3, couch_uri, redis_server, tmp_path)
    r = redis_server.client()
    deadline = time.monotonic() + 60
    while sum(site.hits.get("/doc/%d" % i, 0) for i in range(N)) < N // 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    in_flight = r.zcard("vd_fetch:requests:processing")
    workers[0].send_signal(signal.SIGKILL)  # no shutdown: its leases and unflushed writes die with it
    assert workers[0].wait(10) == -signal.SIGKILL
    assert in_flight > 0
    for i, w in enumerate(workers[1:], 1):
        assert w.wait(180) == 0, (tmp_path / ("worker%d.log" % i)).read_text()[-3000:]
    recovered = int(r.get("vd_fetch:requests:requeued") or 0)
    assert recovered > 0, "the dead worker held leases that the others took over"
    docs = _stored(couch_uri)
    assert sorted(d["url"] for d in docs) == sorted(urls), "nothing lost"
    assert len({d["_id"] for d in docs}) == len(docs) == N, "no duplicates"
    hits = {path: n for path, n in site.hits.items() if path.startswith("/doc/")}
    assert len(hits) == N
    # Only what the dead worker held can have been fetched twice.
    assert sum(n - 1 for n in hits.values()) <= recovered
    assert _queue_is_empty(redis_server)
    logs = "".join((tmp_path / ("worker%d.log" % i)).read_text() for i in (1, 2))
    assert "recovered" in logs
