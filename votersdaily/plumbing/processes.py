"""Processes of our own started without the crawl's main script.

multiprocessing imports the main script again in every process it starts (as ``__mp_main__``), so that
what the script defines can be unpickled there. Ours (the embedded store's process, the ingest's
extraction processes and their fork server) run module-level functions of this package and need
nothing of the script. A script without the ``if __name__ == "__main__":`` guard, as Scrapy's own "run
Scrapy from a script" example is written, would run again in each of them: a whole crawl inside the
store's process. A module run with ``-m`` (``python -m scrapy``) is never imported again:
multiprocessing skips a ``__main__`` module; so only a script's path is withheld.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def without_the_main_script() -> Iterator[None]:
    """While a process of ours starts: multiprocessing is not told the main script's path (it reads
    ``__main__.__file__`` as it starts the process, in this thread), so the process never imports it."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or path is None or getattr(main, "__spec__", None) is not None:
        yield
        return
    del main.__file__
    try:
        yield
    finally:
        main.__file__ = path
