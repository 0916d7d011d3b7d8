"""Where an ingest crawl's time goes: ``python3 -m benchmarks.ingest_timeline [--n N] [--sets pdf] [-s NAME=VALUE]``.

Runs ONE ``scrapy crawl ingest`` of a set of ``benchmarks.ingest`` (the same local site and requests)
with its crawl process instrumented, and prints a timeline instead of a rate: the fixed costs inside
the crawl's window (from ``spider_opened`` to ``spider_closed``: the first request, renderer start-up,
the last chains' tail), each extraction process's wall-clock time in its calls beside its CPU (in
its calls, in all, and its page-0 renderers'), then per 100 ms the reactor thread's CPU share, the
extraction processes' busy share, the reactor loop's iterations and the chains started and
completed, then per hop of a chain where it waited (fetch, scheduling, extraction queue and
compute, page-0 render, store). Busy is wall clock: an extraction process runs niced beside the
reactor on two cores and waits for its renderer, so its busy time is about twice its CPU on the
benchmark's host; the CPU columns say what the extraction itself costs.
It measures one run and no baseline: read it beside ``benchmarks.ingest``'s ratios. Run it under the
shared lock: ``flock /tmp/bench.lock python3 -m benchmarks.ingest_timeline --sets pdf``.

``python3 -m benchmarks.ingest_timeline --probe <scrapy arguments>`` is the instrumented crawl itself
(the events go to ``$INGEST_TIMELINE_OUT`` as JSON at exit).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, NamedTuple

# Nothing else at the top: the extraction processes import this module as their ``__mp_main__``.

#: Environment variable naming the probe's JSON output.
OUTPUT_ENV = "INGEST_TIMELINE_OUT"


class TimedAnswer(NamedTuple):
    """The pool's answer (``inner``) with when its call ran, its page-0 render and its CPU; what
    the pool reads of an answer before unpacking it (``unwritable``) is the inner one's."""

    inner: Any
    started: float
    ended: float
    pid: int
    render: float | None
    cpu: Cpu

    @property
    def unwritable(self) -> Any:
        return self.inner.unwritable


def _timed_answer(folder: str, func: Any, *args: Any) -> TimedAnswer:
    """In an extraction process: the pool's answer with when its call ran (CLOCK_MONOTONIC is one
    clock for every process of the machine), how long the page-0 render inside it took, if any,
    and the CPU it and this process used (:class:`Cpu`)."""
    from votersdaily.ingest import process, workers

    if not hasattr(process, "_untimed_warm_page0"):  # once a process: time its renders
        process._untimed_warm_page0 = process.warm_page0  # type: ignore[attr-defined]

        def timed_warm_page0(*call: Any) -> Any:
            started = time.monotonic()
            try:
                return process._untimed_warm_page0(*call)  # type: ignore[attr-defined]
            finally:
                _RENDERS.append(time.monotonic() - started)

        process.warm_page0 = timed_warm_page0  # type: ignore[assignment]
    _RENDERS.clear()
    started, cpu = time.monotonic(), time.thread_time()
    answer = getattr(workers, "_untimed_answer", workers._answer)(folder, func, *args)
    ended, cpu = time.monotonic(), time.thread_time() - cpu
    spent = Cpu(call=cpu, process=time.process_time(), renderers=_renderers_cpu())
    return TimedAnswer(answer, started, ended, os.getpid(), _RENDERS[-1] if _RENDERS else None, spent)


#: In an extraction process: the page-0 renders' durations of the call under way.
_RENDERS: list[float] = []


class Cpu(NamedTuple):
    """An extraction call's CPU seconds (the thread that ran it), and its process's since it
    started and its live page-0 renderers' since they started, when the call ended."""

    call: float
    process: float
    renderers: float


def _renderers_cpu() -> float:
    """The CPU seconds of this process's live warm renderers (Linux's /proc; 0 elsewhere)."""
    from votersdaily.ingest import thumbnail

    renderer = thumbnail._Warm.renderer
    total = 0.0
    for pid in [live.process.pid for live in renderer._live] if renderer is not None else []:
        try:
            with open("/proc/%d/stat" % pid, encoding="ascii") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    return total


def _time_extraction(record: Any) -> None:
    """Record each extraction call: when it was asked for and resumed (``extract``), when it ran in
    its process (``worker``), and the page-0 render inside it."""
    from votersdaily.ingest import workers

    workers._untimed_answer = workers._answer  # type: ignore[attr-defined]
    workers._answer = _timed_answer  # type: ignore[assignment]
    unpack = workers._unpack

    def timed_unpack(answer: Any) -> Any:
        inner, started, ended, pid, render, cpu = answer
        record("worker", w0=started, w1=ended, pid=pid, c=cpu.call, pc=cpu.process, rc=cpu.renderers)
        if render is not None:
            record("page0 (extraction process)", t0=time.monotonic() - render)
        return unpack(inner)

    workers._unpack = timed_unpack
    run = workers.ExtractPool.run

    async def timed_run(self: Any, func: Any, *args: Any) -> Any:
        url = args[1] if len(args) > 1 and isinstance(args[1], str) else None
        started = time.monotonic()
        try:
            return await run(self, func, *args)
        finally:
            record("extract", f=func.__name__, url=url, t0=started)

    workers.ExtractPool.run = timed_run  # type: ignore[method-assign]


def probe() -> None:
    """Scrapy's command line with the crawl's events recorded (monotonic time, reactor thread CPU)."""
    import asyncio.base_events
    import atexit
    import json

    from pydispatch import dispatcher
    from scrapy import signals
    from scrapy.cmdline import execute

    from votersdaily.ingest import persist, spider

    events: list[dict[str, Any]] = []
    iterations: list[float] = []

    def record(kind: str, **fields: Any) -> None:
        events.append(dict(fields, k=kind, t=time.monotonic(), tt=time.thread_time()))

    _time_extraction(record)
    page0 = spider.IngestSpider._page0

    async def timed_page0(self: Any, *args: Any) -> Any:
        started = time.monotonic()
        try:
            return await page0(self, *args)
        finally:
            record("page0", t0=started)

    spider.IngestSpider._page0 = timed_page0  # type: ignore[method-assign]
    process_item = persist.IngestStorePipeline.process_item

    async def timed_process_item(self: Any, item: Any) -> Any:
        started = time.monotonic()
        try:
            return await process_item(self, item)
        finally:
            record("persist", url=item["result"]["request"]["base_url"], t0=started)

    persist.IngestStorePipeline.process_item = timed_process_item  # type: ignore[method-assign]
    parse_hop = spider.IngestSpider.parse_hop

    async def timed_parse_hop(self: Any, response: Any) -> Any:
        record("parse", url=response.url)
        async for output in parse_hop(self, response):
            yield output

    spider.IngestSpider.parse_hop = timed_parse_hop  # type: ignore[method-assign]
    run_once = asyncio.base_events.BaseEventLoop._run_once  # type: ignore[attr-defined]

    def counted_run_once(self: Any) -> Any:
        iterations.append(time.monotonic())
        return run_once(self)

    asyncio.base_events.BaseEventLoop._run_once = counted_run_once  # type: ignore[attr-defined]

    def on(signal: object, kind: str, fields: Any = None) -> None:
        def receiver(**kwargs: Any) -> None:
            record(kind, **(fields(kwargs) if fields else {}))

        dispatcher.connect(receiver, signal=signal, sender=dispatcher.Any, weak=False)

    on(signals.spider_opened, "opened")
    on(signals.spider_closed, "closed")
    on(signals.request_reached_downloader, "reached", lambda kw: {"url": kw["request"].url})
    on(signals.response_received, "response", lambda kw: {"url": kw["request"].url})
    on(signals.item_scraped, "scraped", lambda kw: {"url": kw["item"]["result"]["request"]["base_url"]})

    def write() -> None:
        with open(os.environ[OUTPUT_ENV], "w", encoding="utf-8") as out:
            json.dump({"events": events, "iterations": iterations}, out)

    atexit.register(write)
    sys.argv[0] = "scrapy"
    execute()


def main() -> int:
    if sys.argv[1:2] == ["--probe"]:
        del sys.argv[1]
        probe()
        return 0
    import argparse
    import json
    import subprocess
    import tempfile
    from pathlib import Path
    from urllib.parse import urlsplit

    from benchmarks.ingest import adopt_orphans, build, elapsed, reap_orphans, recorded_pdf
    from tests.support.services import REPO, LocalSite

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200, help="HTML articles (and as many PDF chains)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--sets", default="pdf", help="which set to run (html or pdf)")
    parser.add_argument("-s", "--ingest-setting", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()
    pdf = recorded_pdf()
    print("load average before: %.2f %.2f %.2f (%d CPUs)" % (*os.getloadavg(), os.cpu_count() or 0))
    adopt_orphans()
    site = LocalSite()
    site.server.RequestHandlerClass.disable_nagle_algorithm = True  # as benchmarks.ingest
    site.server.socket.listen(1024)
    site.start()
    try:
        requests = build(site, args.n, pdf)[args.sets][0]
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            (work / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in requests))
            settings = [a for setting in args.ingest_setting for a in ("-s", setting)]
            done = subprocess.run(
                [
                    *(sys.executable, "-m", "benchmarks.ingest_timeline", "--probe", "crawl", "ingest"),
                    *("-a", "requests=%s" % (work / "requests.jsonl")),
                    *("-s", "INGEST_PRIVATE_HOSTS=%s" % urlsplit(requests[0]["base_url"]).netloc),
                    *("-s", "INGEST_BLOB_DIR=%s" % (work / "blobs"), "-s", "LOG_LEVEL=INFO"),
                    *("-s", "INGEST_TEIXML_FEED=%s" % (work / "feed.jsonl")),
                    *("-s", "CONCURRENT_REQUESTS=%d" % args.concurrency),
                    *("-s", "CONCURRENT_REQUESTS_PER_DOMAIN=%d" % args.concurrency),
                    *settings,
                ],
                cwd=REPO,
                env=dict(
                    os.environ,
                    PYTHONPATH=str(REPO),
                    SCRAPY_SETTINGS_MODULE="votersdaily.settings",
                    HOME=tmp,
                    VOTERSDAILY_STORE="sqlite:///%s" % (work / "store.db"),
                    **{OUTPUT_ENV: str(work / "timeline.json")},
                ),
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            reap_orphans()
            if done.returncode:
                raise RuntimeError("crawl failed:\n" + done.stderr[-3000:])
            recorded = json.loads((work / "timeline.json").read_text())
    finally:
        site.stop()
    print("load average after: %.2f; elapsed_time_seconds %.3f" % (os.getloadavg()[0], elapsed(done.stderr)))
    report(recorded["events"], recorded["iterations"])
    return 0


def report(events: list[dict[str, Any]], iterations: list[float]) -> None:
    """Print the timeline of one probed crawl (times in the crawl's window, from spider_opened)."""
    import re
    import statistics

    def of(kind: str) -> list[dict[str, Any]]:
        return [e for e in events if e["k"] == kind]

    opened, closed = of("opened")[0]["t"], of("closed")[0]["t"]
    window = closed - opened
    scraped = sorted(e["t"] - opened for e in of("scraped"))
    print(
        "window %.3f s: first request %.1f ms after spider_opened; last item at %.3f s, %.1f ms before spider_closed"
        % (
            window,
            1000 * (min(e["t"] for e in of("reached")) - opened),
            scraped[-1],
            1000 * (window - scraped[-1]),
        )
    )
    workers = of("worker")
    spent = [0.0, 0.0, 0.0]
    for pid in sorted({e["pid"] for e in workers}):
        mine = [e for e in workers if e["pid"] == pid]
        cpu = (sum(e["c"] for e in mine), max(e["pc"] for e in mine), max(e["rc"] for e in mine))
        spent = [a + b for a, b in zip(spent, cpu, strict=True)]
        print(
            "extraction process %d: %d calls, busy %.3f s (wall clock); CPU %.3f s in its calls, "
            "%.3f s since its start, its page-0 renderers %.3f s"
            % (pid, len(mine), sum(e["w1"] - e["w0"] for e in mine), *cpu)
        )
    ingests = len(of("scraped"))
    if ingests:
        print(
            "extraction CPU per ingest: %.2f ms in calls, %.2f ms in the processes, %.2f ms in their renderers"
            % tuple(1000 * x / ingests for x in spent)
        )
    # each extract event follows its worker event (recorded as the answer is unpacked)
    waits: dict[str, list[tuple[float, float, float]]] = {}
    last = None
    for e in events:
        if e["k"] == "worker":
            last = e
        elif e["k"] == "extract" and last is not None:
            kind = "%s %s" % (e["f"], _hop(e.get("url") or ""))
            waits.setdefault(kind, []).append(
                (last["w0"] - e["t0"], last["w1"] - last["w0"], e["t"] - last["w1"])
            )
            last = None
    for kind, rows in sorted(waits.items()):
        print(
            "%-22s n=%d: submitted -> started median %.1f ms, compute median %.2f ms, done -> resumed median %.1f ms"
            % (kind, len(rows), *(1000 * statistics.median(r[i] for r in rows) for i in range(3)))
        )
    for kind in ("page0", "page0 (extraction process)", "persist"):
        spans = [e["t"] - e["t0"] for e in of(kind)]
        if spans:
            print(
                "%-22s n=%d: median %.1f ms, mean %.1f ms"
                % (kind, len(spans), 1000 * statistics.median(spans), 1000 * statistics.mean(spans))
            )
    reactor = sorted((e["t"], e["tt"]) for e in events)
    print(
        "per 100 ms: reactor CPU % / extraction busy % (of all processes) / loop iterations / chains started / completed"
    )
    columns = []
    starts = [e["t"] - opened for e in of("reached") if _hop(e["url"]) in ("start", "html")]
    for b in range(int(window * 10) + 1):
        lo, hi = opened + b / 10, opened + (b + 1) / 10
        inside = [x for x in reactor if lo <= x[0] < hi]
        share = (
            (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])
            if len(inside) > 1 and inside[-1][0] > inside[0][0]
            else 0.0
        )
        busy = (
            sum(max(0.0, min(e["w1"], hi) - max(e["w0"], lo)) for e in workers)
            / 0.1
            / max(len({e["pid"] for e in workers}), 1)
        )
        columns.append(
            "%d:%.0f/%.0f/%d/%d/%d"
            % (
                b,
                100 * share,
                100 * busy,
                sum(lo <= x < hi for x in iterations),
                sum(b / 10 <= x < (b + 1) / 10 for x in starts),
                sum(b / 10 <= x < (b + 1) / 10 for x in scraped),
            )
        )
    print("  " + " ".join(columns))
    chains: dict[str, dict[str, float]] = {}
    for e in events:
        url = e.get("url")
        match = re.search(r"/(doi|land|pdf|art)/(\d+)", url or "")
        if match and e["k"] in ("reached", "response", "parse", "extract", "persist", "scraped"):
            chain = chains.setdefault(match.group(2), {})
            key = "%s:%s" % (e["k"], _hop(url))
            chain.setdefault(key, e["t"])
            if "t0" in e:
                chain.setdefault(key + ".start", e["t0"])
    steps = [
        ("fetch", "reached:%s", "response:%s"),
        ("response -> callback", "response:%s", "parse:%s"),
        ("extraction", "extract:%s.start", "extract:%s"),
    ]
    for hop in ("start", "landing", "pdf", "html"):
        for name, a, b in steps:
            spans = [c[b % hop] - c[a % hop] for c in chains.values() if a % hop in c and b % hop in c]
            if spans:
                print(
                    "%-8s %-22s n=%d median %.1f ms, max %.1f ms"
                    % (hop, name, len(spans), 1000 * statistics.median(spans), 1000 * max(spans))
                )
    latency = [
        c["scraped:%s" % first] - c["reached:%s" % first]
        for c in chains.values()
        for first in ("start", "html")
        if "scraped:%s" % first in c and "reached:%s" % first in c
    ]
    if latency:
        print(
            "chain, first request to item: median %.3f s, max %.3f s"
            % (statistics.median(latency), max(latency))
        )


def _hop(url: str) -> str:
    """Which hop of a benchmark chain a URL is (its redirect, landing page, PDF; an article)."""
    for part, name in (("/doi/", "start"), ("/land/", "landing"), ("/pdf/", "pdf"), ("/art/", "html")):
        if part in url:
            return name
    return "other"


if __name__ == "__main__":
    sys.exit(main())
