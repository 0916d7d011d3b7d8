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


def test_off_by_its_setting_and_on_in_the_project():
    with pytest.raises(NotConfigured):
        FreezeStartupObjects.from_crawler(get_crawler(Spider, {"VOTERSDAILY_GC_FREEZE": False}))
    assert "votersdaily.gc_freeze.FreezeStartupObjects" in EXTENSIONS
