"""``views push``: create the databases and install or update their design documents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from votersdaily.cli import fail
from votersdaily.plumbing.environment import project_settings
from votersdaily.store.check import checked_store
from votersdaily.store.views import VIEWS

if TYPE_CHECKING:
    import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("views", help="manage the CouchDB design documents")
    actions = parser.add_subparsers(dest="action", required=True)
    push = actions.add_parser("push", help="create databases and install/update views (idempotent)")
    push.add_argument(
        "dbs",
        nargs="*",
        help="the project's databases to create (default: those with views: %s)" % ", ".join(sorted(VIEWS)),
    )
    push.set_defaults(func=run_push)


def run_push(args: argparse.Namespace) -> int:
    # Only the project's databases (before any prefix): a mistyped name must not create a database.
    known = project_databases(project_settings())
    unknown = [db for db in args.dbs if db not in known]
    if unknown:
        return fail("unknown database(s) %s; known: %s" % (", ".join(map(repr, unknown)), ", ".join(known)))
    store = checked_store()
    for db in args.dbs or sorted(VIEWS):
        store.ensure_db(db)
        changed = store.install_views(db)
        print("%s: %s" % (db, "installed/updated" if changed else "up to date"))
    return 0


def project_databases(settings: Any) -> list[str]:
    """Every database the crawls and commands use with ``settings``, by the project's names: what a
    server admin creates, and makes a member user's, for a least-privilege deployment
    (docs/operations.md: Users and roles). The ingest's blob database only with
    ``INGEST_BLOB_BACKEND = "store"``."""
    # Imported here: the ingest's modules are not needed to open a store.
    from votersdaily.deploy.periodic import SCHEDULER_DB
    from votersdaily.ingest.filetable import table_name
    from votersdaily.ingest.persist import HTML_META_DB, RESULTS_DB
    from votersdaily.laundromat import DB as SEEDS_DB
    from votersdaily.schema import EVENTS_DB, LOG_DB

    ingest = [settings.get("INGEST_REQUESTS_DB"), settings.get("INGEST_CATALOG_DB"), RESULTS_DB, HTML_META_DB]
    ingest.append(
        table_name(settings.get("INGEST_FILE_TABLE_VERSION"), settings.get("INGEST_FILE_TABLE_ENV"))
    )
    if settings.get("INGEST_BLOB_BACKEND") == "store":
        ingest.append(settings.get("INGEST_BLOB_DB"))
    return [EVENTS_DB, LOG_DB, SCHEDULER_DB, *ingest, SEEDS_DB]
