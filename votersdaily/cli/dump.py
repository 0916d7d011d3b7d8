"""``dump <db>``: every document of a database, one JSON object per line."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from votersdaily.plumbing.environment import project_settings
from votersdaily.plumbing.inputs import meant
from votersdaily.schema import SURROGATE_RE, clean_text, clean_value
from votersdaily.store.check import checked_store

from . import fail, say
from .standard_output import staged_stdout
from .views import project_databases

if TYPE_CHECKING:
    import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("dump", help="print every document of a database as JSON lines")
    parser.add_argument("db", help="database name, e.g. vd_events or vd_log")
    parser.add_argument("--design", action="store_true", help="include design documents")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = checked_store(must_exist=True)
    if not store.has_db(args.db):  # a typo (vd_event) is told as one
        known = project_databases(project_settings())
        return fail("no database %r in %s%s" % (args.db, store.display_uri, meant(args.db, known)))
    cleaned = []
    with staged_stdout() as out:
        for doc in store.iter_docs(args.db, include_design=args.design):
            line = json.dumps(doc, ensure_ascii=False, sort_keys=True)
            try:
                data = line.encode("utf-8")
            except UnicodeEncodeError:
                # A lone surrogate (written past validation) cannot be UTF-8: U+FFFD, as a decoder does.
                cleaned.append(doc.get("_id"))
                data = json.dumps(clean_value(doc, SURROGATE_RE), ensure_ascii=False, sort_keys=True).encode()
            out.write(data + b"\n")
    if cleaned:
        say(
            "%d documents held lone surrogates, written as U+FFFD: %s"
            % (len(cleaned), ", ".join(repr(clean_text(str(i), SURROGATE_RE)) for i in cleaned[:5]))
        )
    return 0
