"""Reparse: the current parser of an event spider over its archived documents (no network).

``scrapy crawl <spider> -a reparse=archive [-a since=DATE] [-a until=DATE] [-a dry_run=1]`` (or
``python -m votersdaily reparse``) replays every response record of the spider's archived runs
(:mod:`votersdaily.archive`), oldest first and one at a time, through the spider's own callbacks and the
event pipelines. Requests the callbacks make are not followed: the documents they led to are records of
the archive themselves.

What the store then holds:

* events that come out new or changed are written with the current ``parser_version`` (the store's
  revision history keeps the old one);
* an event an older parser produced from a replayed document that the current parser no longer produces
  is marked ``withdrawn_by: "<parser_name> <parser_version>"`` (with ``withdrawn_at``), and left out of
  feeds, the site and the live views like a superseded one; when the current parser produces an event
  of the same document with the same time and source fragment under another id (its key changed), the
  old one is marked ``replaced_by: <new id>`` instead, so the change is one event, not a reschedule;
* a document the current parser failed on is not judged: when one of its events was dropped (a rule
  refused it), failed in a pipeline or reached no id stage, a record of it could not be read
  (``record_dropped``), or its callback raised, none of its stored events is withdrawn or replaced (a
  parser's bug is no withdrawal); the run log counts them (``unjudged_documents``) and the log says
  so once;
* the run log of the reparse carries ``reparse: true``, the parser versions involved and the counts.

With ``dry_run`` nothing is written or spooled (the store pipeline and the run log stand aside): the
plan, what would be inserted, updated, withdrawn or replaced, with examples, is a :class:`ReparsePlan` in
the crawl's context (``crawl_context(crawler).reparse_plan``, votersdaily/crawlcontext.py) for
``python -m votersdaily reparse --dry-run`` to print.

A damaged archive costs only what is damaged: a record that does not read back whole (a flipped byte,
a file cut short) is named by file and offset, skipped, and reading goes on with the next one
(:mod:`votersdaily.plumbing.warc_reader`). At the end every stored event of the spider whose pointer
(``warc_file``, ``warc_offset``) falls in the reparsed period is checked against what was read; those
whose record was not read whole (damaged, missing, past the end of a cut file) but that the reparse
produced again from another copy of their document are pointed at that copy (``repointed_count``); the
others are listed in the run log (``unverified``) and keep their old parser version. Damage or an
unverified event ends the run ``DamagedWarc`` or ``UnverifiedEvents``, in the dry run as in the real
one. Events a crawl could not archive (``archived: false``) and events whose file the retention removed
(listed in the folder's ``retired.txt``) are counted, not failed.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Self, TextIO, cast

from scrapy import signals
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Headers
from scrapy.responsetypes import responsetypes

from . import schema
from . import signals as vd_signals
from .clock import now_iso
from .crawlcontext import crawl_context
from .gc_freeze import collections_paused
from .items import EventItem
from .requestmeta import ARCHIVE_META, REPLAY_META
from .store.base import StoreError
from .store.crawler import store_for, writers_of
from .store.embedded import EmbeddedStore, text_md5, text_md5_of
from .store.revisions import content, same_content
from .store.views import view_installed

if TYPE_CHECKING:  # the reparse extension is in every crawl, an archive only in a reparse
    from pathlib import Path

    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response
    from twisted.python.failure import Failure

    from votersdaily.spiders.base import EventSpider
    from votersdaily.store.base import Store

    from .archive import ArchivedResponse
    from .plumbing.warc_reader import WarcDamage

logger = logging.getLogger(__name__)

#: Marks written by a reparse (a feed leaves such documents out, like superseded ones).
WITHDRAWN_BY = "withdrawn_by"
REPLACED_BY = "replaced_by"
#: How many example ids a dry run shows per kind of change.
EXAMPLES = 5
#: How many unverified events and damaged stretches the run log lists (all are counted).
LISTED = 50
#: An event's pointer into the archive (votersdaily.archive).
ARCHIVE_POINTER = ("warc_file", "warc_offset", "warc_record_id")
#: What the reparse reads of every stored event of its parser, at the start and at the end: never
#: the whole documents (200,000 of them, mostly their ``source_text``) but the rows of a view whose
#: value holds these fields (:data:`PROVENANCE_VIEW`); those it marks or repoints are read whole
#: afterwards.
VERSION_FIELDS = ("warc_record_id", "parser_version")
CHECK_FIELDS = (*ARCHIVE_POINTER, schema.NOT_ARCHIVED, "superseded_by", WITHDRAWN_BY, REPLACED_BY)
#: The view of every event of a parser whose value holds :data:`VERSION_FIELDS` and :data:`CHECK_FIELDS`.
PROVENANCE_VIEW = "by_parser_provenance"


def text_digest(value: Any) -> Any:
    """What a reparse keeps of an event's ``source_text`` to match it with a stored one at its end: a
    digest of a string (the texts of 200,000 events held to the end of a reparse: 700 MB), anything
    else as it is (never equal to a digest: only a string is digested, and no stored value is bytes).
    The digest is the text's MD5 (hex) as the store names revisions (:func:`.store.embedded.text_md5`,
    compiled: no encoded copy, no hash object), or for a text with no UTF-8 (a lone surrogate) the
    BLAKE2 digest of its ``surrogatepass`` bytes: equal texts, equal digests."""
    if isinstance(value, str):
        digest = text_md5(value)
        if digest is not None:
            return digest
        return hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return value


class UnverifiedEvents(Exception):
    """Stored events point at archived records that a reparse could not read back (the run log's
    ``unverified`` lists them with the reason)."""


def parse_date_arg(value: str | None, *, end: bool, name: str) -> datetime | None:
    """``YYYY-MM-DD`` (a whole day) or an ISO 8601 instant, as UTC; None when not given. An empty
    value (``--since "$UNSET"``) is a ValueError naming ``name``: read as no bound, it reparsed the
    whole archive."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        raise ValueError("%s is empty: give a date (YYYY-MM-DD) or ISO 8601 instant, or leave it out" % name)
    try:
        if len(text) == 10:
            day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
            return day.replace(hour=23, minute=59, second=59) if end else day
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError("%s is not a date (YYYY-MM-DD) or ISO 8601 instant: %r" % (name, value)) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass
class Reparse:
    """What a spider reparses, and what it saw doing so (read by :class:`ReparseExtension`)."""

    since: datetime | None = None
    until: datetime | None = None
    dry_run: bool = False
    #: Response records replayed (WARC-Record-ID), and the events each produced: (_id, datetime,
    #: :func:`text_digest` of source_text) tuples (a reparse holds one per event: tuples the collector
    #: leaves be, without the texts themselves).
    replayed: set[str] = field(default_factory=set)
    produced: dict[str, list[tuple[str, Any, Any]]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    #: WARC-Record-ID → parser versions of its stored events when the reparse started (each once).
    versions_before: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: A dry run's events by id (what the store pipeline would have written).
    events: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Every response record read back whole: (warc_file, warc_offset) → WARC-Record-ID.
    read: dict[tuple[str, int], str] = field(default_factory=dict)
    #: Every stretch of the archive that did not read back (named by file and offset, skipped).
    damage: list[WarcDamage] = field(default_factory=list)
    #: Event id → the archive pointer (values of :data:`ARCHIVE_POINTER`) of the (latest) record read
    #: back whole that produced it.
    sources: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    #: WARC-Record-ID → why the current parser's events of that document cannot be judged against
    #: its stored ones (an event dropped, failed or without an id, a record dropped, its callback
    #: raised): the first reason.
    unjudged: dict[str, str] = field(default_factory=dict)
    #: What the start read found of every stored event of the parser, each readable as the end's
    #: read gives it (:data:`CHECK_FIELDS`, ``_id`` and ``unique_key`` by ``get``: the view's values),
    #: and the store's change token taken before that read: the end reuses them while the token
    #: holds (nothing was committed to the store in between), and reads them again otherwise.
    stored_at_start: list[dict[str, Any]] | None = None
    store_token: Any = None


@dataclass
class ReparsePlan:
    """What a dry run would have done (``crawl_context(crawler).reparse_plan``; :func:`summarise_plan`)."""

    spider: str
    #: ``<parser_name> <parser_version>`` of the current parser.
    parser: str
    #: ``insert``, ``update``, ``unchanged``, ``withdraw``, ``replace`` → event ids (``old -> new``).
    plan: dict[str, list[str]]
    #: The first updated events' ids → the keys that would change.
    changes: dict[str, list[str]]
    #: What the archive check found, by what a person reads → how many.
    archive: dict[str, int]


class ReplayMiddleware:
    """Downloader middleware (order 1) of a reparsing spider: archived records are answered from the
    archive; any other request (robots.txt included) is ignored, so a reparse never touches the network."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_request(self, request: Request, spider: Spider | None = None) -> Response | None:
        if crawl_context(self.crawler).reparse is None:
            return None
        spider = cast("EventSpider", self.crawler.spider)  # the only spiders with a reparse
        archived: ArchivedResponse | None = spider.take_archived(request.meta.get(REPLAY_META))
        if archived is None:
            raise IgnoreRequest("reparse reads the archive only: %s is not fetched" % request.url)
        # Headers (bytes keys), as the downloader hands them over: the response class is then chosen
        # from the archived Content-Type as in the crawl (str keys were never looked up).
        headers = Headers()
        for name, value in archived.headers:
            headers.appendlist(name, value)
        cls = responsetypes.from_args(headers=headers, url=archived.url, body=archived.body)
        return cls(
            url=archived.url, status=archived.status, headers=headers, body=archived.body, request=request
        )


class ReparseExtension:
    """At the end of a reparse: marks the events the current parser no longer produces (or, in a dry
    run, says what it would do) and adds the reparse's figures to the run log."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        #: The crawl's context, looked up once (one object for the crawler's life; read per item).
        self.context = crawl_context(crawler)
        self.report: dict[str, Any] = {}
        #: The store failed under the reparse (said once): nothing is marked at its end.
        self.store_failed = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        ext = cls(crawler)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(ext.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(ext.item_error, signal=signals.item_error)
        crawler.signals.connect(ext.spider_error, signal=signals.spider_error)
        crawler.signals.connect(ext.record_dropped, signal=vd_signals.record_dropped)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(ext.run_log_fields, signal=vd_signals.run_log_building)
        return ext

    def _reparse(self) -> Reparse | None:
        return self.context.reparse

    def _store_failed(self, spider: Spider, exc: StoreError) -> None:
        """The store stopped answering (or refused) while the reparse read it: one line, and the run
        fails with it (the run log's result), instead of a traceback per signal handler."""
        from twisted.python.failure import Failure

        self.store_failed = True
        self.report = {"reparse": True, "reparse_dry_run": self.context.dry_run}
        logger.error("reparse of %s: %s", spider.name, exc)
        self.crawler.signals.send_catch_log(
            vd_signals.source_failed, failure=Failure(exc), url=None, spider=spider, where="store"
        )

    def spider_opened(self, spider: Spider) -> None:
        """The parser versions of the archived documents' events before the reparse writes anything."""
        reparse = self._reparse()
        if reparse is None:
            return
        try:
            self._versions_before(spider, reparse)
        except StoreError as exc:
            self._store_failed(spider, exc)

    def _versions_before(self, spider: Spider, reparse: Reparse) -> None:
        from .store.reschedules import KeyIds, RescheduleTracker, key_ids

        store = store_for(self.crawler)
        if not store.has_db(schema.EVENTS_DB):
            return
        # The events' writer would read the same rows (by_parser_unique_key's) before its first
        # batch, through the store's process and while the reparse waits for it: read once, here.
        writers = [
            writer
            for writer in writers_of(self.crawler)
            if writer.db == schema.EVENTS_DB and isinstance(writer.hooks, RescheduleTracker)
        ]
        # With the stored revisions too, where they are the MD5 of the stored texts: an event the
        # current parser makes again as it is stored is then told unchanged where it is added.
        telling = [
            writer
            for writer in writers
            if not reparse.dry_run and isinstance(store, EmbeddedStore) and writer.revisions_hash_texts
        ]
        # Taken before the read: whatever is committed after it (this run's writes, another
        # process's) makes the end read the rows again.
        token = store.change_token() if isinstance(store, EmbeddedStore) else None
        with collections_paused():  # some 600,000 objects made to live on: nothing to collect
            ids_by_key: dict[str, KeyIds] = {}  # a key's one id alone (no set a key: KeyIds)
            digests: dict[str, str] = {}
            versions = reparse.versions_before
            names: dict[str, str] = {}  # each version's name once, not once an event
            rows, whole = self._provenance_of(store, spider.name, revisions=bool(telling))
            for doc_id, key, value, rev in rows:
                ids = ids_by_key.setdefault(key, doc_id)
                if ids is not doc_id:  # a second document of the key
                    key_ids(ids_by_key, key).add(doc_id)
                if telling and rev:
                    digests[doc_id] = text_md5_of(rev)
                get = value.get
                record = get("warc_record_id")
                if record:
                    name = str(get("parser_version"))
                    name = names.setdefault(name, name)
                    known = versions.get(record)
                    if known is None:
                        versions[record] = (name,)
                    elif name not in known:
                        versions[record] = (*known, name)
            if whole and token is not None:
                reparse.stored_at_start = [row[2] for row in rows]
                reparse.store_token = token
            for n, writer in enumerate(writers):  # each its own (a tracker keeps it current)
                hooks = cast("RescheduleTracker", writer.hooks)
                hooks.known(
                    spider.name,
                    ids_by_key
                    if n == 0
                    else {k: v if type(v) is str else set(v) for k, v in ids_by_key.items()},
                )
            for n, writer in enumerate(telling):
                writer.batch.know_stored_texts(digests if n == 0 else dict(digests))

    @staticmethod
    def _provenance_of(
        store: Store, parser_name: str, revisions: bool
    ) -> tuple[list[tuple[str, str, Any, str | None]], bool]:
        """Every stored event of ``parser_name`` as ``(id, unique_key, value, revision)`` in the
        order of its unique keys, and whether each value is its row's of :data:`PROVENANCE_VIEW`
        with the event's ``_id`` and ``unique_key`` (what the end reads of it, every field of
        :data:`CHECK_FIELDS` by ``get``, as :meth:`_events_of` gives it); where that view is not installed,
        each value is the event's :data:`VERSION_FIELDS` read from its document (see
        :meth:`_events_of`). The revision only with ``revisions``."""
        if view_installed(store, schema.EVENTS_DB, PROVENANCE_VIEW):
            if isinstance(store, EmbeddedStore):  # no key list a row
                rows = store.rows_of_first_key(
                    schema.EVENTS_DB, PROVENANCE_VIEW, parser_name, revisions=revisions
                )
            else:
                low, high = [parser_name], [parser_name, {}]
                rows = [
                    (doc_id, key[1], value, rev)
                    for doc_id, key, value, rev in _provenance_rows(store, low, high, revisions)
                ]
            for doc_id, key, value, _ in rows:  # each value made what the end reads of its event
                value["_id"] = doc_id
                value["unique_key"] = key
            return rows, True
        docs = ReparseExtension._events_of(store, parser_name, VERSION_FIELDS, revisions)
        return [(doc["_id"], doc["unique_key"], doc, doc.get("_rev")) for doc in docs], False

    def _stored_at_end(self, store: Store, parser_name: str, reparse: Reparse) -> list[dict[str, Any]]:
        """What the end checks of every stored event (:data:`CHECK_FIELDS`): the start read's rows
        when nothing was committed to the store since it was taken (the same rows a read would
        give), else the rows read again."""
        if not store.has_db(schema.EVENTS_DB):
            return []
        kept, reparse.stored_at_start = reparse.stored_at_start, None
        reused = (
            kept is not None
            and isinstance(store, EmbeddedStore)
            and store.change_token() == reparse.store_token
        )
        self.crawler.stats.set_value("reparse/end_read", "reused" if reused else "read")
        if reused:
            assert kept is not None  # noqa: S101 - narrowed for the type checker
            return kept
        return self._events_of(store, parser_name, CHECK_FIELDS)

    @staticmethod
    def _events_of(
        store: Store, parser_name: str, fields: tuple[str, ...], revisions: bool = False
    ) -> list[dict[str, Any]]:
        """``fields`` (and ``_id`` and ``unique_key``; ``None`` for a field an event lacks) of every
        stored event of ``parser_name``, in the order of its unique keys: from the rows of :data:`PROVENANCE_VIEW`,
        or, where that view is not installed as this code defines it (a dry run on a store written
        before it existed: nothing installs views then), from the documents themselves. With
        ``revisions``, each one's ``_rev`` too."""
        low, high = [parser_name], [parser_name, {}]
        with collections_paused():  # 200,000 rows that all live on: nothing to collect
            if view_installed(store, schema.EVENTS_DB, PROVENANCE_VIEW):
                events = []
                for doc_id, key, value, rev in _provenance_rows(store, low, high, revisions):
                    event = {"_id": doc_id, "unique_key": key[1]}
                    if rev is not None:
                        event["_rev"] = rev
                    get = value.get
                    for name in fields:
                        event[name] = get(name)
                    events.append(event)
                return events
            rows = store.query(
                schema.EVENTS_DB,
                "by_parser_unique_key",
                startkey=low,
                endkey=high,
                include_docs=True,
                fields=fields,
            )
            return [{**row.doc, "unique_key": row.key[1]} for row in rows if row.doc]

    def item_scraped(self, item: Any, response: Response, spider: Spider) -> None:
        reparse = self.context.reparse  # _reparse(), without a call an item
        if reparse is None:
            return
        if "_id" not in item:
            if isinstance(item, EventItem):  # no id stage ran (ITEM_PIPELINES without it)
                self._unjudged(response, "an event reached no id stage")
            return
        doc_id, get = item["_id"], item.get
        if reparse.dry_run:
            reparse.events[doc_id] = dict(item)
        record = get("warc_record_id")
        if record:
            reparse.sources[doc_id] = (get("warc_file"), get("warc_offset"), record)  # ARCHIVE_POINTER's
            source = get("source_text")
            # text_digest's, its common case without a call: the text's MD5 (None: no UTF-8)
            digest = (text_md5(source) if type(source) is str else None) or text_digest(source)
            reparse.produced.setdefault(record, []).append((doc_id, get("datetime"), digest))

    def item_dropped(self, item: Any, response: Response, exception: BaseException, spider: Spider) -> None:
        if isinstance(item, EventItem):
            self._unjudged(response, "an event was dropped (%s)" % getattr(exception, "reason", exception))

    def item_error(self, item: Any, response: Response, spider: Spider, failure: Failure) -> None:
        if isinstance(item, EventItem):
            self._unjudged(response, "an event failed in a pipeline (%s)" % type(failure.value).__name__)

    def spider_error(self, failure: Failure, response: Response, spider: Spider) -> None:
        self._unjudged(response, "the parser raised %s" % type(failure.value).__name__)

    def record_dropped(self, response: Response, reason: str, message: str, spider: Spider) -> None:
        """A record the parser could not make an event of (it raised; None is a record that is no event)."""
        self._unjudged(response, "a record was dropped (%s)" % reason)

    def _unjudged(self, response: Response | None, reason: str) -> None:
        """In a reparse, the document of ``response`` cannot be judged: the current parser failed on it."""
        reparse = self._reparse()
        meta = getattr(response, "meta", None) or {}
        record = (meta.get(ARCHIVE_META) or {}).get("warc_record_id")
        if reparse is not None and record:
            reparse.unjudged.setdefault(record, reason)

    def spider_closed(self, spider: EventSpider, reason: str) -> None:
        """Synchronous on purpose: the marks are written before the run log (a later receiver) reads them."""
        reparse = self._reparse()
        if reparse is None:
            return
        if reason != "finished":
            logger.error("reparse of %s ended early (%s): nothing marked withdrawn", spider.name, reason)
            self.report = {
                "reparse": True,
                "reparse_dry_run": reparse.dry_run,
                "withdrawn_count": 0,
                "replaced_count": 0,
            }
            return
        if self.store_failed:
            return
        try:
            self._finish(spider, reparse)
        except StoreError as exc:
            self._store_failed(spider, exc)

    def _finish(self, spider: EventSpider, reparse: Reparse) -> None:
        store = store_for(self.crawler)
        events = self._stored_at_end(store, spider.name, reparse)
        marks, versions = self._marks(store, spider, reparse, events)
        current = "%s %s" % (spider.name, spider.version)
        withdrawn = [m for m in marks if REPLACED_BY not in m]
        replaced = [m for m in marks if REPLACED_BY in m]
        if not reparse.dry_run and marks:
            from .store.upsert import upsert

            upsert(store, schema.EVENTS_DB, marks)
        checked = self._verify(store, spider, reparse, events)
        self.report = {
            "reparse": True,
            "reparse_dry_run": reparse.dry_run,
            "reparse_files": reparse.files,
            "parser_versions": sorted(versions | {str(spider.version)}),
            "replayed_documents": len(reparse.replayed),
            "withdrawn_count": len(withdrawn),
            "replaced_count": len(replaced),
            "unjudged_documents": len(reparse.unjudged),
            **checked.report(reparse.damage),
        }
        stats = self.crawler.stats
        stats.set_value("reparse/withdrawn", len(withdrawn))
        stats.set_value("reparse/replaced", len(replaced))
        stats.set_value("reparse/replayed", len(reparse.replayed))
        stats.set_value("reparse/unjudged", len(reparse.unjudged))
        if reparse.unjudged:
            record, reason = next(iter(reparse.unjudged.items()))
            logger.warning(
                "reparse of %s: the current parser failed on %d archived document(s) (the first, %s: %s): "
                "their stored events are left as they are, neither withdrawn nor replaced",
                spider.name,
                len(reparse.unjudged),
                record,
                reason,
            )
        if reparse.dry_run:
            plan = self._plan(store, reparse.events)
            plan["withdraw"] = [m["_id"] for m in withdrawn]
            plan["replace"] = ["%s -> %s" % (m["_id"], m[REPLACED_BY]) for m in replaced]
            for kind, ids in plan.items():
                stats.set_value("reparse/plan/%s" % kind, len(ids))
            self.context.reparse_plan = ReparsePlan(
                spider=spider.name,
                parser=current,
                plan=plan,
                changes={
                    doc_id: _changed_keys(store.get(schema.EVENTS_DB, doc_id) or {}, reparse.events[doc_id])
                    for doc_id in plan["update"][:EXAMPLES]
                },
                archive={
                    "damaged stretches of the archive skipped": len(reparse.damage),
                    "stored events not verified": len(checked.unverified),
                    "events would point at another copy of their document": len(checked.repointed),
                    "documents the parser failed on, their stored events left as they are": len(
                        reparse.unjudged
                    ),
                },
            )

    def _verify(
        self, store: Store, spider: Spider, reparse: Reparse, events: list[dict[str, Any]]
    ) -> ArchiveCheck:
        """Every stored event of the spider (``events``: their :data:`CHECK_FIELDS`) that points into
        the reparsed period, against the records read back; those that could not be checked fail the
        run (``UnverifiedEvents``)."""
        from .archive import archive_dir, retired_files

        checked = ArchiveCheck()
        folder = archive_dir(self.crawler.settings).absolute() / spider.name
        checked.check(events, reparse, retired_files(folder))
        if checked.repointed:  # read whole now (with any mark the reparse just wrote), the pointer moved
            whole = store.get_many(schema.EVENTS_DB, [doc["_id"] for doc in checked.repointed])
            checked.repointed = [
                {
                    **{k: v for k, v in whole[doc["_id"]].items() if k not in ("_rev", schema.NOT_ARCHIVED)},
                    **{k: doc[k] for k in ARCHIVE_POINTER},
                }
                for doc in checked.repointed
                if doc["_id"] in whole
            ]
        if checked.repointed and not reparse.dry_run:
            from .store.upsert import upsert

            upsert(store, schema.EVENTS_DB, checked.repointed)
        if checked.unverified:
            first = checked.unverified[0]
            message = "%d stored events point at records of %s that were not read back, e.g. %s (%s)" % (
                len(checked.unverified),
                folder,
                first["_id"],
                first["reason"],
            )
            logger.error("reparse of %s: %s", spider.name, message)
            self.crawler.signals.send_catch_log(
                vd_signals.archive_unreadable, exception=UnverifiedEvents(message), spider=spider
            )
        return checked

    @staticmethod
    def _plan(store: Store, events: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
        """What the store pipeline would do with ``events``: insert, update or leave unchanged."""
        plan: dict[str, list[str]] = {"insert": [], "update": [], "unchanged": []}
        stored = store.get_many(schema.EVENTS_DB, list(events)) if store.has_db(schema.EVENTS_DB) else {}
        for doc_id, doc in sorted(events.items()):
            old = stored.get(doc_id)
            if old is None:
                plan["insert"].append(doc_id)
            elif same_content(old, doc, ignore=schema.VOLATILE_EVENT_KEYS):
                plan["unchanged"].append(doc_id)
            else:
                plan["update"].append(doc_id)
        return plan

    def _marks(
        self, store: Store, spider: EventSpider, reparse: Reparse, events: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], set[str]]:
        """The marks to write: live events of replayed documents that no produced event matches
        (``events``: the stored events' :data:`CHECK_FIELDS`; those to mark are read whole)."""
        versions = {v for record in reparse.replayed for v in reparse.versions_before.get(record, ())}
        if not reparse.replayed or not events:
            return [], versions

        produced = reparse.sources  # by the id of every event produced from a record, as produced
        judged = reparse.replayed - reparse.unjudged.keys()
        gone = [
            doc["_id"]
            for doc in events
            if doc.get("warc_record_id") in judged and doc["_id"] not in produced and schema.is_live(doc)
        ]
        whole = store.get_many(schema.EVENTS_DB, gone) if gone else {}
        marks = []
        stamp = now_iso()
        for doc in (whole[doc_id] for doc_id in gone if doc_id in whole):
            record = doc.get("warc_record_id")
            if record not in judged or not schema.is_live(doc):
                continue
            mark = {k: v for k, v in doc.items() if k != "_rev"}
            stored_digest = text_digest(doc.get("source_text"))
            successor = next(
                (
                    new_id
                    for new_id, datetime_, source_digest in reparse.produced.get(record, ())
                    if datetime_ == doc.get("datetime") and source_digest == stored_digest
                ),
                None,
            )
            if successor:
                mark[REPLACED_BY] = successor
                mark["replaced_at"] = stamp
            else:
                mark[WITHDRAWN_BY] = "%s %s" % (spider.name, spider.version)
                mark["withdrawn_at"] = stamp
            marks.append(mark)
        return marks, versions

    def run_log_fields(self, doc: dict[str, Any], spider: Spider | None = None) -> None:
        if self.report:
            doc.update(self.report)


@dataclass
class ArchiveCheck:
    """Stored events' archive pointers against what a reparse read back."""

    #: Events whose record was not read whole: {_id, warc_file, warc_offset, reason}.
    unverified: list[dict[str, Any]] = field(default_factory=list)
    verified: int = 0
    #: Events whose pointer was bad or missing, produced again from a record read whole: the event
    #: with its pointer moved there (a dry run only counts them).
    repointed: list[dict[str, Any]] = field(default_factory=list)
    #: Events a crawl could not archive (``archived: false``, no pointer), and events whose file the
    #: archive's retention removed: nothing to check, counted.
    not_archived: int = 0
    retired: int = 0

    def check(self, events: list[dict[str, Any]], reparse: Reparse, retired: set[str]) -> None:
        from .archive import run_of

        read_files = set(reparse.files)
        in_period: dict[str, bool] = {}  # by file: a few hundred names for 200,000 events
        for doc in events:
            warc_file = doc.get("warc_file")
            if not warc_file:
                if doc.get(schema.NOT_ARCHIVED) is False:  # its crawl could not archive it
                    if doc["_id"] in reparse.sources:
                        self._repoint(doc, reparse.sources[doc["_id"]])
                    else:
                        self.not_archived += 1
                continue
            name = str(warc_file)  # what run_of reads of it (a stored value may be anything)
            if name not in in_period:
                in_period[name] = run_of(name, reparse.since, reparse.until)
            if not in_period[name]:
                continue
            offset = doc.get("warc_offset")
            found = reparse.read.get((warc_file, offset)) if isinstance(offset, int) else None
            if found is not None and found == doc.get("warc_record_id"):
                self.verified += 1
            elif doc["_id"] in reparse.sources:
                self._repoint(doc, reparse.sources[doc["_id"]])
            elif warc_file in retired:
                self.retired += 1
            else:
                self.unverified.append(
                    {
                        "_id": doc["_id"],
                        "warc_file": warc_file,
                        "warc_offset": offset,
                        "reason": self._reason(warc_file, offset, read_files, reparse),
                    }
                )

    def _repoint(self, doc: dict[str, Any], source: tuple[Any, ...]) -> None:
        moved = {k: v for k, v in doc.items() if k not in ("_rev", schema.NOT_ARCHIVED)}
        self.repointed.append({**moved, **dict(zip(ARCHIVE_POINTER, source, strict=True))})

    @staticmethod
    def _reason(warc_file: str, offset: Any, read_files: set[str], reparse: Reparse) -> str:
        if warc_file not in read_files:
            return "its WARC file is not in the archive folder"
        if any(
            d.path.name == warc_file and isinstance(offset, int) and d.covers(offset) for d in reparse.damage
        ):
            return "its record is damaged"
        if (warc_file, offset) in reparse.read:
            return "another record is at its offset"
        return "no response record starts at its offset (the file was cut short or rewritten)"

    def report(self, damage: list[WarcDamage]) -> dict[str, Any]:
        """The run log's fields: counts, and the first unverified events and damaged stretches."""
        fields: dict[str, Any] = {
            "verified_count": self.verified,
            "unverified_count": len(self.unverified),
            "damaged_count": len(damage),
        }
        if self.unverified:
            fields["unverified"] = self.unverified[:LISTED]
        if damage:
            fields["damaged"] = [
                {"warc_file": d.path.name, "offset": d.offset, "resumed_at": d.resumed_at, "reason": d.reason}
                for d in damage[:LISTED]
            ]
        if self.repointed:
            fields["repointed_count"] = len(self.repointed)
        if self.not_archived:
            fields["not_archived_count"] = self.not_archived
        if self.retired:
            fields["retired_count"] = self.retired
        return fields


def _provenance_rows(
    store: Store, low: list[Any], high: list[Any], revisions: bool
) -> list[tuple[str, Any, Any, str | None]]:
    """The rows of :data:`PROVENANCE_VIEW` from ``low`` to ``high`` as ``(id, key, value, revision)``
    (the document's revision only with ``revisions``): the embedded store answers them as tuples,
    without a row object and a document per row (:meth:`.EmbeddedStore.view_rows`)."""
    if isinstance(store, EmbeddedStore):
        return store.view_rows(
            schema.EVENTS_DB, PROVENANCE_VIEW, startkey=low, endkey=high, revisions=revisions
        )
    rows = store.query(
        schema.EVENTS_DB,
        PROVENANCE_VIEW,
        startkey=low,
        endkey=high,
        include_docs=revisions,
        fields=(),  # of a document, its revision alone
    )
    return [(row.id, row.key, row.value, row.doc["_rev"] if revisions and row.doc else None) for row in rows]


def points_into_archive(
    store: Store, spider: str, folder: Path, since: datetime | None, until: datetime | None
) -> bool:
    """Whether a stored event of ``spider`` points at a WARC file of a run started in [since, until]
    that retention did not remove (a reparse must then look for it, also when the folder is gone)."""
    from pathlib import Path

    from .archive import retired_files, run_of

    if not store.has_db(schema.EVENTS_DB):
        return False
    retired = retired_files(Path(folder) / spider)
    return any(
        run_of(doc.get("warc_file"), since, until) and doc["warc_file"] not in retired
        for doc in ReparseExtension._events_of(store, spider, ("warc_file",))
    )


def _changed_keys(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    keys = set(content(old, schema.VOLATILE_EVENT_KEYS)) | set(content(new, schema.VOLATILE_EVENT_KEYS))
    return sorted(k for k in keys if old.get(k) != new.get(k))


def summarise_plan(plan: ReparsePlan, out: TextIO) -> None:
    """The dry run's plan of one spider as a person reads it."""
    counts = Counter({kind: len(ids) for kind, ids in plan.plan.items()})
    print(
        "%s (%s): would insert %d, update %d, withdraw %d, replace %d; %d unchanged"
        % (
            plan.spider,
            plan.parser,
            counts["insert"],
            counts["update"],
            counts["withdraw"],
            counts["replace"],
            counts["unchanged"],
        ),
        file=out,
    )
    archive = ["%d %s" % (n, what) for what, n in plan.archive.items() if n]
    if archive:
        print("  %s (see the log above)" % "; ".join(archive), file=out)
    for kind in ("insert", "update", "withdraw", "replace"):
        for example in plan.plan[kind][:EXAMPLES]:
            changed = plan.changes.get(example)
            print(
                "  %-8s %s%s" % (kind, example, " (changes %s)" % ", ".join(changed) if changed else ""),
                file=out,
            )
