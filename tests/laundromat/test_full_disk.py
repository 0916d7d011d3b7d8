"""A full output folder (a real small tmpfs) costs the laundromat no seed and no document, and never
leaves a cut copy that a later step trusts: the run fails naming the folder once (result
``OutputFolderFull``, exit 1), what did not fit waits for the next run, which cleans it whole.

The seed is a real Turtle document read in place: the W3C RDF 1.1 Turtle test manifest
(../shared/conformance, 100 KB)."""

from __future__ import annotations

import errno
import gzip
import shutil
import subprocess

import pytest

from tests.laundromat.conformance import ROOT
from tests.support.tmpfs import fill, small_tmpfs
from votersdaily.store import open_store

MANIFEST = ROOT / "rdf11" / "rdf-turtle" / "manifest.ttl"
#: Where the manifest is published (its IRIs are relative to it).
BASE = "https://w3c.github.io/rdf-tests/rdf/rdf11/rdf-turtle/manifest.ttl"

pytestmark = pytest.mark.skipif(
    not MANIFEST.exists(), reason="%s is absent (../shared/conformance)" % MANIFEST
)


def records(store_uri: str) -> list[dict]:
    store = open_store(store_uri)
    try:
        return list(store.iter_docs("ll_seeds"))
    finally:
        store.close()


def full_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "is full" in line]


def grow(folder) -> None:
    subprocess.run(["mount", "-o", "remount,size=8m", str(folder)], check=True)


def complete_run(crawl, seed: str, sqlite_uri: str, out) -> dict:
    """The next run, with room: the document is cleaned whole."""
    proc = crawl("laundromat", seed, sqlite_uri, "-s", "LAUNDROMAT_OUTPUT_DIR=%s" % out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (parsed,) = [d for d in records(sqlite_uri) if d.get("status") == "parsed"]
    assert parsed["number_of_bytes"] == MANIFEST.stat().st_size
    (cleaned,) = [d for d in records(sqlite_uri) if d.get("status") == "cleaned"]
    with gzip.open(out / cleaned["file"], "rt", encoding="utf-8") as f:
        assert sum(1 for _ in f) == parsed["number_of_unique_statements"] > 900
    return parsed


@pytest.mark.parametrize("scheme", ["file", "http"])
def test_a_download_into_a_full_folder_is_never_cut_and_the_seed_stays_due(
    request, crawl, sqlite_uri, tmp_path, scheme
):
    """A 100 KB seed into a 64 KiB folder. Before, a ``file:`` copy lost the part of a write the disk
    did not take, so a 64 KiB head of the document was filed as the whole download; an HTTP body
    ended in Twisted's "Unhandled Error"."""
    out = tmp_path / "out"
    if scheme == "http":
        site = request.getfixturevalue("site")
        seed = site.route("/manifest.ttl", MANIFEST.read_bytes(), content_type="text/turtle")
    else:
        seed = MANIFEST.resolve().as_uri()
    with small_tmpfs(out, "64k"):
        proc = crawl("laundromat", seed, sqlite_uri, "-s", "LAUNDROMAT_OUTPUT_DIR=%s" % out)
        assert proc.returncode == 1, proc.stderr[-3000:]
        (line,) = full_lines(proc.stderr)
        assert "the laundromat's output folder %s is full (No space left on device)" % out in line
        assert "result=OutputFolderFull" in proc.stderr
        docs = records(sqlite_uri)
        assert not [d for d in docs if d.get("status") in ("filed", "parsed", "cleaned")], docs
        (seed_doc,) = [d for d in docs if d.get("uri") == seed and "download" in d]
        assert seed_doc["processed"] is None  # due again: the next run fetches it
        assert not list((out / "files").iterdir())  # no cut copy left behind
        grow(out)
        complete_run(crawl, seed, sqlite_uri, out)


def test_a_step_that_meets_a_full_folder_is_resumed_by_the_next_run(crawl, sqlite_uri, tmp_path):
    """The seed is on the output's own filesystem (hard-linked, no room needed); its cleaned output
    does not fit: the document waits in its step (parsing), with its file, not failed (before: failed
    for good, as if the document were at fault, and the run a success), and is resumed."""
    out = tmp_path / "out"
    with small_tmpfs(out, "256k"):
        shutil.copy(MANIFEST, out / "manifest.ttl")
        fill(out, leave=8192)
        seed = (out / "manifest.ttl").as_uri()
        proc = crawl("laundromat", seed, sqlite_uri, "-s", "LAUNDROMAT_OUTPUT_DIR=%s" % out)
        assert proc.returncode == 1, proc.stderr[-3000:]
        assert len(full_lines(proc.stderr)) == 1
        docs = records(sqlite_uri)
        assert not [d for d in docs if d.get("status") == "failed"], docs
        (waiting,) = [d for d in docs if d.get("status") == "parsing"]
        assert (out / waiting["file"]).exists()
        (out / "filler").unlink()
        complete_run(crawl, seed, sqlite_uri, out)


def test_a_full_disk_under_the_sorted_runs_is_no_error_of_the_document(tmp_path):
    """The manifest's statements as N-Triples (derived: its cleaned output, unzipped) cleaned in 4 KiB
    pieces, each written as a sorted run (the compiled path's) while the rest is parsed, on a full
    64 KiB tmpfs. Before, a run's ENOSPC was recorded as the document's own error ("OSError: [Errno
    28] …", the parse cut short there), and the merge then failed on the run never written
    (FileNotFoundError: the document failed for good). The disk's error is raised, which the crawl
    takes as its output folder full: the document waits for room."""
    from votersdaily.laundromat import native
    from votersdaily.laundromat.cleaning import CleanOptions, clean_file

    if not native.available():
        pytest.skip("the compiled path is not built (it writes the sorted runs while parsing)")
    cleaned = clean_file(MANIFEST, "Turtle", "0" * 32, tmp_path / "turtle", base_iri=BASE)
    statements = tmp_path / "manifest.nt"
    with gzip.open(cleaned.path, "rb") as f:
        statements.write_bytes(f.read())
    options = CleanOptions(parse_workers=1, parse_chunk=4096, sorted_run_bytes=4096)
    out = tmp_path / "out"
    with small_tmpfs(out, "64k"):
        fill(out, leave=8192)
        with pytest.raises(OSError) as raised:
            clean_file(statements, "N-Triples", "1" * 32, out, options=options)
        assert raised.value.errno == errno.ENOSPC, raised.value
        grow(out)
        # With room, the same options clean it whole.
        whole = clean_file(statements, "N-Triples", "1" * 32, out, options=options)
        assert (whole.errors, whole.unique) == (0, cleaned.unique)


def test_a_run_whose_store_folder_is_full_as_it_starts_stops_in_one_line_and_exits_3(crawl, tmp_path):
    """The embedded store's folder filled up after the store was last closed (cleanly: its ``-wal``
    file is gone, and SQLite cannot make it again). Before: the store was opened as the spider was
    built, and ``scrapy crawl laundromat`` died of ``sqlite3.OperationalError: disk I/O error`` in a
    traceback, exit 1, no run log (audit, 2026-11-29). Now the store that cannot be opened is one that
    does not answer: the run stops before fetching anything in one line naming the full folder, exit
    3, its run log spooled; once there is room, the next run cleans the seed."""
    out = tmp_path / "out"
    seed = MANIFEST.as_uri()
    with small_tmpfs(tmp_path / "disk", "4m") as folder:
        store_uri = "sqlite:///%s" % (folder / "store.sqlite")
        store = open_store(store_uri)
        store.ensure_db("vd_log")
        store.close()
        filler = fill(folder)
        spool = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool")}

        proc = crawl("laundromat", seed, store_uri, "-s", "LAUNDROMAT_OUTPUT_DIR=%s" % out, env=spool)

        assert proc.returncode == 3, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
        (line,) = [line for line in proc.stderr.splitlines() if "seed list" in line]
        assert "the folder %s is full (disk I/O error): make room there" % folder in line, line
        assert "stopped before fetching anything" in line, line
        assert list((tmp_path / "spool").rglob("vd_log--*.jsonl")), "the run log is spooled"
        filler.unlink()
        complete_run(crawl, seed, store_uri, out)
