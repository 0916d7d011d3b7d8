"""A crawl pays only for what it uses: loading the spiders (every ``scrapy crawl``) imports no
extractor, no HTTP stack and no event pipeline; a laundromat crawl of a file: seed none of them
either; the laundromat's cleaning workers start without Scrapy. Each check is in a fresh
interpreter (the test process has imported everything). Speed itself: ``benchmarks/startup.py``."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from scrapy.settings import Settings
from scrapy.spiderloader import SpiderLoader

from tests.laundromat.sitedata import NT_Z
from tests.support.startup import (
    NOT_FOR_A_FILE_LAUNDROMAT,
    NOT_FOR_THE_SPIDER_LOADER,
    crawl_modules,
    load_spiders,
)
from votersdaily import settings as project_settings
from votersdaily.laundromat import steps
from votersdaily.laundromat.clean_types import CleanOptions
from votersdaily.laundromat.contexts import ContextOptions
from votersdaily.laundromat.worker_pool import Worker
from votersdaily.spiderloader import NamedModuleSpiderLoader
from votersdaily.store import open_store
from votersdaily.switched_off import LeaveOutSwitchedOff


def test_loading_the_spiders_imports_only_what_every_crawl_needs(sqlite_uri, tmp_path):
    answer = load_spiders(sqlite_uri, tmp_path)
    assert {"laundromat", "ingest", "house_votes", "white_house"} <= set(answer["spiders"])
    imported = set(answer["modules"])
    assert "votersdaily.laundromat.spider" in imported and "votersdaily.ingest.spider" in imported
    wrongly = {m: why for m, why in NOT_FOR_THE_SPIDER_LOADER.items() if m in imported}
    assert not wrongly, "loading the spiders imported what only these need: %s" % wrongly


def test_crawling_one_spider_imports_only_its_own_module(sqlite_uri, tmp_path):
    """``scrapy crawl <name>`` loads the module the layout names for the spider, no other spider's."""
    spider_modules = {
        "laundromat": "votersdaily.laundromat.spider",
        "ingest": "votersdaily.ingest.spider",
        "house_votes": "votersdaily.spiders.house_votes",
    }
    for name, own in spider_modules.items():
        imported = set(load_spiders(sqlite_uri, tmp_path, name)["modules"])
        others = sorted(m for m in spider_modules.values() if m != own and m in imported)
        assert own in imported and others == [], (name, others)
    assert "trafilatura" not in imported  # the last one, an event spider


def test_the_named_module_loader_finds_every_spider_scrapys_loader_finds():
    """Same class for every name (worker spiders, in no named module, through Scrapy's scan); an
    unknown name is Scrapy's KeyError; a SPIDER_MODULES without the project's modules is respected."""
    settings = Settings(vars(project_settings))
    every = SpiderLoader.from_settings(settings)
    assert len(every.list()) > 10
    for name in every.list():
        assert NamedModuleSpiderLoader.from_settings(settings).load(name) is every.load(name), name
    with pytest.raises(KeyError, match="Spider not found: nope"):
        NamedModuleSpiderLoader.from_settings(settings).load("nope")
    only_tests = Settings(dict(vars(project_settings), SPIDER_MODULES=["tests.reparse_spiders"]))
    fixed = NamedModuleSpiderLoader.from_settings(only_tests).load("house_votes")
    assert fixed.__module__ == "tests.reparse_spiders"


def test_a_laundromat_crawl_of_a_file_imports_no_http_stack_nor_extractor(sqlite_uri, tmp_path):
    data = tmp_path / "z.nt"
    data.write_text(NT_Z, encoding="utf-8")
    args = ["crawl", "laundromat", "-a", "url=" + data.as_uri()]
    args += ["-s", "LAUNDROMAT_OUTPUT_DIR=%s" % (tmp_path / "out"), "-s", "LOG_LEVEL=INFO"]
    proc, modules = crawl_modules(args, sqlite_uri, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    store = open_store(sqlite_uri)
    try:
        (parsed,) = [d for d in store.iter_docs("ll_seeds") if d.get("status") == "parsed"]
    finally:
        store.close()
    assert parsed["number_of_statements"] == 1, parsed
    assert "votersdaily.laundromat.steps" in modules  # the listing is the crawl's
    assert sorted(set(NOT_FOR_A_FILE_LAUNDROMAT) & modules) == []


def test_the_cli_crawl_of_one_event_spider_imports_only_its_module(sqlite_uri, tmp_path):
    proc, modules = crawl_modules(["crawl", "house_votes", "--offline"], sqlite_uri, tmp_path, "votersdaily")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "house_votes" in proc.stdout  # its summary row
    assert "votersdaily.spiders.house_votes" in modules
    others = ("votersdaily.spiders.white_house", "votersdaily.laundromat.spider", "votersdaily.ingest.spider")
    assert sorted(set(others) & modules) == []
    assert sorted({"trafilatura", "pypdf", "aiohttp", "tldextract", "redis", "icalendar"} & modules) == []


def test_a_cleaning_worker_runs_its_steps_without_scrapy(tmp_path):
    """The worker unpickles the crawl's options (an address policy among them) and cleans a file;
    ``eval`` of a builtin is what a test can send it to read back its ``sys.modules``."""
    data = tmp_path / "z.nt"
    data.write_text(NT_Z, encoding="utf-8")
    options = CleanOptions(contexts=ContextOptions.from_settings(Settings(vars(project_settings)), tmp_path))
    assert b"votersdaily.plumbing.address_policy" in pickle.dumps(options)
    worker = Worker((steps.__name__,))
    try:
        record = worker.call(
            steps.clean_step, (str(data), "N-Triples", "k", str(tmp_path / "out"), None, options)
        )
        modules = worker.call(eval, ("sorted(__import__('sys').modules)",))
    finally:
        worker.stop()
    assert record["number_of_statements"] == 1
    assert "votersdaily.laundromat.cleaning" in modules
    assert [m for m in modules if m.split(".")[0] in ("scrapy", "twisted")] == []


def test_switched_off_components_are_left_out_only_while_off():
    """The add-on drops the cookies middleware and the remote control from their base lists while
    their settings are False; turned on, Scrapy's own components are there as before."""
    cookies = "scrapy.downloadermiddlewares.cookies.CookiesMiddleware"
    # The remote control is Scrapy's from 2.19; on 2.18 there is none to leave out.
    telnet = "scrapy.extensions.telnet.TelnetConsole"
    extensions = [
        e
        for e in ("scrapy.extensions.remote_control.RemoteControl", telnet)
        if e in Settings()["EXTENSIONS_BASE"]
    ]
    assert telnet in extensions
    switches = ("COOKIES_ENABLED", "REMOTE_CONTROL_ENABLED", "TELNETCONSOLE_ENABLED")
    for enabled in (False, True):
        settings = Settings(dict.fromkeys(switches, enabled))
        LeaveOutSwitchedOff().update_settings(settings)
        # A component set to None is off (Scrapy's build_component_list leaves it out).
        assert (settings.getwithbase("DOWNLOADER_MIDDLEWARES").get(cookies) is not None) is enabled
        for extension in extensions:
            assert (settings.getwithbase("EXTENSIONS").get(extension) is not None) is enabled
    assert project_settings.ADDONS == {"votersdaily.switched_off.LeaveOutSwitchedOff": 0}


def test_the_data_home_finds_scrapy_cfg_as_scrapy_does(tmp_path, monkeypatch):
    """votersdaily/locations.py looks for scrapy.cfg itself (the cleaning workers must not import
    Scrapy): the same answer as Scrapy's ``closest_scrapy_cfg`` in the checkout and outside any project."""
    from scrapy.utils.conf import closest_scrapy_cfg

    from votersdaily.locations import project_root

    for folder in (Path(project_settings.__file__).parent, tmp_path):
        monkeypatch.chdir(folder)
        found = closest_scrapy_cfg()
        assert project_root() == (Path(found).parent if found else None)
