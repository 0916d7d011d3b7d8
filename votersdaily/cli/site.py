"""``site build <dir>``: the static site: day pages, feeds per branch/entity/parser/committee, health.

It replaces only what an earlier build wrote (votersdaily/feeds/site_folder.py): another folder is
refused in one line (exit 2) unless ``--force``, and some are never replaced.
"""

from __future__ import annotations

from pathlib import Path

from scrapy.utils.project import get_project_settings

from ..store.check import checked_store
from . import EXIT_FAILED, fail, say
from .options import positive_int


def register(sub) -> None:
    parser = sub.add_parser("site", help="build the static calendar site")
    actions = parser.add_subparsers(dest="action", required=True)
    build = actions.add_parser(
        "build",
        help="write the site into a folder: a new or empty one, or a site an earlier build wrote",
    )
    build.add_argument("dir", type=Path, help="output folder")
    build.add_argument(
        "--force",
        action="store_true",
        help="replace the folder even if it is not a site an earlier build wrote, or was changed since "
        "(never the root, home, working or package folders, nor the checkout's own)",
    )
    build.add_argument(
        "--timezone", help="zone the day pages are shown in (default: setting VOTERSDAILY_SITE_TIMEZONE)"
    )
    build.add_argument(
        "--runs",
        type=positive_int,
        help="runs per spider on the health page (default: setting VOTERSDAILY_HEALTH_RUNS)",
    )
    build.set_defaults(func=run_build)


def run_build(args) -> int:
    from ..deploy.periodic import spider_frequencies
    from ..feeds.sanitise import FeedReport
    from ..feeds.site import SiteConfig, build_site
    from ..feeds.site_folder import RefusedTarget, check_target, replaced_site
    from .crawl import event_spiders

    settings = get_project_settings()
    try:
        config = SiteConfig.from_settings(settings, timezone=args.timezone, runs=args.runs)
        data = data_places(settings)
        check_target(args.dir, args.force, data)  # before any work: a refusal costs nothing
    except (ValueError, OSError) as exc:
        return fail(str(exc))
    store = checked_store(must_exist=True)
    report = FeedReport()
    try:
        # Every spider that runs on a schedule (ingest and laundromat too), so one that never ran shows.
        spiders = sorted(set(event_spiders(settings)) | set(spider_frequencies(settings)))
        with replaced_site(args.dir, args.force, data) as partial:
            summary = build_site(store, partial, config, spiders=spiders, report=report)
    except RefusedTarget as exc:
        return fail(str(exc))
    except OSError as exc:  # a full disk, a folder it may not write: nothing was replaced
        return fail("cannot write the site to %s: %s (nothing was replaced)" % (args.dir, exc), EXIT_FAILED)
    finally:
        store.close()
    for line in report.lines():
        say(line)
    say(
        "%d day pages, %d feeds, %d spiders on the health page in %s"
        % (summary.days, summary.feeds, summary.spiders, args.dir)
    )
    return 0


def data_places(settings) -> dict[str, Path]:
    """Where the project keeps data a site build must never replace: the embedded store's file,
    the spool, the source archive and the ingest's and laundromat's outputs."""
    from ..archive import archive_dir
    from ..store import store_uri
    from ..store.spool import spool_dir

    places = {
        "the spool": spool_dir(settings),
        "the source archive": archive_dir(settings),
        "the laundromat's output": Path(settings.get("LAUNDROMAT_OUTPUT_DIR")),
        "the ingest's blobs": Path(settings.get("INGEST_BLOB_DIR")),
        "the ingest's WARCs": Path(settings.get("INGEST_WARC_DIR")),
    }
    uri = store_uri(settings)
    if uri.startswith("sqlite:") and ":memory:" not in uri:
        from ..store.embedded import EmbeddedStore

        places["the store"] = Path(EmbeddedStore.path_of(uri))
    return places
