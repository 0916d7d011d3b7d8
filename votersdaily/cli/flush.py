"""``flush``: deliver documents spooled while their store did not take them (see :mod:`votersdaily.store.spool`).

Only documents spooled for the store at hand are delivered; the rest stay spooled and are named with
the store they wait for. Exit status: 0 everything for this store delivered and nothing else waits,
1 some lines could not be delivered (damaged files are kept, files with refused documents stay
spooled; each is named), 2 a ``--db`` that is none of the project's databases and has nothing
spooled (a typo), 3 the store still does not take documents, 4 documents for another store (or for
none: earlier versions) were left.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from votersdaily.locations import SPOOL_ENV, misplaced
from votersdaily.plumbing.environment import project_settings
from votersdaily.plumbing.inputs import meant
from votersdaily.store.base import StoreError, StoreRefused, StoreUnavailable
from votersdaily.store.check import StoreMisconfigured, checked_store, uri_scheme
from votersdaily.store.identity import identity_of
from votersdaily.store.spool import NO_STORE, DeliveryReport, Spool, flush_command, spool_dir

from . import EXIT_FAILED, EXIT_OK, EXIT_SPOOLED, EXIT_UNAVAILABLE, fail, say
from .options import database_name, existing_folder
from .views import project_databases

if TYPE_CHECKING:
    from votersdaily.store.base import Store


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "flush", help="deliver documents spooled while their store was unavailable or refused them"
    )
    parser.add_argument(
        "--spool-dir",
        type=existing_folder,
        help="spool folder, which must exist (default: $VOTERSDAILY_SPOOL_DIR or the VOTERSDAILY_SPOOL_DIR "
        "setting)",
    )
    parser.add_argument("--db", type=database_name, help="only this database")
    parser.add_argument(
        "--from",
        dest="also_for",
        metavar="STORE_URI",
        action="append",
        default=[],
        type=store_uri_argument,
        help="also deliver here what was spooled for this other store (e.g. the store moved); repeatable",
    )
    parser.add_argument(
        "--untagged",
        action="store_true",
        help="also deliver here what earlier versions spooled, which names no store",
    )
    parser.set_defaults(func=run)


def store_uri_argument(value: str) -> str:
    """An argparse type: a URI that can name a store (a mistyped ``--from`` would match no spooled
    document and deliver nothing, without a word)."""
    try:
        uri_scheme(value, spooled_for=True)
    except StoreMisconfigured as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def still_spooled(spool: Spool, exc: StoreError) -> int:
    """One line for a flush that delivered nothing: a store that answers but refuses the user (no
    member, wrong password, a database it may not create) is not one to wait for."""
    why = "the store refused them" if isinstance(exc, StoreRefused) else "store still unavailable"
    say("%s, documents stay spooled in %s: %s" % (why, spool.directory, exc))
    return EXIT_UNAVAILABLE


def run(args: argparse.Namespace) -> int:
    settings = project_settings()
    if not args.spool_dir:  # the setting's folder (--spool-dir is checked by argparse)
        for problem in misplaced(settings, (SPOOL_ENV,)):  # "nothing spooled" would be wrong
            return fail(problem)
    spool = Spool(args.spool_dir or spool_dir(settings))
    if not spool.pending(args.db) and not spool.kept(args.db):
        others = sorted(spool.databases()) if args.db else []
        if args.db and (unknown := unknown_database(args.db, project_databases(settings), others, spool)):
            return fail(unknown)  # a mistyped --db would otherwise read as "all delivered"
        if others:
            print(
                "nothing spooled for database %s in %s (spooled there for: %s)"
                % (args.db, spool.directory, ", ".join(others))
            )
        else:
            print("nothing spooled in %s" % spool.directory)
        return EXIT_OK
    try:
        store = checked_store()
    except StoreMisconfigured:
        raise  # a URI that cannot name a store is the user's to fix (exit 2), not an outage
    except StoreError as exc:
        return still_spooled(spool, exc)
    earlier_kept = spool.kept(args.db)
    try:
        report = spool.deliver(store, args.db, also_for=args.also_for, untagged=args.untagged)
    except StoreUnavailable as exc:
        return still_spooled(spool, exc)
    finally:
        store.close()
    r = report.result
    if report.documents or not report.left:
        print(
            "delivered %d documents from %d spool files to %s: inserted=%d updated=%d unchanged=%d failed=%d"
            % (
                report.documents,
                report.files + len(report.kept) + len(report.refused),
                store.display_uri,
                len(r.inserted),
                len(r.updated),
                len(r.unchanged),
                len(r.failed),
            )
        )
    if r.older:
        say(
            "kept the store's version of %d documents: it was observed later than the spooled copy "
            "(a newer run wrote it meanwhile), e.g. %s" % (len(r.older), ", ".join(sorted(r.older)[:3]))
        )
    left_behind(report, store)
    for kept in report.kept:
        say(
            "kept %s: %d lines could not be delivered (%s); its other documents were delivered"
            % (kept.path, kept.lines, kept.why())
        )
    for refused in report.refused:
        say(
            "left %s spooled: the store refused %d of its documents (%s); the next flush tries again"
            % (refused.path, refused.lines, refused.why())
        )
    for path in earlier_kept:
        say("kept %s: lines an earlier flush could not deliver; look at it, then remove it" % path)
    if report.behind:
        say(
            "left %d spool files spooled: another process is delivering files of their database for "
            "this store now (they go after it, in order); flush again once it is done" % report.behind
        )
    if report.kept or report.refused or earlier_kept:
        return EXIT_FAILED
    return EXIT_SPOOLED if report.left or report.behind else EXIT_OK


def unknown_database(db: str, known: list[str], spooled: list[str], spool: Spool) -> str | None:
    """The line refusing a ``--db`` with nothing spooled that is none of the project's databases (a
    typo: ``vd_event``), naming the one probably meant and what is spooled; None for a known one."""
    if db in known:
        return None
    there = (
        "spooled in %s: %s" % (spool.directory, ", ".join(spooled))
        if spooled
        else ("nothing spooled in %s" % spool.directory)
    )
    return "unknown database %r%s (the project's: %s; %s)" % (
        db,
        meant(db, [*known, *spooled]),
        ", ".join(known),
        there,
    )


def left_behind(report: DeliveryReport, store: Store) -> None:
    """Say what waits for another store (or names none), and how to deliver it: commands that do
    it as printed (under the database prefix it was spooled under)."""
    here = identity_of(store)
    for label, left in sorted(report.left.items()):
        if label == NO_STORE:
            how = "`flush --untagged` delivers them to this store"
        else:
            how = "they are delivered only there (`%s`), or here with `%s`" % (
                flush_command("--store", label, store.prefix),
                flush_command("--from", label, store.prefix),
            )
        say(
            "left %d documents in %d spool files spooled for %s, not for this store (%s): %s"
            % (left.documents, left.files, label, here, how)
        )
