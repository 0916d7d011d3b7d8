"""What a fresh interpreter imports to load the project's spiders or to run a crawl: the guard of the
lazy imports (tests/test_startup.py) and the figures of ``benchmarks/startup.py`` come from here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.services import cli_environment

#: Modules loading the spiders must not import, with what imports them when a crawl needs them.
NOT_FOR_THE_SPIDER_LOADER = {
    "trafilatura": "the ingest's HTML extraction (votersdaily.ingest.htmlbody)",
    "pypdf": "the ingest's PDF extraction (votersdaily.ingest.pdf)",
    "aiohttp": "Scrapy's remote control, left out while REMOTE_CONTROL_ENABLED is False",
    "tldextract": "Scrapy's cookies middleware, left out while COOKIES_ENABLED is False",
    "scrapy.core.downloader.handlers.http11": "the first HTTP request",
    "votersdaily.archive": "an event spider's archive middleware, a reparse",
    "votersdaily.pipelines": "an event spider's item pipelines",
    "votersdaily.reparse": "the reparse extension, a reparse",
}

#: A laundromat crawl of a file: seed needs none of these (no HTTP, no extraction, no events).
NOT_FOR_A_FILE_LAUNDROMAT = (
    "trafilatura",
    "pypdf",
    "aiohttp",
    "tldextract",
    "scrapy.core.downloader.handlers.http11",
    "scrapy.core.downloader.contextfactory",
    "twisted.conch",
    "votersdaily.pipelines",
    "votersdaily.laundromat.cleaning",  # the cleaning workers' (votersdaily/laundromat/steps.py)
    "votersdaily.laundromat.readers",
    "pyoxigraph",  # the workers parse and sniff (votersdaily/laundromat/clean_types.py: ox_format)
    "votersdaily.cli.crawl",  # python -m votersdaily crawl's, and what it imports (the archive, the spool)
    "votersdaily.archive",
)

#: Loads the project's spiders after what every crawl imports (``scrapy.crawler``): one (``-c … <name>``)
#: as ``scrapy crawl <name>`` does, or all as ``scrapy list`` does; prints the loading's seconds, the
#: spiders' names and the modules then imported, as JSON.
LOADER_PROBE = """
import json, sys, time
import scrapy.crawler
from scrapy.spiderloader import get_spider_loader
from scrapy.utils.project import get_project_settings
settings = get_project_settings()
before = set(sys.modules)
started = time.perf_counter()
loader = get_spider_loader(settings)
spiders = [loader.load(sys.argv[1]).name] if sys.argv[1:] else sorted(loader.list())
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "spiders": spiders,
                  "imported": sorted(set(sys.modules) - before), "modules": sorted(sys.modules)}))
"""


def fresh_python(code: str, store_uri: str, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -c code args…`` in a fresh interpreter, with the environment a command of the tests gets."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=dict(os.environ, **cli_environment(store_uri)),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def load_spiders(store_uri: str, cwd: Path, name: str | None = None) -> dict:
    """:data:`LOADER_PROBE`'s answer from a fresh interpreter: spider ``name``, or every spider."""
    proc = fresh_python(LOADER_PROBE, store_uri, cwd, *([name] if name else []))
    if proc.returncode != 0:
        raise RuntimeError("loading the spiders failed: %s" % proc.stderr[-3000:])
    return json.loads(proc.stdout)


#: How each command line starts, given its arguments (``%r``).
ENTRY_POINTS = {
    "scrapy": "from scrapy.cmdline import execute\nexecute(['scrapy', *%r])\n",
    "votersdaily": "from votersdaily.cli import main\nsys.exit(main(%r))\n",
}


def crawl_modules(
    args: list[str], store_uri: str, cwd: Path, command: str = "scrapy"
) -> tuple[subprocess.CompletedProcess, set[str]]:
    """``scrapy <args>`` (or ``python -m votersdaily <args>``) in a fresh interpreter, as the command
    runs it, and the modules it had imported when it exited."""
    listing = cwd / "modules.json"
    code = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: open(%r, 'w').write(json.dumps(sorted(sys.modules))))\n" % str(listing)
    ) + ENTRY_POINTS[command] % (list(args),)
    proc = fresh_python(code, store_uri, cwd)
    modules = set(json.loads(listing.read_text())) if listing.exists() else set()
    return proc, modules
