"""Recurring schedules on scrapyd (which has none): each spider at its declared frequency.

One pass looks at every scheduled spider: if scrapyd still has a pending or running job of it, the
spider is skipped; if its frequency has elapsed since it was last scheduled, a job is scheduled.
State lives in the store (database ``vd_scheduler``: one ``state:<spider>`` document per spider),
so neither a scheduler restart nor a scrapyd restart loses it: jobs scrapyd no longer knows (it was
restarted) count as ended, and a running job the state does not know (the scheduler lost its
state) is found by spider name in ``listjobs.json``. Every decision that acts or refuses to act
(scheduled, skipped because running, scrapyd unavailable, failed) is a document of its own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from votersdaily.clock import iso_utc, now_utc
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
FAILED = "failed"


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
    def __init__(
        self, scrapyd: Scrapyd, store: Store, plans: list[Plan], now: Callable[[], datetime] = now_utc
    ) -> None:
        self.scrapyd = scrapyd
        self.store = store
        self.plans = plans
        self.now = now
        store.ensure_db(SCHEDULER_DB)

    def state(self, spider: str) -> dict[str, Any]:
        return self.store.get(SCHEDULER_DB, "state:" + spider) or {"_id": "state:" + spider, "spider": spider}

    def run_once(self) -> list[dict[str, Any]]:
        """One pass over every spider; the decisions taken."""
        now = self.now()
        try:
            jobs = self.scrapyd.jobs()
            deployed = set(self.scrapyd.spiders())
        except ScrapydError as exc:
            decision = self._decision(now, "*", UNAVAILABLE, reason=str(exc))
            upsert(self.store, SCHEDULER_DB, [decision])
            logger.error("scheduler: %s", exc)
            return [decision]
        decisions, states = [], []
        for plan in self.plans:
            state = self.state(plan.spider)
            decision = self._decide(plan, state, jobs, deployed, now)
            decisions.append(decision)
            state.pop("_rev", None)
            state["last_checked"] = iso_utc(now)
            state["last_decision"] = decision["decision"]
            states.append(state)
        upsert(self.store, SCHEDULER_DB, states + [d for d in decisions if d["decision"] != NOT_DUE])
        return decisions

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
        logger.info("scheduler: %s %s %s", spider, decision, reason)
        return {
            "_id": "decision:%s-%s-%s-%d" % (stamp, spider, decision, time.monotonic_ns() % 10**9),
            "type": "decision",
            "datetime": stamp,
            "spider": spider,
            "decision": decision,
            "jobid": jobid,
            "reason": reason,
        }

    def run_forever(self, interval: float) -> None:
        while True:
            try:
                self.run_once()
            except (StoreError, ScrapydError) as exc:
                # The store (or scrapyd) is down for this pass: the next pass tries again.
                logger.error("scheduler pass failed: %s", exc)
            time.sleep(interval)
