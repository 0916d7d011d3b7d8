"""The static site: one page per day with events in branch columns, a timeline page per bill and per
Supreme Court case (its events across sources and branches), the feeds, the spider health page.

Pages are plain HTML from Jinja2 templates (autoescaped) with one stylesheet and a few lines of
script for the date picker; every feed linked from the pages is written beside them as .ics and
.json, produced by the same code as ``export``.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytz
from jinja2 import Environment, PackageLoader, select_autoescape

from votersdaily.clock import iso_utc, now_utc
from votersdaily.defaults import DEFAULTS
from votersdaily.plumbing.inputs import meant
from votersdaily.schema import ID_FORMS
from votersdaily.sources.canonical_ids import EVIDENCE, bill_label, bill_url, docket_label, docket_url
from votersdaily.store.base import Store

from .chart import runs_chart
from .export import with_earlier_versions, write_feed
from .health import LABELS, health_report
from .query import EventFilter, iter_events
from .sanitise import FeedReport

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from .ical import VeventCache

HERE = Path(__file__).resolve().parent
#: Columns of a day page, in the order of the original front end; "Other" shows only when used.
COLUMNS = ("Executive", "Judicial", "Legislative")
#: Feed kinds: (name, document key, EventFilter field, heading).
FEED_KINDS = (
    ("branch", "branch", "branch", "Branches"),
    ("entity", "entity", "entity", "Entities"),
    ("parser", "parser_name", "parser", "Spiders"),
    ("committee", "committee_code", "committee", "Committees"),
)

#: A timeline page per id of these keys: (feed kind, document key, folder).
TIMELINE_KINDS = (("bill", "bill_ids", "bills"), ("docket", "dockets", "cases"))


@dataclass(frozen=True)
class SiteConfig:
    timezone: str = DEFAULTS["VOTERSDAILY_SITE_TIMEZONE"]
    runs: int = DEFAULTS["VOTERSDAILY_HEALTH_RUNS"]
    drop_ratio: float = DEFAULTS["VOTERSDAILY_HEALTH_DROP_RATIO"]
    history: int = DEFAULTS["VOTERSDAILY_HEALTH_HISTORY"]

    @classmethod
    def from_settings(
        cls, settings: BaseSettings, timezone: str | None = None, runs: int | None = None
    ) -> SiteConfig:
        # Given empty (``--timezone "$UNSET"``) is no zone, never the setting's without a word.
        zone = settings.get("VOTERSDAILY_SITE_TIMEZONE") if timezone is None else timezone
        if zone not in pytz.all_timezones_set:
            raise ValueError(
                "unknown IANA time zone %r for the site%s" % (zone, meant(zone, pytz.all_timezones))
            )
        return cls(
            timezone=zone,
            runs=runs or settings.getint("VOTERSDAILY_HEALTH_RUNS"),
            drop_ratio=settings.getfloat("VOTERSDAILY_HEALTH_DROP_RATIO"),
            history=settings.getint("VOTERSDAILY_HEALTH_HISTORY"),
        )


@dataclass
class BuildSummary:
    days: int = 0
    feeds: int = 0
    spiders: int = 0
    timelines: int = 0


@dataclass(frozen=True)
class Feed:
    kind: str
    value: str
    path: str  # without extension, relative to the site root
    count: int


@dataclass(frozen=True)
class Timeline:
    """One bill or case: its page (relative to the site root), its label and its page elsewhere."""

    kind: str
    id: str
    label: str
    path: str
    external: str | None

    @classmethod
    def of(cls, kind: str, one: str) -> Timeline:
        folder = next(folder for k, _, folder in TIMELINE_KINDS if k == kind)
        if kind == "bill":
            return cls(kind, one, bill_label(one), "%s/%s.html" % (folder, one), bill_url(one))
        return cls(kind, one, docket_label(one), "%s/%s.html" % (folder, one), docket_url(one))


@dataclass
class DayEvent:
    doc: dict[str, Any]
    day: date
    time: str  # "" for all-day events
    end: str
    iso: str
    #: What tells this event apart from others of the same title that day ("justice SS").
    distinction: str = ""
    #: The bills and cases it names, each with a page of its own.
    timelines: list[Timeline] = field(default_factory=list)

    @property
    def title(self) -> str:
        title = str(self.doc.get("title") or "")
        return "%s (%s)" % (title, self.distinction) if self.distinction else title

    @property
    def tally(self) -> str:
        return vote_tally(self.doc)

    @property
    def sort_key(self) -> tuple[str, str, str]:
        return (self.doc.get("entity") or "", self.doc["datetime"], self.doc.get("title") or "")


@dataclass
class Column:
    branch: str
    events: list[DayEvent] = field(default_factory=list)
    feed: Feed | None = None
    entity_feeds: list[Feed] = field(default_factory=list)

    @property
    def slug(self) -> str:
        return slug(self.branch)


def slug(value: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-") or "unnamed"


def _utc(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def clock_label(local: datetime) -> str:
    return "%d:%02d %s %s" % (
        (local.hour % 12) or 12,
        local.minute,
        "AM" if local.hour < 12 else "PM",
        local.tzname(),
    )


def day_event(doc: dict[str, Any], zone: tzinfo) -> DayEvent:
    """Where an event goes: all-day events on their own date, others on their date in ``zone``."""
    if doc.get("all_day"):
        day = date.fromisoformat(doc["datetime"][:10])
        end = doc.get("end_datetime")
        end_label = (
            "until %s" % date.fromisoformat(end[:10]).strftime("%A, %B %-d, %Y")
            if end and end[:10] > doc["datetime"][:10]
            else ""
        )
        return DayEvent(doc, day, "", end_label, doc["datetime"][:10])
    local = _utc(doc["datetime"]).astimezone(zone)
    end_label = ""
    if doc.get("end_datetime"):
        end_local = _utc(doc["end_datetime"]).astimezone(zone)
        end_label = "until " + clock_label(end_local)
        if end_local.date() != local.date():
            end_label += end_local.strftime(", %B %-d")
    return DayEvent(doc, local.date(), clock_label(local), end_label, doc["datetime"])


LINKABLE_SCHEMES = ("http://", "https://", "file://")
#: Ad hoc keys that alone tell apart events of the same title (one order, each justice's opinion).
DISTINGUISHING_KEYS = ("justice", "party")
#: Senate ``counts`` keys in the order a tally is read.
SENATE_COUNTS = (("yeas", "Yea"), ("nays", "Nay"), ("present", "Present"), ("absent", "Not voting"))
HOUSE_TOTALS = (("yea", "Yea"), ("nay", "Nay"), ("present", "Present"), ("not_voting", "Not voting"))


def vote_tally(doc: dict[str, Any]) -> str:
    """A roll-call vote's result and tally, as the chamber's clerk states them ("Failed · Ayes 205 ·
    Noes 220 · …"); "" for other events. Only integer counts are shown."""
    result = doc.get("vote_result")
    if not isinstance(result, str) or not result:
        return ""
    counts, names = doc.get("vote_totals"), HOUSE_TOTALS
    if not isinstance(counts, dict):
        counts, names = doc.get("counts"), SENATE_COUNTS
    labels = doc.get("vote_labels")
    if not isinstance(labels, dict):
        labels = {}
    parts = [result]
    if isinstance(counts, dict):
        for key, default in names:
            value = counts.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                label = labels.get(key) if isinstance(labels.get(key), str) else default
                parts.append("%s %d" % (label, value))
    return " · ".join(parts)


def distinguish(events: list[DayEvent]) -> None:
    """Events of one day with the same title get what tells them apart (justice, party) in their title."""
    by_title: dict[str, list[DayEvent]] = defaultdict(list)
    for event in events:
        by_title[str(event.doc.get("title") or "")].append(event)
    for same in by_title.values():
        if len(same) < 2:
            continue
        for key in DISTINGUISHING_KEYS:
            values = [e.doc.get(key) for e in same]
            if len({json.dumps(v, sort_keys=True) for v in values}) > 1:
                for event, value in zip(same, values, strict=True):
                    if isinstance(value, str) and value:
                        event.distinction = ", ".join(
                            filter(None, (event.distinction, "%s %s" % (key, value)))
                        )


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("votersdaily.feeds", "templates"),
        autoescape=select_autoescape(("html",)),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # Event documents come from the sources: only web (and replayed file) URLs become links.
    env.tests["linkable"] = lambda url: isinstance(url, str) and url.lower().startswith(LINKABLE_SCHEMES)
    env.filters["longdate"] = lambda d: d.strftime("%A, %B %-d, %Y")
    # "2026-10-02T18:00:00Z" → "2026-10-02 18:00" (the <time> element keeps the full value).
    env.filters["shortutc"] = lambda iso: iso[:16].replace("T", " ") if iso else ""
    env.globals["LABELS"] = LABELS
    env.globals["chart"] = runs_chart
    return env


def ids_of(doc: dict[str, Any], key: str) -> list[str]:
    """The canonical ids a document lists under ``key`` (what is no such id is no page's name)."""
    value = doc.get(key)
    if type(value) is not list:
        return []
    return [one for one in dict.fromkeys(value) if type(one) is str and ID_FORMS[key].fullmatch(one)]


#: An event with its number of earlier versions, as the feeds take it.
Pair = tuple[dict[str, Any], int]


def by_id(events: list[Pair]) -> dict[tuple[str, str], list[Pair]]:
    """(timeline kind, id) → the events that name it, in the order given (one pass)."""
    grouped: dict[tuple[str, str], list[Pair]] = defaultdict(list)
    for pair in events:
        for kind, key, _ in TIMELINE_KINDS:
            for one in ids_of(pair[0], key):
                grouped[(kind, one)].append(pair)
    return grouped


def write_feeds(
    events: list[Pair],
    out: Path,
    generated: str,
    grouped: Mapping[tuple[str, str], list[Pair]] | None = None,
) -> dict[tuple[str, str], Feed]:
    """Every feed: all events, then one per branch, entity, spider and committee, and one per bill
    and case of ``grouped`` (ICS and JSON).

    ``events`` are the live events with their earlier-version counts, read once for the whole site;
    each feed selects from them with the same :class:`EventFilter` as ``export`` (a bill's or case's
    from its group, made in one pass).
    """
    feeds: dict[tuple[str, str], Feed] = {}
    targets: list[tuple[str, str, EventFilter, str, list[Pair] | None]] = [
        ("all", "", EventFilter(), "feeds/all", None)
    ]
    for kind, key, attr, _ in FEED_KINDS:
        values = sorted({doc[key] for doc, _ in events if isinstance(doc.get(key), str) and doc[key]})
        targets += [
            (kind, v, EventFilter(**{attr: v}), "feeds/%s/%s" % (kind, slug(v)), None) for v in values
        ]
    for (kind, one), pairs in sorted((grouped or {}).items()):
        flt = EventFilter(bill=one) if kind == "bill" else EventFilter(docket=one)
        targets.append((kind, one, flt, "feeds/%s/%s" % (kind, one), pairs))
    vevents: VeventCache = {}  # each event is in several feeds: serialise it once
    for kind, value, flt, rel, group in targets:
        selected = group if group is not None else [pair for pair in events if flt.matches(pair[0])]
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".ics"), "wb") as fh:
            write_feed("ics", selected, flt, fh, vevents)
        with open(path.with_suffix(".json"), "wb") as fh:
            write_feed("json", selected, flt, fh, generated=generated)
        feeds[(kind, value)] = Feed(kind, value, rel, len(selected))
    return feeds


def landing_day(days: list[date], today: date) -> date | None:
    """Today when it has events, else the last day before it with events, else the first one."""
    if not days:
        return None
    past = [d for d in days if d <= today]
    return past[-1] if past else days[0]


def build_site(
    store: Store,
    outdir: Path,
    config: SiteConfig = SiteConfig(),
    spiders: Sequence[str] = (),
    report: FeedReport | None = None,
    spooled: Mapping[str, int] | None = None,
) -> BuildSummary:
    """Write the site; stored events that had to be cleaned or left out are listed in ``report``;
    ``spooled``: documents for this store still in the spool, by database (the health page says so:
    their runs are not in the log yet)."""
    report = FeedReport() if report is None else report
    outdir = Path(outdir)
    (outdir / "days").mkdir(parents=True, exist_ok=True)
    static = outdir / "static"
    static.mkdir(exist_ok=True)
    for name in ("style.css", "site.js"):
        shutil.copyfile(HERE / "static" / name, static / name)
    zone = pytz.timezone(config.timezone)
    env = environment()
    summary = BuildSummary()

    # One pass over the by_datetime view (iter_events leaves source_text out: no page needs it).
    pairs = list(with_earlier_versions(store, iter_events(store, report=report), report))
    docs = [doc for doc, _ in pairs]
    generated = now_utc()
    grouped = by_id(pairs)
    feeds = write_feeds(pairs, outdir, iso_utc(generated), grouped)
    summary.feeds = len(feeds)
    by_day: dict[date, list[DayEvent]] = defaultdict(list)
    for doc in docs:
        event = day_event(doc, zone)
        event.timelines = [
            Timeline.of(kind, one) for kind, key, _ in TIMELINE_KINDS for one in ids_of(doc, key)
        ]
        by_day[event.day].append(event)
    days = sorted(by_day)
    (static / "dates.js").write_text(
        "window.VD_DATES = %s;\n" % json.dumps([d.isoformat() for d in days]), encoding="utf-8"
    )
    today = generated.astimezone(zone).date()
    common = {
        "zone": config.timezone,
        "first": days[0] if days else None,
        "last": days[-1] if days else None,
        "generated": generated.strftime("%Y-%m-%d %H:%M UTC"),
        "feeds": feeds,
    }

    def render(template: str, path: Path, root: str, **context: Any) -> None:
        html = env.get_template(template).render(root=root, **common, **context)
        path.write_text(html, encoding="utf-8")

    for i, day in enumerate(days):
        context = day_context(day, by_day[day], feeds)
        context.update(prev=days[i - 1] if i else None, next=days[i + 1] if i + 1 < len(days) else None)
        render("day.html", outdir / "days" / ("%s.html" % day.isoformat()), "../", **context)
        if day == landing_day(days, today):
            render("day.html", outdir / "index.html", "", landing=True, **context)
    if not days:
        render("empty.html", outdir / "index.html", "")
    summary.days = len(days)

    timelines = write_timelines(grouped, outdir, zone, render)
    summary.timelines = len(timelines)
    render("bills.html", outdir / "bills.html", "", timelines=timelines)

    months: dict[str, list[tuple[date, int]]] = defaultdict(list)
    for day in days:
        months[day.strftime("%B %Y")].append((day, len(by_day[day])))
    render("dates.html", outdir / "dates.html", "", months=list(months.items()))
    kinds = [
        (heading, [f for (k, _), f in sorted(feeds.items()) if k == kind])
        for kind, _, _, heading in FEED_KINDS
    ]
    render("feeds.html", outdir / "feeds.html", "", kinds=kinds, all_feed=feeds.get(("all", "")))
    health = health_report(store, list(spiders), config.runs, config.drop_ratio, config.history)
    render(
        "health.html",
        outdir / "health.html",
        "",
        report=health,
        counts={s: sum(1 for h in health if h.status == s) for s in LABELS},
        spooled=dict(spooled or {}),
    )
    summary.spiders = len(health)
    return summary


@dataclass
class Step:
    """One event on a bill's or case's timeline, with where the source named the id."""

    event: DayEvent
    evidence: list[dict[str, Any]]


def write_timelines(
    grouped: Mapping[tuple[str, str], list[Pair]],
    outdir: Path,
    zone: tzinfo,
    render: Callable[..., None],
) -> list[tuple[Timeline, int, list[str]]]:
    """A page per bill and per case: its events in time order, across sources and branches. Returns
    (timeline, event count, sources) of each, for the index page."""
    written = []
    for (kind, one), pairs in sorted(grouped.items()):
        timeline = Timeline.of(kind, one)
        steps = []
        for doc, _ in sorted(pairs, key=lambda pair: pair[0]["datetime"]):
            named = [e for e in doc.get(EVIDENCE) or () if isinstance(e, dict) and e.get("id") == one]
            steps.append(Step(day_event(doc, zone), named))
        sources = sorted({str(doc.get("parser_name")) for doc, _ in pairs})
        names = sorted({doc["case_name"] for doc, _ in pairs if isinstance(doc.get("case_name"), str)})
        path = outdir / timeline.path
        path.parent.mkdir(parents=True, exist_ok=True)
        render("timeline.html", path, "../", timeline=timeline, steps=steps, sources=sources, names=names)
        written.append((timeline, len(steps), sources))
    return written


def day_context(day: date, events: list[DayEvent], feeds: dict[tuple[str, str], Feed]) -> dict[str, Any]:
    distinguish(events)
    columns = {b: Column(b, feed=feeds.get(("branch", b))) for b in COLUMNS}
    for event in sorted(events, key=lambda e: e.sort_key):
        branch = event.doc.get("branch") or "Other"
        columns.setdefault(branch, Column(branch, feed=feeds.get(("branch", branch)))).events.append(event)
    for column in columns.values():
        entities = sorted({entity for e in column.events if (entity := e.doc.get("entity"))})
        column.entity_feeds = [feeds[("entity", e)] for e in entities if ("entity", e) in feeds]
    return {"day": day, "columns": list(columns.values()), "count": len(events)}
