"""Reschedules under store faults: a lost ``_bulk_docs`` answer and two racing runs.

The crawls are real ``scrapy crawl`` runs of the house_floor spider on its recordings, repeated (see
``tests/repeating_spiders.py``); ``shift_days`` moves every event (a derived variant of the real
recordings: the same floor actions, rescheduled). The store is a real PouchDB Server behind a
loopback fault proxy (``tests/support/faultproxy.py``).
"""

from __future__ import annotations

import threading

import pytest

from tests.support.cli_main import run_main
from tests.support.faultproxy import FaultProxy
from votersdaily.store import open_store
from votersdaily.store.names import database_name

pytestmark = pytest.mark.slow  # crawls through a fault-injecting proxy, two of them racing

N = 192  # four rounds of the 48 recorded floor actions: two batches of 100 in the lost-answer run
T1 = {"VOTERSDAILY_FROZEN_NOW": "2026-10-02T18:00:00Z"}
T2 = {"VOTERSDAILY_FROZEN_NOW": "2026-10-03T18:00:00Z"}
T3 = {"VOTERSDAILY_FROZEN_NOW": "2026-10-04T18:00:00Z"}


def bulk_docs_of_events(couchdb) -> bytes:
    """The request line of a write to vd_events, under the server's database prefix."""
    return b"POST /%s/_bulk_docs" % database_name(couchdb.prefix, "vd_events").encode()


@pytest.fixture
def proxy(couchdb):
    couchdb.reset()
    p = FaultProxy(couchdb.port, couchdb.host).start()
    yield p
    p.stop()


def run(crawl, uri: str, shift: int, env: dict, *settings: str):
    args = [
        "-a",
        "count=%d" % N,
        "-a",
        "shift_days=%d" % shift,
        "-s",
        "SPIDER_MODULES=tests.repeating_spiders",
    ]
    for setting in settings:
        args += ["-s", setting]
    proc = crawl("repeated_house_floor", None, uri, *args, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def live_ids_by_key(uri: str) -> dict[str, list[str]]:
    store = open_store(uri)
    try:
        live: dict[str, list[str]] = {}
        for doc in store.iter_docs("vd_events"):
            live.setdefault(doc["unique_key"], [])
            if "superseded_by" not in doc:
                live[doc["unique_key"]].append(doc["_id"])
        return live
    finally:
        store.close()


def run_log(uri: str, env: dict) -> dict:
    store = open_store(uri)
    try:
        (log,) = [
            d for d in store.iter_docs("vd_log") if d["access_datetime"] == env["VOTERSDAILY_FROZEN_NOW"]
        ]
        return log
    finally:
        store.close()


def exported_uids(uri: str) -> list[str]:
    """The UIDs of ``python -m votersdaily export ics`` (in this process: it runs no reactor)."""
    result = run_main("export", "ics", store_uri=uri)
    assert result.returncode == 0, result.stderr
    # (The ics package's grammar recurses per character: the floor actions' long lines exceed it.)
    unfolded = result.stdout.replace("\n ", "")
    return [line[4:] for line in unfolded.splitlines() if line.startswith("UID:")]


def test_a_lost_bulk_docs_answer_during_a_rescheduling_run(crawl, couchdb, proxy):
    run(crawl, couchdb.url, 0, T1)
    first = {key: ids[0] for key, ids in live_ids_by_key(couchdb.url).items()}
    assert len(first) == N
    proxy.lose_answer(bulk_docs_of_events(couchdb))
    run(
        crawl,
        couchdb.url_at(proxy.port),
        1,
        T2,
        "VOTERSDAILY_BATCH_SIZE=100",
        "VOTERSDAILY_STORE_RETRY_TIMES=3",
        "VOTERSDAILY_STORE_RETRY_BACKOFF=0.2",
    )
    assert proxy.lost == 1  # the server applied the first batch; the crawl never heard it
    live = live_ids_by_key(couchdb.url)
    assert len(live) == N and all(len(ids) == 1 for ids in live.values()), live
    assert not set(first.values()) & {ids[0] for ids in live.values()}, "every event moved"
    log = run_log(couchdb.url, T2)
    assert log["result"] == "success"
    # The lost batch is found unchanged on its retry, and what it replaces is still marked.
    assert log["superseded_count"] == N and log["repaired_count"] == 0
    assert log["store_outage"]["vd_events"]["retries"] >= 1
    uids = exported_uids(couchdb.url)
    assert len(uids) == len(set(uids)) == N


def test_two_racing_runs_then_an_unchanged_run_repairs_every_key(crawl, couchdb, proxy):
    """Both runs read the store before either writes (the proxy holds their writes until both
    arrived): every key ends up with two live documents. The feeds still show each event once,
    and the next run, which changes nothing, repairs every key and says so."""
    store = open_store(couchdb.url)  # views first: each run's first _bulk_docs is then its events
    store.ensure_db("vd_events")
    store.install_views("vd_events")
    store.close()
    proxy.hold_until(bulk_docs_of_events(couchdb), 2)
    failures = []

    def racer(shift, env):
        try:
            run(crawl, couchdb.url_at(proxy.port), shift, env, "VOTERSDAILY_BATCH_SIZE=10000")
        except AssertionError as exc:
            failures.append(exc)

    racers = [threading.Thread(target=racer, args=args) for args in ((0, T1), (1, T2))]
    for thread in racers:
        thread.start()
    for thread in racers:
        thread.join(300)
    assert not failures and proxy.held == 2
    live = live_ids_by_key(couchdb.url)
    assert len(live) == N and all(len(ids) == 2 for ids in live.values())
    uids = exported_uids(couchdb.url)
    assert len(uids) == len(set(uids)) == N
    newest = {max(ids) for ids in live.values()}  # shift 1: ids start with the later datetime
    run(crawl, couchdb.url, 1, T3)
    log = run_log(couchdb.url, T3)
    assert log["unchanged_count"] == N and log["insert_count"] == log["updated_count"] == 0
    assert log["repaired_count"] == N and log["superseded_count"] == 0
    live = live_ids_by_key(couchdb.url)
    assert all(len(ids) == 1 for ids in live.values()) and {ids[0] for ids in live.values()} == newest
    # Once repaired, a further run finds nothing to repair.
    run(crawl, couchdb.url, 1, {"VOTERSDAILY_FROZEN_NOW": "2026-10-05T18:00:00Z"})
    assert run_log(couchdb.url, {"VOTERSDAILY_FROZEN_NOW": "2026-10-05T18:00:00Z"})["repaired_count"] == 0
