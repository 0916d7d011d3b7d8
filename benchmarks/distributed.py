"""Distributed ingest throughput: 1, 2 and 4 Redis-backed ``ingest_worker`` processes on this machine.

Workload: N ingest requests (ingest_type=html) for distinct URLs of a local web server, each answering
the real publisher page ../shared/fixtures/inplace/scholarly/plos_one_article.html (read in place;
sub-resources are not fetched: they live on the publisher's hosts, and traffic stays on 127.0.0.1;
a small generated HTML page stands in if the shared folder is absent, and the script says so). The
store is a PouchDB Server in memory; Redis is Debian's redis-server; all on 127.0.0.1.

Prints requests/s per worker count, the scaling ratio against 1 worker, and Redis round trips per
request (client commands seen by MONITOR, script-internal commands excluded; plus INFO commandstats).

    python benchmarks/distributed.py [--requests 300]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.deploy.conftest import RedisServer, process_env  # noqa: E402
from tests.support.services import LocalSite, PouchDBServer  # noqa: E402
from votersdaily.recordings import shared_dir  # noqa: E402


def page() -> tuple[bytes, str]:
    path = shared_dir() / "fixtures/inplace/scholarly/plos_one_article.html"
    if path.exists():
        return path.read_bytes(), "real PLOS ONE article page (%d bytes)" % path.stat().st_size
    body = b"<html><head><title>stand-in</title></head><body>" + b"<p>text</p>" * 200 + b"</body></html>"
    return body, "GENERATED stand-in page (%d bytes): ../shared is absent" % len(body)


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


def run(workers: int, n: int, body: bytes, work: Path) -> dict:
    site = LocalSite().start()
    pouch = PouchDBServer(work / ("pouch%d" % workers)).start()
    redis_server = RedisServer(work / ("redis%d" % workers)).start()
    try:
        for i in range(n):
            site.route("/article/%d.html" % i, body, content_type="text/html; charset=utf-8")
        requests_file = work / ("requests%d.jsonl" % workers)
        requests_file.write_text("".join(
            json.dumps({"base_url": "%s/article/%d.html" % (site.url, i), "ingest_type": "html"}) + "\n"
            for i in range(n)))
        env = process_env(pouch.url, VOTERSDAILY_REDIS_URL=redis_server.url)
        env["SCRAPY_SETTINGS_MODULE"] = "votersdaily.settings"
        subprocess.run([sys.executable, "-m", "votersdaily", "enqueue", "ingest", str(requests_file)],
                       cwd=REPO, env=env, check=True, capture_output=True)
        r = redis_server.client(single_connection_client=True)
        r.config_resetstat()
        own_port = int(r.client_info()["addr"].rsplit(":", 1)[1])
        trips: dict = {}
        stop = threading.Event()
        monitor = threading.Thread(target=count_round_trips, args=(redis_server, stop, trips, own_port), daemon=True)
        monitor.start()
        launched = time.monotonic()
        procs = [
            subprocess.Popen([sys.executable, "-m", "scrapy", "crawl", "ingest_worker", "-s", "LOG_LEVEL=WARNING",
                              "-s", "INGEST_ALLOW_PRIVATE=True", "-s", "VOTERSDAILY_REDIS_IDLE_CLOSE=1",
                              "-s", "VOTERSDAILY_REDIS_ACK_INTERVAL=1", "-s", "INGEST_FETCH_RESOURCES=False",
                              "-s", "INGEST_BLOB_DIR=" + str(work / "blobs"), "-s", "VOTERSDAILY_SPOOL_DIR=" + str(work / "spool")],
                             cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(workers)
        ]
        while r.zcard("ingest:requests") == n:  # the clock starts at the first lease (after start-up)
            time.sleep(0.01)
        started = time.monotonic()
        while r.zcard("ingest:requests") or r.zcard("ingest:requests:processing"):
            time.sleep(0.05)
        elapsed = time.monotonic() - started
        for p in procs:
            p.wait(120)
        stop.set()
        r.ping()
        stats = r.info("commandstats")
        done = sum(1 for p in site.hits if p.startswith("/article/"))
        return {"workers": workers, "seconds": elapsed, "startup": started - launched, "rps": n / elapsed, "fetched": done,
                "round_trips": sum(trips.values()), "by_command": trips,
                "commandstats": {k[len("cmdstat_"):]: v["calls"] for k, v in stats.items()}}
    finally:
        redis_server.stop()
        pouch.stop()
        site.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    body, what = page()
    print("workload: %d html ingest requests, %s" % (args.requests, what))
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for workers in (1, 2, 4):
            results.append(run(workers, args.requests, body, Path(tmp)))
    base = results[0]["rps"]
    print("%-8s %9s %9s %9s %8s %12s" % ("workers", "startup s", "seconds", "req/s", "scaling", "trips/req"))
    for res in results:
        print("%-8d %9.2f %9.2f %9.1f %7.2fx %12.2f" % (res["workers"], res["startup"], res["seconds"], res["rps"],
                                                       res["rps"] / base, res["round_trips"] / args.requests))
    for res in results:
        print("workers=%d round trips by command: %s" % (res["workers"], res["by_command"]))
        print("workers=%d INFO commandstats calls (incl. commands run inside scripts): %s"
              % (res["workers"], res["commandstats"]))
    print("(all requests fetched once per run: %s)" % all(r["fetched"] == args.requests for r in results))


if __name__ == "__main__":
    main()
