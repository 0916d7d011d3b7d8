"""``enqueue ingest`` checks every field of every request before it reaches the shared queue, and
names each bad line by its number (issue 24, point 10: a 10 MB ``link_source_id`` and a NUL inside
``base_url`` were queued)."""

from __future__ import annotations

import json
import sys

from tests.deploy.conftest import process_env
from tests.support.services import run_cli


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
    env = process_env(sqlite_uri, VOTERSDAILY_REDIS_URL=redis_server.url)
    out = run_cli(
        [sys.executable, "-m", "votersdaily", "enqueue", "ingest", str(requests)],
        sqlite_uri,
        env={k: env[k] for k in ("VOTERSDAILY_REDIS_URL", "SCRAPY_SETTINGS_MODULE")},
    )
    assert out.returncode == 1, out.stdout + out.stderr[-3000:]
    assert "1 requests queued, 0 already seen, 0 items ignored (4 bad)" in out.stdout, out.stdout
    bad = {
        int(line.split("%s:" % requests, 1)[1].split(":", 1)[0]): line
        for line in out.stderr.splitlines()
        if "bad ingest request at %s:" % requests in line
    }
    assert sorted(bad) == [2, 3, 4, 5], out.stderr[-3000:]
    assert "line is longer than 65536 bytes" in bad[2]
    assert "base_url holds a control character" in bad[3]
    assert "ext_ids.doi holds a control character" in bad[4]
    assert "unknown key 'colour'" in bad[5]
    assert len(out.stderr) < 5000, "no megabyte echoed back"
