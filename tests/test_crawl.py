"""End-to-end crawls into real stores (``scrapy crawl`` as a user runs it, in the test process: the
``crawl`` fixture; ``python -m votersdaily crawl`` in a subprocess): idempotence, updates,
reschedules, the run log, and bad input that loses nothing."""

from __future__ import annotations

import json

import pytest

from tests.conftest import recording
from tests.support.cli_main import run_main
from votersdaily.spiders.house_votes import HouseVotesSpider
from votersdaily.store import open_store

ROLL314 = recording("gov/house_roll_call/roll314.xml")
ROLL037 = recording("gov/house_roll_call/clerk-2023-roll037-committee.excerpt.xml")
ERROR_BODY = recording("gov/house_clerk_votes/roll315_NEGATIVE_error_body.xml")
ID314 = "2026-09-16T23:05:00Z-house_votes-119-2-314"
ID037 = "2023-01-26T22:23:00Z-house_votes-118-1-37"


def logs(store, parser="house_votes"):
    rows = store.query("vd_log", "by_parser", startkey=[parser], endkey=[parser, {}])
    return [r.doc for r in rows]


def events(store):
    return {d["_id"]: d for d in store.iter_docs("vd_events")} if "vd_events" in store.list_dbs() else {}


EVENT_SPIDERS = {
    "house_votes",
    "senate_votes",
    "house_committee_meetings",
    "senate_committee_hearings",
    "house_floor",
    "house_floor_schedule",
    "senate_floor_schedule",
    "federal_register",
    "supreme_court_orders",
    "supreme_court_opinions",
    "supreme_court_arguments",
    "white_house",
}
T1 = {"VOTERSDAILY_FROZEN_NOW": "2026-10-02T18:00:00Z"}
T2 = {"VOTERSDAILY_FROZEN_NOW": "2026-10-03T18:00:00Z"}


def ok(proc):
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def failed(proc):
    """`scrapy crawl` of a run that failed (the project's command: votersdaily/commands/crawl.py)."""
    assert proc.returncode == 1, proc.stderr[-3000:]
    return proc


def test_same_crawl_twice_inserts_nothing_the_second_time(crawl, store_uri, frozen_now):
    ok(crawl("house_votes", [ROLL314, ROLL037], store_uri))
    ok(
        crawl(
            "house_votes",
            [ROLL314, ROLL037],
            store_uri,
            env={"VOTERSDAILY_FROZEN_NOW": "2026-10-03T09:00:00Z"},
        )
    )
    store = open_store(store_uri)
    docs = events(store)
    assert set(docs) == {ID314, ID037}
    assert docs[ID314]["_rev"].startswith("1-")
    # The first access time is kept; the run log carries the latest.
    assert docs[ID314]["access_datetime"] == frozen_now
    first, second = logs(store)
    assert (first["insert_count"], first["updated_count"], first["unchanged_count"]) == (2, 0, 0)
    assert (second["insert_count"], second["updated_count"], second["unchanged_count"]) == (0, 0, 2)
    assert second["result"] == "success" and second["access_datetime"] == "2026-10-03T09:00:00Z"
    assert first["_id"] == "2026-10-02T18:00:00Z-house_votes-success"
    assert first["source_url"] == "https://clerk.house.gov/evs/2026/roll314.xml"
    assert first["source_text"] == ROLL314.read_bytes().decode("utf-8")
    assert isinstance(first["parser_runtime"], float) and first["parser_version"] == HouseVotesSpider.version


def test_stored_event_document(crawl, sqlite_uri, frozen_now):
    ok(crawl("house_votes", [ROLL314], sqlite_uri))
    doc = events(open_store(sqlite_uri))[ID314]
    assert doc["datetime"] == "2026-09-16T23:05:00Z"  # 7:05 PM EDT
    assert doc["branch"] == "Legislative" and doc["entity"] == "House of Representatives"
    assert doc["source_timezone"] == "America/New_York" and doc["parser_name"] == "house_votes"
    assert doc["end_datetime"] is None and doc["unique_key"] == "119-2-314"
    assert doc["vote_totals"] == {"yea": 401, "nay": 14, "present": 0, "not_voting": 18}
    assert doc["source_text"].startswith("<rollcall-vote>") and doc["source_text"].endswith(
        "</rollcall-vote>"
    )
    assert doc["replayed_from"] == ROLL314.resolve().as_uri()


def test_changed_event_gets_a_new_revision(crawl, tmp_path, sqlite_uri):
    changed = tmp_path / "roll314.xml"
    ok(crawl("house_votes", [ROLL314], sqlite_uri, env=T1))
    changed.write_bytes(
        ROLL314.read_bytes().replace(
            b"<vote-result>Passed</vote-result>", b"<vote-result>Failed</vote-result>"
        )
    )
    ok(crawl("house_votes", [changed], sqlite_uri, env=T2))
    store = open_store(sqlite_uri)
    doc = events(store)[ID314]
    assert doc["_rev"].startswith("2-") and doc["vote_result"] == "Failed"
    assert logs(store)[-1]["updated_count"] == 1


def test_reschedule_marks_the_old_document(crawl, tmp_path, store_uri):
    ok(crawl("house_votes", [ROLL314], store_uri))
    moved = tmp_path / "roll314.xml"
    moved.write_bytes(ROLL314.read_bytes().replace(b'time-etz="19:05">7:05 PM', b'time-etz="20:15">8:15 PM'))
    ok(crawl("house_votes", [moved], store_uri))
    docs = events(open_store(store_uri))
    new_id = "2026-09-17T00:15:00Z-house_votes-119-2-314"
    assert set(docs) == {ID314, new_id}
    assert docs[ID314]["superseded_by"] == new_id
    assert "superseded_by" not in docs[new_id]
    # Moved back: the original is current again and the other one is superseded.
    ok(crawl("house_votes", [ROLL314], store_uri))
    docs = events(open_store(store_uri))
    assert "superseded_by" not in docs[ID314]
    assert docs[new_id]["superseded_by"] == ID314


@pytest.mark.slow  # two crawls held back by a slow store
def test_a_store_that_falls_behind_pauses_the_engine(crawl, tmp_path):
    """Back-pressure reaches the downloader: while the writer holds events back nothing new is
    fetched (only the requests already handed to the downloader land, at most CONCURRENT_REQUESTS per
    pause), while without pausing the crawl goes on downloading and Scrapy parks more responses than
    that (which the setting allows); nothing is lost either way. Bounds from the settings, not timing
    ratios: how far the writer falls behind depends on the machine's load."""
    concurrency = 8

    def run(name, *extra):
        report, uri = tmp_path / ("%s.json" % name), "sqlite:///%s" % (tmp_path / ("%s.db" % name))
        ok(
            crawl(
                "repeated_house_floor",
                None,
                uri,
                "-a",
                "count=2400",
                "-a",
                "report=%s" % report,
                "-s",
                "SPIDER_MODULES=tests.repeating_spiders",
                "-s",
                "VOTERSDAILY_BATCH_SIZE=50",
                "-s",
                "VOTERSDAILY_MAX_PENDING_BATCHES=1",
                "-s",
                "CONCURRENT_REQUESTS=%d" % concurrency,
                *extra,
            )
        )
        result = json.loads(report.read_text())
        stats = result["stats"]
        assert stats["item_scraped_count"] == stats["store/vd_events/inserted"] == 2400
        assert len(events(open_store(uri))) == 2400
        return result, stats.get("store/engine_paused", 0)

    paused, pauses = run("paused")
    running, no_pauses = run("running", "-s", "VOTERSDAILY_PAUSE_ENGINE_ON_BACKPRESSURE=False")
    assert pauses > 0 and no_pauses == 0
    assert paused["most_landed_in_one_pause"] <= concurrency, paused
    assert running["peak_parked"] > concurrency, running


def test_error_body_served_with_200_is_a_logged_failure(crawl, store_uri):
    failed(crawl("house_votes", [ROLL314, ERROR_BODY], store_uri))
    store = open_store(store_uri)
    assert set(events(store)) == {ID314}
    (log,) = logs(store)
    assert log["result"] == "ErrorPage"
    assert "Error sanitizing file" in log["error_message"]
    assert "ErrorPage" in log["traceback"] and "Traceback" in log["traceback"]
    assert log["insert_count"] == 1
    assert log["_id"].endswith("-house_votes-ErrorPage")
    assert [r.id for r in store.query("vd_log", "errors")] == [log["_id"]]


@pytest.mark.parametrize(
    "name, corrupt, exception",
    [
        ("truncated", lambda b: b[: len(b) // 2], "MalformedDocument"),
        ("wrong_root", lambda b: b.replace(b"rollcall-vote>", b"vote-summary>"), "UnexpectedDocument"),
        (
            "non_utf8",
            lambda b: b.replace("Barragán".encode(), "Barrag\xe1n".encode("latin-1")),
            "MalformedDocument",
        ),
        ("empty", lambda b: b"", "MalformedDocument"),
    ],
)
def test_bad_documents_are_logged_and_touch_nothing(crawl, tmp_path, sqlite_uri, name, corrupt, exception):
    ok(crawl("house_votes", [ROLL037], sqlite_uri, env=T1))
    store = open_store(sqlite_uri)
    before = events(store)
    bad = tmp_path / ("roll314_%s.xml" % name)
    bad.write_bytes(corrupt(ROLL314.read_bytes()))
    failed(crawl("house_votes", [bad], sqlite_uri, env=T2))
    store = open_store(sqlite_uri)
    assert events(store) == before  # nothing stored, nothing already stored changed
    log = logs(store)[-1]
    assert log["result"] == exception, log.get("error_message")
    assert log["insert_count"] == 0 and log["traceback"]


@pytest.mark.parametrize(
    "spider, reason",
    [
        ("invalid_branch_votes", "branch"),
        ("missing_title_votes", "missing:title"),
    ],
)
def test_invalid_events_are_dropped_with_their_reason(crawl, sqlite_uri, spider, reason):
    proc = failed(  # every record of both replies dropped: AllRecordsDropped
        crawl(spider, [ROLL314, ROLL037], sqlite_uri, "-s", "SPIDER_MODULES=tests.misconfigured_spiders")
    )
    assert "invalid event (%s)" % reason in proc.stderr
    store = open_store(sqlite_uri)
    assert events(store) == {}
    (log,) = logs(store, spider)
    assert log["dropped"] == {reason: 2} and log["dropped_count"] == 2 and log["insert_count"] == 0


# Stats are output for operators, not the run log's channel: with Scrapy's stats switched off
# (DummyStatsCollector keeps nothing) the run log still has the store's and the drops' counts.
@pytest.mark.parametrize(
    "stats", ["scrapy.statscollectors.MemoryStatsCollector", "scrapy.statscollectors.DummyStatsCollector"]
)
def test_one_bad_event_does_not_stop_the_others(crawl, sqlite_uri, stats):
    failed(  # roll 37's only record dropped: that reply fails the run (AllRecordsDropped)
        crawl(
            "partly_broken_votes",
            [ROLL314, ROLL037],
            sqlite_uri,
            "-s",
            "SPIDER_MODULES=tests.misconfigured_spiders",
            "-s",
            "STATS_CLASS=" + stats,
        )
    )
    store = open_store(sqlite_uri)
    assert [d["unique_key"] for d in events(store).values()] == ["119-2-314"]
    (log,) = logs(store, "partly_broken_votes")
    assert log["insert_count"] == 1 and log["dropped"] == {"missing:title": 1}
    assert log["store"] == {"vd_events": {"inserted": 1}} and log["dropped_count"] == 1
    assert log["items_scraped"] == 1 and not log["empty"]


def test_large_source_text_goes_to_an_attachment(crawl, store_uri):
    ok(crawl("house_votes", [ROLL314], store_uri, "-s", "VOTERSDAILY_LOG_INLINE_LIMIT=10000"))
    store = open_store(store_uri)
    (log,) = logs(store)
    assert log["source_text_truncated"] is True and len(log["source_text"]) == 4096
    assert log["_attachments"]["source_text"]["length"] == len(ROLL314.read_bytes())
    assert store.get_attachment("vd_log", log["_id"], "source_text") == ROLL314.read_bytes()


def test_unreachable_source_is_a_logged_failure(crawl, sqlite_uri):
    from tests.support.services import free_port

    url = "http://127.0.0.1:%d/evs/2026/roll314.xml" % free_port()
    failed(crawl("house_votes", [url], sqlite_uri, "-s", "RETRY_TIMES=0"))
    (log,) = logs(open_store(sqlite_uri))
    assert log["result"] == "DownloadConnectionRefusedError"
    assert log["errors"][0]["url"] == url and log["traceback"]


def test_http_error_status_is_a_logged_failure(crawl, site, sqlite_uri):
    url = site.route(
        "/evs/2026/roll999.xml", "<html><body>Not Found</body></html>", status=404, content_type="text/html"
    )
    failed(crawl("house_votes", [url], sqlite_uri))
    (log,) = logs(open_store(sqlite_uri))
    assert log["result"] == "HttpError" and "404" in log["error_message"]


def test_robots_txt_and_user_agent(crawl, site, sqlite_uri):
    site.route("/robots.txt", "User-agent: *\nDisallow: /private/\n", content_type="text/plain")
    allowed = site.route("/evs/roll314.xml", ROLL314.read_bytes(), content_type="application/xml")
    forbidden = site.route("/private/roll037.xml", ROLL037.read_bytes(), content_type="application/xml")
    failed(crawl("house_votes", [allowed, forbidden], sqlite_uri))  # a document robots.txt forbids
    assert site.hits.get("/private/roll037.xml") is None
    agents = {headers.get("User-Agent") for _, path, headers in site.requests}
    assert len(agents) == 1 and agents.pop().startswith("votersdaily/")
    assert [d["unique_key"] for d in events(open_store(sqlite_uri)).values()] == ["119-2-314"]
    del forbidden


@pytest.mark.slow  # `crawl --all --offline` of every spider, twice
def test_cli_crawl_all_offline_dump_and_views(cli, store_uri):
    first = cli("crawl", "--all", "--offline", store_uri=store_uri)
    assert first.returncode == 0, first.stderr[-3000:]
    header, _rule, *rows = first.stdout.strip().splitlines()
    assert header.split() == [
        "spider",
        "result",
        "inserted",
        "updated",
        "unchanged",
        "duplicate",
        "dropped",
        "items",
        "spooled",
        "seconds",
    ]
    table = {line.split()[0]: line.split() for line in rows}
    assert set(table) >= EVENT_SPIDERS
    assert all(table[name][1] == "success" for name in EVENT_SPIDERS), first.stdout
    assert table["house_votes"][1:3] == ["success", "3"]
    # The two Federal Register recordings share three documents: counted once as duplicates.
    inserted, duplicate, items = (int(table["federal_register"][i]) for i in (2, 5, 7))
    assert inserted + duplicate == items
    second = cli("crawl", "--all", "--offline", store_uri=store_uri)
    assert second.returncode == 0
    for line in second.stdout.strip().splitlines()[2:]:
        cells = line.split()
        if cells[1] == "success":
            assert cells[2:4] == ["0", "0"], line  # nothing inserted or updated on the second run
    # The commands that run no crawl, in this process (tests/support/cli_main.py).
    dump = run_main("dump", "vd_events", store_uri=store_uri)
    ids = [json.loads(line)["_id"] for line in dump.stdout.splitlines()]
    assert ID314 in ids and ID037 in ids
    assert run_main("views", "push", store_uri=store_uri).stdout.count("up to date") == 2
    assert run_main("dump", "no_such_db", store_uri=store_uri).returncode == 2


@pytest.mark.slow  # three `crawl --due` CLI runs
def test_crawl_due_uses_each_spiders_frequency(cli, sqlite_uri):
    from scrapy.utils.project import get_project_settings

    from votersdaily.cli.crawl import event_spiders
    from votersdaily.spiders.base import EventSpider

    frequencies = {name: cls.frequency_hours for name, cls in event_spiders(get_project_settings()).items()}
    assert all(isinstance(f, (int, float)) and f > 0 for f in frequencies.values())
    assert EventSpider.frequency_hours > 0
    names = ["house_votes", "house_floor_schedule"]  # 1 h and 6 h

    def table(proc):
        assert proc.returncode == 0, proc.stderr[-2000:]
        return {line.split()[0]: line.split()[1] for line in proc.stdout.splitlines()[2:]}

    at = lambda t: {"VOTERSDAILY_FROZEN_NOW": t}  # noqa: E731
    first = table(
        cli("crawl", "--offline", "--due", *names, store_uri=sqlite_uri, env=at("2026-10-02T18:00:00Z"))
    )
    assert first == {"house_votes": "success", "house_floor_schedule": "success"}
    soon = table(
        cli("crawl", "--offline", "--due", *names, store_uri=sqlite_uri, env=at("2026-10-02T18:30:00Z"))
    )
    assert soon == {"house_votes": "not", "house_floor_schedule": "not"}  # "not due"
    later = table(
        cli("crawl", "--offline", "--due", *names, store_uri=sqlite_uri, env=at("2026-10-02T19:00:00Z"))
    )
    assert later == {"house_votes": "success", "house_floor_schedule": "not"}
    assert frequencies["house_votes"] == 1.0 and frequencies["house_floor_schedule"] == 6.0


def test_crawl_takes_settings(cli, sqlite_uri):
    proc = cli(
        "crawl", "--offline", "house_votes", "-s", "VOTERSDAILY_LOG_INLINE_LIMIT=1000", store_uri=sqlite_uri
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (log,) = logs(open_store(sqlite_uri))
    assert log["source_text_truncated"] is True
    assert run_main("crawl", "house_votes", "-s", "NOEQUALS", store_uri=sqlite_uri).returncode == 2


def test_a_failure_no_store_takes_as_it_is_still_has_its_run_log(crawl, sqlite_uri):
    """A source that fails with a message holding a lone surrogate (what a file name decoded with
    ``surrogateescape`` gives), and a run log a receiver added a set and a date to: the store refused the
    run log and the spool could not take it, so the run's only record was lost. The run log is now
    stored, the surrogate as U+FFFD and each value JSON has no form for as its text
    (tests/misconfigured_spiders.py: the real house_votes spider, its failure generated)."""
    # In a process of its own: the crawl's log holds the surrogate, which pytest-xdist cannot send on.
    proc = failed(
        crawl(
            "unprintable_failure_votes",
            [ROLL314],
            sqlite_uri,
            "-s",
            "SPIDER_MODULES=tests.misconfigured_spiders",
            subprocess=True,
        )
    )
    assert "neither the store nor the spool" not in proc.stderr
    (log,) = logs(open_store(sqlite_uri), "unprintable_failure_votes")
    assert log["result"] == "ValueError"
    assert log["error_message"] == "cannot read roll\ufffd.xml \x1b[31mhere\x1b[0m"
    assert "roll\ufffd.xml" in log["traceback"]
    assert log["checked_on"] == "2026-09-16" and log["tags"] == "{'votes'}"
