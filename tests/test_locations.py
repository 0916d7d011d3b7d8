"""Where data goes (votersdaily/locations.py): one data home, every location absolute, whatever folder
a command runs from."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from scrapy.settings import Settings

from tests.support.cli_main import run_main
from tests.support.services import REPO
from votersdaily import locations
from votersdaily.store import open_store, store_uri
from votersdaily.store.spool import spool_dir

PROJECT_CFG = "[settings]\ndefault = votersdaily.settings\n"


@pytest.fixture
def no_location_env(monkeypatch):
    """No location from the test process's environment (the tests' own data home, archive, spool)."""
    for name in (
        locations.HOME_ENV,
        locations.STORE_ENV,
        locations.SPOOL_ENV,
        locations.ARCHIVE_ENV,
        "XDG_DATA_HOME",
    ):
        monkeypatch.delenv(name, raising=False)


def make_project(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "scrapy.cfg").write_text(PROJECT_CFG)
    return folder


def test_the_home_is_the_project_from_any_subfolder(tmp_path, monkeypatch, no_location_env):
    project = make_project(tmp_path / "project")
    deep = project / "a" / "b"
    deep.mkdir(parents=True)
    for folder in (project, project / "a", deep):
        monkeypatch.chdir(folder)
        home, reason = locations.home_and_reason()
        assert home == project and str(project / "scrapy.cfg") in reason
        assert store_uri() == "sqlite:///%s" % (project / "votersdaily.db")
        assert spool_dir() == project / ".votersdaily-spool"
        assert locations.archive_dir(None) == project / "archive"
        assert locations.http_cache_dir(None) == project / ".scrapy" / "httpcache"


def test_outside_a_project_the_home_is_the_platform_data_folder(tmp_path, monkeypatch, no_location_env):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert locations.data_home() == tmp_path / "xdg" / "votersdaily"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert locations.data_home() == tmp_path / "user" / ".local" / "share" / "votersdaily"


def test_the_environment_then_the_setting_choose_the_home(tmp_path, monkeypatch, no_location_env):
    make_project(tmp_path / "project")
    monkeypatch.chdir(tmp_path / "project")
    settings = Settings({"VOTERSDAILY_HOME": str(tmp_path / "by-setting")})
    assert locations.home_and_reason(settings) == (tmp_path / "by-setting", "the VOTERSDAILY_HOME setting")
    monkeypatch.setenv(locations.HOME_ENV, "~/by-env")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert locations.data_home(settings) == tmp_path / "user" / "by-env"


def test_every_location_is_absolute_and_relative_ones_are_under_the_home(
    tmp_path, monkeypatch, no_location_env
):
    monkeypatch.setenv(locations.HOME_ENV, str(tmp_path / "home"))
    home = tmp_path / "home"
    settings = Settings(
        {
            "VOTERSDAILY_STORE": "sqlite:///db/x.db",
            "VOTERSDAILY_SPOOL_DIR": "/var/spool/vd",
            "INGEST_BLOB_DIR": "blobs",
            "INGEST_TEIXML_FEED": None,
            "LAUNDROMAT_OUTPUT_DIR": "ll",
            "LAUNDROMAT_CONTEXT_CACHE_DIR": "",
        }
    )
    found = locations.locations(settings)
    assert all(Path(value.removeprefix("sqlite:///")).is_absolute() for value in found.values())
    assert found["VOTERSDAILY_STORE"] == "sqlite:///%s" % (home / "db" / "x.db")
    assert found["VOTERSDAILY_SPOOL_DIR"] == "/var/spool/vd"
    assert found["INGEST_BLOB_DIR"] == str(home / "blobs")
    assert "INGEST_TEIXML_FEED" not in found  # switched off
    assert found["LAUNDROMAT_CONTEXT_CACHE_DIR"] == str(home / "ll" / "contexts")
    # defaults (settings.py) when a command reads no Scrapy settings
    assert locations.ingest_teixml_feed(None) == home / "ingest-feeds" / "html-teixml.jsonl"
    # the environment wins over the setting, and is resolved the same way
    monkeypatch.setenv(locations.ARCHIVE_ENV, "shared/archive")
    assert (
        locations.archive_dir(Settings({"VOTERSDAILY_ARCHIVE_DIR": "/elsewhere"}))
        == home / "shared" / "archive"
    )
    with pytest.raises(locations.LocationUnset, match="LAUNDROMAT_OUTPUT_DIR is empty"):
        locations.laundromat_output_dir(Settings({"LAUNDROMAT_OUTPUT_DIR": ""}))


def test_store_uris_other_than_a_relative_file_are_kept(tmp_path, monkeypatch, no_location_env):
    monkeypatch.setenv(locations.HOME_ENV, str(tmp_path))
    for uri in ("sqlite:////abs/x.db", "sqlite:///:memory:", "http://u:p@127.0.0.1:5984/"):
        assert locations.absolute_store_uri(uri) == uri
    # open_store resolves a relative file too, so no caller can write under the working folder
    monkeypatch.chdir(REPO / "votersdaily")
    open_store("sqlite:///rel/y.db").close()
    assert (tmp_path / "rel" / "y.db").is_file() and not (REPO / "votersdaily" / "rel").exists()


@pytest.mark.parametrize(
    "uri, under_home",
    [
        ("sqlite:rel/x.db", "rel/x.db"),  # the scheme and the path, no slashes
        ("sqlite://rel/x.db", "rel/x.db"),  # two slashes: the store reads a relative path too
        ("SQLite:///rel/x.db", "rel/x.db"),  # the scheme in another case
    ],
)
def test_every_spelling_of_a_relative_store_file_is_under_the_home(
    tmp_path, monkeypatch, no_location_env, uri, under_home
):
    """The store opens ``sqlite:x.db`` and ``sqlite://x.db`` as relative files; only ``sqlite:///x.db``
    was put under the data home, so the others were made in the working folder, and the crawl said
    ``events and run logs are in sqlite:x.db``."""
    monkeypatch.setenv(locations.HOME_ENV, str(tmp_path / "home"))
    expected = "sqlite:///%s" % (tmp_path / "home" / under_home)
    assert locations.absolute_store_uri(uri) == expected
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    open_store(uri).close()
    assert (tmp_path / "home" / under_home).is_file() and list((tmp_path / "work").iterdir()) == []


def clean_env(**extra: str) -> dict[str, str]:
    """A user's environment: the checkout importable, no location chosen by the test process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VOTERSDAILY_", "SCRAPY_"))}
    env["PYTHONPATH"] = str(REPO)
    env.pop("XDG_DATA_HOME", None)
    env.update(extra)
    return env


def run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def stored(db: Path, database: str) -> list[dict]:
    store = open_store("sqlite:///%s" % db)
    try:
        return list(store.iter_docs(database))
    finally:
        store.close()


def test_a_crawl_from_any_subfolder_writes_to_the_project(tmp_path, frozen_now):
    """The issue's case: `scrapy crawl` run from a subfolder made a second store and archive there."""
    project = make_project(tmp_path / "project")
    (project / "a" / "b").mkdir(parents=True)
    env = clean_env(HOME=str(tmp_path / "user"), VOTERSDAILY_FROZEN_NOW=os.environ["VOTERSDAILY_FROZEN_NOW"])
    first = run(
        [sys.executable, "-m", "votersdaily", "crawl", "house_votes", "--offline"], project / "a" / "b", env
    )
    run([sys.executable, "-m", "scrapy", "crawl", "house_votes", "-a", "offline=true"], project / "a", env)
    written = {p.name for p in project.iterdir()} - {"a", "scrapy.cfg"}
    assert (
        {"archive", "votersdaily.db"}
        <= written
        <= {"archive", "votersdaily.db", ".scrapy", ".votersdaily-spool"}
    )
    assert sorted(p.name for p in (project / "a").rglob("*")) == ["b"], (
        "nothing written where the commands ran"
    )
    # every message saying where data went names the absolute place
    assert "events and run logs are in sqlite:///%s" % (project / "votersdaily.db") in first.stderr
    assert "archived in %s" % (project / "archive") in first.stderr
    logs = stored(project / "votersdaily.db", "vd_log")
    assert len(logs) == 2 and {log["data_home"] for log in logs} == {str(project)}
    warcs = sorted((project / "archive" / "house_votes").glob("*.warc.gz"))
    assert sorted(log["warc_path"] for log in logs) == [str(p) for p in warcs]
    assert not (tmp_path / "user").exists(), "a project's run writes nothing to the user's data folder"


def test_outside_a_project_the_command_writes_to_one_place_from_anywhere(tmp_path, frozen_now):
    env = clean_env(
        XDG_DATA_HOME=str(tmp_path / "xdg"), VOTERSDAILY_FROZEN_NOW=os.environ["VOTERSDAILY_FROZEN_NOW"]
    )
    home = tmp_path / "xdg" / "votersdaily"
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        run([sys.executable, "-m", "votersdaily", "crawl", "house_votes", "--offline"], tmp_path / name, env)
        assert list((tmp_path / name).iterdir()) == []
    where = run([sys.executable, "-m", "votersdaily", "where"], tmp_path / "one", env).stdout
    assert "data home  %s" % home in where and "sqlite:///%s" % (home / "votersdaily.db") in where
    assert len(stored(home / "votersdaily.db", "vd_log")) == 2
    # --store with a relative file: under the data home as well, not the working folder
    run(
        [
            sys.executable,
            "-m",
            "votersdaily",
            "--store",
            "sqlite:///rel/x.db",
            "crawl",
            "house_votes",
            "--offline",
        ],
        tmp_path / "two",
        env,
    )
    assert (home / "rel" / "x.db").is_file() and list((tmp_path / "two").iterdir()) == []
    # and so is one written sqlite:rel.db, which the crawl used to make in the working folder
    said = run(
        [
            sys.executable,
            "-m",
            "votersdaily",
            "--store",
            "sqlite:rel.db",
            "crawl",
            "house_votes",
            "--offline",
        ],
        tmp_path / "two",
        env,
    )
    assert (home / "rel.db").is_file() and list((tmp_path / "two").iterdir()) == []
    assert "events and run logs are in sqlite:///%s" % (home / "rel.db") in said.stderr


def test_offline_replays_the_recordings_of_the_machine_that_runs_the_spider():
    from votersdaily.spiders.house_votes import HouseVotesSpider

    spider = HouseVotesSpider(offline="true")
    assert spider.given_urls == HouseVotesSpider.recording_urls() != []
    with pytest.raises(ValueError, match="not both"):
        HouseVotesSpider(offline="true", url="file:///x.xml")


def test_folders_named_on_the_command_line_are_under_the_working_folder_and_said_absolute(
    tmp_path, frozen_now
):
    """``reparse --archive-dir myarch`` checked that ./myarch existed, then read <data home>/myarch (a
    relative setting's place): the wrong archive, and 3 stored events "not verified". ``flush
    --spool-dir`` of a mistyped folder said "nothing spooled in nosuch", exit 0; ``site build out``
    said "in out". A folder on the command line is the shell's: under the working folder, named in
    full."""
    project = make_project(tmp_path / "project")
    here = project / "a"
    here.mkdir()
    env = clean_env(HOME=str(tmp_path / "user"), VOTERSDAILY_FROZEN_NOW=os.environ["VOTERSDAILY_FROZEN_NOW"])
    vd = [sys.executable, "-m", "votersdaily"]
    run([*vd, "crawl", "house_votes", "--offline"], here, env)
    (project / "archive").rename(here / "myarch")
    dry = run([*vd, "reparse", "--dry-run", "--archive-dir", "myarch", "house_votes"], here, env)
    assert "would insert 0, update 0, withdraw 0, replace 0; 3 unchanged" in dry.stdout, dry.stdout
    assert "not verified" not in dry.stdout + dry.stderr
    missing = subprocess.run(
        [*vd, "flush", "--spool-dir", "nosuch"], cwd=here, env=env, capture_output=True, text=True, timeout=60
    )
    assert missing.returncode == 2
    assert missing.stderr == (
        "votersdaily flush: argument --spool-dir: %s: no such folder (see --help)\n" % (here / "nosuch")
    )
    (here / "spool").mkdir()
    assert run([*vd, "flush", "--spool-dir", "spool"], here, env).stdout == "nothing spooled in %s\n" % (
        here / "spool"
    )
    built = run([*vd, "site", "build", "out"], here, env)
    assert built.stderr.splitlines()[-1].endswith(" on the health page in %s" % (here / "out"))


def test_where_says_why_the_data_home_is_there_and_how_to_change_it_once(tmp_path):
    """Chosen by $VOTERSDAILY_HOME: the line names it once (it said "$VOTERSDAILY_HOME; $VOTERSDAILY_HOME
    or the setting of that name changes it"); chosen by default: it says what changes it."""
    (tmp_path / "cwd").mkdir()
    chosen = run(
        [sys.executable, "-m", "votersdaily", "where"],
        tmp_path / "cwd",
        clean_env(VOTERSDAILY_HOME=str(tmp_path / "home")),
    ).stdout.splitlines()
    assert chosen[:2] == ["data home  %s" % (tmp_path / "home"), "           ($VOTERSDAILY_HOME)"]
    default = run(
        [sys.executable, "-m", "votersdaily", "where"],
        tmp_path / "cwd",
        clean_env(XDG_DATA_HOME=str(tmp_path)),
    ).stdout.splitlines()
    assert default[1] == (
        "           (the platform's data folder (no scrapy.cfg here or above); "
        "$VOTERSDAILY_HOME or the setting of that name changes it)"
    )


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("VOTERSDAILY_SPOOL_DIR", "{file}", "names {file}, which is a file, not a folder"),
        (
            "VOTERSDAILY_SPOOL_DIR",
            "{file}/spool",
            "names {file}/spool, under {file}, which is a file, not a folder",
        ),
        ("INGEST_TEIXML_FEED", "{folder}", "names {folder}, which is a folder, not a file"),
        (
            "INGEST_TEIXML_FEED",
            "{file}/f.jsonl",
            "names {file}/f.jsonl, under {file}, which is a file, not a folder",
        ),
        ("INGEST_TEIXML_FEED", "{file}", None),  # a feed file is appended to
        ("VOTERSDAILY_SPOOL_DIR", "{folder}/not/yet", None),  # made when first written
    ],
)
def test_a_location_naming_a_file_for_a_folder_or_the_reverse_is_named(tmp_path, name, value, expected):
    (tmp_path / "a-file").write_text("the operator's")
    names = {"file": tmp_path / "a-file", "folder": tmp_path}
    settings = Settings({name: value.format(**names)})
    problems = locations.misplaced(settings, (name,))
    assert problems == ([] if expected is None else ["%s %s" % (name, expected.format(**names))])


def test_a_location_a_run_does_not_use_is_not_checked(tmp_path):
    (tmp_path / "a-file").write_text("the operator's")
    warc = {"INGEST_WARC_DIR": str(tmp_path / "a-file")}
    assert locations.misplaced(Settings(warc), ("INGEST_WARC_DIR",)) == []  # INGEST_WARC_ENABLED is off
    assert locations.misplaced(Settings({**warc, "INGEST_WARC_ENABLED": "True"}), ("INGEST_WARC_DIR",)) == [
        "INGEST_WARC_DIR names %s, which is a file, not a folder" % (tmp_path / "a-file")
    ]


def run_beside_a_file(tmp_path: Path, command: list[str], **env: str) -> subprocess.CompletedProcess:
    """``python -m <command>`` run from an empty folder of its own (``cwd``), with a data home that does
    not exist yet and a file of the operator's (``a-file``) beside them; ``env`` on top."""
    (tmp_path / "cwd").mkdir()
    (tmp_path / "a-file").write_text("the operator's")
    return subprocess.run(
        [sys.executable, "-m", *command],
        cwd=tmp_path / "cwd",
        env=clean_env(
            VOTERSDAILY_HOME=str(tmp_path / "home"), SCRAPY_SETTINGS_MODULE="votersdaily.settings", **env
        ),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    ("command", "setting"),
    [
        (["votersdaily", "crawl", "house_votes", "--offline"], "VOTERSDAILY_SPOOL_DIR"),
        (["scrapy", "crawl", "house_votes", "-a", "offline=true"], "VOTERSDAILY_SPOOL_DIR"),
        (["scrapy", "crawl", "laundromat", "-a", "url=http://127.0.0.1:9/x.nt"], "LAUNDROMAT_OUTPUT_DIR"),
        (["votersdaily", "flush"], "VOTERSDAILY_SPOOL_DIR"),
        (["votersdaily", "reparse"], "VOTERSDAILY_ARCHIVE_DIR"),
        (["votersdaily", "crawl", "house_votes", "--offline"], "VOTERSDAILY_ARCHIVE_DIR"),
        (["scrapy", "crawl", "house_votes", "-a", "offline=true"], "VOTERSDAILY_ARCHIVE_DIR"),
    ],
)
def test_a_folder_setting_that_names_a_file_is_refused_before_any_work(tmp_path, command, setting):
    """Before: with the spool folder a file and the store away, a crawl ran and lost every document
    the store did not take ("free space there"); ``flush`` said "nothing spooled" and ``reparse``
    found no archive, both exit 0; with the archive folder a file, an event crawl stored its events
    with no WARC copy of any and exited 1. Now one line naming the setting, exit 2, nothing written."""
    proc = run_beside_a_file(
        tmp_path,
        command,
        VOTERSDAILY_STORE="http://127.0.0.1:9/",  # away: the spool is where the documents would go
        **{setting: str(tmp_path / "a-file")},
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stderr.splitlines()[-1] == "%s: %s names %s, which is a file, not a folder" % (
        " ".join(command[:2]) if command[0] == "votersdaily" else "scrapy crawl",
        setting,
        tmp_path / "a-file",
    )
    assert "Traceback" not in proc.stderr
    assert (tmp_path / "a-file").read_text() == "the operator's"
    assert not (tmp_path / "home").exists() and list((tmp_path / "cwd").iterdir()) == []


def test_an_archive_switched_off_in_the_environment_is_neither_checked_nor_announced(tmp_path):
    """``VOTERSDAILY_ARCHIVE_ENABLED=False`` in the environment (which wins over the settings, as for
    the crawls): the archive folder is not written, so naming a file there stops nothing. Before,
    ``votersdaily crawl`` read its settings without the environment and ended with "the parsed source
    documents are archived in <the file>"."""
    proc = run_beside_a_file(
        tmp_path,
        ["votersdaily", "crawl", "house_votes", "--offline"],
        VOTERSDAILY_STORE="sqlite:///%s" % (tmp_path / "store.db"),
        VOTERSDAILY_ARCHIVE_ENABLED="False",
        VOTERSDAILY_ARCHIVE_DIR=str(tmp_path / "a-file"),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "archived" not in proc.stderr, proc.stderr[-3000:]
    assert (tmp_path / "a-file").read_text() == "the operator's"
    assert (
        len(
            run_main(
                "dump", "vd_events", store_uri="sqlite:///%s" % (tmp_path / "store.db")
            ).stdout.splitlines()
        )
        == 3
    )
