"""The ingest's temporary folders full, for real: ``/dev/shm``, ``$TMPDIR``, ``/tmp`` and ``/var/tmp``
made small full tmpfs mounts for the crawl's process alone (a mount namespace of its own,
tests/support/tmpfs.py; root only, skipped otherwise). A full folder is the folder's fault, never the
document's: an extraction answer no folder takes comes by the socket, and a crawl that cannot start
its extraction processes at all says so in one line, fails its run and fetches nothing."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from tests.support.services import cli_environment
from tests.support.tmpfs import moved, within_full_filesystems
from votersdaily.ingest.workers import ANSWER_FOLDER_PREFIX, MEMORY_FOLDER

from .conftest import read_results, run_ingest, stored, write_requests

#: The OJS 3 galley of First Monday (recorded): its extraction answer, the TEI and text of the
#: article, is some 80 KiB, above what goes by the socket (64 KiB) and what a nearly full folder takes.
ARTICLE = "/scholarly/first_monday_ojs3_fulltext.html"


def test_full_answer_folders_cost_no_document_and_keep_its_earlier_result(
    crawl, sqlite_uri, ingest_site, tmp_path
):
    """``/dev/shm`` full and ``$TMPDIR`` nearly full (16 KiB left): before, the extraction process
    died writing the answer (ENOSPC), again when the call was run once more, and the document's
    earlier good result was replaced by ``extract-process-died`` ("killed, e.g. by the OOM killer"),
    the run a success with no word of a folder. Now the answer comes by the socket, the result stays
    ``success``, and the folders are said once."""
    requests = write_requests(
        tmp_path / "r.jsonl", [{"base_url": ingest_site.url + ARTICLE, "ingest_type": "html"}]
    )
    run_ingest(crawl, sqlite_uri, requests, tmp_path)
    (first,) = read_results(sqlite_uri).values()
    assert first["status"] == "success"
    # a short path: the fork server's socket goes in it (a Unix socket's path is at most 107 bytes)
    tmpdir = Path(tempfile.mkdtemp(prefix="vd-", dir="/tmp"))
    try:
        proc = run_ingest(
            crawl,
            sqlite_uri,
            requests,
            tmp_path,
            within=within_full_filesystems({MEMORY_FOLDER: 0, str(tmpdir): 16 << 10}),  # for the crawl alone
            env={"TMPDIR": str(tmpdir)},
        )
    finally:
        tmpdir.rmdir()  # the full tmpfs was the crawl's alone: here the folder is empty
    assert "died" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    said = [line for line in proc.stderr.splitlines() if "cannot take extraction answers" in line]
    assert len(said) >= 1 and all("WARNING: the ingest's answer folder" in line for line in said), said
    # each folder named once: its answer folder, or itself when none could be made in it
    named = re.findall(r"(/\S+) \(No space left on device\)", " ".join(said))
    parents = sorted(name.split("/" + ANSWER_FOLDER_PREFIX)[0] for name in named)
    assert parents == sorted([MEMORY_FOLDER, str(tmpdir)]), said
    (result,) = read_results(sqlite_uri).values()
    assert (result["status"], result["file_meta"]) == ("success", first["file_meta"])
    assert [log["result"] for log in stored(sqlite_uri, "vd_log")] == ["success", "success"]


def test_no_usable_temporary_folder_is_one_line_a_run_log_and_exit_1(
    crawl, sqlite_uri, ingest_site, tmp_path
):
    """``/tmp`` and ``/var/tmp`` full, ``$TMPDIR`` unset, a read-only working folder (Python's last
    resort): before, a 30-line ``FileNotFoundError: No usable temporary directory found`` traceback
    from the fork server's start, exit 1, no run log. Now one line naming the folders tried, the run
    log's result ``NoTemporaryFolder``, exit 1, and nothing fetched (the request waits for a run)."""
    requests = write_requests(
        tmp_path / "r.jsonl", [{"base_url": ingest_site.url + ARTICLE, "ingest_type": "html"}]
    )
    (tmp_path / "ro").mkdir()
    env = {
        name: moved(value)
        for name, value in cli_environment(sqlite_uri).items()
        if name in ("VOTERSDAILY_HOME", "VOTERSDAILY_SPOOL_DIR", "VOTERSDAILY_ARCHIVE_DIR")
    }
    proc = crawl(
        "ingest",
        None,
        "sqlite:///%s" % moved(tmp_path / "store.db"),
        "-a",
        "requests=%s" % moved(requests),
        "-s",
        "INGEST_BLOB_DIR=%s" % moved(tmp_path / "blobs"),
        "-s",
        "INGEST_TEIXML_FEED=%s" % moved(tmp_path / "feed.jsonl"),
        "-s",
        "INGEST_ALLOW_PRIVATE=True",
        env=env,
        within=[
            *within_full_filesystems(
                {"/tmp": 0, "/var/tmp": 0},  # noqa: S108 - for the crawl alone
                read_only=(moved(tmp_path / "ro"),),
                cwd=moved(tmp_path / "ro"),
            ),
            *("env", "-u", "TMPDIR", "-u", "TEMP", "-u", "TMP"),
        ],
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    (line,) = [line for line in proc.stderr.splitlines() if "have no temporary folder" in line]
    assert line.endswith(
        "ERROR: the ingest's extraction processes have no temporary folder (No usable temporary directory "
        "found in ['/tmp', '/var/tmp', '/usr/tmp', '%s']; full, read-only or missing): nothing was fetched, "
        "the requests wait for the next run; make room there, or point TMPDIR at a folder with room"
        % moved(tmp_path / "ro")
    ), line
    (log,) = stored(sqlite_uri, "vd_log")
    assert log["result"] == "NoTemporaryFolder" and log["error_message"] == line.split("ERROR: ", 1)[1]
    assert [error["where"] for error in log["errors"]] == ["start"]
    assert read_results(sqlite_uri) == {} and ARTICLE not in ingest_site.hits


def test_a_temporary_folder_too_long_for_a_unix_socket_is_one_line_a_run_log_and_exit_1(
    crawl, sqlite_uri, ingest_site, tmp_path
):
    """``$TMPDIR`` a real folder whose path leaves no room for the fork server's socket in it (a Unix
    socket's path takes at most 107 bytes; multiprocessing puts it at
    ``$TMPDIR/pymp-XXXXXXXX/listener-XXXXXXXX``): before, ``OSError: AF_UNIX path too long`` out of the
    spider's ``from_crawler``, a traceback ("Task exception was never retrieved"), exit 1, no run log.
    Now one line naming the folder and the longest path that fits, the run log's result
    ``NoTemporaryFolder``, exit 1, nothing fetched."""
    requests = write_requests(
        tmp_path / "r.jsonl", [{"base_url": ingest_site.url + ARTICLE, "ingest_type": "html"}]
    )
    folder = tmp_path / ("t" * 40) / ("u" * 40)
    folder.mkdir(parents=True)
    proc = run_ingest(
        crawl, sqlite_uri, requests, tmp_path, status=1, env={"TMPDIR": str(folder)}, subprocess=True
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    (line,) = [line for line in proc.stderr.splitlines() if "have no temporary folder" in line]
    said = re.search(
        r"ERROR: the ingest's extraction processes have no temporary folder \((.+): its path is too long "
        r"for the fork server's socket in it, (\d+) bytes over the 107 a Unix socket's path takes\): nothing "
        r"was fetched, the requests wait for the next run; point TMPDIR at a folder whose path is at most "
        r"(\d+) bytes$",
        line,
    )
    assert said is not None, line
    assert said[1] == str(folder) and int(said[3]) == len(str(folder)) - int(said[2]) > 0, line
    (log,) = stored(sqlite_uri, "vd_log")
    assert log["result"] == "NoTemporaryFolder" and log["error_message"] == line.split("ERROR: ", 1)[1]
    assert [error["where"] for error in log["errors"]] == ["start"]
    assert read_results(sqlite_uri) == {} and ARTICLE not in ingest_site.hits
