"""Every default is written once, in votersdaily/settings.py, and reaches crawlers built without it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from scrapy.settings import Settings, default_settings
from scrapy.utils.test import get_crawler

from votersdaily import settings as project_settings
from votersdaily.defaults import DEFAULTS, OWN_PREFIXES, ProjectDefaults
from votersdaily.ingest.config import IngestConfig
from votersdaily.ingest.spider import IngestSpider
from votersdaily.laundromat.spider import LaundromatSpider
from votersdaily.spiders.house_votes import HouseVotesSpider

PACKAGE = Path(project_settings.__file__).resolve().parent
GETTERS = {"get", "getint", "getfloat", "getbool", "getlist", "getdict", "getdictorlist", "getwithbase"}
#: Settings read by the code that neither Scrapy nor the project defines (third-party add-ons' own).
THIRD_PARTY: set[str] = set()


def setting_reads() -> list[tuple[str, int, str, bool]]:
    """(file, line, setting name, has a fallback) for every ``x.get*("NAME", ...)`` in the package."""
    reads = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "recordings" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in GETTERS or not node.args:
                continue
            first = node.args[0]
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                continue
            name = first.value
            if not name.isupper() or not name.replace("_", "").isalnum():
                continue
            fallback = len(node.args) > 1 or any(k.arg == "default" for k in node.keywords)
            reads.append((str(path.relative_to(PACKAGE)), node.lineno, name, fallback))
    return reads


def test_no_component_reads_a_default_of_its_own():
    own = [(f, line, name) for f, line, name, fallback in setting_reads() if fallback]
    assert setting_reads(), "the scan found no setting reads at all: it is broken"
    assert own == [], "literal fallbacks outside votersdaily/settings.py: %s" % own


def test_every_setting_read_is_defined_somewhere():
    known = set(dir(project_settings)) | set(dir(default_settings)) | THIRD_PARTY
    unknown = sorted({(name, f) for f, _line, name, _fb in setting_reads() if name not in known})
    assert unknown == [], "settings read but never given a default: %s" % unknown


def test_defaults_cover_every_project_setting():
    own = {name for name in dir(project_settings) if name.startswith(OWN_PREFIXES)}
    assert own and set(DEFAULTS) == own
    assert DEFAULTS["VOTERSDAILY_STORE_RETRY_TIMES"] == project_settings.VOTERSDAILY_STORE_RETRY_TIMES


@pytest.mark.parametrize("spider", [HouseVotesSpider, IngestSpider, LaundromatSpider])
def test_a_crawler_without_the_project_settings_gets_the_project_defaults(spider):
    crawler = get_crawler(spider, {"VOTERSDAILY_BATCH_SIZE": 7})
    settings = crawler.settings
    assert settings.getint("VOTERSDAILY_BATCH_SIZE") == 7  # what the caller set wins
    assert settings.getint("VOTERSDAILY_STORE_RETRY_TIMES") == project_settings.VOTERSDAILY_STORE_RETRY_TIMES
    assert settings.getint("INGEST_MAX_HOPS") == project_settings.INGEST_MAX_HOPS
    assert settings.get("LAUNDROMAT_OUTPUT_DIR") == project_settings.LAUNDROMAT_OUTPUT_DIR


def test_the_add_on_fills_in_defaults_for_other_spiders():
    settings = Settings({"INGEST_MAX_HOPS": 3})
    ProjectDefaults().update_settings(settings)
    assert settings.getint("INGEST_MAX_HOPS") == 3
    assert IngestConfig.from_settings(settings).max_redirects == project_settings.INGEST_MAX_REDIRECTS
    assert (
        settings.getfloat("VOTERSDAILY_STORE_RETRY_MAX_DELAY")
        == project_settings.VOTERSDAILY_STORE_RETRY_MAX_DELAY
    )
