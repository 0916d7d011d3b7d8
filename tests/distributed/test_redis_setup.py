"""The Redis of docs/operations.md ("Redis"), started from the two files as written there (the
addresses, paths and secret swapped for the test's), with its TLS lines: ``enqueue`` and a worker
reach it as the documented ACL user over TLS, pass the persistence check without a warning, and
process every request once; the user cannot touch other keys or flush the server; killed with
SIGKILL and started again, Redis still has the queue (its append-only file replayed in full)."""

from __future__ import annotations

import re
import shutil
import subprocess
import time

import pytest
import redis

from tests.distributed.workloads import (
    base_hits,
    enqueue,
    ingest_settings,
    log_path,
    read_db,
    recorded_documents,
    roomy,
    start_workers,
    wait_all,
    write_ingest_requests,
)
from tests.support.services import REPO, free_port

pytestmark = pytest.mark.slow  # separate processes: Redis, workers, killed and restarted services

SECRET = "test-s3cret-for-the-acl-user"
ADMIN_SECRET = "test-s3cret-of-the-administrator"


def documented_conf_blocks() -> dict[str, list[str]]:
    """The ```conf blocks of docs/operations.md, by their first line (the file they are, or the
    first directive)."""
    text = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    blocks = {}
    for body in re.findall(r"```conf\n(.*?)```", text, re.S):
        lines = [line.strip() for line in body.splitlines() if line.strip()]
        blocks[lines[0]] = lines
    return blocks


def _certificates(folder) -> dict[str, str]:
    """A CA and a certificate for 127.0.0.1 it signed (openssl)."""
    folder.mkdir()

    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=test-ca",
    )
    openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "redis.key",
        "-out",
        "redis.csr",
        "-subj",
        "/CN=127.0.0.1",
    )
    (folder / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl(
        "x509",
        "-req",
        "-in",
        "redis.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "redis.pem",
        "-days",
        "2",
        "-extfile",
        "san.cnf",
    )
    return {name: str(folder / name) for name in ("ca.pem", "redis.pem", "redis.key")}


@pytest.fixture
def documented_redis(tmp_path):
    """redis-server started from the documented files; its rediss:// URL as the ACL user."""
    if not (shutil.which("redis-server") and shutil.which("openssl")):
        pytest.skip("redis-server and openssl are needed (scripts/setup.sh installs them)")
    blocks = documented_conf_blocks()
    conf = blocks["# /etc/redis/votersdaily.conf (redis-server /etc/redis/votersdaily.conf)"]
    acl_users = [line for line in blocks["# /etc/redis/votersdaily.acl"] if line.startswith("user ")]
    tls = blocks["port 0"]
    certs = _certificates(tmp_path / "tls")
    port = free_port()
    data = tmp_path / "redis-data"
    data.mkdir()
    acl = tmp_path / "votersdaily.acl"
    acl.write_text(
        "".join(
            line.replace("CHANGE-ME-a-long-random-secret", SECRET).replace(
                "CHANGE-ME-the-administrators-secret", ADMIN_SECRET
            )
            + "\n"
            for line in acl_users
        )
    )
    swapped = {
        "bind": "bind 127.0.0.1",
        "port": None,  # replaced by the TLS lines
        "dir": "dir %s" % data,
        "aclfile": "aclfile %s" % acl,
    }
    lines = [swapped.get(line.split()[0], line) for line in conf if not line.startswith("#")]
    tls_lines = {
        "tls-port": "tls-port %d" % port,
        "tls-cert-file": "tls-cert-file %s" % certs["redis.pem"],
        "tls-key-file": "tls-key-file %s" % certs["redis.key"],
        "tls-ca-cert-file": "tls-ca-cert-file %s" % certs["ca.pem"],
    }
    lines += [tls_lines.get(line.split()[0], line) for line in tls]
    config = tmp_path / "votersdaily.conf"
    config.write_text("".join(line + "\n" for line in lines if line))
    url = "rediss://votersdaily:%s@127.0.0.1:%d/0?ssl_ca_certs=%s" % (SECRET, port, certs["ca.pem"])
    client = redis.Redis.from_url(url)
    running = []

    def start() -> None:
        log = open(tmp_path / "redis.log", "ab")
        running.append(subprocess.Popen(["redis-server", str(config)], stdout=log, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 30
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                assert running[-1].poll() is None and time.monotonic() < deadline, (
                    tmp_path / "redis.log"
                ).read_text()
                time.sleep(0.1)

    def crash_and_restart() -> None:
        """kill -9, then the same line again: what its append-only file kept is what is left."""
        running[-1].kill()
        running[-1].wait(10)
        client.connection_pool.disconnect()
        start()

    start()
    yield url, client, crash_and_restart
    running[-1].terminate()
    running[-1].wait(10)


def test_the_documented_redis_runs_the_queue_over_tls_as_the_acl_user(
    documented_redis, site, couch_uri, tmp_path
):
    url, client, crash_and_restart = documented_redis
    with pytest.raises(redis.exceptions.NoPermissionError):
        client.set("somebody-elses-key", 1)
    with pytest.raises(redis.exceptions.NoPermissionError):
        client.flushall()
    roomy(site)
    docs = recorded_documents(site, 21)
    requests = write_ingest_requests(tmp_path / "requests.jsonl", docs)
    queued = enqueue("ingest", requests, couch_uri, url)
    assert "ingest:requests: 21 requests queued" in queued.stdout and queued.stderr == "", queued.stderr
    (worker,) = start_workers(
        "ingest_worker", 1, couch_uri, url, tmp_path, *ingest_settings(tmp_path, lease=30)
    )
    wait_all([worker], tmp_path)
    log = log_path(tmp_path, 0).read_text()
    assert "keeps its data (appendonly yes, appendfsync everysec)" in log, log[-3000:]
    assert SECRET not in log, "the password is masked"
    assert set(base_hits(site, docs).values()) == {1}
    assert len(read_db(couch_uri, "ingest_file_result")) == 21
    assert client.xlen("ingest:requests") == 0 and client.hget("ingest:requests:meta", "acked") == b"21"
    # Killed and started again, it replays its append-only file as its default user: the queue's
    # scripts (transactions in the file) are all there (with `user default off`, none was).
    crash_and_restart()
    assert client.hget("ingest:requests:meta", "acked") == b"21" and client.scard("ingest:dupefilter") == 21
    again = enqueue("ingest", requests, couch_uri, url)
    assert "ingest:requests: 0 requests queued, 21 already seen" in again.stdout, again.stdout
