"""``ingest``: feed the ingest spider's databases.

``python -m votersdaily ingest load-catalog works.jsonl`` loads the match catalog (one JSON object
per line with at least ``doi``, usually ``title``) into INGEST_CATALOG_DB; ``python -m votersdaily
ingest enqueue requests.jsonl`` (or ``--url URL --type pdf``) queues ingest requests (sandcrawler's
request shape) into INGEST_REQUESTS_DB, which ``scrapy crawl ingest -a requests=store`` reads. Bad
lines are reported with their line number and skipped; the good ones are still written (exit 1).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from votersdaily.ingest import ingest_requests as R
from votersdaily.ingest.match import load_catalog_jsonl
from votersdaily.plumbing.environment import project_settings
from votersdaily.plumbing.inputs import NotAFileOfLines
from votersdaily.setting_rules import typo_of
from votersdaily.store.check import checked_store
from votersdaily.store.upsert import upsert

from . import EXIT_FAILED, EXIT_USAGE, fail, say
from .options import database_name, http_url
from .views import project_databases

if TYPE_CHECKING:
    import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("ingest", help="load the ingest match catalog, queue ingest requests")
    commands = parser.add_subparsers(dest="ingest_command", required=True)
    catalog = commands.add_parser(
        "load-catalog", help="load known works (JSON lines with doi, title) for match0"
    )
    catalog.add_argument("path", help="JSON-lines file of works")
    catalog.add_argument(
        "--db", type=database_name, help="catalog database (default: the INGEST_CATALOG_DB setting)"
    )
    catalog.set_defaults(func=load_catalog)
    enqueue = commands.add_parser(
        "enqueue", help="queue ingest requests for `scrapy crawl ingest -a requests=store`"
    )
    enqueue.add_argument("path", nargs="?", help="JSON-lines file of ingest requests")
    enqueue.add_argument(
        "--url", action="append", default=[], type=http_url, help="a base_url to queue (repeatable)"
    )
    enqueue.add_argument(
        "--type", default="pdf", choices=R.INGEST_TYPES, help="ingest_type for --url (default pdf)"
    )
    enqueue.add_argument(
        "--db", type=database_name, help="requests database (default: the INGEST_REQUESTS_DB setting)"
    )
    enqueue.set_defaults(func=enqueue_requests)


def input_status(exc: OSError) -> int:
    """An input file that is not there (or a folder, a device) is a usage error (2); one that cannot
    be read, a failure (1)."""
    return (
        EXIT_USAGE
        if isinstance(exc, (FileNotFoundError, IsADirectoryError, NotAFileOfLines))
        else EXIT_FAILED
    )


def ingest_database(given: str | None, setting: str, what: str) -> str:
    """The database an ingest command writes: ``--db``, or the setting ``setting``, which the ingest
    crawl reads. A ``--db`` that is another of the project's databases (``vd_events``), or a typo of
    one (``ingest_request``), is a ValueError: what it wrote would go among other documents, or
    where no crawl looks. Any other name is taken (a crawl told ``-s <setting>=<name>`` reads it)."""
    settings = project_settings()
    default = settings.get(setting)
    if given is None or given == default:
        return default
    known = project_databases(settings)
    if given in known:
        raise ValueError(
            "--db %s is another of the project's databases: %s go in %s (the %s setting) or a "
            "database of their own" % (given, what, default, setting)
        )
    meant = typo_of(given, sorted(known))
    if meant is not None:
        raise ValueError("--db %s is none of the project's databases; did you mean %s?" % (given, meant))
    return given


def load_catalog(args: argparse.Namespace) -> int:
    try:
        db = ingest_database(args.db, "INGEST_CATALOG_DB", "catalog records")
    except ValueError as exc:
        return fail(str(exc))
    path = Path(args.path)
    if not path.is_file():  # before the store: a typo creates nothing
        return fail(
            "cannot read %s: %s" % (path.absolute(), "not a file" if path.exists() else "no such file")
        )
    store = checked_store()
    try:
        count, errors = load_catalog_jsonl(store, args.path, db)
    except OSError as exc:
        return fail("cannot read %s: %s" % (args.path, exc), input_status(exc))
    finally:
        store.close()
    for error in errors:
        say(error)
    print("loaded %d works into %s of %s (%d bad lines)" % (count, db, store.display_uri, len(errors)))
    return 1 if errors else 0


def enqueue_requests(args: argparse.Namespace) -> int:
    if not args.path and not args.url:
        return fail("give a JSON-lines file of requests or --url")
    try:
        db = ingest_database(args.db, "INGEST_REQUESTS_DB", "ingest requests")
    except ValueError as exc:
        return fail(str(exc))
    found: list[tuple[str, dict[str, Any] | Exception]] = [
        ("--url", raw) for raw in R.from_args(args.url, args.type)
    ]
    if args.path:
        try:
            found += list(R.iter_jsonl(args.path))
        except OSError as exc:
            return fail("cannot read %s: %s" % (args.path, exc), input_status(exc))
    docs, errors = {}, []
    # The crawl's own check: a base_url no crawl of this project fetches is refused here, not queued.
    url_length_limit = project_settings().getint("URLLENGTH_LIMIT")
    for where, raw in found:
        try:
            if isinstance(raw, Exception):
                raise raw
            request = R.fetchable_request(raw, url_length_limit)
        except R.IngestRequestError as exc:
            errors.append("%s: %s" % (where, exc))
            continue
        docs[R.request_doc_id(request)] = dict(request, _id=R.request_doc_id(request))
    store = checked_store()
    try:
        store.ensure_db(db)
        result = upsert(store, db, list(docs.values()))
    finally:
        store.close()
    for error in errors:
        say(error)
    for doc_id, reason in result.failed.items():  # the store refused it: not queued, said
        say("request %s not queued: the store refused it (%s)" % (doc_id, reason))
    print(
        "queued %d ingest requests in %s of %s: new=%d updated=%d unchanged=%d (%d bad)"
        % (
            len(docs) - len(result.failed),
            db,
            store.display_uri,
            len(result.inserted),
            len(result.updated),
            len(result.unchanged),
            len(errors) + len(result.failed),
        )
    )
    return 1 if errors or result.failed else 0
