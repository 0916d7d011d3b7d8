"""Exit statuses that tell the truth, and usage errors that name what exists.
0 done, 1 the work failed, 2 a usage error or nothing there, 3 the store or a service unavailable."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.services import REPO, cli_environment, free_port
from votersdaily.spiders.house_votes import HouseVotesSpider
from votersdaily.store import open_store


@pytest.fixture(scope="module")
def crawled(house_votes_store):
    return house_votes_store


def votersdaily_into(stdout: int, store_uri: str, *args: str) -> subprocess.CompletedProcess:
    """``python -m votersdaily <args>`` on ``store_uri`` with its standard output on file descriptor
    ``stdout``; standard error as text."""
    return subprocess.run(
        [sys.executable, "-m", "votersdaily", *args],
        cwd=REPO,
        env=dict(os.environ, **cli_environment(store_uri)),
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )


def first_line(proc) -> str:
    return proc.stderr.splitlines()[0] if proc.stderr else ""


@pytest.mark.parametrize(
    "args, message",
    [
        (("--since", "2026-13-45"), "argument --since: not a date or datetime: '2026-13-45'"),
        (("--until", "2026-02-30"), "argument --until: not a date or datetime: '2026-02-30'"),
        (
            ("--branch", "Judiciary"),
            "argument --branch: unknown branch 'Judiciary'; known: Executive, Legislative, Judicial, Other",
        ),
        (("--entity", "Parliament"), "argument --entity: unknown entity 'Parliament'; known: White House, "),
    ],
)
def test_export_rejects_impossible_values(cli_main, crawled, args, message):
    proc = cli_main("export", "ics", *args, store_uri=crawled)
    assert proc.returncode == 2 and proc.stdout == ""
    assert first_line(proc).startswith("votersdaily export: " + message)
    assert len(proc.stderr.splitlines()) == 1


def test_export_names_the_known_parsers(cli, crawled):
    """Through the real entry point (``python -m votersdaily`` in a subprocess): its exit status."""
    proc = cli("export", "json", "--parser", "house_vote", store_uri=crawled)
    assert proc.returncode == 2 and proc.stdout == ""
    assert first_line(proc).startswith(
        "votersdaily export: unknown parser 'house_vote'; known: federal_register, "
    )
    assert "house_votes" in first_line(proc)


def test_branch_and_entity_are_case_insensitive(cli_main, crawled):
    exact = json.loads(cli_main("export", "json", "--branch", "Legislative", store_uri=crawled).stdout)
    lower = cli_main(
        "export", "json", "--branch", "legislative", "--entity", "HOUSE OF REPRESENTATIVES", store_uri=crawled
    )
    assert lower.returncode == 0, lower.stderr
    rolls = len(HouseVotesSpider.recordings)  # one House roll call per recording
    assert exact["count"] == rolls and json.loads(lower.stdout)["count"] == rolls


def test_scheduler_once_with_scrapyd_down_exits_3(cli_main, sqlite_uri):
    scrapyd = "http://127.0.0.1:%d/" % free_port()
    proc = cli_main(
        "scheduler", "--scrapyd", scrapyd, "--once", "--spider", "house_votes", store_uri=sqlite_uri
    )
    assert proc.returncode == 3
    assert proc.stdout.split()[:2] == ["*", "scrapyd-unavailable"]


def test_scheduler_names_the_known_spiders(cli_main, sqlite_uri):
    proc = cli_main(
        "scheduler", "--scrapyd", "http://127.0.0.1:1/", "--once", "--spider", "nope", store_uri=sqlite_uri
    )
    assert proc.returncode == 2
    assert first_line(proc).startswith("votersdaily scheduler: no frequency for nope (give --hours")
    assert "house_votes" in first_line(proc)


def test_scheduler_names_the_spider_meant(cli_main, sqlite_uri):
    """``--spider house_vote`` said "no frequency for house_vote", as if the spider had none."""
    proc = cli_main(
        "scheduler",
        "--scrapyd",
        "http://127.0.0.1:1/",
        "--once",
        "--spider",
        "house_vote",
        store_uri=sqlite_uri,
    )
    assert proc.returncode == 2
    assert first_line(proc).endswith(", white_house; did you mean house_votes?")


def test_scheduler_hours_of_a_spider_that_is_none_is_one_line(cli_main, sqlite_uri):
    """``--hours house_vote=2`` (for ``house_votes``) was a KeyError traceback from the spider loader, exit 1."""
    proc = cli_main(
        "scheduler",
        "--scrapyd",
        "http://127.0.0.1:1/",
        "--once",
        "--hours",
        "house_vote=2",
        store_uri=sqlite_uri,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith(
        "votersdaily scheduler: --hours house_vote=2: no spider is named 'house_vote'; known: "
    )
    assert line.endswith(", white_house; did you mean house_votes?")


@pytest.mark.parametrize(
    "setting, line",
    [
        (
            "VOTERDAILY_BATCH_SIZE=30",
            "unknown setting VOTERDAILY_BATCH_SIZE; did you mean VOTERSDAILY_BATCH_SIZE?",
        ),
        (
            "VOTERSDAILY_BATCH_SIZE=abc",
            "setting VOTERSDAILY_BATCH_SIZE takes a whole number of at least 1, not 'abc'",
        ),
    ],
)
def test_scheduler_checks_the_settings_it_gives_every_job(cli_main, tmp_path, setting, line):
    """A ``--setting`` every job is refused for was handed to scrapyd pass after pass (each job
    refused at its start, the scheduler's pass exit 0): it is refused once, before any pass."""
    store = tmp_path / "store.db"
    proc = cli_main(
        "scheduler",
        "--scrapyd",
        "http://127.0.0.1:1/",
        "--once",
        "--setting",
        setting,
        store_uri="sqlite:///%s" % store,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", "votersdaily scheduler: %s\n" % line)
    assert not store.exists()


@pytest.mark.parametrize(
    "args", [("export", "ics"), ("dump", "vd_events"), ("where",), ("flush",), ("views", "push")]
)
def test_standard_output_on_a_full_disk_is_one_line_and_exit_1(crawled, args):
    """``export ics > /srv/full/cal.ics`` was a traceback from the staged output's copy, ``where``,
    ``flush`` and ``views push`` one from their first ``print`` (Linux's ``/dev/full``: every write is
    ENOSPC, as on a full disk)."""
    with open("/dev/full", "wb") as full:
        proc = votersdaily_into(full.fileno(), crawled, *args)
    assert (proc.returncode, proc.stderr) == (
        1,
        "votersdaily %s: standard output could not take the output (No space left on device): what "
        "reached it is cut short; write it where there is room\n" % args[0],
    )


def test_no_room_to_stage_the_output_is_one_line_and_exit_1(crawled, tmp_path, monkeypatch, capsys):
    """``export`` stages its output before standard output sees a byte: a full temporary folder (a
    real tmpfs, filled; staged in a file from the first byte here) says where and what to do."""
    from tests.support.tmpfs import fill, small_tmpfs
    from votersdaily.cli import main, standard_output

    with small_tmpfs(tmp_path / "tmp") as folder:
        fill(folder)
        monkeypatch.setattr(standard_output, "IN_MEMORY", 1)
        monkeypatch.setattr(standard_output.tempfile, "tempdir", str(folder))
        for name, value in cli_environment(crawled).items():
            monkeypatch.setenv(name, value)
        status = main(["export", "json"])
    out, err = capsys.readouterr()
    assert (status, out) == (1, "")
    assert err == (
        "votersdaily export: no room in %s to stage the output (No space left on device): point $TMPDIR "
        "at a folder with room\n" % folder
    )


@pytest.mark.parametrize("args", [("dump", "vd_events"), ("where",)])
def test_a_reader_that_stops_early_is_not_an_error(crawled, args):
    """``dump vd_events | head``: the reader closed the pipe (here before the first byte): exit 0 and
    nothing on standard error (no BrokenPipeError, no "Exception ignored" at exit)."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        proc = votersdaily_into(writer, crawled, *args)
    finally:
        os.close(writer)
    assert (proc.returncode, proc.stderr) == (0, "")


def test_a_command_started_with_standard_output_closed_still_works(crawled, tmp_path):
    """``votersdaily where >&-``: Python gives such a process no ``sys.stdout`` (None) and ``print``
    writes nothing; the guard of a full standard output must not turn that into a traceback."""
    proc = subprocess.run(
        [sys.executable, "-m", "votersdaily", "where"],
        cwd=REPO,
        env=dict(os.environ, **cli_environment(crawled)),
        preexec_fn=lambda: os.close(1),  # the child closes its own descriptor 1, nothing more
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    assert (proc.returncode, proc.stderr) == (0, "")


def test_unknown_crawl_spider_names_the_known_ones(cli_main, sqlite_uri):
    proc = cli_main("crawl", "house_vote", store_uri=sqlite_uri)
    assert proc.returncode == 2
    assert first_line(proc).startswith(
        "votersdaily crawl: unknown event spider(s): house_vote; known: federal_register, "
    )


def test_crawl_due_without_spiders_says_to_name_them_or_give_all(cli_main, sqlite_uri):
    """Before: ``crawl --due`` said "unknown event spider(s): (none given)", as if a name were wrong."""
    proc = cli_main("crawl", "--due", store_uri=sqlite_uri)
    assert proc.returncode == 2 and proc.stdout == ""
    assert first_line(proc).startswith(
        "votersdaily crawl: name the spiders to crawl, or give --all; known: federal_register, "
    )


def test_enqueue_ingest_counts_bad_lines_like_ingest_enqueue(
    cli, cli_main, sqlite_uri, redis_server, tmp_path
):
    requests = tmp_path / "requests.jsonl"
    requests.write_text(
        json.dumps({"base_url": "https://example.org/paper.pdf", "ingest_type": "pdf"})
        + "\nnot json\n"
        + json.dumps({"ingest_type": "pdf"})
        + "\n"
    )
    queued = cli("enqueue", "ingest", str(requests), "--redis-url", redis_server.url, store_uri=sqlite_uri)
    assert queued.returncode == 1
    assert (
        queued.stdout.strip() == "ingest:requests: 1 requests queued, 0 already seen, 0 items ignored (2 bad)"
    )
    assert "requests.jsonl:2: line is not JSON" in queued.stderr
    assert "requests.jsonl:3: ingest request without a base_url" in queued.stderr
    direct = cli_main("ingest", "enqueue", str(requests), store_uri=sqlite_uri)
    assert direct.returncode == 1 and direct.stdout.rstrip().endswith("(2 bad)")


def test_enqueue_with_redis_down_exits_3(cli, sqlite_uri, tmp_path):
    url = "redis://127.0.0.1:%d/0" % free_port()
    proc = cli(
        "enqueue", "laundromat", "https://example.org/data.nt", "--redis-url", url, store_uri=sqlite_uri
    )
    assert proc.returncode == 3
    assert first_line(proc).startswith("votersdaily enqueue: cannot reach Redis at %s (" % url)
    assert len(proc.stderr.splitlines()) == 1


def test_enqueue_on_a_redis_that_refuses_the_credentials_says_so_not_that_it_is_down(
    cli, sqlite_uri, redis_server
):
    """Before: a wrong password for the ACL user of docs/operations.md's Redis read "cannot reach
    Redis …: start redis-server", which was running."""
    redis_server.client().execute_command("ACL", "SETUSER", "votersdaily", "on", ">right", "~*", "+@all")
    url = "redis://votersdaily:wrong@127.0.0.1:%d/0" % redis_server.port
    proc = cli(
        "enqueue", "laundromat", "https://example.org/data.nt", "--redis-url", url, store_uri=sqlite_uri
    )
    assert proc.returncode == 3 and len(proc.stderr.splitlines()) == 1
    masked = "redis://votersdaily:***@127.0.0.1:%d/0" % redis_server.port
    assert first_line(proc).startswith("votersdaily enqueue: Redis at %s refused the credentials (" % masked)
    assert "give its ACL user and password in --redis-url" in first_line(proc) and "wrong" not in proc.stderr
    assert redis_server.client().keys("*") == [], "nothing queued"


# -- exit codes and messages that agree with docs/cli.md's table -----------------------------------


def test_export_of_an_unknown_committee_names_the_known_ones(cli_main, crawled, tmp_path):
    """Branch, entity and parser were checked; a committee was not (exit 0 with an empty feed)."""
    from tests.support.inprocess import crawl_in_process
    from tests.support.services import cli_environment
    from votersdaily.spiders.senate_committee_hearings import SenateCommitteeHearingsSpider as Hearings

    proc = cli_main("export", "ics", "--committee", "NOPE00", store_uri=crawled)
    assert proc.returncode == 2 and proc.stdout == ""
    assert first_line(proc).startswith("votersdaily export: no events of committee 'NOPE00' in sqlite:///")
    assert first_line(proc).endswith("committees with events: none")  # roll calls have none
    uri = "sqlite:///%s" % (tmp_path / "hearings.db")
    urls = ",".join(Hearings.recording_urls())
    assert (
        crawl_in_process(["senate_committee_hearings", "-a", "url=" + urls], cli_environment(uri)).returncode
        == 0
    )
    proc = cli_main("export", "ics", "--committee", "SSFR01", store_uri=uri)
    assert proc.returncode == 2 and "; committees with events: JCSE00, SLIA00, " in first_line(proc)
    found = cli_main("export", "json", "--committee", "ssfr00", store_uri=uri)  # any case
    assert found.returncode == 0 and json.loads(found.stdout)["count"] == 3


def test_reparse_of_an_archive_folder_that_does_not_exist_is_a_usage_error(cli_main, sqlite_uri, tmp_path):
    proc = cli_main("reparse", "--archive-dir", str(tmp_path / "gone"), store_uri=sqlite_uri)
    assert proc.returncode == 2
    assert proc.stderr == "votersdaily reparse: argument --archive-dir: %s: no such folder (see --help)\n" % (
        tmp_path / "gone"
    )


def test_enqueue_into_a_database_redis_does_not_have_says_so_exit_2(cli, sqlite_uri, redis_server, tmp_path):
    """``--redis-url redis://host:6379/99`` on a Redis of 16 databases: before, "cannot reach Redis
    … start redis-server" (exit 3) of a Redis that was up and answered."""
    requests = tmp_path / "requests.jsonl"
    requests.write_text('{"base_url": "https://example.org/paper.pdf"}\n')
    url = redis_server.url.rsplit("/", 1)[0] + "/99"
    proc = cli("enqueue", "ingest", str(requests), "--redis-url", url, store_uri=sqlite_uri)
    assert (proc.returncode, proc.stderr) == (
        2,
        "votersdaily enqueue: Redis at %s has no database of that number (DB index is out of range): "
        "Redis numbers them from 0 to its `databases` setting less one (0-15 by default); fix the /db "
        "of --redis-url\n" % url,
    )
    assert redis_server.client().dbsize() == 0


def test_enqueue_finds_redis_unreachable_before_reading_its_input(cli, sqlite_uri, tmp_path):
    requests = tmp_path / "requests.jsonl"
    requests.write_text("not json\n")
    url = "redis://127.0.0.1:%d/0" % free_port()
    proc = cli("enqueue", "ingest", str(requests), "--redis-url", url, store_uri=sqlite_uri)
    assert proc.returncode == 3
    assert proc.stderr.splitlines() == [first_line(proc)]  # the service, not the input's line 1
    assert first_line(proc).startswith("votersdaily enqueue: cannot reach Redis at %s (" % url)


@pytest.mark.parametrize(
    "args",
    [
        ("export", "ics", "--branch", "Judiciary"),
        ("export", "json", "--parser", "house_vote"),
        ("export", "ics", "--committee", "NOPE00"),
        ("dump", "vd_evnts"),
        ("dump", "vd_events", "extra"),  # unrecognized arguments: was said as `votersdaily: …`
        ("where", "-x"),
        ("views", "push", "vd_event"),
        ("crawl", "house_vote"),
        ("crawl", "house_votes", "-s", "RETRY_TIMES=twice"),
        ("site", "build", "/"),
        ("ingest", "enqueue", "NOWHERE/requests.jsonl"),
        ("ingest", "enqueue"),
        ("reparse", "--since", "yesterday"),
        ("scheduler", "--scrapyd", "http://127.0.0.1:1/", "--once", "--spider", "nope"),
        ("nosuchcommand",),
    ],
)
def test_every_command_says_what_is_wrong_with_one_prefix(cli_main, crawled, args):
    """One prefix, ``votersdaily <command>: ``, for usage errors and failures of every command."""
    proc = cli_main(*args, store_uri=crawled)
    assert proc.returncode in (1, 2), proc.stderr
    command = args[0] if args[0] != "nosuchcommand" else ""
    prefix = " ".join(filter(None, ("votersdaily", command))) + ": "
    lines = proc.stderr.splitlines()
    assert lines and all(line.startswith(prefix) for line in lines), proc.stderr
    assert "error:" not in lines[0] and "Traceback" not in proc.stderr


def test_a_network_error_is_one_line_at_the_default_level(cli, sqlite_uri):
    """A refused connection (as a failed DNS lookup: both are network errors Scrapy retries): the
    robots.txt middleware logged it with 70 lines of traceback before the one useful line."""
    url = "http://127.0.0.1:%d/evs/2026/roll314.xml" % free_port()
    proc = cli("crawl", "house_votes", "-a", "url=" + url, "-s", "RETRY_TIMES=0", store_uri=sqlite_uri)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "[house_votes] ERROR: could not fetch %s: Connection was refused" % url in proc.stderr
    debug = cli(
        "crawl",
        "house_votes",
        "-a",
        "url=" + url,
        "-s",
        "RETRY_TIMES=0",
        "--log-level",
        "DEBUG",
        store_uri=sqlite_uri,
    )
    assert "Traceback (most recent call last)" in debug.stderr  # all of it when asked for


def test_a_document_its_spider_cannot_read_is_one_line_at_the_default_level(cli, sqlite_uri, tmp_path):
    """A real roll-call recording cut to nothing (derived: an empty file, what a failed transfer
    leaves): Scrapy logged "Spider error processing" with 60 lines of its own frames, which said less
    than the one line naming the exception and the document. The run log keeps the traceback."""
    empty = tmp_path / "roll314.xml"
    empty.write_bytes(b"")
    proc = cli("crawl", "house_votes", "-a", "url=" + empty.as_uri(), store_uri=sqlite_uri)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr, proc.stderr
    assert (
        "ERROR: Spider error processing <GET %s> (referer: None): MalformedDocument: empty document at %s"
        % (empty.as_uri(), empty.as_uri())
        in proc.stderr
    )
    (log,) = open_store(sqlite_uri).iter_docs("vd_log")
    assert log["result"] == "MalformedDocument" and log["traceback"].startswith("Traceback")


def test_the_usage_line_names_the_command_as_the_person_ran_it(tmp_path):
    """``votersdaily --help`` (the installed script, which pip writes as below) says ``usage:
    votersdaily``; ``python -m votersdaily --help`` says that."""
    import os
    import subprocess
    import sys

    from tests.support.services import REPO

    script = tmp_path / "votersdaily"
    script.write_text(
        "#!%s\nimport sys\nfrom votersdaily.cli import main\nsys.exit(main())\n" % sys.executable
    )
    script.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for command, usage in (
        ([str(script)], "votersdaily"),
        ([sys.executable, "-m", "votersdaily"], "python -m votersdaily"),
    ):
        proc = subprocess.run(
            [*command, "--help"], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("usage: %s [-h]" % usage), proc.stdout[:200]


def test_a_reparse_window_that_ends_before_it_starts_is_refused(cli_main, crawled):
    """``--since`` after ``--until`` (the two swapped): it found nothing and exited 0, as if the archive
    held no run in the window."""
    proc = cli_main("reparse", "--since", "2026-11-20", "--until", "2026-11-01", store_uri=crawled)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "votersdaily reparse: --since 2026-11-20 is after --until 2026-11-01: no run can be in between"
    ]


def test_a_store_on_a_full_disk_is_said_to_be_full_not_a_disk_error(crawled, tmp_path):
    """A read command on an embedded store whose folder is full: SQLite cannot make the store's
    ``-shm`` file and says "disk I/O error", which reads as a broken disk or file. One line naming the
    folder as full, exit 3 (the store cannot be used now), and the store's bytes as they were."""
    import shutil

    from tests.support.tmpfs import fill, small_tmpfs

    source = crawled[len("sqlite:///") :]
    with small_tmpfs(tmp_path / "data", size="4m") as folder:
        store = folder / "votersdaily.db"
        shutil.copy(source, store)
        before = store.read_bytes()
        fill(folder)
        proc = subprocess.run(
            [sys.executable, "-m", "votersdaily", "dump", "vd_events"],
            cwd=REPO,
            env=dict(os.environ, **cli_environment("sqlite:///%s" % store)),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 3, proc.stderr
        (line,) = proc.stderr.splitlines()
        assert line.startswith("votersdaily dump: cannot open the embedded store sqlite:///%s: " % store), (
            line
        )
        assert ": the folder %s is full (" % folder in line and line.endswith("make room there"), line
        assert store.read_bytes() == before
