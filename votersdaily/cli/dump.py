"""``dump <db>``: every document of a database, one JSON object per line."""

from __future__ import annotations

import json
import sys

from ..store.check import checked_store
from . import EXIT_USAGE


def register(sub) -> None:
    parser = sub.add_parser("dump", help="print every document of a database as JSON lines")
    parser.add_argument("db", help="database name, e.g. vd_events or vd_log")
    parser.add_argument("--design", action="store_true", help="include design documents")
    parser.set_defaults(func=run)


def run(args) -> int:
    store = checked_store(must_exist=True)
    if args.db not in store.list_dbs():
        print("votersdaily dump: no database %r in %s" % (args.db, store.display_uri), file=sys.stderr)
        return EXIT_USAGE
    out = sys.stdout
    for doc in store.iter_docs(args.db, include_design=args.design):
        out.write(json.dumps(doc, ensure_ascii=False, sort_keys=True))
        out.write("\n")
    return 0
