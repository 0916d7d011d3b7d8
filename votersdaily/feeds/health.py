"""Which spiders are healthy: their last runs from ``vd_log``, classified.

A run is *broken* when its result is not ``success`` (an exception ended it, a source failed, or a
reply had records and every one was dropped: ``AllRecordsDropped``),
*empty* when it succeeded and the source legitimately had nothing (the run log's ``empty: true``),
a *drop* when it succeeded but its item count fell sharply below the median of the spider's previous
successful runs, and *ok* otherwise. A run stopped by the person (Ctrl-C, a
cancelled scrapyd job: result ``interrupted``) is *interrupted*: not broken, and not part of a baseline
either. A run by hand on chosen documents (``-a url=``, e.g. one replayed
recording) is *manual*: shown, but never the verdict nor part of a baseline. A spider's status is the
status of its latest other run (*manual* when it has only those); a spider without runs is *never run*.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from votersdaily import schema
from votersdaily.defaults import DEFAULTS
from votersdaily.interrupts import INTERRUPTED as INTERRUPTED_RESULT
from votersdaily.store.base import Store

from .query import HIGH, distinct_leading_keys

OK, EMPTY, DROP, BROKEN, NEVER, MANUAL = "ok", "empty", "drop", "broken", "never run", "manual"
INTERRUPTED = "interrupted"

LABELS = {
    OK: "OK",
    EMPTY: "Empty (nothing to report)",
    DROP: "Sharp drop",
    BROKEN: "Broken",
    NEVER: "Never run",
    INTERRUPTED: "Interrupted (stopped before it finished)",
    MANUAL: "Manual run (not counted)",
}
#: The run log's ``input`` of runs on documents picked by hand (see :mod:`votersdaily.extensions`).
MANUAL_INPUTS = ("replay", "given")


@dataclass
class Run:
    doc_id: str
    access_datetime: str
    result: str
    items: int
    inserted: int
    updated: int
    unchanged: int
    dropped: int
    runtime: float | None
    empty: bool
    finish_reason: str = ""
    error_message: str = ""
    #: reason → count of the records and events the run dropped (the run log's ``dropped``).
    dropped_reasons: dict[str, Any] = field(default_factory=dict)
    #: Where the run's documents came from: listing, offline (every recording), replay, given.
    input: str = "listing"
    status: str = OK
    #: Median items of the previous successful runs (None without history).
    baseline: float | None = None

    @property
    def note(self) -> str:
        if self.status == MANUAL:
            what = "a replayed recording" if self.input == "replay" else "documents given with -a url="
            note = "run by hand on %s (%s%s): not counted" % (
                what,
                self.result,
                ": " + self.error_message if self.error_message else "",
            )
            return "%s [%s]" % (note, self.dropped_text) if self.dropped_reasons else note
        if self.status == BROKEN:
            note = "%s%s" % (self.result, ": " + self.error_message if self.error_message else "")
            return "%s [%s]" % (note, self.dropped_text) if self.dropped_reasons else note
        if self.status == INTERRUPTED:
            fetched = "%d items before it was stopped" % self.items
            return "%s (%s)" % (fetched, self.finish_reason) if self.finish_reason else fetched
        if self.status == DROP:
            if self.baseline:
                return "%d items against a median of %g" % (self.items, self.baseline)
            return "no items, %d dropped as invalid" % self.dropped
        if self.status == EMPTY:
            return "the source had nothing to report"
        if self.dropped:
            return "%d dropped (%s), the rest stored" % (self.dropped, self.dropped_text)
        if self.input == "offline":
            return "offline replay of the shipped recordings"
        return ""

    @property
    def dropped_text(self) -> str:
        return ", ".join("%s: %d" % (reason, n) for reason, n in sorted(self.dropped_reasons.items()))


@dataclass
class SpiderHealth:
    name: str
    #: Newest first.
    runs: list[Run] = field(default_factory=list)

    @property
    def status(self) -> str:
        last = self.last
        return last.status if last else NEVER

    @property
    def last(self) -> Run | None:
        """The latest run that counts (else the latest manual one)."""
        counted = [r for r in self.runs if r.status != MANUAL]
        return next(iter(counted or self.runs), None)

    @property
    def label(self) -> str:
        return LABELS[self.status]


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def run_from_log(doc: dict[str, Any]) -> Run:
    items = doc.get("items_scraped")
    if not isinstance(items, int):
        items = sum(_int(doc.get(k)) for k in ("insert_count", "updated_count", "unchanged_count"))
    runtime = doc.get("parser_runtime")
    return Run(
        doc_id=doc["_id"],
        access_datetime=str(doc.get("access_datetime", "")),
        result=str(doc.get("result", "unknown")),
        items=items,
        inserted=_int(doc.get("insert_count")),
        updated=_int(doc.get("updated_count")),
        unchanged=_int(doc.get("unchanged_count")),
        dropped=_int(doc.get("dropped_count")),
        runtime=float(runtime) if isinstance(runtime, (int, float)) else None,
        empty=doc.get("empty") is True,
        finish_reason=str(doc.get("finish_reason") or ""),
        error_message=str(doc.get("error_message") or ""),
        dropped_reasons={str(k): _int(v) for k, v in (doc.get("dropped") or {}).items()}
        if isinstance(doc.get("dropped"), dict)
        else {},
        input=str(doc.get("input") or "listing"),
    )


def classify(runs: list[Run], ratio: float, history: int) -> None:
    """Set ``status`` and ``baseline`` of ``runs`` (oldest first) from each run's predecessors."""
    previous: list[int] = []
    for run in runs:
        run.baseline = median(previous[-history:]) if previous else None
        if run.input in MANUAL_INPUTS:
            run.status = MANUAL
        elif run.result == INTERRUPTED_RESULT:
            run.status = INTERRUPTED
        elif run.result != "success":
            run.status = BROKEN
        elif run.empty:
            run.status = EMPTY
        elif run.items == 0 or (run.baseline and run.items < ratio * run.baseline):
            run.status = DROP
        else:
            run.status = OK
        if run.status in (OK, DROP) and run.items > 0:
            previous.append(run.items)


def spider_health(
    store: Store,
    name: str,
    runs: int = DEFAULTS["VOTERSDAILY_HEALTH_RUNS"],
    ratio: float = DEFAULTS["VOTERSDAILY_HEALTH_DROP_RATIO"],
    history: int = DEFAULTS["VOTERSDAILY_HEALTH_HISTORY"],
) -> SpiderHealth:
    """The last ``runs`` runs of ``name``, classified against up to ``history`` earlier ones."""
    health = SpiderHealth(name)
    if not store.has_db(schema.LOG_DB):
        return health
    rows = store.query(
        schema.LOG_DB,
        "by_parser",
        startkey=[name, HIGH],
        endkey=[name, ""],
        descending=True,
        limit=runs + history,
        include_docs=True,
    )
    ordered = [run_from_log(r.doc) for r in reversed(rows) if r.doc is not None]
    classify(ordered, ratio, history)
    health.runs = list(reversed(ordered))[:runs]
    return health


def health_report(
    store: Store,
    spiders: Sequence[str] = (),
    runs: int = DEFAULTS["VOTERSDAILY_HEALTH_RUNS"],
    ratio: float = DEFAULTS["VOTERSDAILY_HEALTH_DROP_RATIO"],
    history: int = DEFAULTS["VOTERSDAILY_HEALTH_HISTORY"],
) -> list[SpiderHealth]:
    """Every known spider plus every parser with runs in the log, worst status first, then by name."""
    names = set(spiders) | set(distinct_leading_keys(store, schema.LOG_DB, "by_parser"))
    order = {BROKEN: 0, DROP: 1, NEVER: 2, INTERRUPTED: 3, MANUAL: 4, EMPTY: 5, OK: 6}
    report = [spider_health(store, n, runs, ratio, history) for n in names]
    return sorted(report, key=lambda h: (order[h.status], h.name))
