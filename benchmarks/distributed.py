"""Distributed ingest throughput: 1, 2 and 4 Redis-fed ``ingest_worker`` processes on this machine.

Workload (``--workload``), served by a local web server under N distinct URLs:

* ``recordings`` (the default; needs nothing outside the repository): the project's own recorded
  government documents (votersdaily/recordings/gov, provenance in its FIXTURES.md), every HTML page as
  an html ingest and every XML document as an xml ingest (tests/distributed/workloads.py ``RECORDED``).
  These are not scholarly pages: most html ingests find no full text (``no-pdf-link``-like endings
  after the landing page is parsed), and there is no PDF among them.
* ``scholarly``: the real scholarly files of ../shared/fixtures/inplace/scholarly (PLOS ONE, Genders
  and First Monday article pages as html ingests, a PDF, a GROBID TEI-XML file), the workload of
  tests/distributed/test_distributed.py and of the figures measured before; only with ../shared present.

The ingest runs with its defaults: sub-resources of the pages are fetched (the relative ones from the
local server, which answers 404; external ones are refused by INGEST_ALLOWED_HOSTS=127.0.0.1, so
traffic stays on 127.0.0.1). Every result, file-table row, html_meta row and TEI blob is stored; the
store is a PouchDB Server in memory; Redis is Debian's redis-server with an append-only file
(``--appendfsync``, everysec by default as docs/operations.md starts it).

Baseline in the same run: the plain ``scrapy crawl ingest -a requests=<file>`` (one process, no Redis)
on the same requests. Prints requests/s per worker count, the scaling ratio against 1 worker and
against the plain spider, the Redis round trips per request (client commands seen by MONITOR,
script-internal commands excluded; plus INFO commandstats) and the time Redis spent on them per
request (INFO commandstats ``usec`` of those commands), the steady rate (requests/s between the
moments 20 % and 80 % of the documents had been fetched: free of the start-up of the processes,
staggered when there are several, and of the run's tail; the wall-clock rate from the first request
to the last ack, ``req/s``, is shown too), and the CPU time the crawl processes used
per request (theirs and their extraction processes', from ``wait4``: the machine's load hardly
changes it, unlike requests/s). With ``--repeat R`` every count runs R times,
alternating, and the run with the best steady rate is shown (the machine is shared: load only slows a run). The clock runs from the first request
the site sees to the last ack (workers) or the end of the process (plain spider).

    flock /tmp/bench.lock python3 -m benchmarks.distributed [--requests 600] [--workers 1,2,4]
        [--workload recordings|scholarly] [--appendfsync everysec|always] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import redis

from tests.distributed.workloads import (
    RECORDED,
    SCHOLARLY,
    ingest_documents,
    read_db,
    recorded_documents,
    roomy,
    write_ingest_requests,
)
from tests.support.processes import RedisServer, process_env
from tests.support.services import LocalSite, PouchDBServer, shared_dir

INGEST = [
    "-s",
    "LOG_LEVEL=WARNING",
    "-s",
    "INGEST_ALLOW_PRIVATE=True",
    "-s",
    "INGEST_ALLOWED_HOSTS=127.0.0.1",
]

#: --workload: (serve n documents on a site, what it is, in one line).
WORKLOADS = {
    "recordings": (
        recorded_documents,
        "the project's own recordings: %d government documents (%s), each served under many URLs"
        % (
            len(RECORDED),
            ", ".join(
                "%d %s" % (sum(t == kind for _, t, _ in RECORDED), kind)
                for kind in sorted({t for _, t, _ in RECORDED})
            ),
        ),
    ),
    "scholarly": (
        ingest_documents,
        "the scholarly files of ../shared (%s)"
        % ", ".join("%s as %s" % (name, t) for name, t, _ in SCHOLARLY),
    ),
}


def count_round_trips(redis_server, stop: threading.Event, out: dict, ignore_port: int) -> None:
    client = redis_server.client(socket_timeout=3600)  # MONITOR waits for commands: no 5 s default
    with client.monitor() as monitor:
        while not stop.is_set():
            try:
                command = monitor.next_command()
            except redis.TimeoutError:  # a slow machine: MONITOR goes on
                continue
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


class Progress:
    """When the site first served 20 % and 80 % of ``paths``: the rate between them is the steady
    one, free of the processes' start-up (staggered when there are several) and of the run's tail."""

    def __init__(self, site, paths: set[str]):
        self.site, self.paths = site, paths
        self.marks: dict[float, float] = {}

    def poll(self) -> None:
        done = sum(1 for p in list(self.site.hits) if p in self.paths)
        for share in (0.2, 0.8):
            if share not in self.marks and done >= share * len(self.paths):
                self.marks[share] = time.monotonic()

    def steady_rps(self) -> float:
        self.poll()
        return 0.6 * len(self.paths) / max(self.marks[0.8] - self.marks[0.2], 1e-6)


def cpu_seconds(proc: subprocess.Popen) -> float:
    """Wait for ``proc``; the CPU time (user + system) it and its extraction processes used, which
    the machine's load does not change much (unlike the wall time)."""
    _pid, _status, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    return usage.ru_utime + usage.ru_stime


def queue_busy(r, key: str = "ingest:requests") -> bool:
    """Whether requests are waiting or leased: the stream's length (entries are deleted when acked).
    A checkout of the previous version keeps a sorted set and a ``:processing`` set instead; this
    benchmark, copied into such a checkout, measures that queue too (for the comparison in
    docs/scale.md)."""
    kind = r.type(key)
    if kind == b"zset":
        return bool(r.zcard(key) or r.zcard(key + ":processing"))
    return kind == b"stream" and bool(r.xlen(key))


def startup_cpu(work: Path, appendfsync: str) -> float:
    """CPU seconds of one worker that starts, finds its queue empty and stops after a second idle:
    what every process costs before its first request."""
    work = Path(tempfile.mkdtemp(dir=work))
    pouch = PouchDBServer(work / "pouch").start()
    redis_server = RedisServer(work / "redis", appendfsync=appendfsync).start()
    try:
        env = process_env(
            pouch.url, VOTERSDAILY_REDIS_URL=redis_server.url, SCRAPY_SETTINGS_MODULE="votersdaily.settings"
        )
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "scrapy",
                "crawl",
                "ingest_worker",
                *INGEST,
                "-s",
                "VOTERSDAILY_REDIS_IDLE_CLOSE=1",
            ],
            cwd=work,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return cpu_seconds(worker)
    finally:
        redis_server.stop()
        pouch.stop()


def run(workers: int, n: int, work: Path, serve, appendfsync: str, logs: Path | None = None) -> dict:
    """``workers`` ingest_worker processes on one Redis queue, or (``workers == 0``) the plain spider."""
    work = Path(tempfile.mkdtemp(dir=work))  # a fresh Redis, store and files for every run
    site = LocalSite().start()
    roomy(site)
    pouch = PouchDBServer(work / ("pouch%d" % workers)).start()
    redis_server = RedisServer(work / ("redis%d" % workers), appendfsync=appendfsync).start()
    try:
        docs = serve(site, n)
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
        if logs is not None:
            files += ["-s", "LOG_LEVEL=INFO"]

        def log(name: str):
            if logs is None:
                return subprocess.DEVNULL
            logs.mkdir(parents=True, exist_ok=True)
            return open(logs / ("%s.log" % name), "wb")

        if workers == 0:
            launched = time.monotonic()
            proc = subprocess.Popen(
                [*crawl, "ingest", "-a", "requests=%s" % requests_file, *INGEST, *files],
                cwd=work,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log("plain"),
            )
            started = first_hit(site, paths)
            progress = Progress(site, paths)
            while os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                progress.poll()
                time.sleep(0.02)
            elapsed = time.monotonic() - started
            cpu = cpu_seconds(proc)
            done = sum(1 for p in paths if p in site.hits)
            outcomes = Counter(r["status"] for r in read_db(pouch.url, "ingest_file_result"))
            return {
                "outcomes": dict(outcomes.most_common()),
                "workers": 0,
                "steady": progress.steady_rps(),
                "cpu": cpu,
                "seconds": elapsed,
                "startup": started - launched,
                "rps": n / elapsed,
                "fetched": done,
                "round_trips": 0,
                "by_command": {},
                "commandstats": {},
                "redis_usec": 0,
            }
        subprocess.run(
            [sys.executable, "-m", "votersdaily", "enqueue", "ingest", str(requests_file)],
            cwd=work,
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
                cwd=work,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log("%d-workers-%d" % (workers, i)),
            )
            for i in range(workers)
        ]
        started = first_hit(site, paths)
        progress = Progress(site, paths)
        while queue_busy(r):
            progress.poll()
            time.sleep(0.02)
        elapsed = time.monotonic() - started
        cpu = sum(cpu_seconds(p) for p in procs)
        stop.set()
        r.ping()
        stats = r.info("commandstats")
        done = sum(1 for p in paths if site.hits.get(p) == 1)
        if done < n:
            print(
                "workers=%d: not fetched exactly once: %s"
                % (workers, sorted((p, site.hits.get(p, 0)) for p in paths if site.hits.get(p) != 1)[:10])
            )
        return {
            "workers": workers,
            "steady": progress.steady_rps(),
            "cpu": cpu,
            "seconds": elapsed,
            "startup": started - launched,
            "rps": n / elapsed,
            "fetched": done,
            "round_trips": sum(trips.values()),
            "by_command": trips,
            "commandstats": {k[len("cmdstat_") :]: v["calls"] for k, v in stats.items()},
            # Time Redis spent in what the workers sent (a script's time includes its commands').
            "redis_usec": sum(
                v["usec"] for k, v in stats.items() if k[len("cmdstat_") :].split("|")[0].upper() in trips
            ),
        }
    finally:
        redis_server.stop()
        pouch.stop()
        site.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--workers", default="1,2,4", help="worker counts to run (comma-separated)")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="recordings")
    parser.add_argument("--appendfsync", choices=("everysec", "always"), default="everysec")
    parser.add_argument("--logs", type=Path, help="keep each process's log (level INFO) in this folder")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of every count, alternating; the best of each is shown"
    )
    args = parser.parse_args()
    serve, what = WORKLOADS[args.workload]
    if args.workload == "scholarly" and not (shared_dir() / "fixtures/inplace/scholarly").is_dir():
        sys.exit(
            "%s is absent: the scholarly workload reads it in place; the default workload "
            "(--workload recordings) needs nothing outside the repository"
            % (shared_dir() / "fixtures/inplace/scholarly")
        )
    print("workload: %d ingest requests over %s (sub-resources fetched)" % (args.requests, what))
    print(
        "Redis: appendonly yes, appendfsync %s; load average before: %.2f %.2f %.2f (%d CPUs)"
        % (args.appendfsync, *os.getloadavg(), os.cpu_count() or 0)
    )
    counts = [0] + [int(w) for w in args.workers.split(",")]
    runs: dict[int, list[dict]] = {count: [] for count in counts}
    with tempfile.TemporaryDirectory() as tmp:
        idle = startup_cpu(Path(tmp), args.appendfsync)
        for _ in range(args.repeat):  # alternating, so a busy spell of the machine hits every count
            for workers in counts:
                runs[workers].append(
                    run(workers, args.requests, Path(tmp), serve, args.appendfsync, args.logs)
                )
    # The best run of each count (by its steady rate): the machine is shared, and load only slows a run.
    results = [max(runs[count], key=lambda res: res["steady"]) for count in counts]
    plain = results[0]["steady"]
    print("ingest outcomes (plain spider): %s" % results[0]["outcomes"])
    print(
        "CPU ms/req counts every process from its start: one worker that starts, finds nothing and stops "
        "takes %.2f CPU s (its extraction processes start on first use, and cost more)" % idle
    )
    base = results[1]["steady"]
    print(
        "%-13s %8s %8s %8s %9s %9s %9s %10s %12s %10s %s"
        % (
            "processes",
            "start s",
            "run s",
            "req/s",
            "steady/s",
            "vs 1 wkr",
            "vs plain",
            "trips/req",
            "Redis us/req",
            "CPU ms/req",
            "steady req/s of every run",
        )
    )
    for res in results:
        label = (
            "plain spider"
            if res["workers"] == 0
            else "%d worker%s" % (res["workers"], "s" * (res["workers"] > 1))
        )
        print(
            "%-13s %8.2f %8.2f %8.1f %9.1f %8.2fx %8.2fx %10.2f %12.1f %10.1f %s"
            % (
                label,
                res["startup"],
                res["seconds"],
                res["rps"],
                res["steady"],
                res["steady"] / base,
                res["steady"] / plain,
                res["round_trips"] / args.requests,
                res["redis_usec"] / args.requests,
                1000 * min(r["cpu"] for r in runs[res["workers"]]) / args.requests,
                " ".join("%.1f" % r["steady"] for r in runs[res["workers"]]),
            )
        )
    for res in results[1:]:
        print("workers=%d round trips by command: %s" % (res["workers"], res["by_command"]))
        print(
            "workers=%d INFO commandstats calls (incl. commands run inside scripts): %s"
            % (res["workers"], res["commandstats"])
        )
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())
    print(
        "(every request fetched, and by the workers exactly once, in every run: %s)"
        % all(r["fetched"] == args.requests for every in runs.values() for r in every)
    )


if __name__ == "__main__":
    main()
