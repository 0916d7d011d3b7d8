"""A Redis that answers but refuses writes, on a real redis-server with docs/operations.md's line
(``appendonly yes``, ``appendfsync everysec``, ``maxmemory-policy noeviction``): its memory full
(``CONFIG SET maxmemory`` below what it uses: ``OOM``), its append-only file's disk full (a tmpfs:
``MISCONF``), an ACL without a command of the queue (``NOPERM``). Before, a worker acked the requests
whose follow-ups Redis refused (exit 0, run log ``success``, the follow-ups never queued, their
fingerprints kept); now nothing is acked before its follow-ups are queued, a full memory or disk is
waited out (one warning, one line when it is over), and a refusal no wait mends stops the worker in
one error line."""

from __future__ import annotations

import re
import time
from contextlib import suppress

import pytest
import redis
import scrapy

from tests.distributed.workloads import (
    QUEUE_SETTINGS,
    enqueue,
    log_path,
    queue_state,
    read_db,
    refused_at_start,
    start_workers,
    wait_all,
    wait_until,
)
from tests.support.processes import Gate, RedisServer
from tests.support.tmpfs import fill, small_tmpfs
from votersdaily.distributed import serializer
from votersdaily.distributed.queue import StreamQueue

pytestmark = pytest.mark.slow  # separate processes: Redis, workers

CLEAN_QUEUE = {"waiting": 0, "processing": 0, "dead": 0, "recovered": 0}
#: Pages the worker holds (their answers wait for the gate) while Redis is made to refuse writes; each
#: yields its next page (``<page>/next``), a follow-up pushed to the shared queue.
PAGES = 10


@pytest.fixture
def gate():
    """The pages wait for the gate up to 10 minutes (the shared fixture's minute is a safety valve
    a loaded machine can reach before Redis refuses writes)."""
    held = Gate(timeout=600)
    yield held
    held.event.set()


def _stat(log: str, name: str) -> int:
    found = re.search(r"'%s': (\d+)" % re.escape(name), log)
    return int(found.group(1)) if found else 0


def _pages_that_follow(site, gate, tmp_path):
    """``PAGES`` pages held by the gate, each yielding ``<page>/next``; the file listing them."""
    pages = [
        site.route("/held/%d" % i, gate.body(b"follow"), content_type="text/plain") for i in range(PAGES)
    ]
    for i in range(PAGES):
        site.route("/held/%d/next" % i, b"fine", content_type="text/plain")
    listed = tmp_path / "urls.txt"
    listed.write_text("".join(u + "\n" for u in pages))
    return ["/held/%d" % i for i in range(PAGES)] + ["/held/%d/next" % i for i in range(PAGES)]


def _all_held(site, worker) -> bool:
    assert worker.poll() is None, "the worker ended"
    return sum(site.hits.get("/held/%d" % i, 0) for i in range(PAGES)) == PAGES


def _held_through_a_refusal(site, gate, server, couch_uri, tmp_path, code: str, refuse, take) -> str:
    """Pages yielding follow-ups, held by a worker while ``refuse()`` makes Redis refuse writes with
    ``code`` and until ``take()`` makes it take them again: nothing acked meanwhile, no follow-up
    queued; each page and follow-up fetched, stored and acked once after; said once each way, without
    a traceback. The warning line."""
    paths = _pages_that_follow(site, gate, tmp_path)
    enqueue("vd_fetch", tmp_path / "urls.txt", couch_uri, server.url)
    (worker,) = start_workers(
        "vd_fetch_worker", 1, couch_uri, server.url, tmp_path, *QUEUE_SETTINGS, "VOTERSDAILY_REDIS_LEASE=45"
    )
    wait_until(lambda: _all_held(site, worker), "the worker fetched every page")
    refuse()
    gate.event.set()  # the callbacks run now, and yield their follow-ups into a Redis that refuses them
    log = log_path(tmp_path, 0)
    wait_until(
        lambda: "refuses writes (%s " % code in log.read_text(), "the worker said Redis refuses writes"
    )
    time.sleep(3)  # several attempts (0.5 s, 1 s, 2 s apart): each refused, none said again
    state = queue_state(server, "vd_fetch")
    assert (state["waiting"], state["processing"]) == (0, PAGES), (state, log.read_text()[-3000:])
    assert server.client().hget("vd_fetch:requests:meta", "acked") is None, log.read_text()[-3000:]
    assert not any(site.hits.get(p) for p in paths[PAGES:]), "no follow-up queued, none fetched"
    take()
    wait_all([worker], tmp_path)
    text = log.read_text()
    assert {p: site.hits.get(p) for p in paths} == dict.fromkeys(paths, 1), text[-3000:]
    stored = read_db(couch_uri, "vd_fetch")
    assert sorted(doc["url"] for doc in stored) == sorted(site.url + p for p in paths)
    assert {doc["_rev"][:2] for doc in stored} == {"1-"}, "each stored once"
    assert queue_state(server, "vd_fetch") == CLEAN_QUEUE
    assert _stat(text, "redis/acked") == len(paths)
    assert "Traceback" not in text and "Task exception" not in text, text[-3000:]
    back = r"INFO: Redis at \S+ takes writes again after [\d.]+ s \(it refused them: %s\)" % code
    assert len(re.findall(back, text)) == 1, text[-3000:]
    (refused,) = re.findall(r"WARNING: Redis at \S+ refuses writes .*", text)
    (run,) = read_db(couch_uri, "vd_log")
    assert run["result"] == "success", run
    return refused


def test_follow_ups_redis_refuses_for_a_full_memory_are_queued_before_their_pages_are_acked(
    site, gate, redis_server, couch_uri, tmp_path
):
    """The audit's finding: Redis at maxmemory under ``noeviction`` refused each follow-up (a
    traceback-less "Task exception was never retrieved"), the pages were acked, nothing more ran, and
    enqueuing again queued nothing (their fingerprints were kept). Now the worker holds the pages and
    their follow-ups, says so once with what to do, and once Redis takes writes again queues the
    follow-ups, then acks the pages: every page and follow-up fetched and stored once."""
    client = redis_server.client()
    refused = _held_through_a_refusal(
        site,
        gate,
        redis_server,
        couch_uri,
        tmp_path,
        "OOM",
        refuse=lambda: client.config_set("maxmemory", int(client.info("memory")["used_memory"]) // 2),
        take=lambda: client.config_set("maxmemory", 0),
    )
    assert "OOM command not allowed when used memory > 'maxmemory'" in refused, refused
    assert "raise maxmemory (CONFIG SET maxmemory" in refused and "script:" not in refused, refused


def test_a_redis_whose_append_only_file_disk_is_full_is_waited_out_nothing_acked_before(
    site, gate, couch_uri, tmp_path
):
    """Redis's own disk full (its append-only file on a small tmpfs): every write is refused
    (``MISCONF``), acks and lease renewals too. The worker holds everything and says so once; once
    the disk has room Redis takes writes again by itself, and so does the worker: each request once.
    A worker started meanwhile refuses to start, in one line (before: redis-py's traceback)."""
    with small_tmpfs(tmp_path / "redis", "1m") as folder:
        server = RedisServer(folder).start()
        client = server.client()
        filler = folder / "filler"

        def refusing() -> bool:
            with suppress(redis.ResponseError):
                client.incr("disk-probe")  # a write, so that Redis meets its full disk
            return client.info("persistence")["aof_last_write_status"] == "err"

        def fill_its_disk() -> None:
            fill(folder)
            wait_until(refusing, "Redis found its disk full")
            line = refused_at_start(couch_uri, server.url, tmp_path / "late.log", "refuses writes")
            assert line.startswith("scrapy crawl: Redis at %s refuses writes (MISCONF " % server.url), line

        try:
            refused = _held_through_a_refusal(
                site, gate, server, couch_uri, tmp_path, "MISCONF", fill_its_disk, filler.unlink
            )
        finally:
            server.stop()
    assert "MISCONF Errors writing to the AOF file: No space left on device" in refused, refused
    assert "free space on the disk of its `dir`" in refused, refused


def test_a_refusal_no_wait_mends_stops_the_worker_in_one_line_and_another_worker_does_the_work(
    site, gate, redis_server, couch_uri, tmp_path
):
    """An ACL user that may not add to streams (NOPERM): waiting would not mend it. The worker says so
    in one error line naming the fix, fails its run (``RedisRefused``), acks nothing and stops; its
    leases expire and a worker with the right user does every request."""
    paths = _pages_that_follow(site, gate, tmp_path)
    enqueue("vd_fetch", tmp_path / "urls.txt", couch_uri, redis_server.url)
    redis_server.client().execute_command(
        "ACL", "SETUSER", "reader", "on", ">secret", "~*", "&*", "+@all", "-xadd"
    )
    refused_url = "redis://reader:secret@127.0.0.1:%d/0" % redis_server.port
    (worker,) = start_workers(
        "vd_fetch_worker", 1, couch_uri, refused_url, tmp_path, *QUEUE_SETTINGS, "VOTERSDAILY_REDIS_LEASE=3"
    )
    wait_until(lambda: _all_held(site, worker), "the worker fetched every page")
    gate.event.set()
    wait_all([worker], tmp_path, status=1)  # its run failed: Redis refused it
    log = log_path(tmp_path, 0).read_text()
    (line,) = [line for line in log.splitlines() if "refused a write of the queue" in line]
    assert "ERROR: Redis at redis://reader:***@127.0.0.1:%d/0" % redis_server.port in line, line
    assert "(ERR The user executing the script can't run this command or subcommand)" in line, line
    assert (
        "its ACL user may not run the queue's commands" in line
        and "the ACL line of docs/operations.md" in line
    )
    assert "Traceback" not in log and "secret" not in log, log[-3000:]
    assert _stat(log, "redis/acked") == 0
    state = queue_state(redis_server, "vd_fetch")
    assert (state["waiting"], state["processing"]) == (0, PAGES), "every page left leased, none acked"
    (run,) = read_db(couch_uri, "vd_log")
    assert run["result"] == "RedisRefused", run

    (tmp_path / "other").mkdir()
    (other,) = start_workers(
        "vd_fetch_worker",
        1,
        couch_uri,
        redis_server.url,
        tmp_path / "other",
        *QUEUE_SETTINGS,
        "VOTERSDAILY_REDIS_LEASE=3",
    )
    wait_all([other], tmp_path / "other")
    assert {p: site.hits.get(p) for p in paths} == {
        **dict.fromkeys(paths[:PAGES], 2),
        **dict.fromkeys(paths[PAGES:], 1),
    }
    assert sorted(doc["url"] for doc in read_db(couch_uri, "vd_fetch")) == sorted(site.url + p for p in paths)
    assert queue_state(redis_server, "vd_fetch") == {**CLEAN_QUEUE, "recovered": PAGES}


class _Spider(scrapy.Spider):
    name = "refusal_test"

    def parse(self, response):
        yield from ()


def test_a_push_redis_refuses_records_no_fingerprint_so_it_can_be_pushed_again(redis_server):
    """The duplicate filter's fingerprint was added before the entry, in the same script: a Redis that
    refused the entry (here an ACL without XADD) kept the fingerprint, and the request, pushed again
    once Redis took writes, was filtered as already seen: never queued. Now the entry comes first."""
    admin = redis_server.client()
    admin.execute_command("ACL", "SETUSER", "pusher", "on", ">pw", "~*", "&*", "+@all", "-xadd")
    url = "redis://pusher:pw@127.0.0.1:%d/0" % redis_server.port
    queue = StreamQueue(redis.Redis.from_url(url), _Spider(), "t:requests", serializer=serializer)
    queue.ensure()
    request = scrapy.Request("http://127.0.0.1/follow-up", callback=_Spider().parse)
    with pytest.raises(redis.exceptions.ResponseError, match="can't run this command"):
        queue.push(request, "fp")
    assert admin.smembers("t:dupefilter") == set() and admin.xlen("t:requests") == 0
    admin.execute_command("ACL", "SETUSER", "pusher", "+xadd")
    assert queue.push(request, "fp"), "queued now, not taken for a duplicate"
    assert admin.smembers("t:dupefilter") == {b"fp"} and admin.xlen("t:requests") == 1


def test_enqueue_into_a_redis_whose_memory_is_full_says_what_to_do_not_to_start_it(
    redis_server, couch_uri, tmp_path
):
    """Before: "cannot reach Redis … start redis-server or fix --redis-url" (exit 3) of a Redis that
    was running and refused the writes for its full memory."""
    listed = tmp_path / "urls.txt"
    listed.write_text("http://127.0.0.1:9/page\n")
    client = redis_server.client()
    client.config_set("maxmemory", int(client.info("memory")["used_memory"]) // 2)
    out = enqueue("vd_fetch", listed, couch_uri, redis_server.url, returncode=3)
    assert out.stderr.splitlines() == [
        "votersdaily enqueue: Redis at %s refuses writes (OOM command not allowed when used memory > "
        "'maxmemory'.): its memory is full (maxmemory, with maxmemory-policy noeviction): raise maxmemory "
        "(CONFIG SET maxmemory, and in its configuration file) or free memory; then enqueue again: what this "
        "run queued is skipped as already seen" % redis_server.url
    ]
    client.config_set("maxmemory", 0)
    again = enqueue("vd_fetch", listed, couch_uri, redis_server.url)
    assert "vd_fetch:requests: 1 requests queued, 0 already seen" in again.stdout, again.stdout
