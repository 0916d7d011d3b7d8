"""Redis-fed workers whose store is down when they start (a systemd restart during store
maintenance): no request goes to the dead stream. The ingest worker spools every result, file-table
row and ``html_meta`` and acks its requests (``flush`` stores them, rows merged with the stored ones);
the laundromat worker, whose seed list must be read and written as it works, gives its requests back
without counting a delivery and leases nothing until the store answers, then does them all.

Real processes: redis-server with the production settings, PouchDB Server (on disk, so that it comes
back with what it held), the worker as ``scrapy crawl``; "down" is a port nothing listens on, or the
PouchDB Server stopped; the pages are the project's recordings and the W3C RDF test files.
"""

from __future__ import annotations

import re
import signal

import pytest

from tests.distributed.workloads import (
    INGEST_SETTINGS,
    QUEUE_SETTINGS,
    enqueue,
    hold_documents,
    log_path,
    queue_state,
    rdf_datasets,
    read_db,
    recorded_documents,
    roomy,
    start_workers,
    wait_all,
    wait_until,
    write_ingest_requests,
)
from tests.ingest.test_store_down_ingest import check_flushed, store_earlier_row
from tests.support.cli_main import run_main
from tests.support.services import free_port
from tests.support.tmpfs import fill, small_tmpfs
from votersdaily.laundromat.uris import uri_key
from votersdaily.store import open_store
from votersdaily.store.base import StoreUnavailable

pytestmark = pytest.mark.slow  # separate processes: Redis, PouchDB Server, workers

#: A request that failed would be given up after its second delivery: every delivery counts here.
STRICT_QUEUE = (*QUEUE_SETTINGS, "VOTERSDAILY_REDIS_LEASE=30", "VOTERSDAILY_REDIS_MAX_ATTEMPTS=2")
CLEAN_QUEUE = {"waiting": 0, "processing": 0, "dead": 0, "recovered": 0}


def test_an_ingest_worker_whose_store_is_down_spools_its_work_and_dead_letters_none(
    site, redis_server, pouchdb, tmp_path
):
    """Before: every hit (10 of these 12 requests) failed in the item pipeline on each delivery and
    went to the dead stream; the file table and ``html_meta`` were never stored, and re-enqueuing
    queued none of them (already seen)."""
    pouchdb.reset()
    roomy(site)
    docs = recorded_documents(site, 12)
    earlier = next(d for d in docs if d.ingest_type == "xml")
    store_earlier_row(pouchdb.url, earlier)
    down = "http://127.0.0.1:%d/" % free_port()  # nothing listens there
    enqueue("ingest", write_ingest_requests(tmp_path / "requests.jsonl", docs), down, redis_server.url)
    spool = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}
    workers = start_workers(
        "ingest_worker",
        1,
        down,
        redis_server.url,
        tmp_path,
        *INGEST_SETTINGS,
        *STRICT_QUEUE,
        *("%s=%s" % setting for setting in spool.items()),
        "INGEST_BLOB_DIR=%s" % (tmp_path / "blobs"),
    )

    wait_all(workers, tmp_path, status=4)  # what it did waits in the spool

    assert queue_state(redis_server, "ingest") == CLEAN_QUEUE
    text = log_path(tmp_path, 0).read_text()
    assert "Error processing" not in text
    # What stays spooled is said once per database, at the end: not at every checkpoint (before,
    # an ERROR per writer each time the worker acked).
    still = re.findall(r"still does not take documents: \d+ documents for (\S+) stay spooled", text)
    assert still and len(still) == len(set(still)), still
    flushed = run_main("flush", "--from", down, store_uri=pouchdb.url, env=spool)
    assert flushed.returncode == 0, flushed.stderr
    check_flushed(pouchdb.url, docs, earlier)


def test_an_ingest_worker_whose_store_comes_back_delivers_its_spool_and_writes_on(
    site, redis_server, durable_pouch, tmp_path
):
    """An ingest worker started while its store is down spools what it does; once the store answers
    again it delivers what it spooled and writes on. Before: it spooled everything for as long as it
    ran (at every checkpoint an ERROR, ``store … still does not take documents``, though the store
    answered), its run log said ``StoreUnavailable`` and it exited 4, every result waiting for
    ``flush``."""
    roomy(site)
    docs = recorded_documents(site, 12)
    earlier = next(d for d in docs if d.ingest_type == "xml")
    store_earlier_row(durable_pouch.url, earlier)
    requests = write_ingest_requests(tmp_path / "requests.jsonl", docs)
    enqueue("ingest", requests, durable_pouch.url, redis_server.url)
    gate = hold_documents(site, docs[6:])  # answered once the store is back
    durable_pouch.stop()
    spool = tmp_path / "spool"
    (worker,) = start_workers(
        "ingest_worker",
        1,
        durable_pouch.url,
        redis_server.url,
        tmp_path,
        *INGEST_SETTINGS,
        *STRICT_QUEUE,
        "VOTERSDAILY_STORE_RETRY_MAX_DELAY=1",
        "VOTERSDAILY_SPOOL_DIR=%s" % spool,
        "INGEST_BLOB_DIR=%s" % (tmp_path / "blobs"),
    )
    log = log_path(tmp_path, 0)
    wait_until(lambda: "spooled to %s" % spool in log.read_text(), "the worker spooled what it did")

    durable_pouch.start()  # the same port and data folder
    gate.event.set()

    wait_all([worker], tmp_path)  # everything stored: a success
    assert queue_state(redis_server, "ingest") == CLEAN_QUEUE
    check_flushed(durable_pouch.url, docs, earlier)  # stored, from the spool or straight
    assert not list(spool.glob("*.jsonl*")), "nothing left for flush"
    (run,) = read_db(durable_pouch.url, "vd_log")
    assert (run["result"], run["still_spooled_count"]) == ("success", 0), run
    outage = run["store_outage"]["ingest_file_result"]
    assert outage["spooled"] == outage["delivered_from_spool"] > 0, outage


def laundromat_worker_on_a_stopped_store(site, redis_server, durable_pouch, tmp_path, per_suite: int):
    """W3C RDF files enqueued as seeds, the store stopped, a laundromat worker started: (its
    datasets, the worker, its log) once it has given the seeds it leased back to the queue."""
    roomy(site)
    datasets = rdf_datasets(site, per_suite=per_suite)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(d.url + "\n" for d in datasets))
    enqueue("laundromat", seeds, durable_pouch.url, redis_server.url)
    durable_pouch.stop()
    worker, log = laundromat_worker_giving_back(durable_pouch.url, redis_server, tmp_path)
    return datasets, worker, log


def laundromat_worker_giving_back(store_uri, redis_server, tmp_path):
    """A laundromat worker started on ``store_uri``: (the worker, its log) once it has given the
    seeds it leased back to the queue (or sent one to the dead stream: the test says which)."""
    (worker,) = start_workers(
        "laundromat_worker",
        1,
        store_uri,
        redis_server.url,
        tmp_path,
        *STRICT_QUEUE,
        "VOTERSDAILY_STORE_RETRY_MAX_DELAY=1",
        "VOTERSDAILY_SPOOL_DIR=%s" % (tmp_path / "spool"),
        "LAUNDROMAT_OUTPUT_DIR=%s" % (tmp_path / "out"),
    )
    log = log_path(tmp_path, 0)
    given_back = "requests that met it given back to laundromat:requests (no delivery counted)"
    wait_until(
        lambda: given_back in log.read_text() or queue_state(redis_server, "laundromat")["dead"],
        "the worker gave its requests back",
    )
    return worker, log


def test_a_laundromat_worker_whose_store_is_down_gives_its_seeds_back_until_it_is_up(
    site, redis_server, durable_pouch, tmp_path
):
    """Before: each seed's callback failed writing its record (``StoreUnavailable``) on every
    delivery, and all 8 seeds were in the dead stream within 20 s. Then, once they were given back
    and done after the store came back, the run log still said ``StoreUnavailable`` (exit 1): the
    outage it waited out is recorded (``store_wait``), the result is how its work ended."""
    datasets, worker, log = laundromat_worker_on_a_stopped_store(
        site, redis_server, durable_pouch, tmp_path, per_suite=4
    )
    # Those it had leased are back, each with the deliveries it had before (none), the rest untouched.
    assert queue_state(redis_server, "laundromat")["dead"] == 0
    queue = redis_server.client()
    assert queue.xlen("laundromat:requests") == len(datasets)
    pending = queue.xpending_range("laundromat:requests", "workers", min="-", max="+", count=100)
    assert pending and {(p["consumer"], p["times_delivered"]) for p in pending} == {(b"requeued", 0)}

    durable_pouch.start()  # the same port, with the seeds enqueue wrote

    wait_all([worker], tmp_path)  # every seed done once the store was back: a success
    text = log.read_text()
    assert "the store at %s is back after" % durable_pouch.url in text, text[-3000:]
    assert "Traceback" not in text, "each callback's StoreUnavailable is one line"
    assert queue_state(redis_server, "laundromat") == CLEAN_QUEUE
    records = {doc["_id"]: doc for doc in read_db(durable_pouch.url, "ll_seeds")}
    for d in datasets:
        seed = records[uri_key(d.url)]
        assert (seed["status"], seed["given"]) == ("added", True) and seed["processed"], seed
        download = records[seed["download"]]
        assert (download["status"], download["number_of_unique_statements"]) == ("parsed", d.statements)
    (run,) = read_db(durable_pouch.url, "vd_log")
    assert run["result"] == "success" and "errors" not in run, run
    wait = run["store_wait"]
    assert (wait["outages"], wait["ended"]) == (1, True) and wait["seconds"] > 0, wait
    assert wait["given_back"] >= 1 and wait["requests"] >= wait["given_back"], wait


def test_a_laundromat_worker_stopped_while_its_store_is_away_says_so_in_its_run_log(
    site, redis_server, durable_pouch, tmp_path
):
    """The failures of requests given back are the outage's, but a worker stopped while the store
    is still away has not done them: its run log's result is ``StoreUnavailable``, saying the store
    was still away and where the requests wait, and ``store_wait`` says the outage had not ended.
    (Before, the result named a callback's failure, and no outage was recorded.)"""
    datasets, worker, log = laundromat_worker_on_a_stopped_store(
        site, redis_server, durable_pouch, tmp_path, per_suite=1
    )

    worker.send_signal(signal.SIGTERM)
    assert worker.wait(120) == 130, log.read_text()[-3000:]

    durable_pouch.start()
    spool = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}
    flushed = run_main("flush", store_uri=durable_pouch.url, env=spool)
    assert flushed.returncode == 0, flushed.stderr
    (run,) = read_db(durable_pouch.url, "vd_log")
    assert run["result"] == "StoreUnavailable", run
    assert run["error_message"].startswith(
        "the store at %s still did not answer when the worker stopped" % durable_pouch.url
    ), run["error_message"]
    assert run["error_message"].endswith("given back to laundromat:requests, where they wait for a worker")
    assert run["store_wait"]["ended"] is False, run["store_wait"]
    state = queue_state(redis_server, "laundromat")
    assert (state["waiting"] + state["processing"], state["dead"]) == (len(datasets), 0), state


def test_a_request_the_store_fails_alone_while_it_answers_is_still_given_up(
    site, redis_server, couch_uri, tmp_path
):
    """What a worker waits out is a store that does not answer: a callback that meets
    ``StoreUnavailable`` while the store answers (a document the store fails alone) is a failed
    delivery, so it cannot hold the queue for ever; the other requests are done."""
    fine = [site.route("/fine/%d" % i, b"fine", content_type="text/plain") for i in range(10)]
    failing = site.route("/store-fails", b"store", content_type="text/plain")
    listed = tmp_path / "urls.txt"
    listed.write_text("".join(u + "\n" for u in [*fine, failing]))
    enqueue("vd_fetch", listed, couch_uri, redis_server.url)
    workers = start_workers("vd_fetch_worker", 1, couch_uri, redis_server.url, tmp_path, *STRICT_QUEUE)

    wait_all(workers, tmp_path, status=1)  # its run failed: a callback raised (then given up)

    assert site.hits["/store-fails"] == 2, "tried VOTERSDAILY_REDIS_MAX_ATTEMPTS times"
    assert sorted(doc["url"] for doc in read_db(couch_uri, "vd_fetch")) == sorted(fine)
    state = queue_state(redis_server, "vd_fetch")
    assert (state["waiting"], state["processing"], state["dead"]) == (0, 0, 1)


@pytest.mark.parametrize("held_open", [True, False], ids=["held-open", "closed-before-it-filled"])
def test_a_laundromat_worker_whose_store_cannot_write_gives_its_seeds_back_until_it_can(
    site, redis_server, tmp_path, held_open
):
    """The store's disk is full (the embedded store's file on a real 4 MiB tmpfs, filled). Held open
    while the worker opens it, it answers reads (``has_db``) but fails every write (``database or
    disk is full``). Before: the worker asked whether the store answered, was told it did, and
    counted each seed's failed write as a failed delivery: every seed it leased went to the dead
    stream. Now it asks whether the store takes a write (:meth:`~votersdaily.store.base.Store.
    check_writes`). Closed (cleanly) before the disk filled, it cannot be opened at all (no room for
    its ``-wal`` file). Before: the worker died of ``sqlite3.OperationalError`` in a traceback, exit 1
    (audit, 2026-11-29). Now that is a store that does not answer. Either way the seeds are given
    back, none dead, and once the disk has room the worker does them all. (A PouchDB Server on a full
    disk answers HTTP 500 to writes too, then crashes: a stopped store, tested above.)"""
    roomy(site)
    datasets = rdf_datasets(site, per_suite=2)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(d.url + "\n" for d in datasets))
    with small_tmpfs(tmp_path / "disk", "4m") as folder:
        store_uri = "sqlite:///%s" % (folder / "store.sqlite")
        enqueue("laundromat", seeds, store_uri, redis_server.url)
        store = open_store(store_uri)
        store.ensure_db("vd_log")  # made while there is room, as an operator makes them
        if not held_open:
            store.close()  # its -wal and -shm files go with the last connection
        filler = fill(folder)
        if held_open:
            assert store.has_db("vd_log"), "it answers reads"
            with pytest.raises(StoreUnavailable, match="full"):
                store.check_writes("vd_log")
        else:
            with pytest.raises(StoreUnavailable, match="the folder %s is full" % folder):
                open_store(store_uri).has_db("vd_log")
        worker, log = laundromat_worker_giving_back(store_uri, redis_server, tmp_path)
        assert queue_state(redis_server, "laundromat")["dead"] == 0, log.read_text()[-3000:]

        filler.unlink()  # room again

        wait_all([worker], tmp_path)
        text = log.read_text()
        assert "the store at %s is back after" % store_uri in text, text[-3000:]
        assert queue_state(redis_server, "laundromat") == CLEAN_QUEUE
        records = {doc["_id"]: doc for doc in read_db(store_uri, "ll_seeds")}
        store.close()
        for d in datasets:
            download = records[records[uri_key(d.url)]["download"]]
            assert (download["status"], download["number_of_unique_statements"]) == ("parsed", d.statements)
