"""Event spiders follow what they read through the one address policy (votersdaily/spiders/address_guard.py):
a feed's enclosures that name another service of this machine or a local file are refused, never
fetched; the operator's own host and the files beside a recorded listing are read as before.

The feed is the real docs.house.gov committee RSS recording with its enclosure URLs replaced (a
derived variant: the shape a hostile or hijacked feed would have); the meeting is a real recording."""

from __future__ import annotations

import re
import shutil

import pytest

from tests.conftest import recording
from tests.support.services import LocalSite
from votersdaily.store import open_store

FEED = recording("gov/house_committee_rss/docshouse_sy00_live.xml")
MEETING = recording("gov/house_committee_meeting/meeting-115955.xml")
SPIDER = "house_committee_meetings"


def with_enclosures(*urls: str) -> bytes:
    """The feed with its first enclosures pointing at ``urls``."""
    feed = FEED.read_bytes()
    found = re.findall(rb'<enclosure url="([^"]+)"', feed)
    assert len(found) >= len(urls)
    for old, new in zip(found, urls, strict=False):
        feed = feed.replace(old, new.encode(), 1)
    return feed


def run_log(store_uri: str) -> dict:
    store = open_store(store_uri)
    try:
        (log,) = store.iter_docs("vd_log")
        return log
    finally:
        store.close()


@pytest.fixture
def other_service():
    """Another service on this machine (a port the operator never named)."""
    other = LocalSite().start()
    other.route("/meeting.xml", MEETING.read_bytes(), content_type="text/xml")
    yield other
    other.stop()


def test_a_feed_naming_another_local_service_or_a_local_file_is_refused(
    crawl, site, other_service, sqlite_uri, tmp_path
):
    """Before, both were fetched, archived and stored as meetings: the other service was reached and
    the file outside the crawl read."""
    secret = tmp_path / "elsewhere" / "meeting.xml"
    secret.parent.mkdir()
    shutil.copy(MEETING, secret)
    feed = with_enclosures(other_service.url + "/meeting.xml", secret.as_uri())
    listing = site.route("/Committee/RSS.ashx", feed, content_type="text/xml")
    proc = crawl(SPIDER, listing, sqlite_uri)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert other_service.hits == {}
    log = run_log(sqlite_uri)
    refused = {e["url"]: e for e in log["errors"]}
    assert refused[other_service.url + "/meeting.xml"]["exception"] == "PrivateAddressRefused"
    assert (
        "is a private/loopback/link-local address" in refused[other_service.url + "/meeting.xml"]["message"]
    )
    assert refused[secret.as_uri()]["message"] == (
        "refusing %s: a file: URL named by crawled content, not beside a listing the run started from"
        % secret.as_uri()
    )
    assert log["result"] == "PrivateAddressRefused" and log["insert_count"] == 0


def test_the_operators_own_host_and_the_private_hosts_setting_are_followed(
    crawl, site, other_service, sqlite_uri
):
    site.route("/Meetings/meeting.xml", MEETING.read_bytes(), content_type="text/xml")
    feed = with_enclosures(site.url + "/Meetings/meeting.xml", other_service.url + "/meeting.xml")
    listing = site.route("/Committee/RSS.ashx", feed, content_type="text/xml")
    private = "VOTERSDAILY_EVENT_PRIVATE_HOSTS=127.0.0.1:%d" % other_service.port
    proc = crawl(SPIDER, listing, sqlite_uri, "-s", private)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert site.hits.get("/Meetings/meeting.xml") == 1  # the host the run started from
    assert other_service.hits.get("/meeting.xml") == 1  # the host the operator named


def test_a_recorded_listing_reads_only_the_files_beside_it(crawl, sqlite_uri, tmp_path):
    """A recorded feed whose enclosure is an absolute file: URL outside its folder: before, read as
    if beside it; now named among the documents not beside the listing."""
    secret = tmp_path / "elsewhere" / "HHRG-118-II10-20230523.xml"
    secret.parent.mkdir()
    shutil.copy(MEETING, secret)
    folder = tmp_path / "replay"
    folder.mkdir()
    (folder / "RSS.ashx").write_bytes(with_enclosures(secret.as_uri()))
    proc = crawl(SPIDER, folder / "RSS.ashx", sqlite_uri)
    assert "documents listed by %s are not beside it (skipped): %s" % (
        (folder / "RSS.ashx").as_uri(),
        secret,
    ) in (proc.stderr)
    assert run_log(sqlite_uri)["insert_count"] == 0


def test_the_guard_stays_when_the_operator_sets_the_downloader_middlewares(
    crawl, site, other_service, sqlite_uri
):
    """An operator who sets DOWNLOADER_MIDDLEWARES (``-s``, a scrapyd job's ``setting=``, a spider's
    ``custom_settings = {**RENDER_SETTINGS, ...}``) to add a middleware of their own replaces the
    spider's value: before, that removed the address guard with it (and the archive and replay
    middlewares), and the feed's enclosure on another local service was fetched and stored."""
    feed = with_enclosures(other_service.url + "/meeting.xml")
    listing = site.route("/Committee/RSS.ashx", feed, content_type="text/xml")
    own = '{"scrapy.downloadermiddlewares.stats.DownloaderStats": 851}'
    proc = crawl(SPIDER, listing, sqlite_uri, "-s", "DOWNLOADER_MIDDLEWARES=" + own)
    assert other_service.hits == {}, proc.stderr[-3000:]
    log = run_log(sqlite_uri)
    refused = {e["url"]: e["exception"] for e in log["errors"]}
    assert refused[other_service.url + "/meeting.xml"] == "PrivateAddressRefused"
    assert log["insert_count"] == 0
