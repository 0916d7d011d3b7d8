"""Real workloads for the distributed-worker tests: the ingest on the real scholarly pages and the
laundromat on the W3C RDF test files, both read in place from ../shared and served by the local site
under many distinct URLs; plus running ``enqueue`` and the Redis-fed workers as a user does."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import shared_file
from tests.support.processes import Gate, descendants, process_env, start_crawl
from tests.support.services import run_cli
from votersdaily.ingest.filetable import table_name
from votersdaily.recordings import HERE, recording_path
from votersdaily.store import open_store

#: (file in fixtures/inplace/scholarly, ingest type, Content-Type served): every kind of terminal
#: document the ingest accepts, each a real publisher file (see its FIXTURES.md).
SCHOLARLY = (
    ("plos_one_article.html", "html", "text/html; charset=utf-8"),
    ("genders_g58_fairlie.html", "html", "text/html; charset=utf-8"),
    ("first_monday_ojs3_fulltext.html", "html", "text/html; charset=utf-8"),
    ("dummy.pdf", "pdf", "application/pdf"),
    ("23b29ea36382680716be08fc71aa81bd226e8a85.xml", "xml", "application/xml"),
)

#: Ingest workers, as a deployment would run them but on the test site (private address, one host).
INGEST_SETTINGS = (
    "INGEST_ALLOW_PRIVATE=True",
    "INGEST_ALLOWED_HOSTS=127.0.0.1",
    "INGEST_EXTRACT_PROCESSES=1",
    # Not niced: the one extraction process's first page of the set costs 4 s of CPU (dateparser
    # compiles every locale's expressions once a process), and at nice 10 under a loaded CI machine
    # that took past a test's 3 minutes with every other document queued behind it (CI, 2026-11-29).
    # These tests are of the queue, not of the niceness (tests/ingest/test_extract_pool.py has it).
    "INGEST_EXTRACT_NICE=0",
)


def roomy(site) -> None:
    """Kept for callers: LocalSite itself now listens with a backlog of 1024 (see services.py)."""
    site.server.socket.listen(1024)


@dataclass(frozen=True)
class Document:
    """One served copy of a real file: what the ingest of ``url`` must find, read from the file."""

    url: str
    path: str
    ingest_type: str
    sha1hex: str
    size: int
    doi: str | None

    @property
    def result_id(self) -> str:
        return "%s:%s" % (self.ingest_type, self.url)


def _citation_doi(body: bytes) -> str | None:
    found = re.search(rb'<meta\s+name="citation_doi"\s+content="([^"]+)"', body)
    return found.group(1).decode() if found else None


def ingest_documents(site, n: int) -> list[Document]:
    """``n`` ingest targets, the real scholarly files in turn, each under its own URL
    (``/paper/<i>/<file>``, so relative sub-resource links stay apart per page)."""
    return serve_documents(
        site,
        n,
        [
            (name, itype, ctype, shared_file("fixtures/inplace/scholarly/%s" % name).read_bytes())
            for name, itype, ctype in SCHOLARLY
        ],
    )


#: The project's own recordings (votersdaily/recordings/gov, provenance in its FIXTURES.md) as
#: ingest targets: every recorded HTML page as an html ingest and every recorded XML document as
#: an xml ingest, except the recorded error bodies (``NEGATIVE``). Government pages, not scholarly
#: ones: the ingest finds no full text to extract in most of them; no PDF among them.
RECORDED = tuple(
    (
        path.relative_to(HERE).as_posix(),
        "xml" if path.suffix == ".xml" else "html",
        "application/xml" if path.suffix == ".xml" else "text/html; charset=utf-8",
    )
    for path in sorted((HERE / "gov").rglob("*"))
    if path.suffix in (".html", ".asp", ".xml") and "NEGATIVE" not in path.name
)


def recorded_documents(site, n: int) -> list[Document]:
    """``n`` ingest targets, the project's own recordings (:data:`RECORDED`) in turn, each under its
    own URL; needs nothing outside the repository."""
    return serve_documents(
        site, n, [(name, itype, ctype, recording_path(name).read_bytes()) for name, itype, ctype in RECORDED]
    )


def serve_documents(site, n: int, bodies: list[tuple[str, str, str, bytes]]) -> list[Document]:
    """Serve ``(name, ingest type, content type, body)`` in turn under ``n`` distinct URLs."""
    docs = []
    for i in range(n):
        name, itype, ctype, body = bodies[i % len(bodies)]
        path = "/paper/%d/%s" % (i, name)
        url = site.route(path, body, content_type=ctype)
        docs.append(
            Document(
                url,
                path,
                itype,
                hashlib.sha1(body).hexdigest(),
                len(body),
                _citation_doi(body) if itype == "html" else None,
            )
        )
    return docs


def write_ingest_requests(path: Path, docs: list[Document]) -> Path:
    path.write_text(
        "".join(json.dumps({"base_url": d.url, "ingest_type": d.ingest_type}) + "\n" for d in docs)
    )
    return path


def enqueue(
    spider: str, source: Path, store_uri: str, redis_url: str, *options: str, returncode: int = 0
) -> subprocess.CompletedProcess:
    """``python -m votersdaily enqueue <spider> <source> [options]`` in a subprocess, as a user runs it."""
    env = process_env(store_uri, VOTERSDAILY_REDIS_URL=redis_url)
    out = run_cli(
        [sys.executable, "-m", "votersdaily", "enqueue", spider, str(source), *options],
        store_uri,
        env={k: env[k] for k in ("VOTERSDAILY_REDIS_URL", "SCRAPY_SETTINGS_MODULE")},
    )
    assert out.returncode == returncode, out.stdout + out.stderr[-3000:]
    return out


def start_workers(spider: str, n: int, store_uri: str, redis_url: str, tmp_path: Path, *settings: str):
    """``n`` worker processes (``scrapy crawl <spider>``), each with its own log file."""
    return [
        start_crawl(
            spider,
            store_uri,
            *settings,
            "LOG_LEVEL=INFO",
            log=log_path(tmp_path, i),
            # a worker that hangs shows where: wait_all aborts it, and faulthandler writes every
            # thread's stack to its log (its extraction processes' too: they inherit the variable)
            env={"VOTERSDAILY_REDIS_URL": redis_url, "PYTHONFAULTHANDLER": "1"},
        )
        for i in range(n)
    ]


def refused_at_start(store_uri: str, redis_url: str, log: Path, saying: str) -> str:
    """A worker started on ``redis_url`` that must refuse to: it ends with 1 (`scrapy crawl`'s), with
    no traceback, in one line holding ``saying``; that line."""
    worker = start_crawl("vd_fetch_worker", store_uri, log=log, env={"VOTERSDAILY_REDIS_URL": redis_url})
    assert worker.wait(120) == 1
    text = log.read_text()
    assert "Traceback" not in text and "Task exception" not in text, text[-3000:]
    (line,) = [line for line in text.splitlines() if saying in line]
    return line


def log_path(tmp_path: Path, i: int) -> Path:
    return tmp_path / ("worker%d.log" % i)


def acked(tmp_path: Path, i: int) -> int:
    """Requests worker ``i`` acked, from the stats its log ends with."""
    found = re.search(r"'redis/acked': (\d+)", log_path(tmp_path, i).read_text())
    return int(found.group(1)) if found else 0


def wait_all(
    workers, tmp_path: Path, timeout: float = 180, skip: tuple[int, ...] = (), status: int = 0
) -> None:
    """Every worker but ``skip`` ended with ``status`` (`scrapy crawl`'s: 1 when its run failed)."""
    for i, w in enumerate(workers):
        if i in skip:
            continue
        try:
            code = w.wait(timeout)
        except subprocess.TimeoutExpired:
            for other in workers:
                if other.poll() is None:
                    show_stacks(other)
                    other.kill()
            raise AssertionError(
                "worker %d still running after %.0f s (its threads' stacks and its extraction "
                "processes' at the end):\n%s" % (i, timeout, log_path(tmp_path, i).read_text()[-12000:])
            ) from None
        assert code == status, log_path(tmp_path, i).read_text()[-3000:]


def show_stacks(crawl: subprocess.Popen, wait: float = 5) -> None:
    """SIGABRT to a hung crawl process and its descendants, started with ``PYTHONFAULTHANDLER``:
    each writes every thread's stack to its standard error before it ends (the C handler writes
    even when the thread is blocked in a system call)."""
    # Deepest first: an extraction process dies (PR_SET_PDEATHSIG) as soon as its fork server has
    # written its stack and ended, before a starved (niced) one has written its own.
    for process in (*reversed(descendants(crawl.pid)), crawl.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(process, signal.SIGABRT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        crawl.wait(wait)


def kill_worker(worker: subprocess.Popen) -> list[int]:
    """SIGKILL a worker process, as a crash or an OOM kill does: no shutdown, no acks, no flush.
    Its extraction processes, orphaned, are then ended one by one (they would linger otherwise);
    their pids are returned."""
    orphans = descendants(worker.pid)
    worker.send_signal(signal.SIGKILL)
    assert worker.wait(10) == -signal.SIGKILL
    for pid in orphans:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return orphans


def read_db(store_uri: str, db: str) -> list[dict]:
    store = open_store(store_uri)
    try:
        return list(store.iter_docs(db)) if db in store.list_dbs() else []
    finally:
        store.close()


def queue_state(redis_server, name: str) -> dict:
    """The queue as Redis has it: entries waiting and leased (pending), dead letters, and leases of
    dead workers taken over (``recovered``)."""
    r = redis_server.client()
    key = "%s:requests" % name
    length = r.xlen(key)
    pending = r.xpending(key, "workers")["pending"] if length else 0
    return {
        "waiting": length - pending,
        "processing": pending,
        "dead": r.xlen(key + ":dead"),
        "recovered": int(r.hget(key + ":meta", "recovered") or 0),
    }


def consumer_of(redis_server, name: str, pid: int) -> str | None:
    """The consumer name of worker process ``pid`` in queue ``name`` (``host/pid/random``; the group
    also holds ``requeued``, which holds the entries given back or failed, of no process)."""
    for consumer in redis_server.client().xinfo_consumers("%s:requests" % name, "workers"):
        parts = consumer["name"].decode().split("/")
        if len(parts) == 3 and parts[1] == str(pid):
            return consumer["name"].decode()
    return None


def held_by(redis_server, name: str, consumer: str) -> list[str]:
    """The stream entries ``consumer`` holds (its pending entries)."""
    pending = redis_server.client().xpending_range(
        "%s:requests" % name, "workers", min="-", max="+", count=10_000, consumername=consumer
    )
    return [p["message_id"].decode() for p in pending]


def _stopped(pid: int) -> bool:
    stat = Path("/proc/%d/stat" % pid).read_text()
    return stat[stat.rindex(")") + 2] in "tT"


def frozen_with_leases(
    worker: subprocess.Popen, redis_server, name: str, timeout: float = 120
) -> tuple[str, list[str]]:
    """Stop ``worker`` (SIGSTOP) at a moment it holds leases; its consumer and the entries it holds.
    A stopped process neither acks nor renews, so these are exactly the leases that die with it when
    it is killed next: no race between looking and killing."""
    deadline = time.monotonic() + timeout
    while True:
        os.kill(worker.pid, signal.SIGSTOP)
        wait_until(lambda: _stopped(worker.pid), "worker %d stopped" % worker.pid, 30)
        consumer = consumer_of(redis_server, name, worker.pid)
        held = held_by(redis_server, name, consumer) if consumer else []
        if held:
            return consumer, held
        os.kill(worker.pid, signal.SIGCONT)
        assert time.monotonic() < deadline, "worker %d never held a lease" % worker.pid
        time.sleep(0.1)


def recovered_from(log: str, consumer: str) -> int:
    """How many of ``consumer``'s requests a worker's log says it took over (the lines
    ``recovered N requests of dead workers from <queue> (n from <consumer>, ...)``)."""
    total = 0
    for listing in re.findall(r"recovered \d+ requests of dead workers from \S+ \(([^)]*)\)", log):
        total += sum(int(n) for n, who in re.findall(r"(\d+) from ([^,\s]+)", listing) if who == consumer)
    return total


def hold_documents(site, docs, timeout: float = 600) -> Gate:
    """The documents' answers wait until the returned gate opens (``gate.event.set()``): requests
    leased meanwhile stay leased."""
    gate = Gate(timeout)
    for d in docs:
        route = site.routes[d.path]
        site.route(d.path, gate.body(route.body), route.status, route.headers, gzip=route.gzip)
    return gate


def leases_of(redis_server, name: str, pid: int) -> int:
    """Requests the worker process ``pid`` holds: its consumer's pending entries (consumers are
    named ``host/pid/random``)."""
    consumers = redis_server.client().xinfo_consumers("%s:requests" % name, "workers")
    return sum(c["pending"] for c in consumers if c["name"].decode().split("/")[1] == str(pid))


RDF_SUITES = (
    ("rdf11/rdf-n-triples", "PositiveSyntax", "application/n-triples", "N-Triples"),
    ("rdf11/rdf-turtle", "Eval", "text/turtle", "Turtle"),
)


@dataclass(frozen=True)
class Dataset:
    """One W3C RDF test file served as a laundromat seed, with its statements as a reference
    parser (pyoxigraph) reads them at the served URL."""

    url: str
    path: str
    size: int
    format: str
    statements: int


def rdf_datasets(site, per_suite: int) -> list[Dataset]:
    """``per_suite`` valid, non-empty files of each of the W3C N-Triples and Turtle suites (read in
    place from ../shared/conformance), each served as ``/ld/<suite>/<file>``."""
    import pyoxigraph as ox

    from tests.laundromat.conformance import ROOT, load_manifest

    shared_file("conformance/w3c-rdf-tests/rdf")
    out = []
    for suite, kind, ctype, fmt in RDF_SUITES:
        parse_as = ox.RdfFormat.N_TRIPLES if fmt == "N-Triples" else ox.RdfFormat.TURTLE
        taken = 0
        for test in load_manifest(suite):
            if test.kind != kind or taken == per_suite:
                continue
            body = test.action.read_bytes()
            path = "/ld/%s/%s" % (suite, test.action.relative_to(ROOT / suite).as_posix())
            triples = set(ox.parse(body, parse_as, base_iri=site.url + path))
            if not triples:
                continue
            out.append(
                Dataset(site.route(path, body, content_type=ctype), path, len(body), fmt, len(triples))
            )
            taken += 1
    return out


#: Short leases and frequent acks so a dead worker's requests come back within seconds; idle
#: workers stop once the queue and every lease have been empty for 2 s.
QUEUE_SETTINGS = (
    "VOTERSDAILY_REDIS_ACK_INTERVAL=0.5",
    "VOTERSDAILY_REDIS_REAP_INTERVAL=0.5",
    "VOTERSDAILY_REDIS_IDLE_CLOSE=2",
)


def ingest_settings(tmp_path, lease: float) -> tuple[str, ...]:
    return (
        *INGEST_SETTINGS,
        *QUEUE_SETTINGS,
        "VOTERSDAILY_REDIS_LEASE=%s" % lease,
        "INGEST_BLOB_DIR=%s" % (tmp_path / "blobs"),
        "INGEST_TEIXML_FEED=%s" % (tmp_path / "feed.jsonl"),
        "VOTERSDAILY_SPOOL_DIR=%s" % (tmp_path / "spool"),
    )


def base_hits(site, docs) -> dict[str, int]:
    return {d.path: site.hits.get(d.path, 0) for d in docs}


def check_ingest_results(couch_uri, docs) -> None:
    """Every request has its one result, with what its file holds; the file table and html_meta
    have one row per distinct file."""
    results = {r["_id"]: r for r in read_db(couch_uri, "ingest_file_result")}
    assert sorted(results) == sorted(d.result_id for d in docs), (
        "one result per request, none missing or extra"
    )
    for d in docs:
        r = results[d.result_id]
        assert (r["status"], r["hit"]) == ("success", True), (d.url, r.get("status"), r.get("error_message"))
        assert r["terminal"]["terminal_url"] == d.url and r["terminal"]["terminal_status_code"] == 200
        assert (r["file_meta"]["sha1hex"], r["file_meta"]["size_bytes"]) == (d.sha1hex, d.size)
        if d.doi:
            assert r["html_biblio"]["doi"] == d.doi
    sha1s = {d.sha1hex for d in docs}
    rows = read_db(couch_uri, table_name("0", "dev"))
    assert sorted(row["_id"] for row in rows) == sorted(
        base64.b32encode(bytes.fromhex(s)).decode() for s in sha1s
    )
    html = {d.sha1hex for d in docs if d.ingest_type == "html"}
    assert sorted(m["_id"] for m in read_db(couch_uri, "html_meta")) == sorted(html)


def enqueue_documents(site, redis_server, store_uri: str, tmp_path: Path, n: int) -> list[Document]:
    """``n`` real documents on the site, their ingest requests in the Redis queue; the documents."""
    roomy(site)
    docs = ingest_documents(site, n)
    requests = write_ingest_requests(tmp_path / "requests.jsonl", docs)
    out = enqueue("ingest", requests, store_uri, redis_server.url)
    assert "ingest:requests: %d requests queued" % n in out.stdout, out.stdout
    assert queue_state(redis_server, "ingest")["waiting"] == n
    assert not any(path.startswith("/paper/") for path in site.hits), "enqueue fetches nothing"
    return docs


def _children(pid: int) -> list[int]:
    kids = []
    for task_children in Path("/proc/%d/task" % pid).glob("*/children"):
        with contextlib.suppress(OSError):
            kids += [int(k) for k in task_children.read_text().split()]
    return kids


def extraction_processes(pid: int) -> list[int]:
    """The ingest's extraction worker processes under crawl process ``pid``: the children of its
    multiprocessing fork server (a child of ``pid`` whose command line names the fork server)."""
    found = []
    for child in _children(pid):
        try:
            cmdline = Path("/proc/%d/cmdline" % child).read_bytes()
        except OSError:
            continue
        if b"forkserver" in cmdline:
            found += _children(child)
    return found


def _cpu_ticks(pid: int) -> int:
    """The CPU time process ``pid`` has used, in clock ticks (0 once it is gone)."""
    try:
        fields = Path("/proc/%d/stat" % pid).read_text().rpartition(")")[2].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])  # utime, stime


#: CPU ticks (1/100 s) an extraction process has used once it has run calls (its start costs less:
#: the fork server imported everything before forking it).
_WORKED_TICKS = 3


def kill_extraction_process(*pids: int, timeout: float = 60) -> tuple[int, int]:
    """SIGKILL one extraction process of crawl processes ``pids`` (as the OOM killer would) while it
    runs calls: one whose CPU time grows between two looks 50 ms apart, so its crawl is using its pool
    (a process killed before its crawl's first call, or after its last, dies unnoticed and harmless);
    the index of its crawl in ``pids``, and its pid."""
    deadline = time.monotonic() + timeout
    before: dict[int, int] = {}
    while time.monotonic() < deadline:
        for index, pid in enumerate(pids):
            for child in extraction_processes(pid):
                ticks = _cpu_ticks(child)
                if ticks >= _WORKED_TICKS and ticks > before.get(child, ticks):
                    os.kill(child, signal.SIGKILL)
                    return index, child
                before[child] = ticks
        time.sleep(0.05)
    raise AssertionError("no extraction process of crawl processes %s ran calls" % (pids,))


def wait_until(predicate, what: str, timeout: float = 120) -> None:
    """Until ``predicate()`` holds (polled every 50 ms); fails saying ``what`` did not happen."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out after %.0f s: %s" % (timeout, what)
        time.sleep(0.05)


def wait_for_workers_on_queue(tmp_path: Path, n: int, timeout: float = 120) -> None:
    """Until each of the ``n`` workers has opened its scheduler on the queue (its "Redis worker ... on
    queue" line): one worker may fetch a share of the documents before the other has opened, and a
    fault meant to hit both running workers must wait for both."""
    opened = re.compile(r"Redis worker \S+ on queue ")

    def every_worker_opened() -> bool:
        logs = [log_path(tmp_path, i) for i in range(n)]
        return all(log.exists() and opened.search(log.read_text()) for log in logs)

    wait_until(every_worker_opened, "every worker opened its scheduler on the queue", timeout)


def wait_for_hits(site, docs, share: float, timeout: float = 120) -> None:
    """Until ``share`` of the documents have been fetched (a point well inside the run)."""
    wait_until(
        lambda: sum(n > 0 for n in base_hits(site, docs).values()) >= len(docs) * share,
        "the run did not get going",
        timeout,
    )
