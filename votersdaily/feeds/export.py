"""One feed = a filter over the events written as ICS or JSON; shared by ``export`` and the site."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from itertools import islice
from typing import BinaryIO

from ..clock import now_iso
from ..store.base import Store
from .ical import write_ics
from .jsonfeed import write_json
from .query import EventFilter, iter_events, predecessors

FORMATS = ("ics", "json")
BATCH = 200


def with_earlier_versions(store: Store, docs: Iterable[dict]) -> Iterator[tuple[dict, int]]:
    """Pair each event with its number of superseded versions, one view query per batch."""
    docs = iter(docs)
    while batch := list(islice(docs, BATCH)):
        counts = predecessors(store, batch)
        for doc in batch:
            yield doc, counts.get(doc["_id"], 0)


def feed_name(flt: EventFilter) -> str:
    parts = [v for v in (flt.branch, flt.entity, flt.parser, flt.committee) if v]
    return "votersdaily: " + (" / ".join(parts) if parts else "all events")


def write_feed(
    fmt: str,
    events: Iterable[tuple[dict, int]],
    flt: EventFilter,
    out: BinaryIO,
    cache: dict | None = None,
    generated: str | None = None,
) -> int:
    """Write ``(doc, earlier_versions)`` pairs selected by ``flt`` as ``fmt`` to the binary ``out``.

    ``cache`` (ICS only) reuses serialised events across the feeds of one site build.
    """
    if fmt == "ics":
        return write_ics(events, out, feed_name(flt), cache)
    if fmt == "json":
        text = io.TextIOWrapper(out, encoding="utf-8", newline="\n", write_through=True)
        filters = {k: v for k, v in asdict(flt).items() if v}
        try:
            return write_json((doc for doc, _ in events), text, filters, generated or now_iso())
        finally:
            text.detach()
    raise ValueError("unknown feed format %r (one of %s)" % (fmt, ", ".join(FORMATS)))


def export(store: Store, fmt: str, flt: EventFilter, out: BinaryIO) -> int:
    """Stream the feed of ``flt`` from the store's views to ``out``; returns the event count."""
    if fmt not in FORMATS:
        raise ValueError("unknown feed format %r (one of %s)" % (fmt, ", ".join(FORMATS)))
    events = iter_events(store, flt)
    pairs = with_earlier_versions(store, events) if fmt == "ics" else ((doc, 0) for doc in events)
    return write_feed(fmt, pairs, flt, out)
