"""The source archive and reparse on the real Clerk roll calls that house_votes replays offline: archive
a crawl (in the test process, every shipped recording, as ``crawl --offline`` replays them), change the
parser (tests/reparse_spiders.py: a field fixed, the key changed, an event no longer emitted), reparse
through the CLI as a maintainer runs it, with and without --dry-run. The reparses that write run on both
stores; what only concerns the archive runs on the embedded one."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.reparse_spiders import DROPPED_KEY
from tests.support.cli_main import run_main
from votersdaily.archive import read_responses
from votersdaily.spiders.house_votes import HouseVotesSpider
from votersdaily.store import open_store

pytestmark = pytest.mark.slow  # every shipped recording crawled, then reparsed through the CLI

FIXED = ("-s", "SPIDER_MODULES=tests.reparse_spiders")


def archive_env(tmp_path: Path) -> dict[str, str]:
    return {"VOTERSDAILY_ARCHIVE_DIR": str(tmp_path / "archive")}


def crawl_offline(crawl, uri: str, tmp_path: Path, *extra: str) -> None:
    """house_votes over every shipped recording (``crawl --offline house_votes``), archived under tmp_path."""
    proc = crawl("house_votes", HouseVotesSpider.recording_urls(), uri, *extra, env=archive_env(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]


def _archived(crawl, cli, uri: str, tmp_path: Path):
    crawl_offline(crawl, uri, tmp_path)

    def run(*args: str):
        """``python -m votersdaily reparse …`` (a subprocess: it runs Scrapy's own reactor)."""
        return cli(*args, store_uri=uri, env=archive_env(tmp_path))

    return run


@pytest.fixture
def archived(crawl, cli, store_uri, tmp_path):
    """house_votes crawled offline once into a fresh store of each kind, its documents archived."""
    return _archived(crawl, cli, store_uri, tmp_path)


@pytest.fixture
def archived_embedded(crawl, cli, sqlite_uri, tmp_path):
    """The same in the embedded store only: for what concerns the archive, not the store."""
    return _archived(crawl, cli, sqlite_uri, tmp_path)


def export_json(uri: str, tmp_path: Path):
    """``python -m votersdaily export json`` (in the test process: it runs no reactor)."""
    exported = run_main("export", "json", store_uri=uri, env=archive_env(tmp_path))
    assert exported.returncode == 0, exported.stderr[-2000:]
    return exported


def events(store_uri: str) -> dict[str, dict]:
    store = open_store(store_uri)
    try:
        return {d["_id"]: d for d in store.iter_docs("vd_events")}
    finally:
        store.close()


def logs(store_uri: str) -> list[dict]:
    store = open_store(store_uri)
    try:
        return sorted(store.iter_docs("vd_log"), key=lambda d: d["_id"])
    finally:
        store.close()


def test_every_event_points_at_the_archived_bytes_it_came_from(archived_embedded, sqlite_uri, tmp_path):
    stored = events(sqlite_uri)
    assert len(stored) == len(HouseVotesSpider.recordings)
    (warc,) = (tmp_path / "archive" / "house_votes").glob("house_votes-*.warc.gz")
    assert logs(sqlite_uri)[-1]["warc_file"] == warc.name
    for event in stored.values():
        assert event["warc_file"] == warc.name
        (record,) = [r for r in read_responses(warc) if r.warc_offset == event["warc_offset"]]
        assert record.record_id == event["warc_record_id"]
        assert record.url == event["replayed_from"]
        assert record.meta["vd_source_url"] == event["source_url"]
        # The archived bytes are the recording's, exactly.
        assert record.body == Path(event["replayed_from"].removeprefix("file://")).read_bytes()


def test_the_archived_record_and_its_events_share_one_fetch_time(crawl, sqlite_uri, tmp_path):
    """WARC-Date and access_datetime are the same moment (the clock seam, here frozen), so a reparse,
    which takes the time from the record, gives an event the time the crawl gave it."""
    moment = "2025-01-03T17:00:00Z"
    env = dict(archive_env(tmp_path), VOTERSDAILY_FROZEN_NOW=moment)
    proc = crawl("house_votes", HouseVotesSpider.recording_urls(), sqlite_uri, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (warc,) = (tmp_path / "archive" / "house_votes").glob("house_votes-*.warc.gz")
    assert {r.date for r in read_responses(warc)} == {moment}
    assert {e["access_datetime"] for e in events(sqlite_uri).values()} == {moment}


def test_an_unchanged_recrawl_keeps_the_first_archive_pointer(archived_embedded, crawl, sqlite_uri, tmp_path):
    before = events(sqlite_uri)
    crawl_offline(crawl, sqlite_uri, tmp_path)
    after = events(sqlite_uri)
    assert {i: (d["_rev"], d["warc_file"]) for i, d in after.items()} == {
        i: (d["_rev"], d["warc_file"]) for i, d in before.items()
    }


def test_a_reparse_brings_the_ids_to_history(crawl, cli, store_uri, tmp_path):
    """Roll calls stored and archived by house_votes 1.2 (tests/legacy_spiders.py: before ids) get
    their vote_id and bill_ids from the archive when the current version reparses them."""
    proc = crawl(
        "house_votes",
        HouseVotesSpider.recording_urls(),
        store_uri,
        "-s",
        "SPIDER_MODULES=tests.legacy_spiders",
        env=archive_env(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    before = events(store_uri)
    assert {d["parser_version"] for d in before.values()} == {"1.2"}
    assert not any("vote_id" in d or "bill_ids" in d for d in before.values())
    proc = cli("reparse", "house_votes", store_uri=store_uri, env=archive_env(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    after = events(store_uri)
    assert set(after) == set(before)
    assert {d["unique_key"]: (d["vote_id"], d["bill_ids"]) for d in after.values()} == {
        "119-2-314": ("h314-119.2026", ["s2403-119"]),
        "118-1-37": ("h37-118.2023", ["hr21-118"]),
        "118-1-2": ("h2-118.2023", []),
    }
    assert {d["parser_version"] for d in after.values()} == {HouseVotesSpider.version}
    store = open_store(store_uri)
    try:
        (row,) = store.query("vd_events", "by_bill", startkey=["s2403-119"], endkey=["s2403-119", {}])
        assert row.doc["unique_key"] == "119-2-314"
    finally:
        store.close()
    assert logs(store_uri)[-1]["parser_versions"] == ["1.2", HouseVotesSpider.version]


def test_dry_run_then_reparse_of_a_fixed_field(archived, store_uri):
    before = events(store_uri)
    dry = archived("reparse", "house_votes", "--dry-run", *FIXED, "-s", "REPARSE_TEST_CHANGE=fix")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "would insert 0, update %d, withdraw 0, replace 0" % len(before) in dry.stdout
    assert "(changes parser_version, title)" in dry.stdout
    assert events(store_uri) == before  # a dry run writes nothing, no run log either
    assert not any(log.get("reparse") for log in logs(store_uri))

    proc = archived("reparse", "house_votes", *FIXED, "-s", "REPARSE_TEST_CHANGE=fix")
    assert proc.returncode == 0, proc.stderr[-3000:]
    after = events(store_uri)
    assert set(after) == set(before)
    for doc_id, doc in after.items():
        assert doc["title"] == before[doc_id]["title"] + " (corrected)"
        assert doc["parser_version"] == "9.0"
        assert int(doc["_rev"].split("-")[0]) == int(before[doc_id]["_rev"].split("-")[0]) + 1
        assert doc["access_datetime"] == before[doc_id]["access_datetime"]  # when the document was fetched
    log = logs(store_uri)[-1]
    assert log["reparse"] is True and log["result"] == "success"
    assert log["parser_versions"] == [HouseVotesSpider.version, "9.0"] and log["updated_count"] == len(before)

    again = archived("reparse", "house_votes", *FIXED, "-s", "REPARSE_TEST_CHANGE=fix")
    assert again.returncode == 0, again.stderr[-3000:]
    assert {i: d["_rev"] for i, d in events(store_uri).items()} == {i: d["_rev"] for i, d in after.items()}
    assert logs(store_uri)[-1]["updated_count"] == 0  # idempotent


def test_a_key_change_replaces_each_event_once(archived, store_uri, tmp_path):
    before = events(store_uri)
    proc = archived("reparse", "house_votes", *FIXED, "-s", "REPARSE_TEST_CHANGE=key")
    assert proc.returncode == 0, proc.stderr[-3000:]
    after = events(store_uri)
    for old_id, old in before.items():
        new_id = after[old_id]["replaced_by"]
        assert after[new_id]["unique_key"] == "roll-" + old["unique_key"]
        assert "superseded_by" not in after[old_id]  # not a false reschedule
    exported = export_json(store_uri, tmp_path)
    ids = [e["_id"] for e in json.loads(exported.stdout)["events"]]
    assert sorted(ids) == sorted(i for i in after if i not in before)  # each event shown once
    assert logs(store_uri)[-1]["replaced_count"] == len(before)


def test_an_event_the_fixed_parser_no_longer_emits_is_withdrawn(archived, store_uri, tmp_path):
    before = events(store_uri)
    (dropped_id,) = [i for i, d in before.items() if d["unique_key"] == DROPPED_KEY]
    dry = archived("reparse", "house_votes", "--dry-run", *FIXED, "-s", "REPARSE_TEST_CHANGE=drop")
    assert "withdraw 1" in dry.stdout and dropped_id in dry.stdout, dry.stdout
    proc = archived("reparse", "house_votes", *FIXED, "-s", "REPARSE_TEST_CHANGE=drop")
    assert proc.returncode == 0, proc.stderr[-3000:]
    after = events(store_uri)
    assert after[dropped_id]["withdrawn_by"] == "house_votes 9.0"
    assert after[dropped_id]["title"] == before[dropped_id]["title"]  # kept, not deleted
    kept = [i for i in after if i != dropped_id]
    assert all("withdrawn_by" not in after[i] for i in kept)
    exported = export_json(store_uri, tmp_path)
    assert dropped_id not in exported.stdout
    assert logs(store_uri)[-1]["withdrawn_count"] == 1


@pytest.mark.parametrize(
    "change",
    [
        ("-s", "REPARSE_TEST_CHANGE=invalid"),  # its new event is dropped by a rule
        ("-s", "REPARSE_TEST_CHANGE=record"),  # its record cannot be read (dropped with its reason)
        ("-s", "REPARSE_TEST_CHANGE=raise"),  # the callback raises on it
        ("-s", "ITEM_PIPELINES={}"),  # no event reaches the id stage: none can be matched
    ],
    ids=["dropped", "record", "raised", "no-pipelines"],
)
def test_a_document_whose_new_events_failed_keeps_its_stored_events(archived, store_uri, change):
    """A parser's bug is no withdrawal: a document whose events the reparse dropped, failed, or could
    not tell apart (no id) is not judged, its stored events stay live as they were, and the run log
    counts it; the other documents are judged as ever."""
    before = events(store_uri)
    (bugged_id,) = [i for i, d in before.items() if d["unique_key"] == DROPPED_KEY]
    dry = archived("reparse", "house_votes", "--dry-run", *FIXED, *change)
    assert "withdraw 0, replace 0" in dry.stdout, dry.stdout + dry.stderr[-2000:]
    proc = archived("reparse", "house_votes", *FIXED, *change)
    # a dropped event or a raising callback fails the run, as in any crawl; no pipelines is no failure
    assert proc.returncode == (0 if "ITEM_PIPELINES={}" in change else 1), proc.stderr[-3000:]
    after = events(store_uri)
    assert not [i for i, d in after.items() if "withdrawn_by" in d or "replaced_by" in d]
    assert after[bugged_id]["title"] == before[bugged_id]["title"]
    log = logs(store_uri)[-1]
    unjudged = len(before) if "ITEM_PIPELINES={}" in change else 1
    assert log["reparse"] is True and log["unjudged_documents"] == unjudged, log
    assert log["withdrawn_count"] == log["replaced_count"] == 0
    assert "left as they are" in proc.stderr
    assert "'member_votes'" not in proc.stderr  # a dropped event is one line, not its 50 KB repr
    assert proc.stdout.splitlines()[0].split()[-1] == "unjudged", proc.stdout  # the table's last column
    if "ITEM_PIPELINES={}" not in change:  # the fixed parser's other events are written
        assert sum(d["parser_version"] == "9.0" for d in after.values()) == len(before) - 1


def test_a_parser_bug_on_every_document_shows_its_traceback_once(archived_embedded, sqlite_uri):
    """The fixed parser raises at the same line on every archived roll call: the first error comes with
    its traceback (where a parser's bug is found), each other is its one line naming the request and
    the error, not the same traceback again per document; the run log counts every one."""
    before = events(sqlite_uri)
    proc = archived_embedded("reparse", "house_votes", *FIXED, "-s", "REPARSE_TEST_CHANGE=raise-all")
    assert proc.returncode == 1, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if "Spider error processing" in line]
    assert len(errors) == len(before)  # one line per document, none left out
    assert proc.stderr.count("Traceback (most recent call last)") == 1, proc.stderr[-5000:]
    repeats = [line for line in errors if line.endswith("(traceback shown for the first)")]
    assert len(repeats) == len(before) - 1
    assert all('KeyError: "roll call ' in line and "has no 'legis-num'" in line for line in repeats), repeats
    assert events(sqlite_uri) == before  # nothing judged: every stored event stays as it was
    log = logs(sqlite_uri)[-1]
    assert log["unjudged_documents"] == log["error_count"] == len(before), log
    assert log["result"] == "KeyError" and log["traceback"].startswith("Traceback")


def test_reparse_never_fetches(cli, crawl, sqlite_uri, site, tmp_path):
    """A recorded roll call served over HTTP is crawled and archived; the reparse asks the site nothing."""
    env = archive_env(tmp_path)
    roll = HouseVotesSpider.recording_urls()[0].removeprefix("file://")
    url = site.route("/evs/2023/roll.xml", open(roll, "rb").read(), content_type="text/xml")
    proc = crawl("house_votes", [url], sqlite_uri, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    hits = dict(site.hits)
    assert hits.get("/evs/2023/roll.xml") == 1
    reparse = cli("reparse", "house_votes", store_uri=sqlite_uri, env=env)
    assert reparse.returncode == 0, reparse.stderr[-3000:]
    assert site.hits == hits
    assert logs(sqlite_uri)[-1]["reparse"] is True and logs(sqlite_uri)[-1]["unchanged_count"] == 1


def test_retention_removes_old_archive_files(archived_embedded, crawl, sqlite_uri, tmp_path):
    folder = tmp_path / "archive" / "house_votes"
    (first,) = folder.glob("*.warc.gz")
    crawl_offline(crawl, sqlite_uri, tmp_path, "-s", "VOTERSDAILY_ARCHIVE_MAX_BYTES=1")
    remaining = list(folder.glob("*.warc.gz"))
    assert len(remaining) == 1 and remaining[0] != first  # the run's own file is kept, the oldest goes
    with gzip.open(remaining[0], "rb") as handle:
        assert handle.read(8) == b"WARC/1.0"


def test_every_replayed_request_carries_the_same_callback_so_scrapy_reads_its_source_once(
    crawl, sqlite_uri, tmp_path
):
    """Scrapy reads and parses a generator callback's source to warn of a returned value, and
    remembers the answer only while that very callable lives (a weak cache); a replay's requests live
    one at a time, so a new bound method per request had it read the source for every archived
    document (a tenth of a reparse). Every request of the replay carries one callable."""
    import asyncio

    from scrapy.utils.test import get_crawler

    crawl_offline(crawl, sqlite_uri, tmp_path)
    crawler = get_crawler(HouseVotesSpider, {"VOTERSDAILY_ARCHIVE_DIR": str(tmp_path / "archive")})
    spider = HouseVotesSpider.from_crawler(crawler, reparse="archive")

    async def replay() -> list:
        requests = []
        async for request in spider.archived_requests():
            requests.append(request)
            spider._replayed.callback(None)  # as the parse of the archived response does
        return requests

    requests = asyncio.run(replay())
    assert len(requests) >= 3
    assert all(request.callback is requests[0].callback for request in requests)
    assert all(request.errback is requests[0].errback for request in requests)
    assert requests[0].callback == spider._parse_archived


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "hashlib"])
def test_a_source_texts_digest_is_equal_exactly_for_equal_texts(compiled, monkeypatch):
    """What a reparse keeps of each produced event's source_text to find a withdrawn event's successor
    (votersdaily/reparse.py:text_digest): equal texts give equal digests, different ones different
    digests (texts of each width, a lone surrogate's, one character apart); anything but a str is
    kept as it is and equals no digest. With and without the compiled MD5."""
    from votersdaily.reparse import text_digest
    from votersdaily.store import embedded

    if not compiled:
        monkeypatch.setattr(embedded, "_compiled_text_md5", None)
    texts = [
        "",
        "<p>a</p>",
        "<p>b</p>",
        "é" * 900,
        "é" * 899 + "e",
        "😀\u2028",
        "a\ud800",
        "a\udfff",
        "b\ud800",
    ]
    digests = [text_digest(text) for text in texts]
    assert [text_digest("".join(list(text))) for text in texts] == digests  # equal, not the same object
    assert len(set(digests)) == len(texts)
    for value in (None, 7, ["<p>a</p>"], {"t": "<p>a</p>"}):
        assert text_digest(value) == value and value not in digests


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "hashlib"])
def test_what_a_reparse_keeps_of_each_scraped_event_is_its_pointer_and_text_digest(compiled, monkeypatch):
    """``ReparseExtension.item_scraped`` keeps each event's archive pointer and the
    :func:`~votersdaily.reparse.text_digest` of its source_text (made there without a call in the
    common case): the same digest for texts of each width, a lone surrogate's, a str subclass's and
    what is no text."""
    from types import SimpleNamespace

    from votersdaily.items import EventItem
    from votersdaily.reparse import Reparse, ReparseExtension, text_digest
    from votersdaily.store import embedded

    if not compiled:
        monkeypatch.setattr(embedded, "_compiled_text_md5", None)

    class Text(str):
        pass

    sources = ["", "<p>a</p>", "é" * 900, "😀\u2028", "a\ud800", Text("<p>a</p>"), None, 7, ["<p>a</p>"]]
    extension = ReparseExtension.__new__(ReparseExtension)
    extension.context = SimpleNamespace(reparse=Reparse())
    for n, source in enumerate(sources):
        item = EventItem(_id="e%d" % n, datetime="2026-10-02T18:00:00Z", source_text=source)
        item.update(warc_file="f.warc.gz", warc_offset=10 * n, warc_record_id="<urn:uuid:%d>" % (n % 3))
        extension.item_scraped(item, None, None)
    reparse = extension.context.reparse
    assert reparse.sources == {
        "e%d" % n: ("f.warc.gz", 10 * n, "<urn:uuid:%d>" % (n % 3)) for n in range(len(sources))
    }
    kept = [event for record in sorted(reparse.produced) for event in reparse.produced[record]]
    assert sorted(kept, key=lambda event: int(event[0][1:])) == [
        ("e%d" % n, "2026-10-02T18:00:00Z", text_digest(source)) for n, source in enumerate(sources)
    ]
