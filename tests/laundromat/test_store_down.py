"""A laundromat run whose store is down when it starts. An event crawl or an ingest goes on and spools
what it scrapes; the laundromat reads and writes its seed list in the store as it works, which cannot
wait in a spool. So the run stops before it fetches anything, says so in one line with what to do,
spools its run log at once and exits 3 (docs/cli.md: the store unavailable, nothing done). Nothing is
lost: its seeds are its arguments, and ``flush`` delivers the run log.

Real parts: PouchDB Server on disk, stopped and started again on its port; the W3C RDF test files
served by the local test site.
"""

from __future__ import annotations

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

    durable_pouch.start()  # the same port and data folder
    flushed = run_main("flush", store_uri=durable_pouch.url, env=env)
    assert flushed.returncode == 0, flushed.stderr
    (log,) = read_db(durable_pouch.url, "vd_log")
    assert (log["result"], log["finish_reason"], log["error_message"]) == (
        "StoreUnavailable",
        "store unavailable",
        said,
    )
    again = crawl("laundromat", seeds, durable_pouch.url, *out, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    records = {doc["_id"]: doc for doc in read_db(durable_pouch.url, "ll_seeds")}
    for d in datasets:
        download = records[records[uri_key(d.url)]["download"]]
        assert (download["status"], download["number_of_unique_statements"]) == ("parsed", d.statements)
