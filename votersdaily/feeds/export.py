"""One feed = a filter over the store written as ICS or JSON; shared by ``export`` and the site."""

from __future__ import annotations

import io
from dataclasses import asdict
from itertools import islice
from typing import BinaryIO, Iterator

from ..clock import now_iso
from ..store.base import Store
from .ical import write_ics
from .jsonfeed import write_json
from .query import EventFilter, iter_events, predecessors

FORMATS = ("ics", "json")
BATCH = 200


def with_earlier_versions(store: Store, docs: Iterator[dict]) -> Iterator[tuple[dict, int]]:
    """Pair each event with its number of superseded versions, one view query per batch."""
    docs = iter(docs)
    while batch := list(islice(docs, BATCH)):
        counts = predecessors(store, batch)
        for doc in batch:
            yield doc, counts.get(doc["_id"], 0)


def feed_name(flt: EventFilter) -> str:
    parts = [v for v in (flt.branch, flt.entity, flt.parser, flt.committee) if v]
    return "votersdaily: " + (" / ".join(parts) if parts else "all events")


def export(store: Store, fmt: str, flt: EventFilter, out: BinaryIO) -> int:
    """Write the feed of ``flt`` in ``fmt`` to the binary stream ``out``; returns the event count."""
    if fmt == "ics":
        return write_ics(with_earlier_versions(store, iter_events(store, flt)), out, feed_name(flt))
    if fmt == "json":
        text = io.TextIOWrapper(out, encoding="utf-8", newline="\n", write_through=True)
        filters = {k: v for k, v in asdict(flt).items() if v}
        try:
            return write_json(iter_events(store, flt), text, filters, now_iso())
        finally:
            text.detach()
    raise ValueError("unknown feed format %r (one of %s)" % (fmt, ", ".join(FORMATS)))
