"""The event spiders' HTTP cache is a copy: a full disk under it (a real small tmpfs, root only,
skipped otherwise) costs no event and leaves no half-written entry that a later run would serve as
the whole response. The document is the real roll-call recording, served by the local site."""

from __future__ import annotations

from tests.conftest import recording
from tests.support.tmpfs import fill, small_tmpfs
from votersdaily.store import open_store

ROLL314 = recording("gov/house_roll_call/roll314.xml")


def test_a_full_http_cache_costs_no_event(crawl, site, sqlite_uri, tmp_path):
    """Before: "could not fetch …/roll314.xml: [Errno 28] No space left on device", result OSError,
    the event lost, and the entry's meta files left to say the response was cached."""
    # Headers that make the response cacheable under the RFC 2616 policy (a validator and a lifetime).
    headers = {"Last-Modified": "Tue, 01 Sep 2026 18:00:00 GMT", "Cache-Control": "max-age=3600"}
    url = site.route("/evs/2026/roll314.xml", ROLL314.read_bytes(), headers=headers, content_type="text/xml")
    with small_tmpfs(tmp_path / "cache", size="64k") as folder:
        fill(folder, leave=8192)  # room for the entry's first files, not for the body
        proc = crawl("house_votes", url, sqlite_uri, "-s", "HTTPCACHE_DIR=%s" % folder)
        assert proc.returncode == 0, proc.stderr[-3000:]
        said = [line for line in proc.stderr.splitlines() if "HTTP cache" in line]
        assert len(said) == 1 and said[0].endswith(
            "ERROR: the HTTP cache %s cannot take responses (No space left on device): they are parsed "
            "without being cached (HTTPCACHE_DIR)" % folder
        )
        assert not list(folder.rglob("pickled_meta"))  # no entry a later run would trust
    store = open_store(sqlite_uri)
    try:
        (event,) = store.iter_docs("vd_events")
        (log,) = store.iter_docs("vd_log")
    finally:
        store.close()
    assert event["unique_key"] == "119-2-314" and log["result"] == "success"
