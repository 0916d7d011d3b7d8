"""Conditional requests: a source that sends ETag/Last-Modified is asked If-None-Match /
If-Modified-Since on the next run, and a 304 is a successful run with nothing changed."""

from tests.conftest import recording
from votersdaily.store import open_store

ROLL314 = recording("gov/house_roll_call/roll314.xml")
ETAG = '"5829-roll314"'
LAST_MODIFIED = "Wed, 16 Sep 2026 23:30:00 GMT"


def test_conditional_requests_use_etag_and_last_modified(crawl, site, sqlite_uri, tmp_path):
    def roll(handler):
        validators = {
            "ETag": ETAG,
            "Last-Modified": LAST_MODIFIED,
            "Cache-Control": "private, max-age=0",
            "Content-Type": "application/xml",
        }
        if handler.headers.get("If-None-Match") == ETAG:
            return 304, validators, b""
        return 200, validators, ROLL314.read_bytes()

    url = site.route("/evs/2026/roll314.xml", roll)
    cache = ["-s", "HTTPCACHE_DIR=%s" % (tmp_path / "httpcache")]
    for _run in range(2):
        proc = crawl("house_votes", [url], sqlite_uri, *cache)
        assert proc.returncode == 0, proc.stderr[-2000:]
    fetches = [headers for method, path, headers in site.requests if path == "/evs/2026/roll314.xml"]
    assert len(fetches) == 2
    assert "If-None-Match" not in fetches[0]
    assert fetches[1].get("If-None-Match") == ETAG
    assert fetches[1].get("If-Modified-Since") == LAST_MODIFIED
    store = open_store(sqlite_uri)
    logs = [
        r.doc
        for r in store.query("vd_log", "by_parser", startkey=["house_votes"], endkey=["house_votes", {}])
    ]
    assert [(log["result"], log["insert_count"], log["unchanged_count"]) for log in logs] == [
        ("success", 1, 0),
        ("success", 0, 1),
    ]
