"""Recurring schedules on scrapyd (which has none): each spider at its declared frequency.

One pass looks at every scheduled spider: if scrapyd still has a pending or running job of it, the
spider is skipped; if its frequency has elapsed since it was last scheduled, a job is scheduled.
State lives in the store (database ``vd_scheduler``: one ``state:<spider>`` document per spider,
and ``state:*`` for scrapyd itself), so neither a scheduler restart nor a scrapyd restart loses it:
jobs scrapyd no longer knows (it was restarted) count as ended, and a running job the state does
not know (the scheduler lost its state) is found by spider name in ``listjobs.json``.

Every decision is logged; a decision that differs from the spider's last one (scheduled, now
running, scrapyd unavailable, failed) is also a document of its own, and at most
``VOTERSDAILY_SCHEDULER_DECISIONS`` of those are kept (the oldest go first): a scheduler that passes
every minute writes only when something changes. A scrapyd that answers without credentials gets no
jobs unless the operator allows it (``allow_open``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from votersdaily.clock import iso_utc, now_utc
from votersdaily.defaults import DEFAULTS
from votersdaily.store.base import Store, StoreError
from votersdaily.store.upsert import upsert

from .scrapyd import Scrapyd, ScrapydError

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from .scrapyd import Jobs

logger = logging.getLogger(__name__)

SCHEDULER_DB = "vd_scheduler"

SCHEDULED = "scheduled"
RUNNING = "skipped-running"
NOT_DUE = "not-due"
UNAVAILABLE = "scrapyd-unavailable"
OPEN = "scrapyd-open"
FAILED = "failed"
#: The state document of scrapyd itself (its decisions are about no one spider).
EVERY_SPIDER = "*"


@dataclass(frozen=True)
class Plan:
    spider: str
    hours: float
    args: dict[str, Any]
    settings: dict[str, Any]


def spider_frequencies(settings: BaseSettings) -> dict[str, float]:
    """Hours between runs per spider: ``frequency_hours`` of the spider class, overridden (or given,
    for spiders without one, such as ingest and laundromat) by VOTERSDAILY_SCHEDULE_HOURS."""
    from scrapy.spiderloader import SpiderLoader

    loader = SpiderLoader.from_settings(settings)
    hours = {}
    for name in loader.list():
        value = getattr(loader.load(name), "frequency_hours", None)
        if value:
            hours[name] = float(value)
    for name, value in (settings.getdict("VOTERSDAILY_SCHEDULE_HOURS") or {}).items():
        if value:
            hours[name] = float(value)
        else:
            hours.pop(name, None)
    return hours


def _parse(value: str | None) -> datetime | None:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC) if value else None


class RecurringScheduler:
    #: The decisions of the last pass that differ from their spider's previous one.
    changed: list[dict[str, Any]]

    def __init__(
        self,
        scrapyd: Scrapyd,
        store: Store,
        plans: list[Plan],
        now: Callable[[], datetime] = now_utc,
        allow_open: bool = False,
        keep: int = DEFAULTS["VOTERSDAILY_SCHEDULER_DECISIONS"],
    ) -> None:
        self.scrapyd = scrapyd
        self.store = store
        self.plans = plans
        self.now = now
        self.allow_open = allow_open
        self.keep = keep
        self.changed = []
        store.ensure_db(SCHEDULER_DB)

    def state(self, spider: str) -> dict[str, Any]:
        return self.store.get(SCHEDULER_DB, "state:" + spider) or {"_id": "state:" + spider, "spider": spider}

    def run_once(self) -> list[dict[str, Any]]:
        """One pass over every spider: the decisions taken. Those that changed are logged, stored,
        and listed in :attr:`changed`."""
        now = self.now()
        self.changed = []
        refused = self._refusal(now)
        if refused is not None:
            return [refused]
        try:
            jobs = self.scrapyd.jobs()
            deployed = set(self.scrapyd.spiders())
        except ScrapydError as exc:
            down = self._decision(now, EVERY_SPIDER, UNAVAILABLE, reason=str(exc))
            self._about_scrapyd(down)
            return [down]
        self._about_scrapyd(None)
        taken = []
        for plan in self.plans:
            state = self.state(plan.spider)
            taken.append((self._decide(plan, state, jobs, deployed, now), state))
        self._keep(taken)
        return [decision for decision, _ in taken]

    def _refusal(self, now: datetime) -> dict[str, Any] | None:
        """A scrapyd open to anyone gets no jobs, unless ``allow_open``: then a warning each pass."""
        if not self.scrapyd.answers_without_credentials():
            return None
        why = (
            "scrapyd %s answers without credentials: any local process can upload an egg and run "
            "code with this node's store and Redis passwords" % self.scrapyd.url
        )
        if self.allow_open:
            logger.warning("scheduler: %s (allowed by --allow-open-scrapyd)", why)
            return None
        refused = self._decision(
            now,
            EVERY_SPIDER,
            OPEN,
            reason="%s; set username and password in its scrapyd.conf (docs/operations.md), "
            "or pass --allow-open-scrapyd" % why,
        )
        self._about_scrapyd(refused)
        return refused

    def _about_scrapyd(self, decision: dict[str, Any] | None) -> None:
        """Keep a decision about scrapyd itself; None: it answered as it should (after an outage,
        its state says so once)."""
        self._keep([(decision or {"decision": "ok", "jobid": None, "reason": ""}, self.state(EVERY_SPIDER))])

    def _keep(self, taken: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        """Each decision that differs from its spider's last one is logged and stored with the
        spider's state (not-due ones only in the state); unchanged states are not rewritten; the
        oldest decisions beyond ``keep`` are dropped."""
        states, changed = [], []
        for decision, state in taken:
            last = {k: decision.get(k) for k in ("decision", "jobid", "reason")}
            if state.get("last") == last:
                logger.debug(
                    "scheduler: %s %s %s", decision.get("spider"), decision["decision"], decision["reason"]
                )
                continue
            state.pop("_rev", None)
            state["last"] = last
            states.append(state)
            if "_id" in decision:  # scrapyd answering again is a state, not a decision
                level = logging.ERROR if decision["decision"] in (UNAVAILABLE, OPEN, FAILED) else logging.INFO
                logger.log(
                    level, "scheduler: %s %s %s", decision["spider"], decision["decision"], decision["reason"]
                )
                self.changed.append(decision)
                if decision["decision"] != NOT_DUE:
                    changed.append(decision)
        if states:
            upsert(self.store, SCHEDULER_DB, states + changed)
        if changed and self.store.count(SCHEDULER_DB) > self.keep + len(self.plans) + 1:
            self._prune()

    def _prune(self) -> None:
        kept = sorted(
            (doc["_id"], doc["_rev"])
            for doc in self.store.iter_docs(SCHEDULER_DB)
            if doc.get("type") == "decision"
        )
        old = kept[: max(0, len(kept) - self.keep)]
        if old:
            self.store.bulk_docs(SCHEDULER_DB, [{"_id": i, "_rev": r, "_deleted": True} for i, r in old])

    def _decide(
        self, plan: Plan, state: dict[str, Any], jobs: Jobs, deployed: set[str], now: datetime
    ) -> dict[str, Any]:
        spider = plan.spider
        if spider not in deployed:
            return self._decision(now, spider, FAILED, reason="not deployed on %s" % self.scrapyd.url)
        active = [job for job in jobs.active() if job.get("spider") == spider]
        if active:
            # Also recovers a job the state does not know about (state lost, or started by hand).
            job = next((j for j in active if j.get("id") == state.get("jobid")), active[0])
            return self._decision(
                now,
                spider,
                RUNNING,
                jobid=job.get("id"),
                reason="job %s is %s" % (job.get("id"), jobs.state_of(job.get("id"))),
            )
        last = _parse(state.get("last_scheduled"))
        if last is not None and now - last < timedelta(hours=plan.hours):
            return self._decision(
                now, spider, NOT_DUE, reason="next run after %s" % iso_utc(last + timedelta(hours=plan.hours))
            )
        try:
            jobid = self.scrapyd.schedule(spider, settings=plan.settings, **plan.args)
        except ScrapydError as exc:
            return self._decision(now, spider, FAILED, reason=str(exc))
        previous = state.get("jobid")
        state.update(jobid=jobid, last_scheduled=iso_utc(now), hours=plan.hours)
        reason = (
            "first run"
            if last is None
            else "%.2f h since the last run" % ((now - last).total_seconds() / 3600)
        )
        if previous and jobs.state_of(previous) is None:
            reason += "; previous job %s unknown to scrapyd (restarted?)" % previous
        return self._decision(now, spider, SCHEDULED, jobid=jobid, reason=reason)

    @staticmethod
    def _decision(
        now: datetime, spider: str, decision: str, jobid: str | None = None, reason: str = ""
    ) -> dict[str, Any]:
        stamp = iso_utc(now)
        return {
            "_id": "decision:%s-%s-%s-%d" % (stamp, spider, decision, time.monotonic_ns() % 10**9),
            "type": "decision",
            "datetime": stamp,
            "spider": spider,
            "decision": decision,
            "jobid": jobid,
            "reason": reason,
        }

    def run_forever(
        self,
        interval: float,
        report: Callable[[dict[str, Any]], None] = lambda decision: None,
        stop: threading.Event | None = None,
    ) -> None:
        """A pass every ``interval`` seconds until ``stop`` is set; ``report`` is called with each
        decision that changed."""
        stop = stop or threading.Event()
        while not stop.is_set():
            try:
                self.run_once()
                for decision in self.changed:
                    report(decision)
            except (StoreError, ScrapydError) as exc:
                # The store (or scrapyd) is down for this pass: the next pass tries again.
                logger.error("scheduler pass failed: %s", exc)
            stop.wait(interval)
