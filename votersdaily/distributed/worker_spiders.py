"""Redis-fed workers of the ingest and laundromat spiders (see :mod:`votersdaily.distributed`).

``python -m votersdaily enqueue ingest requests.jsonl`` fills the ``ingest`` queue; ``scrapy crawl
ingest_worker -s REDIS_URL=redis://host:6379/0`` (on as many machines as wanted) works through it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from votersdaily.ingest.spider import IngestSpider
from votersdaily.laundromat.spider import LaundromatSpider

from .redis_worker import WorkerMixin


class IngestWorker(WorkerMixin, IngestSpider):
    name = "ingest_worker"
    queue_name = "ingest"
    #: Every hop goes back to the shared queue, so any worker may fetch it.
    hops_through_scheduler = True

    @classmethod
    def enqueue_arguments(cls, sources: list[str]) -> dict[str, Any]:
        """JSON-lines files are ingest request files (one that is not there is refused as such, not
        taken for a URL); anything else is a URL."""
        files = [s for s in sources if s.endswith((".json", ".jsonl")) and "://" not in s]
        if len(files) > 1:
            raise ValueError("give one ingest requests file at a time")
        args = _urls([s for s in sources if s not in files])
        if files:
            args["requests"] = files[0]
        return args


class LaundromatWorker(WorkerMixin, LaundromatSpider):
    name = "laundromat_worker"
    queue_name = "laundromat"
    # A seed's callback cleans its whole file in LAUNDROMAT_WORKERS processes: a worker holding
    # more seeds than that makes them wait while other workers could run them.
    custom_settings = {**LaundromatSpider.custom_settings, "VOTERSDAILY_REDIS_MAX_LEASES": 4}
    store_outages_waited_out = True  # by the ReliableScheduler: what met the store goes back to the queue

    @classmethod
    def enqueue_arguments(cls, sources: list[str]) -> dict[str, Any]:
        files = [s for s in sources if "://" not in s and Path(s).is_file()]
        args = _urls([s for s in sources if s not in files])
        if len(files) > 1:
            raise ValueError("give one seed list file at a time")
        if files:
            args["seedlist"] = files[0]
        return args


def _urls(urls: list[str]) -> dict[str, Any]:
    return {"url": ",".join(urls)} if urls else {}
