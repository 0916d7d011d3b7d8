"""One feed = a filter over the events written as ICS or JSON; shared by ``export`` and the site."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from itertools import islice
from typing import TYPE_CHECKING, Any, BinaryIO

from votersdaily.clock import now_iso
from votersdaily.sources.canonical_ids import bill_label, docket_label
from votersdaily.store.base import Store

from .jsonfeed import write_json
from .query import EventFilter, iter_events, siblings, superseded_by_newer
from .sanitise import FeedReport

if TYPE_CHECKING:
    from .ical import VeventCache  # icalendar is imported only for an ics feed

FORMATS = ("ics", "json")
BATCH = 200


def with_earlier_versions(
    store: Store, docs: Iterable[dict[str, Any]], report: FeedReport | None = None
) -> Iterator[tuple[dict[str, Any], int]]:
    """Pair each event with its number of other documents (earlier versions: SEQUENCE grows with
    them), one view query per batch; of two live documents of one event only the newest is kept
    (``report.hidden`` names the others)."""
    docs = iter(docs)
    while batch := list(islice(docs, BATCH)):
        others = siblings(store, batch)
        hidden = superseded_by_newer(store, batch, others)
        for doc in batch:
            if doc["_id"] in hidden:
                if report is not None:
                    report.hidden.append(doc["_id"])
                continue
            yield doc, len(others.get(doc["_id"], ()))


def feed_name(flt: EventFilter) -> str:
    parts = [v for v in (flt.branch, flt.entity, flt.parser, flt.committee) if v]
    if flt.bill:
        parts.append(bill_label(flt.bill))
    if flt.docket:
        parts.append("Supreme Court %s" % docket_label(flt.docket))
    return "votersdaily: " + (" / ".join(parts) if parts else "all events")


def write_feed(
    fmt: str,
    events: Iterable[tuple[dict[str, Any], int]],
    flt: EventFilter,
    out: BinaryIO,
    cache: VeventCache | None = None,
    generated: str | None = None,
) -> int:
    """Write ``(doc, earlier_versions)`` pairs selected by ``flt`` as ``fmt`` to the binary ``out``.

    ``cache`` (ICS only) reuses serialised events across the feeds of one site build.
    """
    if fmt == "ics":
        from .ical import write_ics  # icalendar (0.03 s): only an ics feed needs it

        return write_ics(events, out, feed_name(flt), cache)
    if fmt == "json":
        text = io.TextIOWrapper(out, encoding="utf-8", newline="\n", write_through=True)
        filters = {k: v for k, v in asdict(flt).items() if v}
        try:
            return write_json((doc for doc, _ in events), text, filters, generated or now_iso())
        finally:
            text.detach()
    raise ValueError("unknown feed format %r (one of %s)" % (fmt, ", ".join(FORMATS)))


def export(store: Store, fmt: str, flt: EventFilter, out: BinaryIO, report: FeedReport | None = None) -> int:
    """Stream the feed of ``flt`` from the store's views to ``out``; returns the event count.

    Every event is shown once (the newest live document of its parser and unique key); stored
    documents that had to be cleaned or left out are listed in ``report``.
    """
    if fmt not in FORMATS:
        raise ValueError("unknown feed format %r (one of %s)" % (fmt, ", ".join(FORMATS)))
    report = FeedReport() if report is None else report
    pairs = with_earlier_versions(store, iter_events(store, flt, report), report)
    return write_feed(fmt, pairs, flt, out)
