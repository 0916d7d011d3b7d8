"""What the laundromat fetches: URLs from crawled content go through the address policy (hostile
targets are refused, never fetched); the operator's own ``file:`` seeds work, devices and FIFOs do
not; a failed download ends as ``failed`` and the crawl finishes. Real crawls in a subprocess, on
loopback only. The hostile documents (sitemap, VoID links, redirects) are generated here."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from tests.laundromat.test_crawl import failed, ok, records, run_logs
from tests.laundromat.test_resume import _finish, _start
from tests.support.services import LocalSite
from votersdaily.laundromat import fetching
from votersdaily.laundromat.fetching import copy_local_file

MARKER = "internal-service-secret"
SECRET_NT = '<http://internal.example/s> <http://internal.example/p> "%s" .\n' % MARKER
PASSWD_TOKEN = "root:"
GOOD_NT = '<http://example.org/s> <http://example.org/p> "public" .\n'


@pytest.fixture
def hostile():
    """A second local server, standing for an internal service: it must never be asked anything."""
    s = LocalSite().start()
    s.route("/secret.nt", SECRET_NT, content_type="application/n-triples")
    yield s
    s.stop()


def _answered(handler) -> tuple:
    """For a route that wrote its own answer: what the site then writes goes nowhere."""
    handler.wfile = io.BytesIO()
    handler.close_connection = True
    return 200, {}, b""


def _everything(out: Path, docs: dict) -> str:
    """Every stored record and every cleaned statement, as one text."""
    text = [repr(docs)]
    for path in (out / "cleaned").glob("**/*.gz"):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            text.append(f.read())
    return "\n".join(text)


def _downloads_of(docs: dict, uri: str) -> list[dict]:
    return [d for d in docs.values() if d.get("uri") == uri and d.get("parent")]


def test_derived_urls_to_hostile_targets_are_refused(crawl, site, hostile, sqlite_uri, tmp_path):
    """A sitemap (``loc``s and semantic-sitemap dump locations), VoID ``void:dataDump`` links in a
    cleaned dump and HTTP redirects, all pointing at loopback (another port), 169.254.169.254,
    ``file:///etc/passwd`` and ``file:///dev/zero``: each ends as a failed download with the
    policy's reason, the internal server records zero hits, nothing of them is stored."""
    targets = [
        hostile.url + "/secret.nt",
        "http://169.254.169.254/latest/meta-data/",
        "file:///etc/passwd",
        "file:///dev/zero",
    ]
    void_links = [t.replace("/secret.nt", "/void.nt").replace("meta-data/", "void") for t in targets[:2]]
    dump = GOOD_NT + "".join(
        "<http://example.org/ds> <http://rdfs.org/ns/void#dataDump> <%s> .\n" % t
        for t in [*void_links, targets[2]]
    )
    good = site.route("/good.nt", dump, content_type="application/n-triples")
    redirects = [
        site.route("/r%d.nt" % i, status=302, headers={"Location": t}) for i, t in enumerate(targets)
    ]
    sitemap = site.route(
        "/sitemap.xml",
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        'xmlns:sc="http://sw.deri.org/2007/07/sitemapextension/scschema.xsd">%s'
        "<sc:dataset><sc:datasetLabel>d</sc:datasetLabel>%s%s</sc:dataset></urlset>"
        % (
            "".join("<url><loc>%s</loc></url>" % t for t in [*targets, *redirects]),
            "".join(
                "<sc:dataDumpLocation>%s</sc:dataDumpLocation>" % t.replace(".nt", "-dump.nt")
                for t in targets
            ),
            "<sc:dataDumpLocation>%s</sc:dataDumpLocation>" % good,
        ),
        content_type="application/xml",
    )
    out = tmp_path / "out"
    started = time.monotonic()
    failed(crawl("laundromat", [sitemap], sqlite_uri, "-s", "LAUNDROMAT_OUTPUT_DIR=%s" % out))
    assert time.monotonic() - started < 120
    assert hostile.hits == {}, "the internal server was asked: %r" % hostile.hits
    docs = records(sqlite_uri)

    refused = [*targets, *[t.replace(".nt", "-dump.nt") for t in targets], *void_links]
    for uri in refused:
        (download,) = _downloads_of(docs, uri)
        assert download["status"] == "failed", download
        assert download["error"].startswith("PrivateAddressRefused: refusing"), download["error"]
        assert "file" not in download
    for uri, target in zip(redirects, targets, strict=True):
        (download,) = _downloads_of(docs, uri)
        assert download["status"] == "failed" and download["error"].startswith("PrivateAddressRefused")
        assert [h["status"] for h in download["http"]] == [302, None] and download["http"][1]["uri"] == target
    (good_download,) = _downloads_of(docs, good)
    assert good_download["status"] == "parsed" and good_download["number_of_unique_statements"] == 4
    stored = _everything(out, docs)
    assert MARKER not in stored and PASSWD_TOKEN not in stored
    assert not list((out / "files").glob("*")), "no file left behind"


def test_operator_file_seeds_and_their_limits(crawl, sqlite_uri, tmp_path):
    """The operator's own ``file:`` seeds are read; a device, a FIFO (no writer: opening it must not
    hang), a file over ``LAUNDROMAT_MAX_DOWNLOAD_BYTES`` and a missing file each end as failed."""
    good = tmp_path / "good.nt"
    good.write_text(GOOD_NT, encoding="utf-8")
    big = tmp_path / "big.nt"
    big.write_text(GOOD_NT * 100, encoding="utf-8")
    fifo = tmp_path / "pipe.nt"
    os.mkfifo(fifo)
    missing = tmp_path / "missing.nt"
    seeds = [good, big, fifo, missing]
    out = tmp_path / "out"
    failed(
        crawl(
            "laundromat",
            [*seeds, "file:///dev/zero"],
            sqlite_uri,
            "-s",
            "LAUNDROMAT_OUTPUT_DIR=%s" % out,
            "-s",
            "LAUNDROMAT_MAX_DOWNLOAD_BYTES=%d" % (len(GOOD_NT) * 10),
        )
    )
    docs = records(sqlite_uri)
    errors = {}
    for uri in [*(s.resolve().as_uri() for s in seeds), "file:///dev/zero"]:
        (download,) = _downloads_of(docs, uri)
        errors[Path(uri).name] = (download["status"], download.get("error", "").split(":")[0])
    assert errors == {
        "good.nt": ("parsed", ""),
        "big.nt": ("failed", "DownloadTooLarge"),
        "pipe.nt": ("failed", "LocalFileRefused"),
        "missing.nt": ("failed", "FileNotFoundError"),
        "zero": ("failed", "LocalFileRefused"),
    }
    assert not list((out / "files").glob("*"))
    # The operator's files were linked (same filesystem), never written to, and are theirs alone again.
    assert good.read_text(encoding="utf-8") == GOOD_NT and good.stat().st_nlink == 1
    assert big.read_text(encoding="utf-8") == GOOD_NT * 100 and big.stat().st_nlink == 1


def test_an_operator_file_is_linked_on_its_filesystem_and_copied_elsewhere(tmp_path, monkeypatch):
    source = tmp_path / "dump.nt"
    source.write_text(GOOD_NT, encoding="utf-8")
    alias = tmp_path / "alias.nt"
    alias.symlink_to(source)
    assert copy_local_file(str(alias), tmp_path / "linked", 1 << 20, 10) == len(GOOD_NT.encode())
    assert (tmp_path / "linked").stat().st_ino == source.stat().st_ino
    monkeypatch.setattr(fetching.os, "link", lambda *a: (_ for _ in ()).throw(OSError(18, "cross-device")))
    assert copy_local_file(str(source), tmp_path / "copied", 1 << 20, 10) == len(GOOD_NT.encode())
    copied = tmp_path / "copied"
    assert copied.stat().st_ino != source.stat().st_ino and copied.read_bytes() == source.read_bytes()


def test_failed_downloads_end_as_failed_and_the_crawl_finishes(crawl, sqlite_uri, tmp_path):
    """Connection refused (a closed loopback port), a name that cannot resolve (a 64-character label:
    refused by the resolver itself, no DNS query leaves the machine) and a missing ``file:``: each
    download is failed with its error, and the crawl ends on its own."""
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    refused = "http://127.0.0.1:%d/dump.nt" % closed_port
    unresolvable = "http://%s.invalid/dump.nt" % ("x" * 64)
    missing = (tmp_path / "missing.nt").resolve().as_uri()
    out = tmp_path / "out"
    started = time.monotonic()
    failed(
        crawl(
            "laundromat", [refused, unresolvable, missing], sqlite_uri, "-s", "LAUNDROMAT_OUTPUT_DIR=%s" % out
        )
    )
    assert time.monotonic() - started < 120
    docs = records(sqlite_uri)
    for uri, error in [
        (refused, "ConnectionRefusedError"),
        (unresolvable, "DNSLookupError"),
        (missing, "FileNotFoundError"),
    ]:
        (download,) = _downloads_of(docs, uri)
        assert download["status"] == "failed" and download["error"].startswith(error), download
        assert download["http"][-1]["status"] is None and download["http"][-1]["error"].startswith(error)
        seed = docs[download["parent"]]
        assert seed["status"] == "added" and seed["processed"]


@pytest.mark.parametrize("head_sent", [True, False], ids=["body-under-way", "head-not-come"])
def test_sigint_stops_a_crawl_stuck_on_a_slow_download(head_sent, site, sqlite_uri, tmp_path):
    """Two seeds on a server that sends a few bytes and then nothing (or, ``head-not-come``, nothing
    at all), the second waiting out a download delay: SIGINT ends the crawl promptly, one download
    cut short, the other never sent. The run was interrupted, and neither is a failure of its seed:
    both stay due, and the next run fetches them (before: the run log's result ``CancelledError``, or
    ``ResponseNeverReceived`` when the head had not come, each seed ``processed`` then, so the next
    run said "0 of 2 seeds due" for a whole LAUNDROMAT_DEFAULT_INTERVAL)."""

    release = threading.Event()

    def trickle(handler):
        if not head_sent:
            release.wait(60)
            return _answered(handler)
        handler.send_response(200)
        handler.send_header("Content-Length", "1000000")
        handler.end_headers()
        handler.wfile.write(b"<http://example.org/s> ")
        handler.wfile.flush()
        release.wait(60)
        return _answered(handler)

    paths = ["/slow.nt", "/slow2.nt"]
    urls = [site.route(path, trickle) for path in paths]
    out = tmp_path / "out"
    delay = ("DOWNLOAD_DELAY=120", "RANDOMIZE_DOWNLOAD_DELAY=False", "ROBOTSTXT_OBEY=False")
    proc = _start(",".join(urls), sqlite_uri, out, *(arg for setting in delay for arg in ("-s", setting)))
    try:
        deadline = time.monotonic() + 60
        while not any(site.hits.get(p) for p in paths) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1)
        assert sum(site.hits.get(p, 0) for p in paths) == 1, site.hits
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "scrapy crawl: interrupted: stopping after the current requests" in stderr, stderr[-3000:]
    assert "Spider closed (shutdown)" in stderr and proc.returncode == 130, stderr[-3000:]
    docs = records(sqlite_uri)
    interrupted = {}
    for url in urls:
        (download,) = _downloads_of(docs, url)
        assert download["status"] == "failed" and download["error"] == (
            "CrawlInterrupted: the crawl was interrupted before %s was fetched" % url
        ), download
        seed = docs[download["parent"]]
        assert (seed["status"], seed["processed"]) == ("added", None), seed
        interrupted[url] = download["_id"]
    assert not list((out / "files").glob("*")), "the partial file is removed"
    (log,) = run_logs(sqlite_uri)
    assert (log["result"], log["interrupted"], log["not_fetched_count"]) == ("interrupted", "graceful", 2)

    for path in paths:
        site.route(path, GOOD_NT, content_type="application/n-triples")
    _finish(_start(",".join(urls), sqlite_uri, out))
    docs = records(sqlite_uri)
    for url in urls:
        (again,) = [d for d in _downloads_of(docs, url) if d["_id"] != interrupted[url]]
        assert again["status"] == "parsed" and again["number_of_unique_statements"] == 1


def test_http_download_over_the_size_limit_fails(crawl, site, sqlite_uri, tmp_path):
    """Bodies stream to disk under ``LAUNDROMAT_MAX_DOWNLOAD_BYTES``: one announcing more is refused
    before its body is read, one that does not announce its length is cut at the limit; one within
    the limit is filed whole."""
    small = site.route("/small.nt", GOOD_NT, content_type="application/n-triples")
    large = site.route("/large.nt", GOOD_NT * 40, content_type="application/n-triples")

    def unannounced(handler):
        """No Content-Length: the body ends when the connection closes, so only counting stops it."""
        handler.send_response(200)
        handler.send_header("Connection", "close")
        handler.end_headers()
        with contextlib.suppress(OSError):
            for _ in range(40):
                handler.wfile.write(GOOD_NT.encode())
            handler.wfile.flush()
        return _answered(handler)

    streamed = site.route("/unannounced.nt", unannounced)
    out = tmp_path / "out"
    limit = len(GOOD_NT) * 20
    failed(
        crawl(
            "laundromat",
            [small, large, streamed],
            sqlite_uri,
            "-s",
            "LAUNDROMAT_OUTPUT_DIR=%s" % out,
            "-s",
            "LAUNDROMAT_MAX_DOWNLOAD_BYTES=%d" % limit,
        )
    )
    docs = records(sqlite_uri)
    (filed,) = _downloads_of(docs, small)
    assert filed["status"] == "parsed" and filed["number_of_bytes"] == len(GOOD_NT)
    (refused,) = _downloads_of(docs, large)
    assert refused["status"] == "failed"
    assert refused["error"] == "DownloadTooLarge: Content-Length %d exceeds %d bytes" % (
        len(GOOD_NT) * 40,
        limit,
    )
    (cut,) = _downloads_of(docs, streamed)
    assert (cut["status"], cut["error"]) == ("failed", "DownloadTooLarge: body exceeds %d bytes" % limit)
    assert not list((out / "files").glob("*"))


def _sysfs_file() -> str | None:
    """A readable regular file of /sys, where this kernel has one."""
    for path in (
        "/sys/kernel/mm/transparent_hugepage/enabled",
        "/sys/kernel/uevent_seqnum",
        "/sys/power/state",
    ):
        if Path(path).is_file() and os.access(path, os.R_OK):
            return path
    return None


def test_failed_and_skipped_seeds_are_said_and_leave_no_file(crawl, sqlite_uri, tmp_path):
    """Operator seeds that fail: a real PDF (../shared's dummy.pdf, copied: the operator's file),
    ``/proc/self/status`` (a regular file of the proc filesystem: it was copied into files/ and
    kept after it failed as not RDF), a /sys file, a UNIX socket. Each ends failed with its reason
    at WARNING; no copy or link of them is left in files/; the operator's PDF is as it was. A
    second run within the interval says, for each seed, that it is not stale and until when, and
    sums it up (it used to report all zeros and nothing else)."""
    import socket

    from tests.support.services import shared_dir

    pdf = shared_dir() / "fixtures" / "inplace" / "scholarly" / "dummy.pdf"
    if not pdf.exists():
        pytest.skip("%s is absent (../shared)" % pdf)
    paper = tmp_path / "paper.pdf"
    paper.write_bytes(pdf.read_bytes())
    good = tmp_path / "good.nt"
    good.write_text(GOOD_NT, encoding="utf-8")
    sock_path = tmp_path / "service.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sock_path))
    special = ["file:///proc/self/status"] + (["file://" + _sysfs_file()] if _sysfs_file() else [])
    seeds = [paper.resolve().as_uri(), good.resolve().as_uri(), sock_path.resolve().as_uri(), *special]
    out = tmp_path / "out"
    try:
        first = failed(crawl("laundromat", seeds, sqlite_uri, "-s", "LAUNDROMAT_OUTPUT_DIR=%s" % out))
    finally:
        listener.close()
    docs = records(sqlite_uri)
    outcome = {}
    for uri in seeds:
        (download,) = _downloads_of(docs, uri)
        outcome[uri] = (download["status"], download.get("error", ""))
    assert outcome[good.resolve().as_uri()] == ("parsed", "")
    assert outcome[paper.resolve().as_uri()][0] == "failed"
    assert outcome[paper.resolve().as_uri()][1].startswith("not RDF: content starts with '%PDF-'")
    assert outcome[sock_path.resolve().as_uri()][1].endswith("not a regular file (a socket)")
    assert outcome["file:///proc/self/status"] == (
        "failed",
        "LocalFileRefused: refusing /proc/self/status: a file of the proc filesystem (kernel state, not data)",
    )
    for uri in special[1:]:
        assert outcome[uri][1].endswith("a file of the sysfs filesystem (kernel state, not data)")
    assert not list((out / "files").glob("*")), "no copy or link of a failed input is kept"
    assert paper.read_bytes() == pdf.read_bytes() and paper.stat().st_nlink == 1
    log = first.stderr
    assert (
        "WARNING: %s failed (guessing): not RDF: content starts with '%%PDF-'" % paper.resolve().as_uri()
        in log
    )
    for uri in [sock_path.resolve().as_uri(), *special]:
        assert "WARNING: download of %s failed: LocalFileRefused: refusing" % uri in log
    assert "%d of %d seeds due" % (len(seeds), len(seeds)) in log

    second = ok(crawl("laundromat", seeds, sqlite_uri, "-s", "LAUNDROMAT_OUTPUT_DIR=%s" % out)).stderr
    for uri in seeds:
        assert "INFO: %s not downloaded: not stale (processed " % uri in second
    assert "0 of %d seeds due; %d not stale, the first stale after " % (len(seeds), len(seeds)) in second
