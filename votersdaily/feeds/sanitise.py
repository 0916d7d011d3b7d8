"""What a feed may show of a stored event, whatever the store holds.

Validation keeps hostile values out of the pipelines' writes, but a document can reach the store
another way (an older version, a tool, a hand edit): the exporters pass every document through
:func:`feed_event` first, so one bad document is cleaned or left out, and the :class:`FeedReport`
says which, instead of breaking the whole calendar, JSON feed or site.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from votersdaily import schema

#: Examples of each kind of problem the report names.
REPORT_EXAMPLES = 5


@dataclass
class FeedReport:
    """Stored documents an export cleaned (id → keys), left out (id → reason), or hid because a
    newer live document of the same event exists (a key with two live documents)."""

    cleaned: dict[str, list[str]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    hidden: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """One line per kind of problem, for standard error."""
        out = []
        if self.skipped:
            examples = list(self.skipped.items())[:REPORT_EXAMPLES]
            out.append(
                "left out %d stored events that cannot be shown: %s"
                % (len(self.skipped), "; ".join("%r (%s)" % pair for pair in examples))
            )
        if self.cleaned:
            fixes = list(self.cleaned.items())[:REPORT_EXAMPLES]
            out.append(
                "cleaned %d stored events (control characters, lone surrogates or bad URLs): %s"
                % (len(self.cleaned), "; ".join("%r (%s)" % (i, ", ".join(k)) for i, k in fixes))
            )
        if self.hidden:
            out.append(
                "showed %d events once that have two live documents (the newest is shown; the next "
                "crawl of their spider repairs them): %s"
                % (len(self.hidden), ", ".join(repr(i) for i in self.hidden[:REPORT_EXAMPLES]))
            )
        return out


def _skip(doc: dict[str, Any]) -> str | None:
    """Why ``doc`` cannot be placed in a feed at all, or None."""
    if not isinstance(doc.get("_id"), str):
        return "no _id"
    for key in ("parser_name", "unique_key"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            return "no %s" % key
    if not isinstance(doc.get("datetime"), str) or not schema.DATETIME_RE.match(doc["datetime"]):
        return "datetime %r is not ISO 8601 UTC" % (doc.get("datetime"),)
    return None


def feed_event(doc: dict[str, Any], report: FeedReport) -> dict[str, Any] | None:
    """``doc`` without ``source_text`` and as a feed may show it (text cleaned as validation cleans
    it, a bad URL or optional datetime removed), or None when it cannot be shown at all."""
    doc = {k: v for k, v in doc.items() if k != "source_text"}
    doc_id = schema.clean_text(doc["_id"]) if isinstance(doc.get("_id"), str) else doc.get("_id")
    changed = schema.clean_event(doc)
    reason = _skip(doc)
    if reason is not None:
        report.skipped[str(doc_id)] = reason
        return None
    for key in schema.URL_KEYS:
        if doc.get(key) and not schema.is_absolute_url(doc[key]):
            doc[key] = None
            changed.append(key)
    for key in ("end_datetime", "access_datetime"):
        value = doc.get(key)
        if value is not None and not (isinstance(value, str) and schema.DATETIME_RE.match(value)):
            doc[key] = None
            changed.append(key)
    for key in ("title", "description", "branch", "entity", "parser_version", "location"):
        if doc.get(key) is not None and not isinstance(doc[key], str):
            doc[key] = None
            changed.append(key)
    if changed:
        report.cleaned[str(doc_id)] = sorted(set(changed))
    return doc


def newest(doc: dict[str, Any]) -> tuple[str, str]:
    """Which of two live documents of one event is the current one: the later scraped."""
    access = doc.get("access_datetime")
    return (access if isinstance(access, str) else "", doc.get("_id") or "")
