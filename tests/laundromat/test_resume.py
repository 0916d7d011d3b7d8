"""Crash-resume: a real ``scrapy crawl laundromat`` killed mid-way (SIGKILL) resumes from the recorded
states; finished work is not redone, nothing is lost, nothing is duplicated."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.laundromat import sitedata
from tests.support.services import REPO
from votersdaily.clock import now_iso
from votersdaily.laundromat.download_records import download_key
from votersdaily.laundromat.seedlist import SeedList
from votersdaily.laundromat.seeds import new_seed
from votersdaily.laundromat.uris import uri_key
from votersdaily.store import open_store

pytestmark = pytest.mark.slow  # crawl subprocesses killed (SIGKILL) mid-way, then resumed

N_FAST = 4


def _sitemap(site: str, names: list[str]) -> str:
    dumps = "\n".join("<sc:dataDumpLocation>%s/d/%s</sc:dataDumpLocation>" % (site, n) for n in names)
    return (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        'xmlns:sc="http://sw.deri.org/2007/07/sitemapextension/scschema.xsd">'
        "<sc:dataset><sc:datasetLabel>r</sc:datasetLabel>%s</sc:dataset></urlset>" % dumps
    )


def _nt(i: int) -> bytes:
    return "".join('<http://ex.org/s%d> <http://ex.org/p> "%d" .\n' % (i, j) for j in range(50)).encode()


def _docs(store_uri: str) -> dict[str, dict]:
    store = open_store(store_uri)
    try:
        return {d["_id"]: d for d in store.iter_docs("ll_seeds")} if "ll_seeds" in store.list_dbs() else {}
    finally:
        store.close()


def _start(url: str, store_uri: str, out, *extra: str) -> subprocess.Popen:
    """The crawl in a new session, so that killing its group also kills its cleaning workers
    (``extra``: more ``scrapy crawl`` arguments)."""
    env = dict(
        os.environ,
        VOTERSDAILY_STORE=store_uri,
        SCRAPY_SETTINGS_MODULE="votersdaily.settings",
        PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "scrapy",
            "crawl",
            "laundromat",
            "-a",
            "url=" + url,
            "-s",
            "LAUNDROMAT_OUTPUT_DIR=%s" % out,
            "-s",
            "LOG_LEVEL=INFO",
            "-s",
            "LAUNDROMAT_PRIVATE_HOSTS=%s" % urlsplit(url).netloc,  # the local site's sitemap entries
            *extra,
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL the crawl and every process it started (its own process group)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)


def _finish(proc: subprocess.Popen) -> str:
    _stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 0, stderr[-4000:]
    return stderr


def test_killed_crawl_resumes(site, sqlite_uri, tmp_path):
    out = tmp_path / "out"
    names = ["f%d.nt.gz" % i for i in range(N_FAST)] + ["slow.nt"]
    release = threading.Event()

    def slow(handler):
        release.wait(120)
        return _nt(99)

    for i in range(N_FAST):
        site.route("/d/f%d.nt.gz" % i, gzip.compress(_nt(i)), content_type="application/gzip")
    site.route("/d/slow.nt", slow, content_type="application/n-triples")
    sitemap = site.route("/sitemap.xml", _sitemap(site.url, names), content_type="application/xml")

    proc = _start(sitemap, sqlite_uri, out)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            docs = _docs(sqlite_uri)
            parsed = [d for d in docs.values() if d.get("status") == "parsed"]
            slow_seed = docs.get(uri_key(site.url + "/d/slow.nt"))
            if len(parsed) == N_FAST and slow_seed and slow_seed["status"] == "downloading":
                break
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            time.sleep(0.2)
        else:
            raise AssertionError("the crawl never reached the kill point")
    finally:
        _kill(proc)
        release.set()

    before = _docs(sqlite_uri)
    interrupted = before[uri_key(site.url + "/d/slow.nt")]
    assert interrupted["status"] == "downloading"
    hits_before = dict(site.hits)

    # Resume: the same command again.
    proc = _start(sitemap, sqlite_uri, out)
    _stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 0, stderr[-4000:]
    after = _docs(sqlite_uri)

    # Finished work was not redone: no second download of the sitemap or of the finished dumps.
    assert site.hits["/sitemap.xml"] == hits_before["/sitemap.xml"] == 1
    for i in range(N_FAST):
        assert site.hits["/d/f%d.nt.gz" % i] == 1
        key = uri_key(site.url + "/d/f%d.nt.gz" % i)
        assert {k: v for k, v in after[key].items() if k != "_rev"} == {
            k: v for k, v in before[key].items() if k != "_rev"
        }
    assert site.hits["/d/slow.nt"] == 2, (hits_before, site.hits, stderr[-3000:])

    # Nothing lost: every dump is parsed, once, with its cleaned record.
    seeds = {d["uri"]: d for d in after.values() if "uri" in d and "parent" not in d}
    assert set(seeds) == {sitemap} | {site.url + "/d/" + n for n in names}
    assert all(s["status"] == "added" and s["processed"] for s in seeds.values())
    parsed = [d for d in after.values() if d.get("status") == "parsed"]
    per_seed = {}
    for d in parsed:
        per_seed.setdefault(d["seed"], []).append(d)
    assert sorted(per_seed) == sorted(uri_key(site.url + "/d/" + n) for n in names)
    assert all(len(v) == 1 for v in per_seed.values())
    cleaned = [d for d in after.values() if d.get("status") == "cleaned"]
    assert sorted(d["dirty"] for d in cleaned) == sorted(d["_id"] for d in parsed)
    assert all(d["content"]["number_of_unique_statements"] == 50 for d in cleaned)
    # The interrupted download record ended as failed; its replacement is the one processed.
    old = after[interrupted["download"]]
    assert old["status"] == "failed" and "interrupted" in old["error"]
    assert after[uri_key(site.url + "/d/slow.nt")]["download"] != interrupted["download"]


def test_crawl_killed_while_cleaning_resumes(site, sqlite_uri, tmp_path):
    """SIGKILL while a document is being parsed and cleaned (forked range workers and sort running):
    the resumed run cleans it once, from the recorded state, without downloading it again."""
    out = tmp_path / "out"
    n, distinct = 400_000, 300_000  # over 16 MiB: cleaned by the forked range workers
    body = "".join(
        '<http://ex.org/s%d> <http://ex.org/p> "v%d" .\n' % (i % distinct, i % distinct) for i in range(n)
    ).encode()
    url = site.route("/d/big.nt", body, content_type="application/n-triples")
    key = uri_key(url)
    proc = _start(url, sqlite_uri, out)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            states = {d.get("status") for d in _docs(sqlite_uri).values() if d.get("seed") == key}
            if "parsing" in states:
                break
            assert proc.poll() is None and "parsed" not in states, "the kill point was missed"
            time.sleep(0.02)
        else:
            raise AssertionError("the crawl never reached the parsing state")
    finally:
        _kill(proc)
    before = _docs(sqlite_uri)
    (dirty,) = [d for d in before.values() if d.get("seed") == key and d.get("status") == "parsing"]
    assert not [d for d in before.values() if d.get("status") == "cleaned"]

    _finish(_start(url, sqlite_uri, out))
    after = _docs(sqlite_uri)
    assert site.hits["/d/big.nt"] == 1  # the file was not downloaded again
    record = after[dirty["_id"]]
    assert record["status"] == "parsed"
    assert (record["number_of_statements"], record["number_of_unique_statements"]) == (n, distinct)
    assert record["number_of_duplicates"] == n - distinct and record["number_of_errors"] == 0
    cleaned = [d for d in after.values() if d.get("status") == "cleaned"]
    assert [d["_id"] for d in cleaned] == [record["clean"]] and cleaned[0]["dirty"] == dirty["_id"]
    assert sorted(p.name for p in (out / "cleaned").glob("*.gz")) == [cleaned[0]["file"].rsplit("/", 1)[-1]]
    with gzip.open(out / cleaned[0]["file"], "rb") as f:
        lines = f.read().split(b"\n")[:-1]
    assert len(lines) == distinct and lines == sorted(set(lines))
    assert not (out / record["recoded_file"]).exists()  # finished work is tidied as usual


@pytest.mark.parametrize("left_in", ["filed", "unarchiving"])
def test_sitemap_left_half_done_resumes_as_a_sitemap(site, sqlite_uri, tmp_path, left_in):
    """A run that died after filing a sitemap's download (or while reading it) left the record
    ``filed``/``unarchiving``: the resumed run reads it as a sitemap again, not as an RDF file.
    The state is the one the spider writes right before the sitemap step (seed back to ``added``,
    processed, its download record filed with the body on disk)."""
    out = tmp_path / "out"
    names = ["a.nt", "b.nt"]
    for i, name in enumerate(names):
        site.route("/d/" + name, _nt(i), content_type="application/n-triples")
    sitemap_url = site.route("/sitemap.xml", _sitemap(site.url, names), content_type="application/xml")
    seed = new_seed(sitemap_url, interval=86400.0)
    begin = now_iso()
    download = download_key(seed["_id"], begin)
    (out / "files").mkdir(parents=True)
    (out / "files" / download).write_bytes(_sitemap(site.url, names).encode())
    record = {
        "_id": download,
        "parent": seed["_id"],
        "seed": seed["_id"],
        "status": left_in,
        "uri": sitemap_url,
        "timestamp": {"begin": begin, "end": begin},
        "http": [],
        "file": "files/" + download,
        "base_uri": sitemap_url,
        "name": "sitemap.xml",
        "content_type": "application/xml",
        "depth": 0,
    }
    _put_crashed_state(sqlite_uri, dict(seed, processed=begin, download=download), record)

    _finish(_start(sitemap_url, sqlite_uri, out))
    after = _docs(sqlite_uri)
    assert site.hits.get("/sitemap.xml", 0) == 0  # processed recently: not downloaded again
    done = after[download]
    assert done["status"] == "depleted" and done["sitemap"] == "urlset" and "format" not in done
    dump_keys = [uri_key(site.url + "/d/" + name) for name in names]
    assert sorted(done["children"]) == sorted(dump_keys)
    for name, key in zip(names, dump_keys, strict=True):
        assert site.hits["/d/" + name] == 1
        parsed = [d for d in after.values() if d.get("seed") == key and d.get("status") == "parsed"]
        assert len(parsed) == 1 and parsed[0]["number_of_unique_statements"] == 50
    assert not (out / "files" / download).exists()


@pytest.mark.parametrize(
    "children_written", [False, True], ids=["during-unpacking", "after-children-written"]
)
def test_archive_left_unarchiving_resumes_without_loss(site, sqlite_uri, tmp_path, children_written):
    """A run killed while unpacking a zip left its download record ``unarchiving``, and (killed
    between writing the entries' records and marking the zip ``depleted``) maybe its children
    ``filed`` with their files on disk. The resumed run unpacks the zip again: every entry is parsed
    once, none ends ``failed`` for a file the other pass tidied away, the seed is not re-queued.
    The zip's key sorts before its children's, so the stale ``filed`` snapshots come last."""
    from votersdaily.laundromat.archives import ArchiveLimits
    from votersdaily.laundromat.steps import unpack_step

    out = tmp_path / "out"
    names = ["a.nt", "b.nt", "c.nt"]
    body = sitedata.zip_of({name: _nt(i) for i, name in enumerate(names)})
    url = site.route("/d/three.zip", body, content_type="application/zip")
    seed = new_seed(url, interval=86400.0)
    begin = now_iso()
    (out / "files").mkdir(parents=True)
    for attempt in range(1000):
        download = download_key(seed["_id"], "%s-%d" % (begin, attempt))
        (out / "files" / download).write_bytes(body)
        entries = unpack_step(
            str(out / "files" / download), str(out / "files"), download, "three.zip", 0, ArchiveLimits()
        )["entries"]
        if download < min(e["key"] for e in entries):
            break
        for entry in entries:
            Path(entry["path"]).unlink()
        (out / "files" / download).unlink()
    record = {
        "_id": download,
        "parent": seed["_id"],
        "seed": seed["_id"],
        "status": "unarchiving",
        "uri": url,
        "timestamp": {"begin": begin, "end": begin},
        "http": [],
        "number_of_bytes": len(body),
        "file": "files/" + download,
        "base_uri": url,
        "name": "three.zip",
        "content_type": "application/zip",
        "depth": 0,
    }
    children = [
        {
            "_id": e["key"],
            "parent": download,
            "seed": seed["_id"],
            "status": "filed",
            "entry_name": e["entry_name"],
            "name": e["name"],
            "number_of_bytes": e["size"],
            "depth": 1,
            "root": download,
            "file": "files/" + e["key"],
            "base_uri": url + "/" + e["name"],
            "content_type": None,
            "added": begin,
        }
        for e in entries
    ]
    if not children_written:
        for entry in entries:
            Path(entry["path"]).unlink()
    _put_crashed_state(
        sqlite_uri,
        dict(seed, processed=begin, download=download),
        record,
        *(children if children_written else []),
    )

    _finish(_start(url, sqlite_uri, out))
    after = _docs(sqlite_uri)
    assert site.hits.get("/d/three.zip", 0) == 0  # processed recently: not downloaded again
    zipped = after[download]
    assert zipped["status"] == "depleted" and zipped["archive"] == "zip"
    assert sorted(zipped["children"]) == sorted(e["key"] for e in entries)
    assert zipped["tree_entries"] == 3 and zipped["tree_unpacked_bytes"] == sum(len(_nt(i)) for i in range(3))
    assert not [d for d in after.values() if d.get("status") == "failed"]
    for entry in entries:
        child = after[entry["key"]]
        assert child["status"] == "parsed" and child["number_of_unique_statements"] == 50, child
        assert after[child["clean"]]["dirty"] == child["_id"]
    assert len([d for d in after.values() if d.get("status") == "cleaned"]) == 3
    assert after[seed["_id"]]["processed"] == begin  # not re-queued
    assert sorted(p.name for p in (out / "files").iterdir()) == []


def _put_crashed_state(sqlite_uri: str, *records: dict) -> None:
    """Write the records a crashed run would have left in ``ll_seeds``."""
    store = open_store(sqlite_uri)
    try:
        seeds = SeedList(store)
        seeds.open()
        seeds.put(*records)
    finally:
        store.close()
