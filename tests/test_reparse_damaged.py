"""``reparse`` over a damaged or missing archive, and against a
store that does not answer. Every damaged archive here is derived from the real archive of an offline
crawl of the shipped recordings (house_floor: the 133 events from three Clerk floor summaries;
house_votes: three roll calls, reparsed with the fixed parser of tests/reparse_spiders.py), damaged as
the issue damaged it: one flipped byte, a file cut inside a record or at a record boundary, the folder
deleted. The dry run and the real run must end alike."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.support.services import free_port
from tests.test_reparse import FIXED, archive_env, events, logs
from votersdaily.plumbing.warc_reader import WarcRecordAt, iter_records, read_record_at
from votersdaily.spiders.house_floor import HouseFloorSpider
from votersdaily.spiders.house_votes import HouseVotesSpider

pytestmark = pytest.mark.slow  # offline crawls, then reparses of damaged archives through the CLI


def warcs(tmp_path: Path, spider: str) -> list[Path]:
    return sorted((tmp_path / "archive" / spider).glob("*.warc.gz"))


def response_offsets(path: Path) -> list[int]:
    """Where each response record of a sound WARC starts (each is followed by its request record)."""
    offsets = []
    for entry in iter_records(path):
        assert isinstance(entry, WarcRecordAt), entry
        if entry.record.rec_type == "response":
            offsets.append(entry.offset)
        entry.record.content_stream().read()
    return offsets


def crawled(crawl, uri: str, tmp_path: Path, spidercls, runs: int = 1) -> None:
    for _ in range(runs):
        proc = crawl(spidercls.name, spidercls.recording_urls(), uri, env=archive_env(tmp_path))
        assert proc.returncode == 0, proc.stderr[-3000:]


def both_runs(cli, uri: str, tmp_path: Path, *args: str):
    """``reparse --dry-run`` then ``reparse``, with the same arguments."""
    dry = cli("reparse", "--dry-run", *args, store_uri=uri, env=archive_env(tmp_path))
    real = cli("reparse", *args, store_uri=uri, env=archive_env(tmp_path))
    return dry, real


def dump(database: Path) -> list[str]:
    """Every row of an embedded store (SQLite may fold its write-ahead log into the file when a later
    process opens it: the bytes change, the content must not)."""
    connection = sqlite3.connect(database)
    try:
        return list(connection.iterdump())
    finally:
        connection.close()


def assert_printable(log: dict) -> None:
    """Nothing from a damaged record enters a stored message raw."""
    for error in log["errors"]:
        assert error["message"].isascii() and error["message"].isprintable(), error


def test_one_flipped_byte_costs_one_record_not_the_spiders_reparse(crawl, cli, sqlite_uri, tmp_path):
    """The issue: one flipped byte stopped house_floor's reparse at 48 of 133 items, its second, intact
    WARC never read, the file not named. Now the record is named (file, offset) and skipped, both WARCs
    are read, and the events that pointed at the damaged record point at the intact copy."""
    crawled(crawl, sqlite_uri, tmp_path, HouseFloorSpider, runs=2)  # unchanged events keep the 1st WARC
    first, second = warcs(tmp_path, "house_floor")
    offsets = response_offsets(first)
    data = bytearray(first.read_bytes())
    data[offsets[1] + 300] ^= 0xFF  # a byte inside the second document's compressed record
    first.write_bytes(bytes(data))
    before = events(sqlite_uri)
    damaged_ids = {i for i, e in before.items() if e["warc_offset"] == offsets[1]}
    assert damaged_ids

    dry, real = both_runs(cli, sqlite_uri, tmp_path, "house_floor")
    assert (dry.returncode, real.returncode) == (1, 1), dry.stderr[-2000:] + real.stderr[-2000:]
    for proc in (dry, real):
        assert "damaged WARC %s at offset %d" % (first, offsets[1]) in proc.stderr
    assert "%d events would point at another copy of their document" % len(damaged_ids) in dry.stdout
    log = logs(sqlite_uri)[-1]
    assert log["reparse"] is True and log["result"] == "DamagedWarc"
    assert [(d["warc_file"], d["offset"]) for d in log["damaged"]] == [(first.name, offsets[1])]
    assert log["reparse_files"] == [first.name, second.name]
    assert log["replayed_documents"] == 2 * len(HouseFloorSpider.recordings) - 1  # all but the damaged one
    assert log["unchanged_count"] == len(before) and log["unverified_count"] == 0
    assert log["repointed_count"] == len(damaged_ids)
    assert_printable(log)
    after = events(sqlite_uri)
    assert set(after) == set(before)
    for doc_id, event in after.items():
        record = read_record_at(first.parent / event["warc_file"], event["warc_offset"])
        assert record.rec_headers.get_header("WARC-Record-ID") == event["warc_record_id"]
        assert (event["warc_file"] == second.name) == (doc_id in damaged_ids)
        # the pointer moved, nothing else: the reparse reads events cut to a few fields, and repoints
        # the whole document
        assert set(event) == set(before[doc_id])
        assert {k: v for k, v in event.items() if not k.startswith(("warc_", "_rev"))} == {
            k: v for k, v in before[doc_id].items() if not k.startswith(("warc_", "_rev"))
        }


def test_a_warc_cut_inside_a_record_names_the_warc_in_both_runs(crawl, cli, sqlite_uri, tmp_path):
    """The issue: the dry run said "76 unchanged", exit 0, and the real run exit 1 naming the source
    document. Both now exit 1 naming the WARC; the event of the cut record keeps its old parser
    version and is listed as not verified."""
    crawled(crawl, sqlite_uri, tmp_path, HouseVotesSpider)
    (warc,) = warcs(tmp_path, "house_votes")
    last = response_offsets(warc)[-1]
    warc.write_bytes(warc.read_bytes()[: last + 200])
    dry, real = both_runs(cli, sqlite_uri, tmp_path, "house_votes", *FIXED, "-s", "REPARSE_TEST_CHANGE=fix")
    assert (dry.returncode, real.returncode) == (1, 1), dry.stderr[-2000:] + real.stderr[-2000:]
    for proc in (dry, real):
        assert "damaged WARC %s at offset %d (to its end): the file ends inside this record" % (
            warc,
            last,
        ) in (proc.stderr)
    log = logs(sqlite_uri)[-1]
    assert log["result"] == "DamagedWarc" and warc.name in log["error_message"]
    (unverified,) = log["unverified"]
    assert unverified["warc_offset"] == last and unverified["reason"] == "its record is damaged"
    versions = {i: e["parser_version"] for i, e in events(sqlite_uri).items()}
    assert versions.pop(unverified["_id"]) == HouseVotesSpider.version
    assert set(versions.values()) == {"9.0"}
    assert_printable(log)


def test_a_warc_cut_at_a_record_boundary_reports_the_event_left_behind(crawl, cli, sqlite_uri, tmp_path):
    """The issue: "success", and one event silently kept the old parser version. The file itself reads
    back clean; the event's pointer is what cannot be verified."""
    crawled(crawl, sqlite_uri, tmp_path, HouseVotesSpider)
    (warc,) = warcs(tmp_path, "house_votes")
    last = response_offsets(warc)[-1]
    warc.write_bytes(warc.read_bytes()[:last])
    dry, real = both_runs(cli, sqlite_uri, tmp_path, "house_votes", *FIXED, "-s", "REPARSE_TEST_CHANGE=fix")
    assert (dry.returncode, real.returncode) == (1, 1), dry.stderr[-2000:] + real.stderr[-2000:]
    assert "1 stored events not verified" in dry.stdout
    log = logs(sqlite_uri)[-1]
    assert log["result"] == "UnverifiedEvents" and log["damaged_count"] == 0
    (unverified,) = log["unverified"]
    assert (unverified["warc_file"], unverified["warc_offset"]) == (warc.name, last)
    assert unverified["reason"].startswith("no response record starts at its offset")
    assert events(sqlite_uri)[unverified["_id"]]["parser_version"] == HouseVotesSpider.version
    assert "UnverifiedEvents" in real.stdout


def test_a_deleted_archive_folder_is_no_empty_archive(crawl, cli, sqlite_uri, tmp_path):
    """The issue: "no archived runs", exit 0, while the stored events pointed at WARCs."""
    crawled(crawl, sqlite_uri, tmp_path, HouseVotesSpider)
    shutil.rmtree(tmp_path / "archive")
    dry, real = both_runs(cli, sqlite_uri, tmp_path)
    assert (dry.returncode, real.returncode) == (1, 1), dry.stderr[-2000:] + real.stderr[-2000:]
    assert "no archived runs" not in dry.stdout + real.stdout
    folder = (tmp_path / "archive" / "house_votes").absolute()
    assert (
        "%d stored events point at records of %s" % (len(HouseVotesSpider.recordings), folder) in real.stderr
    )
    log = logs(sqlite_uri)[-1]
    assert log["result"] == "UnverifiedEvents" and log["unverified_count"] == len(HouseVotesSpider.recordings)
    assert {u["reason"] for u in log["unverified"]} == {"its WARC file is not in the archive folder"}


def test_retention_leaves_no_unverifiable_event_behind(crawl, cli, sqlite_uri, tmp_path):
    """A WARC file the retention removed is listed (retired.txt): the events that pointed into it are
    counted as retired, not failed."""
    first, second, _ = HouseVotesSpider.recording_urls()
    env = archive_env(tmp_path)
    assert crawl("house_votes", [first], sqlite_uri, env=env).returncode == 0
    (old,) = warcs(tmp_path, "house_votes")
    proc = crawl("house_votes", [second], sqlite_uri, "-s", "VOTERSDAILY_ARCHIVE_MAX_BYTES=1", env=env)
    assert proc.returncode == 0 and not old.exists()
    assert (old.parent / "retired.txt").read_text() == old.name + "\n"
    reparse = cli("reparse", "house_votes", store_uri=sqlite_uri, env=env)
    assert reparse.returncode == 0, reparse.stderr[-2000:]
    log = logs(sqlite_uri)[-1]
    assert log["result"] == "success" and log["retired_count"] == 1 and log["verified_count"] == 1


def test_reparse_against_a_stopped_store_is_one_line_exit_3_and_spools_nothing(
    crawl, cli, sqlite_uri, tmp_path
):
    """Before: ~1,000 lines of tracebacks and exit 1, and a dry run that spooled 12 run logs."""
    crawled(crawl, sqlite_uri, tmp_path, HouseVotesSpider)
    stopped = "http://127.0.0.1:%d/" % free_port()
    spool = tmp_path / "spool"
    env = dict(archive_env(tmp_path), VOTERSDAILY_SPOOL_DIR=str(spool))
    for args in (("--dry-run",), ()):
        proc = cli("reparse", *args, store_uri=stopped, env=env)
        assert proc.returncode == 3, proc.stderr[-2000:]
        assert proc.stderr.splitlines() == [
            "votersdaily reparse: cannot reach the store at %s (connection refused): start CouchDB or "
            "PouchDB Server there, or fix host and port in $VOTERSDAILY_STORE" % stopped
        ]
        assert not spool.exists() or not any(spool.iterdir())


def test_a_dry_run_writes_nothing_and_creates_no_store(crawl, cli, sqlite_uri, tmp_path):
    crawled(crawl, sqlite_uri, tmp_path, HouseVotesSpider)
    database = Path(sqlite_uri.removeprefix("sqlite:///"))
    before = dump(database)
    spool = tmp_path / "spool"
    env = dict(archive_env(tmp_path), VOTERSDAILY_SPOOL_DIR=str(spool))
    dry = cli("reparse", "--dry-run", *FIXED, "-s", "REPARSE_TEST_CHANGE=fix", store_uri=sqlite_uri, env=env)
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert dump(database) == before and not spool.exists()
    absent = tmp_path / "absent.db"
    dry = cli("reparse", "--dry-run", store_uri="sqlite:///%s" % absent, env=env)
    assert dry.returncode == 2 and "no store at" in dry.stderr and not absent.exists()
