"""A laundromat run whose store is down when it starts, or goes away while it works. An event crawl or an ingest goes on and spools
what it scrapes; the laundromat reads and writes its seed list in the store as it works, which cannot
wait in a spool. So the run stops before it fetches anything, says so in one line with what to do,
spools its run log at once and exits 3 (docs/cli.md: the store unavailable, nothing done). Nothing is
lost: its seeds are its arguments, and ``flush`` delivers the run log.

Real parts: PouchDB Server on disk, stopped and started again on its port; the W3C RDF test files
served by the local test site.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest
from scrapy.exceptions import CloseSpider
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.test import get_crawler

from tests.distributed.workloads import rdf_datasets, read_db
from tests.support.cli_main import run_main
from tests.support.faultproxy import FaultProxy
from tests.support.inprocess import session_reactor
from tests.support.services import free_port
from votersdaily import signals as vd_signals
from votersdaily.laundromat import spider as laundromat
from votersdaily.laundromat import states
from votersdaily.laundromat.uris import uri_key
from votersdaily.store.base import StoreUnavailable

pytestmark = pytest.mark.slow  # a PouchDB Server of its own, stopped and started

#: What the run says it did when the store went away while it worked.
WENT_AWAY = "stopped: what it finished is stored, the seeds it had not are left due;"


def _said(store_url, stopped):
    """The one line a run says when the store at ``store_url`` does not answer, the run ``stopped`` so
    (with the punctuation before what to do)."""
    return (
        "cannot reach the store at %s (connection refused): start CouchDB or PouchDB Server there, or fix "
        "host and port in $VOTERSDAILY_STORE; the laundromat reads and writes its seed list (ll_seeds) "
        "there as it works, so this run %s run it again, with the same seeds, once the store answers"
        % (store_url, stopped)
    )


def test_a_run_whose_store_is_down_stops_in_one_line_spools_its_run_log_and_exits_3(
    crawl, site, durable_pouch, tmp_path
):
    """Before: a 30-line ``Error while reading start items and requests`` traceback (the seed list's
    first read raised ``StoreUnavailable``), then the run log retried for 31 s (``retry 1/5`` …
    ``5/5``) before it was spooled, and exit 4 ("done, documents wait in the spool") though nothing
    was done."""
    datasets = rdf_datasets(site, per_suite=1)
    seeds = [d.url for d in datasets]
    env = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}
    out = ("-s", "LAUNDROMAT_OUTPUT_DIR=%s" % (tmp_path / "out"))
    durable_pouch.stop()

    run = crawl("laundromat", seeds, durable_pouch.url, *out, env=env)

    assert run.returncode == 3, run.stderr[-3000:]
    assert "Traceback" not in run.stderr and "retry 1/" not in run.stderr, run.stderr[-3000:]
    (line,) = [line for line in run.stderr.splitlines() if "seed list" in line]
    said = _said(durable_pouch.url, "stopped before fetching anything:")
    assert line.endswith("ERROR: " + said), line
    assert not [d.path for d in datasets if d.path in site.hits]

    durable_pouch.start()
    _store_back_then_every_seed_parsed(
        crawl, durable_pouch.url, datasets, out, env, "store unavailable", said
    )


def test_a_run_whose_store_goes_away_stops_in_one_line_and_the_next_run_finishes_the_seeds(
    crawl, site, durable_pouch, tmp_path
):
    """The store stops while the run works: the first dataset's server stops it before it answers.
    Before: a ``Spider error processing`` traceback for each answer and each download in flight (every
    callback reads or writes the seed list), the run going on with nothing recorded. Now: one line
    saying what to do, the run stops, its run log waits in the spool (exit 4), and the next run, once
    the store is back, ends every seed parsed."""
    datasets = rdf_datasets(site, per_suite=2)
    seeds = [d.url for d in datasets]
    env = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}
    out = ("-s", "LAUNDROMAT_OUTPUT_DIR=%s" % (tmp_path / "out"))
    first = site.routes[datasets[0].path]
    stopped = []

    def stop_the_store_then_answer(handler):
        if not stopped:
            stopped.append(True)
            durable_pouch.stop()
        return first.body

    site.routes[datasets[0].path] = replace(first, body=stop_the_store_then_answer)

    run = crawl("laundromat", seeds, durable_pouch.url, *out, env=env)

    assert stopped and run.returncode == 4, run.stderr[-3000:]
    assert "Traceback" not in run.stderr and "Spider error" not in run.stderr, run.stderr[-3000:]
    (line,) = [line for line in run.stderr.splitlines() if "seed list" in line]
    said = _said(durable_pouch.url, WENT_AWAY)
    assert line.endswith("ERROR: " + said), line

    durable_pouch.start()
    _store_back_then_every_seed_parsed(crawl, durable_pouch.url, datasets, out, env, "store went away", said)


def test_a_store_that_goes_away_as_a_document_is_processed_leaves_it_due_without_a_traceback(
    crawl, site, durable_pouch, tmp_path
):
    """The store stops at the processor's first write of a downloaded document (its move to
    ``unarchiving``), through a proxy that stops there. Before (CI, 2026-11-29, where the race in the
    test above met it): the processor took the store's error for the document's own, logged
    ``processing … failed`` with a traceback, and tried to mark it failed in the store that was gone.
    Now the store's error goes through as is: the same one line, the document left as the store last
    had it (filed), parsed by the next run."""
    (dataset,) = rdf_datasets(site, per_suite=1)[:1]
    env = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}
    out = ("-s", "LAUNDROMAT_OUTPUT_DIR=%s" % (tmp_path / "out"))
    proxy = FaultProxy(durable_pouch.port).start()
    proxy.stop_at(b'"status": "%s"' % states.UNARCHIVING.encode(), anywhere=True)

    run = crawl("laundromat", [dataset.url], proxy.url, *out, env=env)

    assert proxy.stopped.is_set() and run.returncode == 4, run.stderr[-3000:]
    assert "Traceback" not in run.stderr and "processing" not in run.stderr, run.stderr[-3000:]
    (line,) = [line for line in run.stderr.splitlines() if "seed list" in line]
    said = _said(proxy.url, WENT_AWAY)
    assert line.endswith("ERROR: " + said), line
    records = {doc["_id"]: doc for doc in read_db(durable_pouch.url, "ll_seeds")}
    assert records[records[uri_key(dataset.url)]["download"]]["status"] == states.FILED

    _store_back_then_every_seed_parsed(
        crawl, durable_pouch.url, [dataset], out, env, "store went away", said, spooled_for=proxy.url
    )


def test_a_callback_that_meets_the_store_away_while_the_first_says_so_closes_the_run_after_it_is_recorded(
    tmp_path, monkeypatch
):
    """Two callbacks meet the store away, the second while the first still makes its line (its check
    of the store, in a thread). Before (CI floors run, 2026-11-29): the second took it as said and
    closed the run at once, so the run log was built before the first recorded the store's error:
    result ``store went away``, exit 1. Now the second waits until the error is recorded. The check is
    slowed by half a second (a store that drops packets answers no sooner): only the order is timed
    here, on a real crawler and spider and the reactor's thread pool."""
    away = "http://127.0.0.1:%d/" % free_port()
    settings = {"VOTERSDAILY_STORE": away, "LAUNDROMAT_OUTPUT_DIR": str(tmp_path)}
    crawler = get_crawler(laundromat.LaundromatSpider, settings)
    crawler.spider = spider = laundromat.LaundromatSpider.from_crawler(crawler, url="http://example.org/a.nt")
    line_of = laundromat.unavailable_line

    def slow_line(*args):
        time.sleep(0.5)
        return line_of(*args)

    monkeypatch.setattr(laundromat, "unavailable_line", slow_line)
    order = []

    def recorded(failure, where, **kwargs):
        order.append("recorded where %s" % where)

    crawler.signals.connect(recorded, signal=vd_signals.source_failed)

    async def callback(name, after):
        await asyncio.sleep(after)
        try:
            async with spider._store_in_use():
                raise StoreUnavailable("GET %s failed: ConnectionError" % away)
        except CloseSpider as closing:
            order.append("%s closes the run (%s)" % (name, closing.reason))

    async def two_callbacks():
        await asyncio.gather(callback("first", 0), callback("second", 0.1))

    session_reactor().call(lambda: deferred_from_coro(two_callbacks()), 30)

    went_away = laundromat.STORE_WENT_AWAY
    assert order == [
        "recorded where store",
        "first closes the run (%s)" % went_away,
        "second closes the run (%s)" % went_away,
    ]


def _store_back_then_every_seed_parsed(
    crawl, store_url, datasets, out, env, finish_reason, said, spooled_for=None
):
    """The store answering again at ``store_url``: ``flush`` delivers the run log (the store's error,
    ``finish_reason`` and the line said; spooled for ``spooled_for`` when that was another address of
    the same store), and the next run ends every seed parsed."""
    flushed = run_main(
        "flush", *(("--from", spooled_for) if spooled_for else ()), store_uri=store_url, env=env
    )
    assert flushed.returncode == 0, flushed.stderr
    (log,) = read_db(store_url, "vd_log")
    assert (log["result"], log["finish_reason"], log["error_message"]) == (
        "StoreUnavailable",
        finish_reason,
        said,
    )
    assert [error["where"] for error in log["errors"]] == ["store"]  # the store's error, not a download's
    again = crawl("laundromat", [d.url for d in datasets], store_url, *out, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    records = {doc["_id"]: doc for doc in read_db(store_url, "ll_seeds")}
    for d in datasets:
        download = records[records[uri_key(d.url)]["download"]]
        assert (download["status"], download["number_of_unique_statements"]) == ("parsed", d.statements)
