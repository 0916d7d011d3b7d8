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

from tests.support.services import REPO
from votersdaily.laundromat.uris import uri_key
from votersdaily.store import open_store

N_FAST = 4


def _sitemap(site: str, names: list[str]) -> str:
    dumps = "\n".join("<sc:dataDumpLocation>%s/d/%s</sc:dataDumpLocation>" % (site, n) for n in names)
    return ('<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
            'xmlns:sc="http://sw.deri.org/2007/07/sitemapextension/scschema.xsd">'
            "<sc:dataset><sc:datasetLabel>r</sc:datasetLabel>%s</sc:dataset></urlset>" % dumps)


def _nt(i: int) -> bytes:
    return "".join('<http://ex.org/s%d> <http://ex.org/p> "%d" .\n' % (i, j) for j in range(50)).encode()


def _docs(store_uri: str) -> dict[str, dict]:
    store = open_store(store_uri)
    try:
        return {d["_id"]: d for d in store.iter_docs("ll_seeds")} if "ll_seeds" in store.list_dbs() else {}
    finally:
        store.close()


def _start(url: str, store_uri: str, out) -> subprocess.Popen:
    env = dict(os.environ, VOTERSDAILY_STORE=store_uri, SCRAPY_SETTINGS_MODULE="votersdaily.settings",
               PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", "laundromat", "-a", "url=" + url,
         "-s", "LAUNDROMAT_OUTPUT_DIR=%s" % out, "-s", "LOG_LEVEL=INFO"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


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
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        release.set()

    before = _docs(sqlite_uri)
    interrupted = before[uri_key(site.url + "/d/slow.nt")]
    assert interrupted["status"] == "downloading"
    hits_before = dict(site.hits)

    # Resume: the same command again.
    proc = _start(sitemap, sqlite_uri, out)
    stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 0, stderr[-4000:]
    after = _docs(sqlite_uri)

    # Finished work was not redone: no second download of the sitemap or of the finished dumps.
    assert site.hits["/sitemap.xml"] == hits_before["/sitemap.xml"] == 1
    for i in range(N_FAST):
        assert site.hits["/d/f%d.nt.gz" % i] == 1
        key = uri_key(site.url + "/d/f%d.nt.gz" % i)
        assert {k: v for k, v in after[key].items() if k != "_rev"} == \
            {k: v for k, v in before[key].items() if k != "_rev"}
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
