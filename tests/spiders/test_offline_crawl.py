"""``python -m votersdaily crawl --offline`` replays the shipped recordings of the ten government
spiders below into a fresh embedded store, prints the summary table, and a second run inserts nothing."""

from __future__ import annotations

import pytest

from tests.spiders.gov_support import run_logs
from votersdaily.store import open_store

SPIDERS = {
    # spider: events its recordings hold (counted in the files; see each spider's test module)
    "federal_register": 27,  # 10 + 20 documents, 3 on both pages
    "house_floor": 133,  # 7 + 41 + 85 floor actions
    "house_votes": 3,  # roll calls 314 (2026), 37 and 2 (2023, the Speaker's election)
    "senate_committee_hearings": 17,  # 17 meetings + the empty placeholder file
    "senate_votes": 1,
    "senate_floor_schedule": 3,  # three snapshots, three convening days
    "supreme_court_orders": 76,  # 69 orders + 7 opinions relating to orders (2025)
    "supreme_court_opinions": 58,  # the 2022 term's slip opinions
    "supreme_court_arguments": 6,  # October 2017 argument audio
    "white_house": 30,
}


def rows(stdout: str) -> dict[str, list[str]]:
    return {
        line.split()[0]: line.split()
        for line in stdout.splitlines()
        if line.split()[:1] and line.split()[0] in SPIDERS
    }


@pytest.mark.slow  # `crawl --offline` of many spiders, twice
def test_offline_crawl_twice(cli, sqlite_uri, frozen_now):
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


def test_every_replayed_recording_ships_with_the_package():
    """Offline replay needs no ../shared: every spider's recordings are files inside the package."""
    from scrapy.utils.project import get_project_settings

    from votersdaily.cli.crawl import event_spiders
    from votersdaily.recordings import HERE

    spiders = event_spiders(get_project_settings())
    assert {"supreme_court_opinions", "supreme_court_arguments"} <= set(spiders)
    for name, cls in spiders.items():
        assert cls.recordings, name
        for rel in cls.recordings:
            path = (HERE / rel).resolve()
            assert path.is_file() and path.is_relative_to(HERE), (name, rel)
        assert len(cls.recording_urls()) == len(cls.recordings), name
    # and no product module reads third-party material in place
    for module in HERE.parent.rglob("*.py"):
        text = module.read_text("utf-8")
        assert "fixtures/inplace" not in text and "shared:" not in text, module
