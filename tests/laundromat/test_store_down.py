"""A laundromat run whose store is down when it starts, or goes away while it works. An event crawl or an ingest goes on and spools
what it scrapes; the laundromat reads and writes its seed list in the store as it works, which cannot
wait in a spool. So the run stops before it fetches anything, says so in one line with what to do,
spools its run log at once and exits 3 (docs/cli.md: the store unavailable, nothing done). Nothing is
lost: its seeds are its arguments, and ``flush`` delivers the run log.

Real parts: PouchDB Server on disk, stopped and started again on its port; the W3C RDF test files
served by the local test site.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.distributed.workloads import rdf_datasets, read_db
from tests.support.cli_main import run_main
from votersdaily.laundromat.uris import uri_key

pytestmark = pytest.mark.slow  # a PouchDB Server of its own, stopped and started


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
    said = (
        "cannot reach the store at %s (connection refused): start CouchDB or PouchDB Server there, or fix "
        "host and port in $VOTERSDAILY_STORE; the laundromat reads and writes its seed list (ll_seeds) "
        "there as it works, so this run stopped before fetching anything: run it again, with the same "
        "seeds, once the store answers" % durable_pouch.url
    )
    assert line.endswith("ERROR: " + said), line
    assert not [d.path for d in datasets if d.path in site.hits]

    _store_back_then_every_seed_parsed(crawl, durable_pouch, datasets, out, env, "store unavailable", said)


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
    said = (
        "cannot reach the store at %s (connection refused): start CouchDB or PouchDB Server there, or fix "
        "host and port in $VOTERSDAILY_STORE; the laundromat reads and writes its seed list (ll_seeds) "
        "there as it works, so this run stopped: what it finished is stored, the seeds it had not are "
        "left due; run it again, with the same seeds, once the store answers" % durable_pouch.url
    )
    assert line.endswith("ERROR: " + said), line

    _store_back_then_every_seed_parsed(crawl, durable_pouch, datasets, out, env, "store went away", said)


def _store_back_then_every_seed_parsed(crawl, durable_pouch, datasets, out, env, finish_reason, said):
    """The store started again (the same port and data folder): ``flush`` delivers the run log (the
    store's error, ``finish_reason`` and the line said), and the next run ends every seed parsed."""
    durable_pouch.start()
    flushed = run_main("flush", store_uri=durable_pouch.url, env=env)
    assert flushed.returncode == 0, flushed.stderr
    (log,) = read_db(durable_pouch.url, "vd_log")
    assert (log["result"], log["finish_reason"], log["error_message"]) == (
        "StoreUnavailable",
        finish_reason,
        said,
    )
    assert [error["where"] for error in log["errors"]] == ["store"]  # the store's error, not a download's
    again = crawl("laundromat", [d.url for d in datasets], durable_pouch.url, *out, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    records = {doc["_id"]: doc for doc in read_db(durable_pouch.url, "ll_seeds")}
    for d in datasets:
        download = records[records[uri_key(d.url)]["download"]]
        assert (download["status"], download["number_of_unique_statements"]) == ("parsed", d.statements)
