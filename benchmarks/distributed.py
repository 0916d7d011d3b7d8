"""Distributed ingest throughput: 1, 2 and 4 Redis-backed ``ingest_worker`` processes on this machine.

Workload: N ingest requests for distinct URLs of a local web server, answering in turn the real
scholarly files of ../shared/fixtures/inplace/scholarly (read in place: PLOS ONE, Genders and First
Monday article pages as html ingests, a PDF, a GROBID TEI-XML file), the same workload as
tests/distributed/test_distributed.py. The ingest runs with its defaults: sub-resources of the pages are
fetched (the relative ones from the local server, which answers 404; the external ones are refused
by INGEST_ALLOWED_HOSTS=127.0.0.1, so traffic stays on 127.0.0.1). Every result, file-table row,
html_meta row and TEI blob is stored; the store is a PouchDB Server in memory; Redis is Debian's
redis-server.

Baseline in the same run: the plain ``scrapy crawl ingest -a requests=<file>`` (one process, no Redis)
on the same requests. Prints requests/s per worker count, the scaling ratio against 1 worker and
against the plain spider, and the Redis round trips per request (client commands seen by MONITOR,
script-internal commands excluded; plus INFO commandstats). The clock runs from the first request
the site sees to the last ack (workers) or the end of the process (plain spider).

    flock /tmp/bench.lock python3 -m benchmarks.distributed [--requests 600] [--workers 1,2,4]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tests.distributed.workloads import SCHOLARLY, ingest_documents, roomy, write_ingest_requests
from tests.support.processes import RedisServer, process_env
from tests.support.services import (
    REPO,
    LocalSite,
    PouchDBServer,
    shared_dir,
)

INGEST = [
    "-s",
    "LOG_LEVEL=WARNING",
    "-s",
    "INGEST_ALLOW_PRIVATE=True",
    "-s",
    "INGEST_ALLOWED_HOSTS=127.0.0.1",
]


def count_round_trips(redis_server, stop: threading.Event, out: dict, ignore_port: int) -> None:
    client = redis_server.client()
    with client.monitor() as monitor:
        for command in monitor.listen():
            if stop.is_set():
                break
            if command.get("client_type") == "lua" or int(command.get("client_port") or 0) == ignore_port:
                continue  # commands run inside scripts, and this benchmark's own polling
            name = command["command"].split(" ", 1)[0].upper()
            if name in ("MONITOR", "INFO"):
                continue
            out[name] = out.get(name, 0) + 1


def first_hit(site, paths: set[str], timeout: float = 120) -> float:
    """When the site first answered one of ``paths`` (polled; start-up is not throughput)."""
    deadline = time.monotonic() + timeout
    while not any(p in paths for p in list(site.hits)):
        if time.monotonic() > deadline:
            raise RuntimeError("no request reached the site in %.0f s" % timeout)
        time.sleep(0.005)
    return time.monotonic()


def run(workers: int, n: int, work: Path) -> dict:
    """``workers`` ingest_worker processes on one Redis queue, or (``workers == 0``) the plain spider."""
    site = LocalSite().start()
    roomy(site)
    pouch = PouchDBServer(work / ("pouch%d" % workers)).start()
    redis_server = RedisServer(work / ("redis%d" % workers)).start()
    try:
        docs = ingest_documents(site, n)
        paths = {d.path for d in docs}
        requests_file = write_ingest_requests(work / ("requests%d.jsonl" % workers), docs)
        env = process_env(pouch.url, VOTERSDAILY_REDIS_URL=redis_server.url)
        env["SCRAPY_SETTINGS_MODULE"] = "votersdaily.settings"
        files = [
            "-s",
            "INGEST_BLOB_DIR=" + str(work / ("blobs%d" % workers)),
            "-s",
            "INGEST_TEIXML_FEED=" + str(work / ("feed%d.jsonl" % workers)),
            "-s",
            "VOTERSDAILY_SPOOL_DIR=" + str(work / "spool"),
        ]
        crawl = [sys.executable, "-m", "scrapy", "crawl"]
        if workers == 0:
            launched = time.monotonic()
            proc = subprocess.Popen(
                [*crawl, "ingest", "-a", "requests=%s" % requests_file, *INGEST, *files],
                cwd=REPO,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            started = first_hit(site, paths)
            proc.wait(600)
            elapsed = time.monotonic() - started
            done = sum(1 for p in paths if p in site.hits)
            return {
                "workers": 0,
                "seconds": elapsed,
                "startup": started - launched,
                "rps": n / elapsed,
                "fetched": done,
                "round_trips": 0,
                "by_command": {},
                "commandstats": {},
            }
        subprocess.run(
            [sys.executable, "-m", "votersdaily", "enqueue", "ingest", str(requests_file)],
            cwd=REPO,
            env=env,
            check=True,
            capture_output=True,
        )
        r = redis_server.client(single_connection_client=True)
        r.config_resetstat()
        own_port = int(r.client_info()["addr"].rsplit(":", 1)[1])
        trips: dict = {}
        stop = threading.Event()
        monitor = threading.Thread(
            target=count_round_trips, args=(redis_server, stop, trips, own_port), daemon=True
        )
        monitor.start()
        launched = time.monotonic()
        procs = [
            subprocess.Popen(
                [
                    *crawl,
                    "ingest_worker",
                    *INGEST,
                    *files,
                    "-s",
                    "VOTERSDAILY_REDIS_IDLE_CLOSE=1",
                    "-s",
                    "VOTERSDAILY_REDIS_ACK_INTERVAL=1",
                ],
                cwd=REPO,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for _ in range(workers)
        ]
        started = first_hit(site, paths)
        while r.zcard("ingest:requests") or r.zcard("ingest:requests:processing"):
            time.sleep(0.05)
        elapsed = time.monotonic() - started
        for p in procs:
            p.wait(120)
        stop.set()
        r.ping()
        stats = r.info("commandstats")
        done = sum(1 for p in paths if site.hits.get(p) == 1)
        return {
            "workers": workers,
            "seconds": elapsed,
            "startup": started - launched,
            "rps": n / elapsed,
            "fetched": done,
            "round_trips": sum(trips.values()),
            "by_command": trips,
            "commandstats": {k[len("cmdstat_") :]: v["calls"] for k, v in stats.items()},
        }
    finally:
        redis_server.stop()
        pouch.stop()
        site.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--workers", default="1,2,4", help="worker counts to run (comma-separated)")
    args = parser.parse_args()
    folder = shared_dir() / "fixtures/inplace/scholarly"
    if not folder.is_dir():
        sys.exit("%s is absent: this benchmark runs on the real scholarly files only" % folder)
    print(
        "workload: %d ingest requests over %s (sub-resources fetched)"
        % (args.requests, ", ".join("%s as %s" % (name, itype) for name, itype, _ in SCHOLARLY))
    )
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for workers in [0] + [int(w) for w in args.workers.split(",")]:
            results.append(run(workers, args.requests, Path(tmp)))
    plain = results[0]["rps"]
    base = results[1]["rps"]
    print(
        "%-14s %9s %9s %9s %9s %9s %10s"
        % ("processes", "startup s", "seconds", "req/s", "vs 1 wkr", "vs plain", "trips/req")
    )
    for res in results:
        label = (
            "plain spider"
            if res["workers"] == 0
            else "%d worker%s" % (res["workers"], "s" * (res["workers"] > 1))
        )
        print(
            "%-14s %9.2f %9.2f %9.1f %8.2fx %8.2fx %10.2f"
            % (
                label,
                res["startup"],
                res["seconds"],
                res["rps"],
                res["rps"] / base,
                res["rps"] / plain,
                res["round_trips"] / args.requests,
            )
        )
    for res in results[1:]:
        print("workers=%d round trips by command: %s" % (res["workers"], res["by_command"]))
        print(
            "workers=%d INFO commandstats calls (incl. commands run inside scripts): %s"
            % (res["workers"], res["commandstats"])
        )
    print(
        "(every request fetched, and by the workers exactly once, in every run: %s)"
        % all(r["fetched"] == args.requests for r in results)
    )


if __name__ == "__main__":
    main()
