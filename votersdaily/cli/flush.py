"""``flush``: deliver documents spooled during a store outage (see :mod:`votersdaily.store.spool`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.utils.project import get_project_settings

from votersdaily.store.base import StoreError, StoreUnavailable
from votersdaily.store.check import checked_store
from votersdaily.store.spool import Spool, spool_dir

from . import EXIT_UNAVAILABLE

if TYPE_CHECKING:
    import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("flush", help="deliver documents spooled while the store was unavailable")
    parser.add_argument(
        "--spool-dir",
        type=Path,
        help="spool folder (default: $VOTERSDAILY_SPOOL_DIR or the VOTERSDAILY_SPOOL_DIR setting)",
    )
    parser.add_argument("--db", help="only this database")
    parser.set_defaults(func=run)


def still_spooled(spool: Spool, exc: StoreError) -> int:
    print(
        "votersdaily flush: store still unavailable, documents stay spooled in %s: %s"
        % (spool.directory, exc),
        file=sys.stderr,
    )
    return EXIT_UNAVAILABLE


def run(args: argparse.Namespace) -> int:
    spool = Spool(args.spool_dir or spool_dir(get_project_settings()))
    pending = spool.pending_files(args.db)
    if not pending:
        print("nothing spooled in %s" % spool.directory)
        return 0
    try:
        store = checked_store()
    except StoreError as exc:
        return still_spooled(spool, exc)
    try:
        report = spool.deliver(store, args.db)
    except StoreUnavailable as exc:
        return still_spooled(spool, exc)
    finally:
        store.close()
    r = report.result
    print(
        "delivered %d documents from %d spool files to %s: inserted=%d updated=%d unchanged=%d failed=%d"
        % (
            report.documents,
            report.files,
            store.display_uri,
            len(r.inserted),
            len(r.updated),
            len(r.unchanged),
            len(r.failed),
        )
    )
    return 1 if r.failed else 0
