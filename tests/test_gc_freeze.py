"""The start-up objects are out of the garbage collector while a crawl runs, and back after it."""

import gc
from pathlib import Path

import pytest
from scrapy import Spider, signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from tests.laundromat.sitedata import NT_Z
from tests.support.startup import ENTRY_POINTS, fresh_python
from votersdaily.gc_freeze import FreezeStartupObjects, collections_paused
from votersdaily.settings import EXTENSIONS
from votersdaily.store.embedded import EmbeddedStore


def test_frozen_from_engine_start_to_engine_stop():
    crawler = get_crawler(Spider, {"VOTERSDAILY_GC_FREEZE": True})
    extension = FreezeStartupObjects.from_crawler(crawler)  # kept: signals hold receivers weakly
    assert gc.get_freeze_count() == 0
    crawler.signals.send_catch_log(signals.engine_started)
    try:
        assert gc.get_freeze_count() > 10_000  # modules, classes, functions: the whole start-up
    finally:
        crawler.signals.send_catch_log(signals.engine_stopped)
    assert gc.get_freeze_count() == 0
    del extension


def test_no_collection_while_paused_and_the_collector_as_it_was_after():
    runs = []

    def count(phase, info):
        runs.append(phase)

    gc.callbacks.append(count)
    try:
        with collections_paused():
            kept = [{"n": i} for i in range(3 * gc.get_threshold()[0])]  # several thresholds' worth
            assert not gc.isenabled() and runs == []
        assert gc.isenabled()
        gc.disable()  # paused by someone else: still paused after
        with collections_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.callbacks.remove(count)
    del kept


def test_off_by_its_settings_and_on_in_the_project():
    off = {"VOTERSDAILY_GC_FREEZE": False, "VOTERSDAILY_GC_YOUNG_THRESHOLD": 0}
    with pytest.raises(NotConfigured):
        FreezeStartupObjects.from_crawler(get_crawler(Spider, off))
    assert "votersdaily.gc_freeze.FreezeStartupObjects" in EXTENSIONS


@pytest.mark.parametrize("freeze", [True, False])
def test_the_young_generation_is_collected_less_often_while_the_crawl_runs(freeze):
    crawler = get_crawler(Spider, {"VOTERSDAILY_GC_FREEZE": freeze, "VOTERSDAILY_GC_YOUNG_THRESHOLD": 50_000})
    extension = FreezeStartupObjects.from_crawler(crawler)
    before = gc.get_threshold()
    crawler.signals.send_catch_log(signals.engine_started)
    try:
        assert gc.get_threshold() == (50_000, *before[1:])
        assert (gc.get_freeze_count() > 0) is freeze
    finally:
        crawler.signals.send_catch_log(signals.engine_stopped)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    del extension


def test_python_s_threshold_kept_when_the_setting_is_0():
    crawler = get_crawler(Spider, {"VOTERSDAILY_GC_FREEZE": True, "VOTERSDAILY_GC_YOUNG_THRESHOLD": 0})
    extension = FreezeStartupObjects.from_crawler(crawler)
    before = gc.get_threshold()
    crawler.signals.send_catch_log(signals.engine_started)
    try:
        assert gc.get_threshold() == before
    finally:
        crawler.signals.send_catch_log(signals.engine_stopped)
    del extension


def test_scrapy_crawl_ends_with_everything_frozen(sqlite_uri, tmp_path):
    """``scrapy crawl`` (a laundromat crawl of a one-statement file: tests/laundromat/sitedata.py's)
    freezes every object as its interpreter exits, so Python's last collections walk none of them.
    The probe's handler is registered first, so it runs after the command's (atexit runs last in,
    first out)."""
    data = tmp_path / "z.nt"
    data.write_text(NT_Z, encoding="utf-8")
    args = [
        "crawl",
        "laundromat",
        "-a",
        "url=" + data.as_uri(),
        "-s",
        "LAUNDROMAT_OUTPUT_DIR=%s" % (tmp_path / "out"),
    ]
    probe = tmp_path / "frozen"
    code = (
        "import atexit, gc\n"
        "atexit.register(lambda: open(%r, 'w').write(str(gc.get_freeze_count())))\n" % str(probe)
    ) + ENTRY_POINTS["scrapy"] % (args,)
    proc = fresh_python(code, sqlite_uri, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert int(probe.read_text()) > 10_000  # modules, classes, functions, what the crawl made
    assert any((tmp_path / "out" / "cleaned").glob("*.nt.gz"))  # the crawl did its work


def test_python_m_votersdaily_crawl_ends_with_everything_frozen(sqlite_uri, tmp_path):
    """``python -m votersdaily crawl`` (the README's main job; here one spider on its shipped
    recording) freezes every object as its interpreter exits, as ``scrapy crawl`` does."""
    probe = tmp_path / "frozen"
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: open(%r, 'w').write(str(gc.get_freeze_count())))\n" % str(probe)
    ) + ENTRY_POINTS["votersdaily"] % (["crawl", "--offline", "house_votes"],)
    proc = fresh_python(code, sqlite_uri, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert int(probe.read_text()) > 10_000
    assert "house_votes" in proc.stdout  # the summary row: the crawl ran
    # The connections a frozen exit never collects are closed: the file alone holds every write.
    db = Path(EmbeddedStore.path_of(sqlite_uri))
    assert db.exists() and not Path(str(db) + "-wal").exists()
