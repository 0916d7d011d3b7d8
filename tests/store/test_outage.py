"""Storage outages lose nothing: retries with backoff, spooling, flush, next-run delivery, conflicts."""

from __future__ import annotations

import json
import threading
import time

import pytest

from tests.support.cli_main import run_main
from tests.support.processes import Gate, start_crawl
from votersdaily.store import open_store
from votersdaily.store.upsert import upsert

pytestmark = pytest.mark.slow  # a PouchDB Server stopped and restarted under crawl subprocesses

N_FAST, N_GATED = 60, 60
FAST_SETTINGS = (
    "TEST_DB=vd_fetch",
    "VOTERSDAILY_BATCH_SIZE=10",
    "CONCURRENT_REQUESTS=4",
    "LOG_LEVEL=INFO",
    "VOTERSDAILY_STORE_RETRY_TIMES=3",
    "VOTERSDAILY_STORE_RETRY_BACKOFF=0.3",
)


def _pages(site, during, after):
    """Fast pages, then pages answered during the outage, then pages answered after it."""
    urls = []
    for i in range(N_FAST):
        urls.append(site.route("/fast/%d" % i, "fast page %d" % i, content_type="text/plain"))
    for i in range(N_GATED):
        g = during if i < N_GATED // 2 else after
        urls.append(site.route("/gated/%d" % i, g.body(b"gated page %d" % i), content_type="text/plain"))
    return urls


def _wait_for(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


def _docs(uri, db="vd_fetch"):
    store = open_store(uri)
    try:
        return list(store.iter_docs(db))
    finally:
        store.close()


def _run_log(uri):
    logs = _docs(uri, "vd_log")
    assert len(logs) == 1, logs
    return logs[0]


def test_outage_mid_crawl_loses_nothing(site, gate, durable_pouch, tmp_path):
    after = Gate()
    urls = _pages(site, gate, after)
    spool = tmp_path / "spool"
    proc = start_crawl(
        "vd_fetch",
        durable_pouch.url,
        *FAST_SETTINGS,
        log=tmp_path / "crawl.log",
        args={"url": ",".join(urls)},
        env={"VOTERSDAILY_SPOOL_DIR": str(spool)},
    )
    # Every fast page is fetched; the crawl now waits on the gated ones: the store goes down.
    _wait_for(lambda: sum(v for k, v in site.hits.items() if k.startswith("/fast/")) == N_FAST)
    _wait_for(lambda: len(_docs(durable_pouch.url)) >= 30)
    durable_pouch.stop()
    gate.event.set()  # pages keep coming while the store is down: batches retry, then spool
    _wait_for(lambda: sum(v for k, v in site.hits.items() if k.startswith("/gated/")) >= N_GATED // 2 + 4)
    # Until a batch has used up its retries and gone to the spool: the outage mattered.
    _wait_for(lambda: any(spool.glob("vd_fetch--*.jsonl")))
    durable_pouch.start()  # same port, same data folder
    after.event.set()
    assert proc.wait(120) == 0, (tmp_path / "crawl.log").read_text()[-3000:]
    log_text = (tmp_path / "crawl.log").read_text()
    assert "unavailable" in log_text

    docs = _docs(durable_pouch.url)
    ids = [d["_id"] for d in docs]
    assert len(ids) == len(set(ids)) == N_FAST + N_GATED
    assert {d["url"] for d in docs} == set(urls)
    assert not list(spool.glob("*")), "everything was delivered before the run ended"
    log = _run_log(durable_pouch.url)
    outage = log["store_outage"]["vd_fetch"]
    assert outage["retries"] > 0 and outage["first_failure"]
    # A batch the server applied just before it went down (its answer lost) is found identical on
    # the retry and counted unchanged: every document is counted once, as inserted or unchanged.
    assert log["insert_count"] + log["unchanged_count"] == N_FAST + N_GATED
    assert log["insert_count"] >= N_FAST + N_GATED - 2 * 10  # at most the batches in flight (batch size 10)
    assert outage["spooled"] > 0 and outage["spooled"] == outage["delivered_from_spool"]


def _crawl_with_store_down_at_close(site, gate, pouch, tmp_path, spool, prefix):
    urls = [site.route("/%s/%d" % (prefix, i), "page %d" % i, content_type="text/plain") for i in range(30)]
    last = site.route("/%s/last" % prefix, gate.body(b"last page"), content_type="text/plain")
    proc = start_crawl(
        "vd_fetch",
        pouch.url,
        "TEST_DB=vd_fetch",
        "VOTERSDAILY_BATCH_SIZE=10",
        "CONCURRENT_REQUESTS=1",
        "VOTERSDAILY_STORE_RETRY_TIMES=1",
        "VOTERSDAILY_STORE_RETRY_BACKOFF=0.2",
        log=tmp_path / ("%s.log" % prefix),
        args={"url": ",".join([*urls, last])},
        env={"VOTERSDAILY_SPOOL_DIR": str(spool)},
    )
    _wait_for(lambda: site.hits.get("/%s/last" % prefix, 0) == 1)
    pouch.stop()
    gate.event.set()
    # scrapy crawl: 4, what the store did not take waits in the spool
    assert proc.wait(120) == 4, (tmp_path / ("%s.log" % prefix)).read_text()[-3000:]
    return [*urls, last]


def test_store_down_at_close_spools_then_flush_delivers(site, gate, durable_pouch, tmp_path):
    spool = tmp_path / "spool"
    urls = _crawl_with_store_down_at_close(site, gate, durable_pouch, tmp_path, spool, "a")
    spooled = [json.loads(line) for f in spool.glob("*.jsonl") for line in f.read_text().splitlines()]
    assert {r["db"] for r in spooled} == {"vd_fetch", "vd_log"}
    run_log = [r["doc"] for r in spooled if r["db"] == "vd_log"]
    assert len(run_log) == 1 and run_log[0]["store_outage"]["vd_fetch"]["spooled"] > 0

    # Still down: flush keeps everything and says so (``python -m votersdaily flush`` in this process).
    env = {"VOTERSDAILY_SPOOL_DIR": str(spool)}
    down = run_main("flush", store_uri=durable_pouch.url, env=env)
    assert down.returncode == 3 and "still unavailable" in down.stderr
    durable_pouch.start()
    up = run_main("flush", store_uri=durable_pouch.url, env=env)
    assert up.returncode == 0, up.stderr
    assert not list(spool.glob("*"))
    docs = _docs(durable_pouch.url)
    assert sorted(d["url"] for d in docs) == sorted(urls)
    log = _run_log(durable_pouch.url)
    assert log["spooled_count"] > 0 and log["items_scraped"] == len(urls)


def test_next_run_delivers_what_was_spooled(site, gate, durable_pouch, tmp_path):
    spool = tmp_path / "spool"
    first = _crawl_with_store_down_at_close(site, gate, durable_pouch, tmp_path, spool, "b")
    durable_pouch.start()
    second = [site.route("/c/%d" % i, "c %d" % i, content_type="text/plain") for i in range(5)]
    proc = start_crawl(
        "vd_fetch",
        durable_pouch.url,
        "TEST_DB=vd_fetch",
        log=tmp_path / "c.log",
        args={"url": ",".join(second)},
        env={"VOTERSDAILY_SPOOL_DIR": str(spool)},
    )
    assert proc.wait(120) == 0
    assert "spooled by an earlier run" in (tmp_path / "c.log").read_text()
    docs = _docs(durable_pouch.url)
    assert sorted(d["url"] for d in docs) == sorted(first + second)
    # The first run's log was spooled too: the second run delivered it with its own.
    assert not list(spool.glob("vd_log--*.jsonl"))
    logs = [log for log in _docs(durable_pouch.url, "vd_log") if log["parser_name"] == "vd_fetch"]
    assert len(logs) == 2 and sum(log.get("spooled_count", 0) > 0 for log in logs) == 1


def test_conflict_from_a_concurrent_writer_is_reapplied(pouchdb):
    """Two real writers race on the same documents: every write lands, on the latest revision."""
    pouchdb.reset()
    a, b = open_store(pouchdb.url), open_store(pouchdb.url)
    a.ensure_db("vd_race")
    ids = ["doc-%03d" % i for i in range(100)]
    upsert(a, "vd_race", [{"_id": i, "v": 0} for i in ids])
    results, errors = {}, []

    def writer(store, name):
        try:
            total = None
            for round_ in range(1, 6):
                r = upsert(store, "vd_race", [{"_id": i, "v": round_, "by": name} for i in ids])
                total = r if total is None else (total.merge(r) or total)
            results[name] = total
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(s, n)) for s, n in ((a, "a"), (b, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    docs = {d["_id"]: d for d in a.iter_docs("vd_race")}
    assert set(docs) == set(ids)
    assert all(d["v"] == 5 for d in docs.values())
    assert sum(r.conflicts_resolved for r in results.values()) > 0, "the writers never collided"
    assert all(int(d["_rev"].split("-")[0]) >= 6 for d in docs.values())
    a.close(), b.close()
