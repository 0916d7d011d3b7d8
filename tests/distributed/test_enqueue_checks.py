"""``enqueue`` checks every field of every request before it reaches the shared queue, and names each
bad line by its number (before: a 10 MB ``link_source_id`` and a NUL inside ``base_url``
were queued; a seed list line that was no URL stopped ``enqueue laundromat`` with a traceback)."""

from __future__ import annotations

import json
import sys

import pytest

from tests.support.processes import process_env
from tests.support.services import run_cli

pytestmark = pytest.mark.slow  # separate processes: Redis, workers, killed and restarted services


def _enqueue(spider: str, source, redis_server, store_uri: str, **extra: str):
    env = process_env(store_uri, VOTERSDAILY_REDIS_URL=redis_server.url)
    return run_cli(
        [sys.executable, "-m", "votersdaily", "enqueue", spider, str(source)],
        store_uri,
        env={**{k: env[k] for k in ("VOTERSDAILY_REDIS_URL", "SCRAPY_SETTINGS_MODULE")}, **extra},
    )


def _bad_lines(out, source, what: str) -> dict[int, str]:
    marker = "bad %s at %s:" % (what, source)
    return {
        int(line.split(marker, 1)[1].split(":", 1)[0]): line
        for line in out.stderr.splitlines()
        if marker in line
    }


def test_enqueue_refuses_oversized_and_control_character_fields_by_line(redis_server, sqlite_uri, tmp_path):
    good = {"base_url": "https://journals.plos.org/plosone/article?id=10.1371/journal.pone.0213978"}
    lines = [
        good,
        dict(good, link_source="doi", link_source_id="1" * 10_000_000),
        {"base_url": "https://example.org/a\x00b.pdf"},
        dict(good, ingest_type="html", ext_ids={"doi": "10.1/x\r\n"}),
        dict(good, ingest_type="xml", link_source_id="10.1371/journal.pone.0213978", colour="red"),
    ]
    requests = tmp_path / "requests.jsonl"
    requests.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = _enqueue("ingest", requests, redis_server, sqlite_uri)
    assert out.returncode == 1, out.stdout + out.stderr[-3000:]
    assert "1 requests queued, 0 already seen, 0 items ignored (4 bad)" in out.stdout, out.stdout
    bad = _bad_lines(out, requests, "ingest request")
    assert sorted(bad) == [2, 3, 4, 5], out.stderr[-3000:]
    assert "line is longer than 65536 bytes" in bad[2]
    assert "base_url holds a control character" in bad[3]
    assert "ext_ids.doi holds a control character" in bad[4]
    assert "unknown key 'colour'" in bad[5]
    assert len(out.stderr) < 5000, "no megabyte echoed back"


def test_enqueue_laundromat_reports_each_seed_that_is_no_url_and_queues_the_rest(
    redis_server, sqlite_uri, tmp_path
):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(
        "# seeds\n"
        "https://www.w3.org/2013/N-TriplesTests/nt-syntax-file-01.nt\n"
        "http://exa\x00mple.org/b.ttl\n"
        "http://example.org/" + "c" * 20000 + "\n"
        "http://[example.org/c.ttl\n"
        "ftp://example.org/d.ttl\n"
        "http://example.org:99999/e.ttl\n"
    )
    out = _enqueue("laundromat", seeds, redis_server, sqlite_uri)
    assert out.returncode == 1, out.stdout + out.stderr[-3000:]
    assert "Traceback" not in out.stderr
    assert "1 requests queued, 0 already seen, 0 items ignored (5 bad)" in out.stdout, out.stdout
    bad = _bad_lines(out, seeds, "seed")
    assert sorted(bad) == [3, 4, 5, 6, 7], out.stderr[-3000:]
    assert "control character" in bad[3] and "line is longer than" in bad[4]
    assert "not a URL" in bad[5] and "not an http(s) or file: URL" in bad[6] and "not a URL" in bad[7]


def test_enqueue_refuses_a_host_list_entry_that_can_never_match_in_one_line(
    redis_server, sqlite_uri, tmp_path
):
    """The spider's start-up check of its host lists (from the environment here) is one line, exit 2."""
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps({"base_url": "https://example.org/paper.pdf"}) + "\n")
    out = _enqueue("ingest", requests, redis_server, sqlite_uri, INGEST_ALLOWED_HOSTS="https://example.org/")
    assert out.returncode == 2, out.stdout + out.stderr[-3000:]
    assert out.stderr.strip().splitlines() == [
        "votersdaily enqueue: INGEST_ALLOWED_HOSTS: 'https://example.org/' has a scheme; entries are host "
        "or host:port (e.g. 127.0.0.1:8080, example.org, [::1]:8080)"
    ]
    assert "queued" not in out.stdout


def test_enqueue_of_a_url_list_reports_each_line_that_is_no_url(redis_server, sqlite_uri, tmp_path):
    """The same for any spider's URL list (it stopped with a traceback on the first bad line): here
    vd_fetch's, a spider with a Redis-fed worker and no enqueue arguments of its own (an event
    spider's requests are refused: no worker reads them)."""
    urls = tmp_path / "urls.txt"
    urls.write_text(
        "https://clerk.house.gov/evs/2026/roll314.xml\n"
        "http://[clerk.house.gov/evs/2026/roll315.xml\n"
        "https://clerk.house.gov/evs/2026/roll316.xml\x07\n"
        "gopher://clerk.house.gov/\n"
    )
    out = _enqueue("vd_fetch", urls, redis_server, sqlite_uri)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stdout + out.stderr[-3000:]
    assert "1 requests queued, 0 already seen, 0 items ignored (3 bad)" in out.stdout, out.stdout
    bad = _bad_lines(out, urls, "input")
    assert sorted(bad) == [2, 3, 4]
    assert "not a URL" in bad[2] and "control character" in bad[3] and "not an http(s) or file: URL" in bad[4]


def test_enqueue_refuses_a_spider_no_worker_reads_and_queues_nothing(redis_server, sqlite_uri, tmp_path):
    """Only the ingest and the laundromat (and a project's own workers) have Redis-fed workers: an
    event spider's requests, queued, would wait under ``<spider>:requests`` for ever, and enqueue
    said they were queued. Now it says which spiders have workers, in one line, and queues nothing."""
    urls = tmp_path / "urls.txt"
    urls.write_text("https://clerk.house.gov/evs/2024/index.asp\n")
    out = _enqueue("house_votes", urls, redis_server, sqlite_uri)
    assert out.returncode == 2, out.stdout + out.stderr[-3000:]
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("votersdaily enqueue: no worker reads the queue of house_votes"), line
    assert "ingest (ingest_worker)" in line and "laundromat (laundromat_worker)" in line, line
    assert redis_server.client().keys("house_votes:*") == []
