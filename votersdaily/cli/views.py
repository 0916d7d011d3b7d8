"""``views push``: create the databases and install or update their design documents."""

from __future__ import annotations

from ..store.check import checked_store
from ..store.views import VIEWS
from .options import one_of


def register(sub) -> None:
    parser = sub.add_parser("views", help="manage the CouchDB design documents")
    actions = parser.add_subparsers(dest="action", required=True)
    push = actions.add_parser("push", help="create databases and install/update views (idempotent)")
    # Only the databases it has views for: a mistyped name must not create a database.
    push.add_argument(
        "dbs",
        nargs="*",
        type=one_of(tuple(sorted(VIEWS)), "database"),
        help="databases (default: all): %s" % ", ".join(sorted(VIEWS)),
    )
    push.set_defaults(func=run_push)


def run_push(args) -> int:
    store = checked_store()
    for db in args.dbs or sorted(VIEWS):
        store.ensure_db(db)
        changed = store.install_views(db)
        print("%s: %s" % (db, "installed/updated" if changed else "up to date"))
    return 0
