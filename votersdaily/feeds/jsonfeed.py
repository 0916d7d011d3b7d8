"""Events as one JSON document: ``{"count", "filters", "events": [...]}``, streamed.

Each event is its stored document minus ``source_text`` (large, and the provenance copy rather than
data) and ``_rev`` (a store detail that differs between backends).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, TextIO

OMITTED_KEYS = ("source_text", "_rev", "_attachments")


def public_event(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in OMITTED_KEYS}


def write_json(
    docs: Iterable[dict[str, Any]],
    out: TextIO,
    filters: dict[str, Any] | None = None,
    generated: str | None = None,
) -> int:
    """Write the feed to ``out``; the count comes last so the events can stream."""
    out.write(
        '{"generated": %s, "filters": %s, "events": ['
        % (json.dumps(generated), json.dumps(filters or {}, sort_keys=True))
    )
    count = 0
    for doc in docs:
        out.write(",\n" if count else "\n")
        out.write(json.dumps(public_event(doc), ensure_ascii=False, sort_keys=True))
        count += 1
    out.write('\n], "count": %d}\n' % count)
    return count
