"""Faults under real workers: Redis killed and restarted with its data under two ingest workers,
and extraction processes killed (SIGKILL, as the OOM killer does) in a plain ingest run and under
the Redis workers. Every request is done, exactly once, and nothing is acked without its result."""

from __future__ import annotations

import itertools
import re
import signal
import socket
import sys
import time

import pytest
import scrapy

from tests.distributed.workloads import (
    INGEST_SETTINGS,
    QUEUE_SETTINGS,
    base_hits,
    check_ingest_results,
    enqueue,
    enqueue_documents,
    hold_documents,
    ingest_documents,
    ingest_settings,
    kill_extraction_process,
    log_path,
    queue_state,
    rdf_datasets,
    read_db,
    roomy,
    start_workers,
    wait_all,
    wait_for_hits,
    wait_for_workers_on_queue,
    wait_until,
    write_ingest_requests,
)
from tests.support.processes import Gate, start_crawl
from tests.support.services import PouchDBServer, run_cli
from tests.support.tmpfs import fill, small_tmpfs
from votersdaily.distributed import serializer
from votersdaily.distributed.queue import StreamQueue
from votersdaily.laundromat.uris import uri_key

pytestmark = pytest.mark.slow  # separate processes: Redis, workers, killed and restarted services

#: Enough documents that a fault lands mid-run (after a quarter of them), few enough to run in seconds.
N = 120
#: What a worker says when leases it held were not there to renew, or the whole queue was gone.
LEASES_LOST = re.compile(r"took them over|undone by Redis|no longer in|came back without the queue")
CLEAN_QUEUE = {"waiting": 0, "processing": 0, "dead": 0, "recovered": 0}


def _stat(log: str, name: str) -> int:
    found = re.search(r"'%s': (\d+)" % re.escape(name), log)
    return int(found.group(1)) if found else 0


def test_ingest_workers_survive_a_redis_restart(site, durable_redis, couch_uri, tmp_path):
    docs = enqueue_documents(site, durable_redis, couch_uri, tmp_path, N)
    # Leases (45 s) outlast the outage (seconds), the backoff and a renewal period: none is taken over.
    workers = start_workers(
        "ingest_worker", 2, couch_uri, durable_redis.url, tmp_path, *ingest_settings(tmp_path, lease=45)
    )
    wait_for_workers_on_queue(tmp_path, 2)
    wait_for_hits(site, docs, 0.25)
    durable_redis.kill()
    # Until both workers have noticed, then long enough for several reconnection attempts
    # (0.5 s, then 1 s apart): one warning each, not one per attempt.
    wait_until(
        lambda: all("is unreachable" in log_path(tmp_path, i).read_text() for i in range(2)),
        "both workers noticed that Redis is gone",
    )
    time.sleep(2)
    done_during_outage = sum(n > 0 for n in base_hits(site, docs).values())
    assert done_during_outage < N, "the outage came too late to matter"
    durable_redis.start()  # same port, same folder: the append-only file brings the queue back
    wait_all(workers, tmp_path)
    hits = base_hits(site, docs)
    assert set(hits.values()) == {1}, "each request fetched exactly once: %r" % {
        p: n for p, n in hits.items() if n != 1
    }
    check_ingest_results(couch_uri, docs)
    assert queue_state(durable_redis, "ingest") == CLEAN_QUEUE, "no lease taken over, none orphaned"
    for i in range(2):
        log = log_path(tmp_path, i).read_text()
        # one warning when Redis went away and one line when it was back, not one per attempt
        assert len(re.findall(r"WARNING: Redis at \S+ is unreachable", log)) == 1, log[-3000:]
        assert len(re.findall(r"INFO: Redis at \S+ is back after", log)) == 1, log[-3000:]
        assert "Traceback" not in log and not LEASES_LOST.search(log), log[-3000:]
    assert sum(_stat(log_path(tmp_path, i).read_text(), "redis/acked") for i in range(2)) == N


def test_a_killed_extraction_process_fails_nothing_in_a_plain_ingest(site, couch_uri, tmp_path):
    roomy(site)
    docs = ingest_documents(site, N)
    requests = write_ingest_requests(tmp_path / "requests.jsonl", docs)
    log = tmp_path / "crawl.log"
    crawl = start_crawl(
        "ingest",
        couch_uri,
        *INGEST_SETTINGS,
        "LOG_LEVEL=INFO",
        "INGEST_BLOB_DIR=%s" % (tmp_path / "blobs"),
        "INGEST_TEIXML_FEED=%s" % (tmp_path / "feed.jsonl"),
        log=log,
        args={"requests": requests},
    )
    wait_for_hits(site, docs, 0.25)
    kill_extraction_process(crawl.pid)
    assert crawl.wait(180) == 0, log.read_text()[-3000:]
    text = log.read_text()
    assert _stat(text, "ingest/extract/process_died") == 1, text[-3000:]
    check_ingest_results(couch_uri, docs)  # every request its result, the interrupted one retried
    (run,) = read_db(couch_uri, "vd_log")
    assert run["result"] == "success" and "error_count" not in run, run.get("errors")


def test_a_killed_extraction_process_loses_no_request_of_the_redis_workers(
    site, redis_server, couch_uri, tmp_path
):
    docs = enqueue_documents(site, redis_server, couch_uri, tmp_path, N)
    workers = start_workers(
        "ingest_worker", 2, couch_uri, redis_server.url, tmp_path, *ingest_settings(tmp_path, lease=30)
    )
    wait_for_hits(site, docs, 0.25)
    index, killed = kill_extraction_process(*(worker.pid for worker in workers))
    wait_all(workers, tmp_path)
    logs = [log_path(tmp_path, i).read_text() for i in range(len(workers))]
    died = [_stat(log, "ingest/extract/process_died") for log in logs]
    assert died == [int(i == index) for i in range(len(workers))], "killed %d of worker %d: %s" % (
        killed,
        index,
        logs[index][-3000:],
    )
    check_ingest_results(couch_uri, docs)
    assert set(base_hits(site, docs).values()) == {1}
    assert queue_state(redis_server, "ingest") == CLEAN_QUEUE


def test_a_request_whose_callback_raised_is_retried_never_acked(site, redis_server, couch_uri, tmp_path):
    def fails(times: int):
        calls = itertools.count()
        return lambda handler: b"raise" if next(calls) < times else b"fine"

    urls = {
        "fine": [site.route("/fine/%d" % i, b"fine", content_type="text/plain") for i in range(20)],
        "once": [site.route("/once/%d" % i, fails(1), content_type="text/plain") for i in range(3)],
        "always": [site.route("/always/0", fails(99), content_type="text/plain")],
    }
    listed = tmp_path / "urls.txt"
    listed.write_text("".join(u + "\n" for group in urls.values() for u in group))
    out = enqueue("vd_fetch", listed, couch_uri, redis_server.url)
    assert "vd_fetch:requests: 24 requests queued" in out.stdout, out.stdout
    (worker,) = start_workers(
        "vd_fetch_worker",
        1,
        couch_uri,
        redis_server.url,
        tmp_path,
        *QUEUE_SETTINGS,
        "VOTERSDAILY_REDIS_LEASE=30",
        "VOTERSDAILY_REDIS_MAX_ATTEMPTS=2",
    )
    wait_all([worker], tmp_path, status=1)  # its run failed: a callback raised (then dead-lettered)
    path = lambda url: url[len(site.url) :]  # noqa: E731
    assert {path(u): site.hits[path(u)] for u in urls["fine"]} == {path(u): 1 for u in urls["fine"]}
    assert {path(u): site.hits[path(u)] for u in urls["once"]} == {path(u): 2 for u in urls["once"]}
    assert site.hits["/always/0"] == 2, "tried VOTERSDAILY_REDIS_MAX_ATTEMPTS times, then given up"
    stored = {doc["url"] for doc in read_db(couch_uri, "vd_fetch")}
    assert stored == set(urls["fine"] + urls["once"]), "each stored once it succeeded; the failing one never"
    log = log_path(tmp_path, 0).read_text()
    assert (_stat(log, "redis/acked"), _stat(log, "redis/retried"), _stat(log, "redis/dead")) == (23, 4, 1)
    state = queue_state(redis_server, "vd_fetch")
    assert (state["waiting"], state["processing"], state["dead"]) == (0, 0, 1)


def _worker_holding_pages(site, gate, redis_url: str, couch_uri: str, tmp_path):
    """10 pages, each yielding its ``/next`` page, enqueued for a ``vd_fetch_worker``, started: the
    worker once the server holds all 10 requests (until ``gate`` opens), and the paths of all 20."""
    pages = [site.route("/held/%d" % i, gate.body(b"follow"), content_type="text/plain") for i in range(10)]
    for i in range(10):
        site.route("/held/%d/next" % i, b"fine", content_type="text/plain")
    listed = tmp_path / "urls.txt"
    listed.write_text("".join(u + "\n" for u in pages))
    enqueue("vd_fetch", listed, couch_uri, redis_url)
    settings = (*QUEUE_SETTINGS, "VOTERSDAILY_REDIS_LEASE=45")
    (worker,) = start_workers("vd_fetch_worker", 1, couch_uri, redis_url, tmp_path, *settings)
    deadline = time.monotonic() + 60
    while sum(site.hits.get("/held/%d" % i, 0) for i in range(10)) < 10:
        assert time.monotonic() < deadline and worker.poll() is None, "the worker did not fetch the pages"
        time.sleep(0.05)
    return worker, ["/held/%d" % i for i in range(10)] + ["/held/%d/next" % i for i in range(10)]


def test_requests_yielded_while_redis_is_away_are_pushed_when_it_is_back(
    site, gate, durable_redis, couch_uri, tmp_path
):
    """Pages held by the server until Redis is dead: their callbacks run during the outage, and
    the next pages they yield are kept and pushed (through the duplicate filter) once it is back."""
    worker, paths = _worker_holding_pages(site, gate, durable_redis.url, couch_uri, tmp_path)
    durable_redis.kill()
    gate.event.set()  # the callbacks run now, with Redis gone
    time.sleep(5)
    durable_redis.start()
    wait_all([worker], tmp_path)
    assert {p: site.hits.get(p) for p in paths} == dict.fromkeys(paths, 1)
    stored = {doc["url"] for doc in read_db(couch_uri, "vd_fetch")}
    assert stored == {site.url + p for p in paths}
    log = log_path(tmp_path, 0).read_text()
    back = re.findall(
        r"INFO: Redis at \S+ is back after [\d.]+ s: (\d+) of (\d+) leases renewed, (\d+) yielded", log
    )
    assert back == [("10", "10", "10")], log[-3000:]
    assert (_stat(log, "redis/buffered"), _stat(log, "redis/acked")) == (10, 20)
    assert queue_state(durable_redis, "vd_fetch") == CLEAN_QUEUE


def test_a_request_whose_documents_were_lost_is_never_acked_and_runs_again(site, redis_server, tmp_path):
    """The store unreachable and the spool's disk full (a tmpfs, filled): each page's document is
    neither stored nor spooled. Before, a checkpoint counted the store writers' errors at its own
    start, so a batch that failed between its request finishing and the checkpoint (here, a batch a
    document: nearly every one) went unseen, and its request was acked, its document lost for good.
    Now none is acked: each goes back as a failed delivery and runs again; once the spool has room,
    its document is spooled and it is acked, and ``flush`` brings every document to a store."""
    gate = Gate(timeout=600)  # the pages wait for the store to stop, however loaded the machine
    pages = [site.route("/held/%d" % i, gate.body(b"fine"), content_type="text/plain") for i in range(10)]
    listed = tmp_path / "urls.txt"
    listed.write_text("".join(u + "\n" for u in pages))
    store = PouchDBServer(tmp_path / "pouch").start()
    try:
        enqueue("vd_fetch", listed, store.url, redis_server.url)
        with small_tmpfs(tmp_path / "full") as full, socket.socket() as keep:
            spool = full / "spool"
            spool.mkdir()
            (worker,) = start_workers(
                "vd_fetch_worker",
                1,
                store.url,
                redis_server.url,
                tmp_path,
                *QUEUE_SETTINGS,
                "VOTERSDAILY_REDIS_LEASE=30",
                "VOTERSDAILY_REDIS_MAX_ATTEMPTS=1000",  # none given up while the spool is full
                "VOTERSDAILY_BATCH_SIZE=1",  # each document's batch written as soon as it is added
                "VOTERSDAILY_STORE_RETRY_TIMES=0",
                "VOTERSDAILY_SPOOL_DIR=%s" % spool,
            )
            held = ["/held/%d" % i for i in range(10)]
            wait_until(lambda: all(site.hits.get(p) for p in held), "the worker fetched every page")
            store.stop()
            # The store's port stays bound, never listening: refused, and no other server of a test
            # running beside this one may take it.
            keep.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            keep.bind(("127.0.0.1", store.port))
            filler = fill(full)
            gate.event.set()  # the documents come now: the store is away and the spool full
            wait_until(
                lambda: all(site.hits.get(p, 0) >= 2 for p in held) or worker.poll() is not None,
                "every page ran again (its document lost, its request not acked)",
            )
            log = log_path(tmp_path, 0)
            assert queue_state(redis_server, "vd_fetch")["dead"] == 0, log.read_text()[-3000:]
            acked = redis_server.client().hget("vd_fetch:requests:meta", "acked")
            assert acked is None, log.read_text()[-3000:]
            filler.unlink()
            wait_all([worker], tmp_path, status=1)  # its run failed: documents were lost
            text = log.read_text()
            assert _stat(text, "redis/acked") == 10 and "Traceback" not in text, text[-3000:]
            assert re.search(r"requests not acked \(\d+: a store batch failed since they were leased", text)
            assert queue_state(redis_server, "vd_fetch") == CLEAN_QUEUE
            another = PouchDBServer(tmp_path / "another").start()
            try:
                delivered = run_cli(
                    [sys.executable, "-m", "votersdaily", "flush", "--from", store.url],
                    another.url,
                    env={"VOTERSDAILY_SPOOL_DIR": str(spool)},
                )
                assert delivered.returncode == 0, delivered.stderr[-3000:]
                stored = read_db(another.url, "vd_fetch")
            finally:
                another.stop()
        assert sorted(doc["url"] for doc in stored) == sorted(pages), "every page's document was delivered"
    finally:
        gate.event.set()
        store.stop()


class _Other(scrapy.Spider):
    name = "other"

    def parse_elsewhere(self, response):
        return None


def test_a_request_the_worker_cannot_run_is_given_up_and_the_rest_done(
    site, redis_server, couch_uri, tmp_path
):
    """An entry no callback of the worker's spider can take (another spider's request, or one a
    newer version yielded during a rolling upgrade): before, decoding it raised out of the
    scheduler's next_request, and the worker never leased again nor stopped (each worker that took
    the entry over froze in turn). Now it is a failed delivery, an error of the run, then a dead
    letter with reason ``unrunnable``; every other request is done."""
    urls = [site.route("/fine/%d" % i, b"fine", content_type="text/plain") for i in range(10)]
    listed = tmp_path / "urls.txt"
    listed.write_text("".join(u + "\n" for u in urls))
    out = enqueue("vd_fetch", listed, couch_uri, redis_server.url)
    assert "10 requests queued" in out.stdout, out.stdout
    other = _Other()
    queue = StreamQueue(redis_server.client(), other, "vd_fetch:requests", serializer=serializer)
    queue.ensure()
    bad = site.route("/elsewhere", b"fine", content_type="text/plain")
    assert queue.push(scrapy.Request(bad, callback=other.parse_elsewhere))
    (worker,) = start_workers(
        "vd_fetch_worker",
        1,
        couch_uri,
        redis_server.url,
        tmp_path,
        *QUEUE_SETTINGS,
        "VOTERSDAILY_REDIS_LEASE=3",
        "VOTERSDAILY_REDIS_MAX_ATTEMPTS=2",
    )
    wait_all([worker], tmp_path, timeout=90, status=1)  # its run failed: an entry it cannot run
    log = log_path(tmp_path, 0).read_text()
    stored = {doc["url"] for doc in read_db(couch_uri, "vd_fetch")}
    assert stored == set(urls)
    state = queue_state(redis_server, "vd_fetch")
    assert (state["waiting"], state["processing"], state["dead"]) == (0, 0, 1), state
    ((_, dead),) = redis_server.client().xrange("vd_fetch:requests:dead")
    assert (dead[b"reason"], dead[b"deliveries"]) == (b"unrunnable", b"2"), dead
    assert site.hits.get("/elsewhere", 0) == 0, "never fetched: no callback of this worker would read it"
    assert log.count("is no request vd_fetch_worker can run (ValueError: Method 'parse_elsewhere'") == 2, log[
        -3000:
    ]
    assert "given up after 2 deliveries, in vd_fetch:requests:dead" in log, log[-3000:]


def test_an_interrupted_worker_queues_what_its_last_callbacks_yield_for_the_next(
    site, gate, redis_server, couch_uri, tmp_path
):
    """Ctrl-C (or SIGTERM: scrapyd's cancel, ``systemctl stop``) while a worker's pages are in
    flight: their callbacks still run, and the next pages they yield go to the queue for the next
    worker, not lost with their parents acked (an interrupted plain crawl refuses them; the Redis
    queue keeps them). A second worker then does exactly what is left."""
    worker, paths = _worker_holding_pages(site, gate, redis_server.url, couch_uri, tmp_path)
    worker.send_signal(signal.SIGINT)
    time.sleep(1)  # the interrupt is taken before the callbacks run
    gate.event.set()
    assert worker.wait(120) == 130, log_path(tmp_path, 0).read_text()[-3000:]
    assert not any(site.hits.get("/held/%d/next" % i) for i in range(10)), "nothing sent after the interrupt"
    state = queue_state(redis_server, "vd_fetch")
    assert (state["waiting"], state["processing"], state["dead"]) == (10, 0, 0), state
    (tmp_path / "next").mkdir()
    settings = (*QUEUE_SETTINGS, "VOTERSDAILY_REDIS_LEASE=45")
    (second,) = start_workers("vd_fetch_worker", 1, couch_uri, redis_server.url, tmp_path / "next", *settings)
    wait_all([second], tmp_path / "next")
    assert {p: site.hits.get(p) for p in paths} == dict.fromkeys(paths, 1)
    assert {doc["url"] for doc in read_db(couch_uri, "vd_fetch")} == {site.url + p for p in paths}
    assert queue_state(redis_server, "vd_fetch") == CLEAN_QUEUE


def test_an_interrupted_ingest_worker_gives_back_what_it_had_not_fetched(
    site, redis_server, couch_uri, tmp_path
):
    """Ctrl-C while most of an ingest worker's leases wait for the downloader (a download delay of
    the one host): those are dropped unfetched, and were each stored as a ``fetch-error`` result and
    acked, so the ingests were never done. They go back to the queue now, with no result; the
    requests in flight finish; a second worker does the rest, each once."""
    docs = enqueue_documents(site, redis_server, couch_uri, tmp_path, 12)
    gate = hold_documents(site, docs)
    # no sub-resources: each would wait out the delay too
    settings = (*ingest_settings(tmp_path, lease=45), "INGEST_FETCH_RESOURCES=False")
    delayed = (*settings, "DOWNLOAD_DELAY=5", "RANDOMIZE_DOWNLOAD_DELAY=False")
    (worker,) = start_workers("ingest_worker", 1, couch_uri, redis_server.url, tmp_path, *delayed)
    wait_until(lambda: sum(base_hits(site, docs).values()) >= 1, "the documents requested")
    wait_until(lambda: queue_state(redis_server, "ingest")["processing"] == 12, "every request leased")
    worker.send_signal(signal.SIGINT)
    time.sleep(1)  # the interrupt is taken before the one in flight (held by the site) is answered
    gate.event.set()
    assert worker.wait(120) == 130, log_path(tmp_path, 0).read_text()[-3000:]
    results = read_db(couch_uri, "ingest_file_result")
    assert [r["status"] for r in results] == ["success"], [r.get("error_message") for r in results]
    log = log_path(tmp_path, 0).read_text()
    assert (_stat(log, "interrupt/not_fetched"), _stat(log, "redis/acked")) == (11, 1), log[-3000:]
    assert "gave 11 unfinished requests back to ingest:requests" in log, log[-3000:]
    state = queue_state(redis_server, "ingest")  # given back: pending, for any worker to take now
    assert (state["waiting"] + state["processing"], state["dead"]) == (11, 0), state
    (tmp_path / "next").mkdir()
    (second,) = start_workers(
        "ingest_worker", 1, couch_uri, redis_server.url, tmp_path / "next", *settings[:-2]
    )
    wait_all([second], tmp_path / "next")
    assert set(base_hits(site, docs).values()) == {1}, "each document fetched once"
    check_ingest_results(couch_uri, docs)


def test_an_interrupted_laundromat_worker_gives_back_the_downloads_it_cut_short(
    site, redis_server, couch_uri, tmp_path
):
    """Ctrl-C while a laundromat worker's downloads are under way: it cuts them short (each not
    fetched, its seed still due), and their requests, which it acked, left the queue with their
    datasets never cleaned. They go back to the queue now; a second worker cleans every dataset."""
    roomy(site)
    datasets = rdf_datasets(site, per_suite=2)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(d.url + "\n" for d in datasets))
    enqueue("laundromat", seeds, couch_uri, redis_server.url)
    gate = hold_documents(site, datasets)
    settings = (
        *QUEUE_SETTINGS,
        "VOTERSDAILY_REDIS_LEASE=45",
        "LAUNDROMAT_OUTPUT_DIR=%s" % (tmp_path / "out"),
    )
    (worker,) = start_workers("laundromat_worker", 1, couch_uri, redis_server.url, tmp_path, *settings)
    wait_until(lambda: all(site.hits.get(d.path) for d in datasets), "every dataset requested")
    worker.send_signal(signal.SIGINT)
    assert worker.wait(120) == 130, log_path(tmp_path, 0).read_text()[-3000:]
    gate.event.set()
    log = log_path(tmp_path, 0).read_text()
    assert _stat(log, "redis/acked") == 0, log[-3000:]
    assert _stat(log, "interrupt/not_fetched") == len(datasets), log[-3000:]
    state = queue_state(redis_server, "laundromat")  # given back: pending, for any worker to take now
    assert (state["waiting"] + state["processing"], state["dead"]) == (len(datasets), 0), state
    (tmp_path / "next").mkdir()
    (second,) = start_workers(
        "laundromat_worker", 1, couch_uri, redis_server.url, tmp_path / "next", *settings
    )
    wait_all([second], tmp_path / "next")
    records = {doc["_id"]: doc for doc in read_db(couch_uri, "ll_seeds")}
    for d in datasets:
        seed = records[uri_key(d.url)]
        download = records[seed["download"]]
        assert (download["status"], download["number_of_unique_statements"]) == ("parsed", d.statements)
    assert queue_state(redis_server, "laundromat") == CLEAN_QUEUE
