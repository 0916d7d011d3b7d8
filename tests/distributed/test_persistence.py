"""A Redis that would lose the queue on a restart is refused (or, when told to go on, its loss is
reported as one): the workers and ``enqueue`` ask it at start, through ``CONFIG GET`` or, when an
ACL refuses that, ``INFO persistence``; a worker whose Redis came back empty says how many requests
were lost and how many leases vanished."""

from __future__ import annotations

import re

import pytest
import redis

from tests.distributed.workloads import (
    base_hits,
    enqueue,
    ingest_documents,
    ingest_settings,
    log_path,
    read_db,
    refused_at_start,
    roomy,
    start_workers,
    wait_all,
    wait_for_hits,
    wait_for_workers_on_queue,
    wait_until,
    write_ingest_requests,
)
from tests.support.processes import RedisServer, start_crawl
from tests.support.services import free_port
from votersdaily.distributed.persistence import read_persistence
from votersdaily.store import open_store

pytestmark = pytest.mark.slow  # separate processes: Redis, workers, killed and restarted services

#: Enough documents that the kill lands mid-run with requests still waiting.
N = 150


def _urls_file(site, tmp_path, n: int = 3):
    listed = tmp_path / "urls.txt"
    listed.write_text(
        "".join(site.route("/p/%d" % i, b"fine", content_type="text/plain") + "\n" for i in range(n))
    )
    return listed


def test_enqueue_refuses_a_redis_without_an_append_only_file(site, volatile_redis, couch_uri, tmp_path):
    listed = _urls_file(site, tmp_path)
    refused = enqueue("vd_fetch", listed, couch_uri, volatile_redis.url, returncode=3)
    (line,) = refused.stderr.splitlines()
    assert line.startswith(
        "votersdaily enqueue: Redis at %s keeps no append-only file (appendonly no, no RDB snapshots either): "
        "a restart loses the queue" % volatile_redis.url
    ), line
    assert "--allow-volatile-redis" in line and "appendonly yes" in line
    assert volatile_redis.client().keys("*") == [], "nothing queued"
    allowed = enqueue("vd_fetch", listed, couch_uri, volatile_redis.url, "--allow-volatile-redis")
    assert "vd_fetch:requests: 3 requests queued" in allowed.stdout
    assert "warning: Redis at %s keeps no append-only file" % volatile_redis.url in allowed.stderr


def test_a_worker_refuses_a_redis_without_an_append_only_file(volatile_redis, couch_uri, tmp_path):
    worker = start_crawl(
        "vd_fetch_worker",
        couch_uri,
        log=tmp_path / "worker.log",
        env={"VOTERSDAILY_REDIS_URL": volatile_redis.url},
    )
    assert worker.wait(120) == 1
    log = (tmp_path / "worker.log").read_text()
    assert re.search(r"^scrapy crawl: RedisNotDurable: Redis at \S+ keeps no append-only file", log, re.M), (
        log[-3000:]
    )
    assert "VOTERSDAILY_REDIS_REQUIRE_PERSISTENCE=False" in log
    assert "Traceback" not in log, "one line, not Scrapy's start task's traceback"
    assert volatile_redis.client().keys("*") == [], "the worker touched nothing"


def test_a_worker_that_cannot_reach_its_redis_says_so_in_one_line(couch_uri, tmp_path):
    """Before: the refusal came out of Scrapy's start task as a traceback at ERROR ("Task exception
    was never retrieved") ending in the line; a worker started before its Redis is up says it once."""
    url = "redis://127.0.0.1:%d/0" % free_port()  # nothing listens there
    line = refused_at_start(couch_uri, url, tmp_path / "worker.log", "cannot reach Redis")
    assert line.startswith("scrapy crawl: cannot reach Redis at %s (" % url), line
    assert line.endswith("start redis-server or fix REDIS_URL / $VOTERSDAILY_REDIS_URL"), line


def test_a_worker_given_a_database_redis_does_not_have_says_so_in_one_line(redis_server, couch_uri, tmp_path):
    """``redis://host:6379/99`` on a Redis of 16 databases: before, a traceback ending in redis-py's
    ``ResponseError: DB index is out of range``."""
    url = redis_server.url.rsplit("/", 1)[0] + "/99"
    line = refused_at_start(couch_uri, url, tmp_path / "worker.log", "no database of that number")
    assert line.startswith("scrapy crawl: Redis at %s has no database of that number (" % url), line
    assert line.endswith("fix the /db of REDIS_URL / $VOTERSDAILY_REDIS_URL"), line


def test_a_scrapyd_job_of_a_worker_refused_at_its_start_leaves_a_run_log(couch_uri, tmp_path):
    """A worker that scrapyd runs (``-a _job=``) and that cannot use its Redis: before, the one line
    went to the job's standard error, which no one reads, and vd_log had nothing of the job."""
    url = "redis://127.0.0.1:%d/0" % free_port()  # nothing listens there
    worker = start_crawl(
        "vd_fetch_worker",
        couch_uri,
        log=tmp_path / "worker.log",
        args={"_job": "j7"},
        env={"VOTERSDAILY_REDIS_URL": url},
    )
    assert worker.wait(120) == 1
    log = (tmp_path / "worker.log").read_text()
    assert "Traceback" not in log, log[-3000:]
    assert "scrapy crawl: job j7: its run log (NotConfigured) is in vd_log of " in log, log[-3000:]
    store = open_store(couch_uri)
    try:
        (run_log,) = [doc for doc in store.iter_docs("vd_log") if doc.get("scrapyd_job") == "j7"]
    finally:
        store.close()
    assert (run_log["parser_name"], run_log["result"]) == ("vd_fetch_worker", "NotConfigured")
    assert run_log["error_message"].startswith("cannot reach Redis at %s (" % url)


def test_a_worker_whose_redis_refuses_its_credentials_says_so_in_one_line(redis_server, couch_uri, tmp_path):
    """Before: "cannot reach Redis …: start redis-server", of a Redis that answered and refused the
    password."""
    redis_server.client().execute_command("ACL", "SETUSER", "votersdaily", "on", ">right", "~*", "+@all")
    url = "redis://votersdaily:wrong@127.0.0.1:%d/0" % redis_server.port
    line = refused_at_start(couch_uri, url, tmp_path / "worker.log", "refused the credentials")
    masked = "redis://votersdaily:***@127.0.0.1:%d/0" % redis_server.port
    assert line.startswith("scrapy crawl: Redis at %s refused the credentials (" % masked), line
    assert "in REDIS_URL / $VOTERSDAILY_REDIS_URL" in line


def test_persistence_is_read_from_info_when_an_acl_refuses_config(tmp_path):
    """Managed Redis services forbid CONFIG: INFO persistence still says whether the file is on."""
    for appendfsync, expected in (("everysec", True), (None, False)):
        server = RedisServer(tmp_path / str(appendfsync), appendfsync=appendfsync).start()
        try:
            server.client().execute_command(
                "ACL", "SETUSER", "worker", "on", ">s3cret", "~*", "+@all", "-config"
            )
            client = redis.Redis.from_url("redis://worker:s3cret@127.0.0.1:%d/0" % server.port)
            found = read_persistence(client)
            assert (found.appendonly, found.appendfsync, found.source) == (expected, None, "INFO persistence")
            assert "no permissions to run the 'config|get' command" in found.refused
            if expected:
                assert found.problem("r") is None
            else:
                assert found.problem("r").startswith("Redis at r keeps no append-only file")
            server.client().execute_command("ACL", "SETUSER", "worker", "-info")
            neither = read_persistence(client)
            assert neither.appendonly is None and neither.problem("r").startswith(
                "Redis at r does not say whether it keeps its data (CONFIG GET and INFO persistence refused"
            )
        finally:
            server.stop()


def test_a_redis_restarted_without_its_data_is_reported_as_lost_work(
    site, volatile_redis, couch_uri, tmp_path
):
    """The documented line before (``--save ""``), killed and restarted mid-run: each worker says
    how many requests were lost and how many leases vanished, and its run log fails with
    RedisQueueLost; none says the requests "may run twice"."""
    roomy(site)
    docs = ingest_documents(site, N)
    requests = write_ingest_requests(tmp_path / "requests.jsonl", docs)
    enqueue("ingest", requests, couch_uri, volatile_redis.url, "--allow-volatile-redis")
    workers = start_workers(
        "ingest_worker",
        2,
        couch_uri,
        volatile_redis.url,
        tmp_path,
        *ingest_settings(tmp_path, lease=45),
        "VOTERSDAILY_REDIS_REQUIRE_PERSISTENCE=False",
    )
    wait_for_workers_on_queue(tmp_path, 2)
    wait_for_hits(site, docs, 0.2)
    volatile_redis.kill()
    wait_until(
        lambda: all("is unreachable" in log_path(tmp_path, i).read_text() for i in range(2)),
        "both workers noticed that Redis is gone",
    )
    never = sum(n == 0 for n in base_hits(site, docs).values())
    assert never > 0, "the kill came too late to matter"
    volatile_redis.start()  # same port, empty: no append-only file
    wait_all(workers, tmp_path, status=1)  # their runs failed: work was lost
    fetched = base_hits(site, docs)
    # ``never`` also counts requests a worker had leased but not fetched yet when Redis went away
    # (on a busy machine they wait for a download slot): those are fetched afterwards, the rest is lost.
    unfetched = sum(n == 0 for n in fetched.values())
    assert 0 < unfetched <= never, "what was waiting is lost, what was leased finished: %d of %d" % (
        unfetched,
        never,
    )
    assert max(fetched.values()) == 1
    lost = re.compile(
        r"ERROR: Redis at \S+ came back without the queue ingest:requests \(its epoch \w+ is gone(?:, a new queue was started since, epoch \w+)?: Redis "
        r"restarted without an append-only file, or the keys were deleted\): (\d+) waiting requests are lost "
        r"and (\d+) leases vanished, (\d+) of them this worker's"
    )
    vanished = 0
    for i in range(2):
        log = log_path(tmp_path, i).read_text()
        (found,) = lost.findall(log)
        waiting, leases, mine = map(int, found)
        # no leased request among the lost: each worker's last count of the waiting ones covers them
        assert unfetched <= waiting <= never + 40, (unfetched, never, found)
        assert mine <= leases
        vanished += mine
        assert "may run twice" not in log and "run twice" not in log
        assert "VOTERSDAILY_REDIS_REQUIRE_PERSISTENCE is False" in log
    assert vanished > 0
    runs = read_db(couch_uri, "vd_log")
    assert sorted(run["result"] for run in runs) == ["RedisQueueLost", "RedisQueueLost"]
    assert all("waiting requests are lost" in run["errors"][0]["message"] for run in runs)
    # The results of everything that ran are stored: only the waiting requests are missing.
    results = read_db(couch_uri, "ingest_file_result")
    assert len(results) == N - unfetched


def test_a_redis_that_evicts_keys_is_refused(tmp_path):
    """An append-only file does not help a Redis that drops keys when its memory is full."""
    server = RedisServer(tmp_path / "evicting", extra=("--maxmemory-policy", "allkeys-lru")).start()
    try:
        found = read_persistence(server.client())
        assert (found.appendonly, found.eviction) == (True, "allkeys-lru")
        assert found.refusal("r") == (
            "Redis at r evicts keys when its memory is full (maxmemory-policy allkeys-lru): queued requests "
            "and leases would vanish; set maxmemory-policy noeviction (docs/operations.md, section Redis), or "
            "accept losing work on a restart with VOTERSDAILY_REDIS_REQUIRE_PERSISTENCE=False (enqueue: "
            "--allow-volatile-redis)"
        )
        server.client().config_set("maxmemory-policy", "volatile-lru")  # spares keys without a TTL
        assert read_persistence(server.client()).problem("r") is None
    finally:
        server.stop()
