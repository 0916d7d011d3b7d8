"""The rehearsal of a three-node cluster: stood up as docs/operations.md ("Three nodes, step by step")
says, on one machine.

Three network namespaces joined by a bridge, with the documented addresses (node A ``10.0.0.5``: Redis
and the store; node B ``10.0.0.6``: scrapyd and the scheduler; node C ``10.0.0.7``: an ingest and a
laundromat worker), each node with its own folder (the doc's ``/srv``, ``/var/lib``, ``/etc`` and
``/opt`` are the node's) and the package installed in its own virtual environment (over this
environment's dependencies; the package is this checkout, as ``pip install -e`` installs it). The
commands are the doc's blocks, read from the doc and run line by line on their node as a person
types them (a line ending in ``&`` runs in the background; ``cd`` holds for the lines after it); the
configuration files are the doc's blocks too. The sources are a local site on the bridge
(``10.0.0.1:8000``), which node C allows explicitly as the doc says.

On the way a worker and Redis are killed with SIGKILL and started again as the doc says; at the end
every request was done once, every event stored once, and once the processes are stopped as the doc
says, no process of the rehearsal is left (``/proc``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import venv
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from tests.distributed.test_redis_setup import documented_conf_blocks
from tests.distributed.workloads import (
    frozen_with_leases,
    hold_documents,
    rdf_datasets,
    recorded_documents,
    wait_until,
    write_ingest_requests,
)
from tests.support.packaging import copy_clone
from tests.support.services import REPO, LocalSite
from votersdaily.laundromat.uris import uri_key

DOC = REPO / "docs" / "operations.md"
SECTION = "### Three nodes, step by step"
NODES = {"A": "10.0.0.5", "B": "10.0.0.6", "C": "10.0.0.7"}
SITE = ("10.0.0.1", 8000)
SECRETS = {
    "<redis secret>": "rehearsal-redis-s3cret",
    "CHANGE-ME-a-long-random-secret": "rehearsal-redis-s3cret",  # the same user's, in the ACL file
    "CHANGE-ME-the-administrators-secret": "rehearsal-redis-admin-s3cret",
    "<scrapyd secret>": "rehearsal-scrapyd-s3cret",
}
#: What the rehearsal adds to node C's node.env, as the doc says (its sources are a private address;
#: a shorter lease brings a killed worker's requests back within the time budget).
NODE_C_EXTRA = {
    "INGEST_PRIVATE_HOSTS": "%s:%d" % SITE,
    "LAUNDROMAT_PRIVATE_HOSTS": "%s:%d" % SITE,
    "VOTERSDAILY_REDIS_LEASE": "10",
}
EVENT_SPIDERS = ("house_votes", "senate_votes", "federal_register")
INGEST_REQUESTS = 120
CLONE_NEWNET = 0x40000000


# -- the doc -------------------------------------------------------------------------------------


def section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = min(i for i in (text.find("\n## ", start), text.find("\n### ", start + 1)) if i > 0)
    return text[start:end]


def node_blocks() -> dict[str, list[str]]:
    """The ```sh block of each node (marked ``<!-- readme: not run — node X: ... -->``): its lines."""
    found = re.findall(r"<!-- readme: not run — node ([ABC]): [^>]*-->\n```sh\n(.*?)```", section(), re.S)
    return {node: [line for line in body.splitlines() if line.strip()] for node, body in found}


def file_blocks() -> dict[str, list[str]]:
    """The section's ```ini blocks by the file their first line names: the file's lines."""
    blocks = {}
    for body in re.findall(r"```ini\n(.*?)```", section(), re.S):
        first, *rest = body.splitlines()
        blocks[first.split()[1]] = rest
    return blocks


def stop_store_line() -> str:
    (line,) = re.findall(r"`(python3 scripts/pouchdb_server\.py --stop [^`]+)`", section())
    return line


def test_the_three_node_section_has_a_block_for_every_node_and_its_files():
    """The rehearsal below reads these (slow set); this keeps the doc readable by it in every run."""
    blocks = node_blocks()
    assert sorted(blocks) == ["A", "B", "C"]
    assert any(line.startswith("redis-server /etc/redis/votersdaily.conf") for line in blocks["A"])
    assert any("scrapyd-deploy" in line for line in blocks["B"])
    assert [line for line in blocks["C"] if line.endswith("&")] == [
        "scrapy crawl ingest_worker &",
        "scrapy crawl laundromat_worker &",
    ]
    files = file_blocks()
    env = dict(line.split("=", 1) for line in files["/etc/votersdaily/node.env"])
    assert env["VOTERSDAILY_REDIS_URL"] == "redis://votersdaily:<redis secret>@10.0.0.5:6379/0"
    assert env["VOTERSDAILY_STORE"] == "http://10.0.0.5:5984/"
    assert "password = <scrapyd secret>" in files["/srv/scrapyd/scrapyd.conf"]
    assert "--stop" in stop_store_line()
    for name, value in NODE_C_EXTRA.items():
        assert "%s=%s" % (name, value) in section(), "the doc states what the rehearsal adds"


# -- the machine ---------------------------------------------------------------------------------


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def in_netns(name: str, fn: Any, *args: Any) -> Any:
    """``fn(*args)`` in a thread of its own that joined network namespace ``name`` (sockets it opens
    live there; the rest of the test process stays where it is)."""
    result: dict[str, Any] = {}

    def run() -> None:
        fd = os.open("/run/netns/%s" % name, os.O_RDONLY)
        try:
            if _libc().setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns into %s" % name)
        finally:
            os.close(fd)
        try:
            result["value"] = fn(*args)
        except BaseException as exc:  # handed to the caller
            result["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@dataclass
class Lan:
    """Four namespaces: ``lan`` with the bridge (and the sources at 10.0.0.1), one per node."""

    prefix: str
    names: dict[str, str] = field(default_factory=dict)

    def create(self) -> None:
        lan = self.names["lan"] = self.prefix + "lan"
        ip("netns", "add", lan)
        ip("-n", lan, "link", "add", "br0", "type", "bridge")
        ip("-n", lan, "addr", "add", "%s/24" % SITE[0], "dev", "br0")
        ip("-n", lan, "link", "set", "br0", "up")
        ip("-n", lan, "link", "set", "lo", "up")
        for node, address in NODES.items():
            ns = self.names[node] = self.prefix + node.lower()
            ip("netns", "add", ns)
            ip("link", "add", ns + "-e", "type", "veth", "peer", "name", "eth0", "netns", ns)
            ip("link", "set", ns + "-e", "netns", lan)
            ip("-n", lan, "link", "set", ns + "-e", "master", "br0", "up")
            ip("-n", ns, "addr", "add", "%s/24" % address, "dev", "eth0")
            ip("-n", ns, "link", "set", "eth0", "up")
            ip("-n", ns, "link", "set", "lo", "up")

    def inodes(self) -> set[int]:
        return {Path("/run/netns/%s" % ns).stat().st_ino for ns in self.names.values()}

    def delete(self) -> None:
        for ns in self.names.values():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


def rehearsal_processes(lan: Lan, folder: Path) -> dict[int, str]:
    """Every process in the rehearsal's namespaces, or started from its folders: pid -> command."""
    inodes, found = lan.inodes(), {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            in_lan = (entry / "ns" / "net").stat().st_ino in inodes
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile, or a kernel thread
            continue
        if in_lan or str(folder) in command:
            found[int(entry.name)] = command.strip()
    return found


def skip_unless_namespaces() -> None:
    if os.geteuid() != 0:
        pytest.skip("network namespaces (ip netns) need root: the rehearsal runs in CI, as root")
    if not shutil.which("ip"):
        pytest.skip("ip (iproute2, scripts/setup.sh installs it) is needed for network namespaces")
    if not shutil.which("redis-server"):
        pytest.skip("redis-server (scripts/setup.sh installs it) is needed")
    if not (REPO / "node_modules" / ".bin" / "pouchdb-server").exists():
        pytest.skip("PouchDB Server (node_modules, scripts/setup.sh) is needed")
    probe = "vdprobe%d" % os.getpid()
    steps = (
        ["ip", "netns", "add", probe],
        ["ip", "-n", probe, "link", "add", "probe0", "type", "veth", "peer", "name", "probe1"],
        ["ip", "netns", "exec", probe, "true"],
    )
    try:
        for step in steps:
            made = subprocess.run(step, capture_output=True, text=True, timeout=30)
            if made.returncode:
                pytest.skip(
                    "this machine gives no network namespaces (%s: %s)"
                    % (" ".join(step), made.stderr.strip())
                )
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=30)


# -- a node ---------------------------------------------------------------------------------------


def install_package(prefix: Path) -> None:
    """``/opt/votersdaily`` of a node: a virtual environment over this one's dependencies, the package
    installed in it the way ``pip install -e`` does (a path entry to the checkout), and the console
    commands the doc runs, as pip writes them."""
    venv.create(prefix, system_site_packages=True, with_pip=False)
    (site_packages,) = prefix.glob("lib/python*/site-packages")
    (site_packages / "votersdaily-rehearsal.pth").write_text(str(REPO) + "\n")
    for name in ("scrapy", "scrapyd", "scrapyd-deploy"):
        (point,) = entry_points(group="console_scripts", name=name)
        script = prefix / "bin" / name
        script.write_text(  # distlib's template, as pip writes it: the guard lets multiprocessing import it
            "#!%s\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom %s import %s\n"
            "if __name__ == '__main__':\n"
            "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
            "    sys.exit(%s())\n" % (prefix / "bin" / "python", point.module, point.attr, point.attr)
        )
        script.chmod(0o755)


@dataclass
class Node:
    name: str
    netns: str
    root: Path
    clone: Path
    env: dict[str, str]
    cwd: Path = Path()
    logs: list[Path] = field(default_factory=list)

    def localise(self, text: str) -> str:
        """The doc's paths on this node: ``~/votersdaily`` is its clone, ``/srv``, ``/var/lib``,
        ``/etc`` and ``/opt`` its own folders; the doc's placeholders its secrets."""
        text = text.replace("~/votersdaily", str(self.clone))
        text = re.sub(
            r"(?<![\w./-])/(srv|var/lib|etc|opt)/", lambda m: "%s/%s/" % (self.root, m.group(1)), text
        )
        for placeholder, secret in SECRETS.items():
            text = text.replace(placeholder, secret)
        return text

    def _command(self, line: str) -> tuple[Path, str, bool]:
        line = self.localise(line)
        background = line.endswith("&")
        line = line.rstrip("&").strip()
        cwd = self.cwd
        moved = re.match(r"cd (\S+)(?: && (.*))?$", line)
        if moved:
            cwd = Path(moved.group(1))
            line = moved.group(2) or ""
            if not background:
                self.cwd = cwd  # a shell's cd holds for the lines after it; a background one's not
        return cwd, line, background

    def _argv(self, command: str, background: bool) -> list[str]:
        return ["ip", "netns", "exec", self.netns, "bash", "-c", ("exec " if background else "") + command]

    def run(self, line: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """A foreground line, as typed in the node's shell; it must succeed."""
        cwd, command, background = self._command(line)
        assert not background, line
        if not command:
            return subprocess.CompletedProcess([], 0, "", "")
        done = subprocess.run(
            self._argv(command, False), cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        assert done.returncode == 0, "node %s: %s: exit %d\n%s\n%s" % (
            self.name,
            line,
            done.returncode,
            done.stdout[-2000:],
            done.stderr[-3000:],
        )
        return done

    def start(self, line: str) -> subprocess.Popen[bytes]:
        """A line ending in ``&``: the process it starts (its pid is the program's: ``exec``)."""
        cwd, command, background = self._command(line)
        assert background, line
        log = self.root / ("%s.%d.log" % (re.sub(r"\W+", "_", command)[:40], len(self.logs)))
        self.logs.append(log)
        return subprocess.Popen(
            self._argv(command, True),
            cwd=cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=open(log, "wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def log_tail(self) -> str:
        return "\n".join("== %s\n%s" % (p.name, p.read_text(errors="replace")[-2500:]) for p in self.logs)


def node_env(node: Node, files: dict[str, list[str]], extra: dict[str, str] | None = None) -> dict[str, str]:
    """The node's environment: this one's without any settings of the tests, its node.env (localised)
    and its virtual environment first on the PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SCRAPY_", "VOTERSDAILY_", "SCRAPYD_"))}
    bin_dir = node.root / "opt" / "votersdaily" / "bin"
    env.update(PYTHONPATH="", HOME=str(node.root), PATH="%s:%s" % (bin_dir, env["PATH"]))
    for line in files["/etc/votersdaily/node.env"]:
        name, _, value = line.partition("=")
        env[name] = node.localise(value)
    env.update(extra or {})
    return env


# -- reading the rehearsal's services from inside its network -------------------------------------


def redis_client(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url, socket_timeout=5)


def queue_counts(url: str, name: str) -> dict[str, int]:
    client = redis_client(url)
    try:
        key = "%s:requests" % name
        meta = {k.decode(): int(v) for k, v in client.hgetall(key + ":meta").items() if v.isdigit()}
        return {
            "length": client.xlen(key),
            "dead": client.xlen(key + ":dead"),
            **{k: meta.get(k, 0) for k in ("enqueued", "acked", "recovered", "dead")},
        }
    finally:
        client.close()


def store_docs(store: str, db: str) -> list[dict]:
    from votersdaily.store import open_store

    opened = open_store(store)
    try:
        return list(opened.iter_docs(db)) if opened.has_db(db) else []
    finally:
        opened.close()


def scrapyd_jobs(url: str, auth: tuple[str, str]) -> dict[str, list[dict]]:
    import requests

    answer = requests.get(url + "listjobs.json", params={"project": "votersdaily"}, auth=auth, timeout=10)
    answer.raise_for_status()
    return answer.json()


def wait_in(netns: str, predicate: Any, what: str, timeout: float) -> None:
    """Until ``predicate()``, run in ``netns``, holds; a service that does not answer yet is a no."""

    from redis.exceptions import ConnectionError as RedisDown

    def holds() -> bool:
        try:
            return bool(predicate())
        except (OSError, RedisDown):  # requests' connection errors are OSErrors
            return False

    wait_until(lambda: in_netns(netns, holds), what, timeout)


def scrapyd_up(url: str, auth: tuple[str, str]) -> bool:
    import requests

    return requests.get(url + "daemonstatus.json", auth=auth, timeout=10).ok


class Reach:
    """What :func:`frozen_with_leases` asks of a Redis fixture, for the rehearsal's Redis."""

    def __init__(self, url: str):
        self.url = url

    def client(self) -> Any:
        return redis_client(self.url)


# -- the rehearsal ----------------------------------------------------------------------------------


@pytest.mark.slow  # three nodes in network namespaces: Redis, a store, scrapyd, workers, kills
def test_three_nodes_from_the_docs(tmp_path):  # noqa: PLR0915 - one rehearsal, step by step
    skip_unless_namespaces()
    started = time.monotonic()
    blocks, files = node_blocks(), file_blocks()
    redis_files = documented_conf_blocks()
    lan = Lan("vd%d" % os.getpid())
    site: LocalSite | None = None
    try:
        lan.create()
        # The sources: a local site on the bridge (served from the test process, listening there).
        site = in_netns(lan.names["lan"], LocalSite, *SITE).start()
        docs = recorded_documents(site, INGEST_REQUESTS)
        datasets = rdf_datasets(site, per_suite=4)

        release = copy_clone(tmp_path / "release")  # node B's clone: scrapyd-deploy builds in it
        nodes: dict[str, Node] = {}
        for name in NODES:
            root = tmp_path / ("node-" + name.lower())
            install_package(root / "opt" / "votersdaily")
            node = nodes[name] = Node(name, lan.names[name], root, release if name == "B" else REPO, {}, root)
            node.env = node_env(node, files, NODE_C_EXTRA if name == "C" else None)
        a, b, c = nodes["A"], nodes["B"], nodes["C"]
        redis_url = b.env["VOTERSDAILY_REDIS_URL"]
        store = b.env["VOTERSDAILY_STORE"]

        # Node A's files: Redis's two files (the Redis section) and its store.
        conf = redis_files["# /etc/redis/votersdaily.conf (redis-server /etc/redis/votersdaily.conf)"]
        acl = redis_files["# /etc/redis/votersdaily.acl"]
        (a.root / "etc" / "redis").mkdir(parents=True)
        (a.root / "etc/redis/votersdaily.conf").write_text(a.localise("\n".join(conf[1:]) + "\n"))
        (a.root / "etc/redis/votersdaily.acl").write_text(a.localise("\n".join(acl[1:]) + "\n"))
        processes: dict[str, subprocess.Popen[bytes]] = {}
        for line in blocks["A"]:
            if line.endswith("&"):
                processes[line] = a.start(line)
            else:
                a.run(line)
        redis_line = next(line for line in blocks["A"] if line.startswith("redis-server"))
        wait_in(a.netns, lambda: redis_client(redis_url).ping(), "Redis answers on 10.0.0.5", 60)

        # Node B: scrapyd in its folder with the doc's scrapyd.conf, the deploy, the scheduler, enqueue.
        (b.root / "srv" / "scrapyd").mkdir(parents=True)
        (b.root / "srv/scrapyd/scrapyd.conf").write_text(
            b.localise("\n".join(files["/srv/scrapyd/scrapyd.conf"]) + "\n")
        )
        (b.root / "srv" / "votersdaily").mkdir(parents=True)  # the operator's inputs are there
        write_ingest_requests(b.root / "srv" / "votersdaily" / "requests.jsonl", docs)
        (b.root / "srv/votersdaily/seeds.txt").write_text("".join(d.url + "\n" for d in datasets))
        (scrapyd_url,) = {m for line in blocks["B"] for m in re.findall(r"--scrapyd (\S+)", line)}
        auth = (b.env["SCRAPYD_USERNAME"], b.env["SCRAPYD_PASSWORD"])
        scheduled = ""
        for line in blocks["B"]:
            if line.endswith("&"):
                processes[line] = b.start(line)
                wait_in(b.netns, lambda: scrapyd_up(scrapyd_url, auth), "scrapyd answers", 90)
            else:
                out = b.run(line).stdout
                if "scheduler" in line:
                    scheduled = out
        for spider in EVENT_SPIDERS:
            assert re.search(r"%s.*scheduled" % spider, scheduled), scheduled

        # Node C: the two workers. The last two thirds of the documents answer only once the faults
        # are over: the kills land mid-run however fast this machine is.
        held_back = hold_documents(site, docs[INGEST_REQUESTS // 3 :])
        worker_lines = [line for line in blocks["C"] if line.endswith("&")]
        for line in blocks["C"]:
            if line.endswith("&"):
                processes[line] = c.start(line)
            else:
                c.run(line)
        ingest_line, _laundromat_line = worker_lines

        # Redis killed mid-run (kill -9) and started again by its own line: its append-only file keeps
        # the queue.
        wait_in(
            a.netns,
            lambda: queue_counts(redis_url, "ingest")["acked"] >= 10,
            "the ingest got going",
            120,
        )
        processes[redis_line].send_signal(signal.SIGKILL)
        assert processes[redis_line].wait(10) == -signal.SIGKILL
        processes[redis_line] = a.start(redis_line)
        wait_in(a.netns, lambda: redis_client(redis_url).ping(), "Redis answers again", 60)
        back = in_netns(a.netns, queue_counts, redis_url, "ingest")
        assert back["enqueued"] >= INGEST_REQUESTS and back["length"] > 0, "the queue survived: %r" % back

        # The ingest worker killed (kill -9) while it holds leases, then started again (systemd's
        # Restart=on-failure): the new worker takes the leases over once they expire.
        worker = processes[ingest_line]
        consumer, held = in_netns(a.netns, frozen_with_leases, worker, Reach(redis_url), "ingest")
        worker.send_signal(signal.SIGKILL)
        assert worker.wait(10) == -signal.SIGKILL
        processes[ingest_line] = c.start(ingest_line)
        held_back.event.set()

        def all_done() -> bool:
            counts = [queue_counts(redis_url, q) for q in ("ingest", "laundromat")]
            return all(n["length"] == 0 and n["acked"] == n["enqueued"] > 0 for n in counts)

        wait_in(a.netns, all_done, "every request of both queues acked", 180)

        def events_done() -> bool:
            jobs = scrapyd_jobs(scrapyd_url, auth)
            return not jobs["pending"] and not jobs["running"] and len(jobs["finished"]) >= len(EVENT_SPIDERS)

        wait_in(b.netns, events_done, "the event jobs finished on scrapyd", 180)

        # Every request done once: each queue entry acked once (an ack deletes it), none given up,
        # one result per request; only what the killed worker held ran twice.
        for name in ("ingest", "laundromat"):
            counts = in_netns(a.netns, queue_counts, redis_url, name)
            assert counts["acked"] == counts["enqueued"] and counts["dead"] == 0, (name, counts)
        ingest = in_netns(a.netns, queue_counts, redis_url, "ingest")
        assert ingest["recovered"] >= len(held) > 0, (ingest, consumer)
        results = in_netns(a.netns, store_docs, store, "ingest_file_result")
        assert sorted(r["_id"] for r in results) == sorted(d.result_id for d in docs), (
            "one result per request"
        )
        assert all(r.get("status") for r in results)
        hits = {d.path: site.hits.get(d.path, 0) for d in docs}
        assert min(hits.values()) >= 1 and sum(n - 1 for n in hits.values()) <= ingest["recovered"]
        seeds = {r["_id"]: r for r in in_netns(a.netns, store_docs, store, "ll_seeds")}
        for d in datasets:
            seed = seeds[uri_key(d.url)]
            assert (seed["status"], seed["given"]) == ("added", True) and seed["processed"], seed
            download = seeds[seed["download"]]
            assert (download["status"], download["number_of_unique_statements"]) == ("parsed", d.statements)

        # Every event stored once: each job's run log says what it inserted, and that is what is there.
        logs = {log["parser_name"]: log for log in in_netns(a.netns, store_docs, store, "vd_log")}
        events = in_netns(a.netns, store_docs, store, "vd_events")
        for spider in EVENT_SPIDERS:
            log = logs[spider]
            assert log["result"] == "success" and log["code"]["path"].startswith(str(REPO)), log
            stored = [e for e in events if e.get("parser_name") == spider]
            assert len(stored) == log["insert_count"] > 0 and log["updated_count"] == 0, (spider, log)
        assert len({e["_id"] for e in events}) == len(events)

        # Stopped as the doc says: workers SIGINT, scrapyd and Redis SIGTERM, the store by its script.
        for line, proc in processes.items():
            proc.send_signal(signal.SIGINT if "worker" in line else signal.SIGTERM)
        for line, proc in processes.items():
            assert proc.wait(90) is not None, line
        a.run(stop_store_line())
        # A stopped worker's fork server and resource tracker exit once they see it gone: a moment.
        deadline = time.monotonic() + 30
        while (leftover := rehearsal_processes(lan, tmp_path)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert leftover == {}, "processes of the rehearsal left 30 s after it stopped: %r" % leftover
        assert time.monotonic() - started < 240, "the rehearsal took %.0f s" % (time.monotonic() - started)
    except BaseException:
        for node in locals().get("nodes", {}).values():
            sys.stderr.write(node.log_tail())
        raise
    finally:
        for pid in rehearsal_processes(lan, tmp_path) if lan.names else {}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if site is not None:
            site.stop()
        lan.delete()
