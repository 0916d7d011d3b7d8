"""What one crawl's components share about that crawl, typed, reached from its crawler.

``crawl_context(crawler)`` gives the :class:`CrawlContext` of a crawl, as
``store/crawler.py:crawl_writes(crawler)`` gives its writes: the spider fills in what it was asked for
when Scrapy builds it (``EventSpider.from_crawler``), the pipelines and extensions read it, and the
run log leaves its document there as a :class:`RunRecord`, which is what both crawl commands and
``reparse`` show and take their exit status from. Nothing is read back from the spider with
``getattr``, pinned on Scrapy's ``Crawler``, or parsed back from a stat's name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from weakref import WeakKeyDictionary

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from votersdaily.plumbing.ssrf import CrawledUrlCheck
    from votersdaily.reparse import Reparse, ReparsePlan

Shared = TypeVar("Shared")

#: The zone a source writes its times in unless its spider says another (``EventSpider.source_timezone``):
#: most federal sources write Eastern time. Also what an event is read in when no event spider runs.
SOURCE_TIMEZONE = "America/New_York"

#: The ``finish_reason`` of a run that stopped before its work because its store was unavailable: a
#: spider that must read the store as it works (the laundromat's seed list) cannot spool its way
#: through. Nothing was done; its run log waits in the spool (exit status 3, as for ``crawl``).
STOPPED_FOR_STORE = "store unavailable"
#: The ``finish_reason`` of a run whose store went away while it worked (the laundromat's seed list):
#: it stops there; what it did is stored, what it had not finished stays due for the next run, and
#: its run log waits in the spool (exit status 4, as for documents spooled).
STORE_WENT_AWAY = "store went away"


@dataclass
class RunRecord:
    """The run log's document of one run, as the command-line summary shows it (``vd_log`` has the
    whole document; docs/events.md §3). Built by ``extensions.RunLog`` when the run ends."""

    spider: str
    #: ``success``, the first failure's exception class name, ``interrupted``, or Scrapy's reason.
    result: str
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    #: Events of the run whose id an earlier event of the same batch had (``vd_events``): the later kept.
    duplicates: int = 0
    dropped: int = 0
    items: int = 0
    #: Of this run's documents (its run log included), those waiting in the spool at its end.
    spooled: int = 0
    #: Documents neither the store nor the spool took (its run log may be one of them).
    lost: int = 0
    #: Documents earlier runs spooled that this run delivered: theirs, counted apart.
    spool_delivered: int = 0
    seconds: float = 0.0
    #: A reparse's marks (``withdrawn_count``, ``replaced_count`` of its run log), and the documents
    #: it left unjudged because the parser failed on them (``unjudged_documents``).
    withdrawn: int = 0
    replaced: int = 0
    unjudged: int = 0
    #: Documents the store refused on their own (``failed_writes``: over its ``max_document_size``,
    #: not JSON), not stored nor spooled, and the first of them by id with why (``failed_documents``).
    failed: int = 0
    not_stored: dict[str, str] = field(default_factory=dict)
    #: What became of the run log itself when the store did not take it: ``spooled`` or ``lost``.
    run_log: str | None = None
    #: Why the run's source documents were not all archived (``archived: false``), else None: its
    #: events are stored all the same, but the run did not do all its job (exit status 1).
    archive_error: str | None = None
    #: The run stopped before its work: its store was unavailable (:data:`STOPPED_FOR_STORE`).
    stopped_for_store: bool = False

    @classmethod
    def from_run_log(cls, doc: dict[str, Any], events_db: str) -> RunRecord:
        return cls(
            spider=doc["parser_name"],
            result=doc["result"],
            inserted=doc["insert_count"],
            updated=doc["updated_count"],
            unchanged=doc["unchanged_count"],
            duplicates=int(doc["store"].get(events_db, {}).get("duplicates", 0)),
            dropped=doc["dropped_count"],
            items=doc["items_scraped"],
            spooled=doc["still_spooled_count"],
            lost=doc["lost_count"],
            spool_delivered=doc["spool_delivered_count"],
            seconds=doc["parser_runtime"],
            withdrawn=int(doc.get("withdrawn_count", 0)),
            replaced=int(doc.get("replaced_count", 0)),
            unjudged=int(doc.get("unjudged_documents", 0)),
            failed=int(doc.get("failed_writes", 0)),
            not_stored=dict(doc.get("failed_documents") or {}),
            archive_error=(doc.get("archive_error") or "not archived")
            if doc.get("archived") is False
            else None,
            stopped_for_store=doc.get("finish_reason") == STOPPED_FOR_STORE,
        )


def not_archived_line(records: Iterable[RunRecord | None]) -> str | None:
    """The line both crawl commands say when runs' source documents were not all archived (then
    they exit 1), or None."""
    errors = {r.spider: r.archive_error for r in records if r is not None and r.archive_error}
    if not errors:
        return None
    return (
        "the source documents of %d runs (%s) were not all archived: %s; the rest of their work is "
        "stored (run log: archived: false)"
        % (len(errors), ", ".join(sorted(errors)), sorted(set(errors.values()))[0])
    )


def not_stored_line(records: Iterable[RunRecord | None]) -> str | None:
    """The line both crawl commands say when the store refused documents of runs on their own (then
    they exit 1): how many, the first by id with the store's reason (which names the setting, e.g.
    ``max_document_size``), or None. Said once, at the end: a refusal is no outage, nothing waits."""
    refused = [r for r in records if r is not None and r.failed]
    if not refused:
        return None
    first = next(((doc_id, why) for r in refused for doc_id, why in r.not_stored.items()), None)
    return (
        "%d documents of %d runs (%s) were not stored: the store refused them%s; their run logs name "
        "them (failed_documents)"
        % (
            sum(r.failed for r in refused),
            len(refused),
            ", ".join(sorted(r.spider for r in refused)),
            " (%s: %s)" % first if first else "",
        )
    )


def incomplete_lines(records: Iterable[RunRecord | None]) -> list[str]:
    """What both crawl commands say of runs that did not do all their job though they succeeded
    (source documents not archived, documents the store refused): each line makes them exit 1."""
    records = list(records)
    return [line for line in (not_archived_line(records), not_stored_line(records)) if line is not None]


@dataclass
class CrawlContext:
    """One crawl's state that its components share (see the module docstring)."""

    #: The spider's ``source_timezone``: what the datetime pipeline reads a naive time in.
    source_timezone: str = SOURCE_TIMEZONE
    #: ``-a reparse=archive``: what the spider reparses and what it saw (None: an ordinary crawl).
    reparse: Reparse | None = None
    #: A reparse's dry run, once it finished: what it would have written (``reparse --dry-run`` prints it).
    reparse_plan: ReparsePlan | None = None
    #: The run's record once its run log is built (None: not yet, or the run log is switched off).
    run: RunRecord | None = None
    #: The crawl's address guard (its downloader middleware, once built): what the rendering
    #: browser's fetches are checked by (None: the crawl has none, and its browser fetches nothing).
    address_guard: CrawledUrlCheck | None = None

    @property
    def dry_run(self) -> bool:
        """A reparse's dry run: nothing is written, spooled or delivered."""
        return self.reparse is not None and self.reparse.dry_run


class PerCrawl(Generic[Shared]):
    """One ``Shared`` per crawler, made with ``make()`` on first use and gone with the crawler:
    ``crawl_context(crawler)`` here, ``crawl_writes(crawler)`` in store/crawler.py."""

    def __init__(self, make: Callable[[], Shared]) -> None:
        self._make = make
        self._of: WeakKeyDictionary[Any, Shared] = WeakKeyDictionary()

    def __call__(self, crawler: Crawler) -> Shared:
        shared = self._of.get(crawler)
        if shared is None:
            shared = self._of[crawler] = self._make()
        return shared


#: The crawl's context (made empty, with the defaults, on first use).
crawl_context = PerCrawl(CrawlContext)
