"""Distributed workers on a real redis-server: one stream of real ingest requests (and laundromat
seeds) split by several ``ingest_worker`` (``laundromat_worker``) processes, filled by
``python -m votersdaily enqueue``; one worker killed with SIGKILL mid-run loses nothing."""

from __future__ import annotations

import gzip
import json
import sys

import pytest

from tests.distributed.workloads import (
    QUEUE_SETTINGS,
    acked,
    base_hits,
    check_ingest_results,
    enqueue,
    enqueue_documents,
    frozen_with_leases,
    held_by,
    hold_documents,
    ingest_settings,
    kill_worker,
    leases_of,
    log_path,
    queue_state,
    rdf_datasets,
    read_db,
    recovered_from,
    roomy,
    start_workers,
    wait_all,
    wait_for_hits,
    wait_until,
)
from tests.support.processes import TEST_SETTINGS, start_crawl
from tests.support.services import run_cli
from votersdaily.laundromat.uris import uri_key

pytestmark = pytest.mark.slow  # separate processes: Redis, workers, killed and restarted services

#: Enough documents that every worker takes a share and a kill lands mid-run, few enough to run in seconds.
N = 180


@pytest.fixture
def ingest_queue(site, redis_server, couch_uri, tmp_path):
    """N real documents on the site, their ingest requests enqueued; the documents."""
    return enqueue_documents(site, redis_server, couch_uri, tmp_path, N)


def test_three_ingest_workers_process_each_request_exactly_once(
    ingest_queue, site, redis_server, couch_uri, tmp_path
):
    docs = ingest_queue
    # The answers wait until every worker holds leases: one that starts late on a loaded machine
    # still takes a share (two workers lease at most 2 x 32 of the N requests meanwhile).
    gate = hold_documents(site, docs)
    workers = start_workers(
        "ingest_worker", 3, couch_uri, redis_server.url, tmp_path, *ingest_settings(tmp_path, lease=30)
    )
    wait_until(
        lambda: all(leases_of(redis_server, "ingest", w.pid) for w in workers), "every worker holds leases"
    )
    gate.event.set()
    wait_all(workers, tmp_path)
    hits = base_hits(site, docs)
    assert set(hits.values()) == {1}, "each request fetched exactly once: %r" % {
        p: n for p, n in hits.items() if n != 1
    }
    check_ingest_results(couch_uri, docs)
    shares = [acked(tmp_path, i) for i in range(3)]
    assert sum(shares) == N and min(shares) > 0, "all three workers took a share: %r" % shares
    assert queue_state(redis_server, "ingest") == {
        "waiting": 0,
        "processing": 0,
        "dead": 0,
        "recovered": 0,
    }


def test_a_killed_ingest_workers_requests_are_recovered(
    ingest_queue, site, redis_server, couch_uri, tmp_path
):
    docs = ingest_queue
    lease = 3
    workers = start_workers(
        "ingest_worker", 3, couch_uri, redis_server.url, tmp_path, *ingest_settings(tmp_path, lease=lease)
    )
    wait_for_hits(site, docs, 0.25)
    # Frozen while it holds leases, then killed: what it held is known exactly and dies with it.
    consumer, held = frozen_with_leases(workers[0], redis_server, "ingest")
    kill_worker(workers[0])  # no shutdown: its leases and unflushed writes die with it
    # The event: the survivors take over every lease it held, once the lease (3 s) has expired and a
    # survey (every 0.5 s) has seen it; the bound is only slack for a loaded machine.
    wait_until(
        lambda: not held_by(redis_server, "ingest", consumer),
        "the survivors took over the %d leases of the killed worker" % len(held),
        timeout=40 * lease,
    )
    wait_all(workers, tmp_path, skip=(0,))
    state = queue_state(redis_server, "ingest")
    assert state["recovered"] >= len(held) > 0, "every lease of the dead worker was taken over: %r" % state
    assert (state["waiting"], state["processing"], state["dead"]) == (0, 0, 0)
    survivors = log_path(tmp_path, 1).read_text() + log_path(tmp_path, 2).read_text()
    assert recovered_from(survivors, consumer) >= len(held), "the survivors' logs name the dead worker"
    hits = base_hits(site, docs)
    assert min(hits.values()) >= 1, "nothing lost"
    # Only what the dead worker held (and had not acked) can have been fetched twice.
    assert sum(n - 1 for n in hits.values()) <= state["recovered"]
    check_ingest_results(couch_uri, docs)


def test_laundromat_workers_process_each_seed_once(site, redis_server, couch_uri, tmp_path):
    roomy(site)
    datasets = rdf_datasets(site, per_suite=8)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(d.url + "\n" for d in datasets))
    out = enqueue("laundromat", seeds, couch_uri, redis_server.url)
    assert "laundromat:requests: %d requests queued" % len(datasets) in out.stdout, out.stdout
    workers = start_workers(
        "laundromat_worker",
        3,
        couch_uri,
        redis_server.url,
        tmp_path,
        *QUEUE_SETTINGS,
        "VOTERSDAILY_REDIS_LEASE=30",
        "LAUNDROMAT_OUTPUT_DIR=%s" % (tmp_path / "out"),
    )
    wait_all(workers, tmp_path)
    assert {d.path: site.hits.get(d.path) for d in datasets} == {d.path: 1 for d in datasets}, (
        "each seed once"
    )
    shares = [acked(tmp_path, i) for i in range(3)]
    assert sum(shares) == len(datasets) and sorted(shares)[1] > 0, "split between the workers: %r" % shares
    records = {doc["_id"]: doc for doc in read_db(couch_uri, "ll_seeds")}
    by_status: dict[str, int] = {}
    for r in records.values():
        by_status[r["status"]] = by_status.get(r["status"], 0) + 1
    cleaned_keys = {r.get("clean") for r in records.values() if r["status"] == "parsed"}
    # a seed and its one download each; files whose cleaned statements are the same share one cleaned file
    assert by_status == {"added": len(datasets), "parsed": len(datasets), "cleaned": len(cleaned_keys)}
    for d in datasets:
        seed = records[uri_key(d.url)]
        assert (seed["uri"], seed["status"], seed["given"]) == (d.url, "added", True) and seed["processed"]
        downloads = [r for r in records.values() if r.get("parent") == seed["_id"]]
        assert [r["_id"] for r in downloads] == [seed["download"]], "downloaded once"
        download = downloads[0]
        assert [(h["uri"], h["status"]) for h in download["http"]] == [(d.url, 200)]
        assert (download["status"], download["format_content_type"], download["number_of_bytes"]) == (
            "parsed",
            d.format,
            d.size,
        )
        assert (download["number_of_unique_statements"], download["number_of_errors"]) == (d.statements, 0)
        cleaned = records[download["clean"]]
        assert cleaned["status"] == "cleaned" and records[cleaned["dirty"]]["clean"] == cleaned["_id"]
        assert cleaned["content"]["number_of_unique_statements"] == d.statements
        with gzip.open(tmp_path / "out" / cleaned["file"], "rb") as f:
            assert len(f.read().splitlines()) == d.statements
    assert queue_state(redis_server, "laundromat") == {
        "waiting": 0,
        "processing": 0,
        "dead": 0,
        "recovered": 0,
    }


def test_enqueuing_the_same_requests_twice_queues_them_once(site, redis_server, couch_uri, tmp_path):
    """The shared duplicate filter holds one key per (ingest_type, base_url); force_recrawl passes."""
    lines = [
        {"ingest_type": "pdf", "base_url": site.url + "/paper/a.pdf"},
        {"ingest_type": "html", "base_url": site.url + "/paper/a.pdf"},  # another ingest of the same URL
        {"ingest_type": "html", "base_url": site.url + "/paper/b.html"},
    ]
    requests = tmp_path / "requests.jsonl"
    requests.write_text("".join(json.dumps(line) + "\n" for line in lines))
    first = enqueue("ingest", requests, couch_uri, redis_server.url)
    assert "ingest:requests: 3 requests queued, 0 already seen" in first.stdout, first.stdout
    again = enqueue("ingest", requests, couch_uri, redis_server.url)
    assert "ingest:requests: 0 requests queued, 3 already seen" in again.stdout, again.stdout
    lines[2]["force_recrawl"] = True
    requests.write_text("".join(json.dumps(line) + "\n" for line in lines))
    forced = enqueue("ingest", requests, couch_uri, redis_server.url)
    assert "ingest:requests: 1 requests queued, 2 already seen" in forced.stdout, forced.stdout
    assert queue_state(redis_server, "ingest")["waiting"] == 4


def test_two_deployments_on_one_redis_keep_their_queues_apart(site, redis_server, couch_uri, tmp_path):
    """Two deployments on one CouchDB (docs/operations.md: each its own VOTERSDAILY_DB_PREFIX) that
    share one Redis: each enqueues the same pages, and each deployment's worker does its own
    deployment's requests into its own databases. Before, both used ``vd_fetch:requests`` and one
    duplicate filter: the second deployment's enqueue queued nothing (every page "already seen"), and
    the first deployment's requests were done by whichever worker came first, into its databases."""
    urls = [site.route("/page/%d" % i, b"page %d" % i, content_type="text/plain") for i in range(5)]
    listed = tmp_path / "urls.txt"
    listed.write_text("".join(u + "\n" for u in urls))
    for prefix in ("staging_", ""):
        out = run_cli(
            [sys.executable, "-m", "votersdaily", "enqueue", "vd_fetch", str(listed)],
            couch_uri,
            env={
                "VOTERSDAILY_REDIS_URL": redis_server.url,
                "VOTERSDAILY_DB_PREFIX": prefix,
                "SCRAPY_SETTINGS_MODULE": TEST_SETTINGS,
            },
        )
        assert out.returncode == 0, out.stdout + out.stderr[-3000:]
        assert "%svd_fetch:requests: 5 requests queued, 0 already seen" % prefix in out.stdout, out.stdout
    for i, prefix in enumerate(
        ("staging_", "")
    ):  # one after the other: the staging worker sees the other queue
        worker = start_crawl(
            "vd_fetch_worker",
            couch_uri,
            *QUEUE_SETTINGS,
            "LOG_LEVEL=INFO",
            "TEST_WORKER_NAME=%s" % (prefix or "production"),
            log=log_path(tmp_path, i),
            env={"VOTERSDAILY_REDIS_URL": redis_server.url, "VOTERSDAILY_DB_PREFIX": prefix},
        )
        assert worker.wait(180) == 0, log_path(tmp_path, i).read_text()[-3000:]
    staging_log = log_path(tmp_path, 0).read_text()
    assert "Redis also holds the queue vd_fetch:requests (5 requests), which this worker does not read" in (
        staging_log
    ), staging_log[-3000:]
    assert "Redis also holds" not in log_path(tmp_path, 1).read_text()
    for db, worker in (("vd_fetch", "production"), ("staging_vd_fetch", "staging_")):
        docs = read_db(couch_uri, db)
        assert sorted(d["url"] for d in docs) == sorted(urls), db
        assert {d["worker"] for d in docs} == {worker}, db
    assert {site.hits["/page/%d" % i] for i in range(5)} == {2}, "each page once per deployment"


def test_a_worker_gives_every_ingest_whose_hop_was_dropped_its_result(
    site, redis_server, sqlite_uri, tmp_path
):
    """A worker yields each next hop to the shared queue, and Scrapy's spider middlewares may drop it
    on the way: a hop past DEPTH_LIMIT (/start → /hop1 → /landing-pdf), a Location past
    URLLENGTH_LIMIT. Before, the request was acked and its ingest had no result at all; now the
    first ends ``fetch-error`` saying so, the second ``bad-redirect``; a base_url past the limit is
    refused by enqueue, naming its line."""
    from tests.ingest.conftest import build_site

    build_site(site)
    too_long = "/scholarly/dummy.pdf?token=" + "x" * 2083
    site.route("/to-long", status=302, headers={"Location": too_long})
    statuses = {"/start": "fetch-error", "/to-long": "bad-redirect", "/scholarly/dummy.pdf": "success"}
    requests = tmp_path / "requests.jsonl"
    requests.write_text(
        "".join(
            json.dumps({"base_url": site.url + path, "ingest_type": "pdf"}) + "\n"
            for path in [*statuses, too_long]
        )
    )
    out = enqueue("ingest", requests, sqlite_uri, redis_server.url, returncode=1)
    assert "ingest:requests: 3 requests queued, 0 already seen, 0 items ignored (1 bad)" in out.stdout
    assert "%s:4" % requests in out.stderr and "over URLLENGTH_LIMIT 2083" in out.stderr, out.stderr
    workers = start_workers(
        "ingest_worker",
        1,
        sqlite_uri,
        redis_server.url,
        tmp_path,
        *ingest_settings(tmp_path, lease=30),
        "DEPTH_LIMIT=1",
    )
    wait_all(workers, tmp_path)
    results = {
        r["request"]["base_url"][len(site.url) :]: r for r in read_db(sqlite_uri, "ingest_file_result")
    }
    assert {path: r["status"] for path, r in results.items()} == statuses
    assert "dropped the hop to %s/landing-pdf" % site.url in results["/start"]["error_message"]
    assert queue_state(redis_server, "ingest") == {"waiting": 0, "processing": 0, "dead": 0, "recovered": 0}
