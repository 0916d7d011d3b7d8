"""``python -m votersdaily crawl --offline`` replays the shipped recordings of the part-B government
spiders into a fresh embedded store, prints the summary table, and a second run inserts nothing."""

from __future__ import annotations

from tests.conftest import SHARED
from tests.spiders.gov_support import run_logs
from votersdaily.spiders.supreme_court_orders import SupremeCourtOrdersSpider
from votersdaily.store import open_store

SPIDERS = {
    # spider: events its recordings hold (counted in the files; see each spider's test module)
    "federal_register": 27,  # 10 + 20 documents, 3 on both pages
    "house_floor": 133,  # 7 + 41 + 85 floor actions
    "house_votes": 3,  # roll calls 314 (2026), 37 and 2 (2023, the Speaker's election)
    "senate_committee_hearings": 17,  # 17 meetings + the empty placeholder file
    "senate_votes": 1,
    "senate_floor_schedule": 3,  # three snapshots, three convening days
    "supreme_court_orders": 77,  # 69 orders + 8 opinions relating to orders
    "white_house": 30,
}


def rows(stdout: str) -> dict[str, list[str]]:
    return {
        line.split()[0]: line.split()
        for line in stdout.splitlines()
        if line.split()[:1] and line.split()[0] in SPIDERS
    }


def test_offline_crawl_twice(cli, sqlite_uri, frozen_now):
    if not SupremeCourtOrdersSpider.recording_urls():  # its pages are read in place from ../shared
        assert not SHARED.exists() or not (SHARED / "fixtures/inplace").exists()
        SPIDERS.pop("supreme_court_orders")
    first = cli("crawl", "--offline", *SPIDERS, store_uri=sqlite_uri)
    assert first.returncode == 0, first.stderr[-3000:] + first.stdout
    table = rows(first.stdout)
    assert set(table) == set(SPIDERS)
    for name, count in SPIDERS.items():
        _spider, result, inserted = table[name][:3]
        assert (result, int(inserted)) == ("success", count), table[name]
    second = cli(
        "crawl",
        "--offline",
        *SPIDERS,
        store_uri=sqlite_uri,
        env={"VOTERSDAILY_FROZEN_NOW": "2026-10-03T18:00:00Z"},
    )
    assert second.returncode == 0, second.stderr[-3000:]
    for name, count in SPIDERS.items():
        _spider, result, inserted, updated, unchanged = rows(second.stdout)[name][:5]
        assert (result, int(inserted), int(updated), int(unchanged)) == ("success", 0, 0, count)
    store = open_store(sqlite_uri)
    for name in SPIDERS:
        assert [log["result"] for log in run_logs(store, name)] == ["success", "success"]
