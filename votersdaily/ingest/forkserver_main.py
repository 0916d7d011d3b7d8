"""The crawl's main script, imported once by the extraction pool's fork server (first in
:data:`votersdaily.ingest.workers.PRELOAD`), so the extraction processes it forks inherit it.

multiprocessing runs a main script again in every process it starts (as ``__mp_main__``, for what is
defined there). ``scrapy crawl`` and ``votersdaily crawl`` are scripts: each extraction process spent
0.2 s of CPU importing Scrapy's command line at the crawl's start, before it could read a page. The
``"__main__"`` preload of multiprocessing is meant to do this once, but the fork server of Python 3.11
is never told the script's path (it looks for ``main_path`` in data that call it
``init_main_from_path``). So the crawl process names the script in :data:`MAIN_SCRIPT_ENV` while it
starts the fork server (:func:`votersdaily.ingest.workers.naming_the_main_script`)."""

from __future__ import annotations

import os
from multiprocessing import process, spawn

#: Environment variable naming the script for the fork server (only while it starts).
MAIN_SCRIPT_ENV = "VOTERSDAILY_EXTRACT_MAIN_SCRIPT"


def import_main_script() -> None:
    """What multiprocessing does for a ``"__main__"`` preload. A script that fails to import here is
    left to each process, as before (where it fails as it would have)."""
    path = os.environ.pop(MAIN_SCRIPT_ENV, None)
    if not path:
        return
    current = process.current_process()
    current._inheriting = True  # type: ignore[attr-defined]  # the script may not start processes
    try:
        spawn.import_main_path(path)
    except Exception:  # noqa: S110 - each process imports it again, and says why it fails
        pass
    finally:
        del current._inheriting  # type: ignore[attr-defined]


import_main_script()
