"""The start-up objects are out of the garbage collector while a crawl runs, and back after it."""

import gc

import pytest
from scrapy import Spider, signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from votersdaily.gc_freeze import FreezeStartupObjects
from votersdaily.settings import EXTENSIONS


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
