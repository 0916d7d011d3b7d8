"""Ingest throughput: ``python3 -m benchmarks.ingest [--n N] [--repeat R]``.

Serves N HTML articles (5-10 sub-resources each) and N redirect → landing page → PDF chains from a
local server; each chain's PDF is its own file, a variant of one real recording (:func:`pdf_variant`). For each set it runs ``scrapy crawl ingest`` (embedded store, everything stored: results,
file table, html_meta, TEI blobs and feed; trafilatura, pypdf, poppler's text, libmagic, hashes all done) and a bare
Scrapy spider fetching exactly the same URLs, alternating, R times each, and prints complete ingests/s,
resources/s and the ratio to the bare fetch rate. A run only counts if every ingest ended ``success``
with every sub-resource fetched. Traffic goes to 127.0.0.1 only. Run it under the shared lock:
``flock /tmp/bench.lock python3 -m benchmarks.ingest``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from tests.support.services import REPO, LocalSite, shared_dir
from votersdaily.ingest.spider import IngestSpider

#: prctl's option that makes this process the reaper of its orphaned descendants (linux/prctl.h).
PR_SET_CHILD_SUBREAPER = 36

BARE_SPIDER = """
import json, scrapy
class Bare(scrapy.Spider):
    name = "bare"
    custom_settings = {"ITEM_PIPELINES": {}}
    def __init__(self, urls, **kw):
        super().__init__(**kw)
        self.urls = json.load(open(urls))
    async def start(self):
        for url in self.urls:
            yield scrapy.Request(url, dont_filter=True, meta={"dont_redirect": True, "handle_httpstatus_all": True})
    def parse(self, response):
        yield {"url": response.url, "n": len(response.body)}
"""


def article(i: int, n_res: int) -> str:
    head = "".join('<link rel="stylesheet" href="/a%d/s%d.css">' % (i, k) for k in range(n_res // 3))
    head += "".join('<script src="/a%d/j%d.js"></script>' % (i, k) for k in range(n_res // 3))
    imgs = "".join('<img src="/a%d/i%d.png">' % (i, k) for k in range(n_res - 2 * (n_res // 3)))
    paras = "".join("<p>%s.</p>" % " ".join("word%d_%d" % (p, w) for w in range(100)) for p in range(15))
    return (
        '<!DOCTYPE html><html><head><title>Article %d</title><meta name="citation_title" content="Article %d">'
        '<meta name="citation_doi" content="10.5555/bench.%d">%s</head><body><article><h1>Article %d</h1>%s%s'
        "</article></body></html>" % (i, i, i, head, i, paras, imgs)
    )


#: Where the PDF chains' document is read in place (FIXTURES.md there: do not copy it into the project).
RECORDED_PDF = Path("fixtures") / "inplace" / "scholarly" / "dummy.pdf"


def recorded_pdf() -> bytes:
    """The PDF chains' document: sandcrawler's real ``dummy.pdf`` (13,264 bytes, one page), read in
    place from ``../shared``; without it the benchmark ends with one line saying so (it measures
    that document's extraction, not a stand-in's)."""
    path = shared_dir() / RECORDED_PDF
    if not path.is_file():
        sys.exit("%s is absent: the PDF chains serve that real document, read in place" % path)
    return path.read_bytes()


def pdf_variant(pdf: bytes, i: int | None) -> bytes:
    """``pdf`` with its trailer's first file identifier ending in ``i`` (8 hex digits, the same
    length, so no offset moves): a derived variant of the recording, one a chain, so that every
    chain's file is its own (its SHA-1, file-table record, blob and thumbnail), as in a real ingest,
    while each extraction does the same document's work. ``i`` None: ``pdf`` itself."""
    if i is None:
        return pdf
    m = re.search(rb"/ID\s*\[\s*<([0-9A-Fa-f]{16,})>", pdf)
    if m is None:
        raise ValueError("the PDF has no trailer /ID to vary")
    return pdf[: m.end(1) - 8] + b"%08X" % i + pdf[m.end(1) :]


def build(
    site: LocalSite, n: int, pdf: bytes, one_pdf: bool = False
) -> dict[str, tuple[list[dict], list[str], int]]:
    """Routes for both sets; per set (ingest requests, every URL an ingest fetches, sub-resources).
    Every PDF chain serves its own variant of ``pdf`` (:func:`pdf_variant`); ``one_pdf``, the same
    file in every chain (the set of the figures before 28 Nov 2026)."""
    sets = {"html": ([], [], 0), "pdf": ([], [], 0)}
    html_requests, html_urls, pdf_requests, pdf_urls = [], [], [], []
    resources = 0
    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d4944415478da63f8cfc0f01f0005000201c5b0d52a0000000049454e44ae426082"
    )
    for i in range(n):
        n_res = 5 + i % 6
        site.route("/art/%d" % i, article(i, n_res), content_type="text/html")
        html_urls.append(site.url + "/art/%d" % i)
        for k in range(n_res // 3):
            site.route("/a%d/s%d.css" % (i, k), "body{margin:%dpx}" % k, content_type="text/css")
            site.route("/a%d/j%d.js" % (i, k), "var x%d=%d;" % (k, i), content_type="application/javascript")
            html_urls += [site.url + "/a%d/s%d.css" % (i, k), site.url + "/a%d/j%d.js" % (i, k)]
        for k in range(n_res - 2 * (n_res // 3)):
            site.route("/a%d/i%d.png" % (i, k), png, content_type="image/png")
            html_urls.append(site.url + "/a%d/i%d.png" % (i, k))
        resources += n_res
        html_requests.append({"base_url": site.url + "/art/%d" % i, "ingest_type": "html"})
        site.route("/doi/%d" % i, status=302, headers={"Location": "/land/%d" % i})
        site.route(
            "/land/%d" % i,
            '<html><head><meta name="citation_title" content="Paper %d">'
            '<meta name="citation_pdf_url" content="/pdf/%d.pdf"></head><body>x</body></html>' % (i, i),
            content_type="text/html",
        )
        site.route(
            "/pdf/%d.pdf" % i, pdf_variant(pdf, None if one_pdf else i), content_type="application/pdf"
        )
        pdf_urls += [site.url + "/doi/%d" % i, site.url + "/land/%d" % i, site.url + "/pdf/%d.pdf" % i]
        pdf_requests.append({"base_url": site.url + "/doi/%d" % i, "ingest_type": "pdf"})
    sets["html"] = (html_requests, html_urls, resources)
    sets["pdf"] = (pdf_requests, pdf_urls, 0)
    return sets


def adopt_orphans() -> None:
    """Become the child subreaper (Linux prctl): the extraction fork server, which its crawl process
    does not wait for, is reparented to us when the crawl ends, so its CPU (and its workers') is
    counted in the process tree's once :func:`reap_orphans` has waited for it."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def reap_orphans(patience: float = 5.0) -> None:
    """Wait for the descendants a crawl left behind (the fork server ends when its pipe closes)."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.02)


def elapsed(stderr: str) -> float:
    m = re.search(r"'elapsed_time_seconds': ([0-9.]+)", stderr)
    if not m:
        raise RuntimeError("no elapsed time in crawl output:\n" + stderr[-3000:])
    return float(m.group(1))


def stat(stderr: str, name: str) -> int:
    m = re.search(r"'%s': (\d+)" % re.escape(name), stderr)
    return int(m.group(1)) if m else 0


class Runner:
    """Runs the two spiders in subprocesses against the local site; each ingest run gets a fresh store."""

    def __init__(
        self,
        tmp: Path,
        concurrency: int,
        py_spy: str | None,
        cprofile: str | None = None,
        ingest_settings: list[str] | None = None,
    ):
        self.tmp = tmp
        self.ingest_settings = [arg for setting in ingest_settings or [] for arg in ("-s", setting)]
        self.py_spy = py_spy
        self.cprofile = cprofile
        self.common = [
            "-s",
            "LOG_LEVEL=INFO",
            "-s",
            "CONCURRENT_REQUESTS=%d" % concurrency,
            "-s",
            "CONCURRENT_REQUESTS_PER_DOMAIN=%d" % concurrency,
        ]
        self.env = dict(
            os.environ, PYTHONPATH=str(REPO), SCRAPY_SETTINGS_MODULE="votersdaily.settings", HOME=str(tmp)
        )
        (tmp / "bare.py").write_text(BARE_SPIDER)
        self.runs = 0
        self.last_cpu = 0.0
        self.last_load = 0.0
        #: The last ingest crawl's own process CPU in its crawl window (benchmarks/crawl_cpu.py).
        self.last_crawl_cpu: dict[str, float] | None = None

    def _run(self, args: list[str], env: dict) -> str:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run(
            args, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False
        )
        reap_orphans()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode:
            raise RuntimeError("crawl failed:\n" + proc.stderr[-3000:])
        # The whole process tree (the crawl, its extraction and store processes), start-up included,
        # and the load average when it ended: a loaded machine bends the wall clock, not this.
        self.last_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        self.last_load = os.getloadavg()[0]
        return proc.stderr

    def ingest(self, name: str, requests: list[dict], n_resources: int) -> tuple[float, dict]:
        self.runs += 1
        work = self.tmp / ("ingest-%s-%d" % (name, self.runs))
        work.mkdir()
        (work / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in requests))
        spy = (
            [
                shutil.which("py-spy") or "py-spy",
                "record",
                "--threads",
                "--gil",
                "-r",
                "250",
                "-f",
                "raw",
                "-o",
                "%s.%s-%d" % (self.py_spy, name, self.runs),
                "--",
            ]
            if self.py_spy
            else []
        )
        if self.cprofile:  # the reactor thread only: what the crawl process itself spends per ingest
            spy = [sys.executable, "-m", "cProfile", "-o", "%s.%s-%d" % (self.cprofile, name, self.runs)]
        cpu_file = work / "crawl-cpu.json"
        stderr = self._run(
            [
                *spy,
                *([] if self.cprofile else [sys.executable]),
                "-m",
                "benchmarks.crawl_cpu",  # scrapy, with the crawl process's own CPU written to cpu_file
                "crawl",
                "ingest",
                "-a",
                "requests=%s" % (work / "requests.jsonl"),
                "-s",
                # the local site's port only (a bare 127.0.0.1 would open every port of the host)
                "INGEST_PRIVATE_HOSTS=%s" % urlsplit(requests[0]["base_url"]).netloc,
                "-s",
                "INGEST_BLOB_DIR=%s" % (work / "blobs"),
                "-s",
                "INGEST_TEIXML_FEED=%s" % (work / "feed.jsonl"),
                *self.common,
                *self.ingest_settings,
            ],
            dict(
                self.env,
                VOTERSDAILY_STORE="sqlite:///%s" % (work / "store.db"),
                BENCH_CRAWL_CPU=str(cpu_file),
            ),
        )
        self.last_crawl_cpu = json.loads(cpu_file.read_text()) if cpu_file.exists() else None
        statuses = {k: int(v) for k, v in re.findall(r"'ingest/status/([a-z-]+)': (\d+)", stderr)}
        fetched = stat(stderr, "ingest/resources/fetched")
        # The figures only count if every ingest completed: all success, every sub-resource fetched.
        if statuses != {"success": len(requests)} or fetched != n_resources:
            raise RuntimeError(
                "incomplete ingest run: statuses %s, %d/%d resources" % (statuses, fetched, n_resources)
            )
        return elapsed(stderr), statuses

    def bare(self, urls: list[str], tuned: bool = False) -> float:
        """The bare spider with Scrapy's defaults, or ``tuned`` with the CONCURRENT_ITEMS the ingest
        spider sets (it also yields one item per response, and gets the same saving from it)."""
        self.runs += 1
        path = self.tmp / ("urls-%d.json" % self.runs)
        path.write_text(json.dumps(urls))
        stderr = self._run(
            [
                sys.executable,
                "-m",
                "scrapy",
                "runspider",
                str(self.tmp / "bare.py"),
                "-a",
                "urls=%s" % path,
                *self.common,
                *(
                    ["-s", "CONCURRENT_ITEMS=%d" % IngestSpider.custom_settings["CONCURRENT_ITEMS"]]
                    if tuned
                    else []
                ),
            ],
            dict(self.env, VOTERSDAILY_STORE="sqlite:///%s" % (self.tmp / "bare.db")),
        )
        if stat(stderr, "item_scraped_count") != len(urls):
            raise RuntimeError(
                "bare spider fetched %d of %d URLs" % (stat(stderr, "item_scraped_count"), len(urls))
            )
        return elapsed(stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200, help="HTML articles (and as many PDF chains)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument(
        "--repeat", type=int, default=2, help="runs of each spider per set (alternating; best kept)"
    )
    parser.add_argument(
        "--py-spy",
        metavar="OUT",
        help="record each ingest crawl with py-spy (the thread holding the GIL, "
        "i.e. where the crawl process spends CPU) into OUT.<set>-<run> (raw)",
    )
    parser.add_argument(
        "--cprofile", metavar="OUT", help="cProfile each ingest crawl (main thread) into OUT.<set>-<run>"
    )
    parser.add_argument("--sets", default="html,pdf", help="which sets to run (html, pdf)")
    parser.add_argument(
        "--one-pdf",
        action="store_true",
        help="serve the same PDF in every chain (the set before 28 Nov 2026) instead of a variant a chain",
    )
    parser.add_argument(
        "-s",
        "--ingest-setting",
        action="append",
        metavar="NAME=VALUE",
        help="a setting for the ingest crawls only (repeatable), e.g. INGEST_PDF_THUMBNAILS=False",
    )
    args = parser.parse_args()
    pdf = recorded_pdf()
    print("load average before: %.2f %.2f %.2f (%d CPUs)" % (*os.getloadavg(), os.cpu_count() or 0))
    adopt_orphans()
    site = LocalSite()
    # http.server writes headers and body separately: with Nagle on a keep-alive connection every
    # response waits for a delayed ACK (~40 ms). Off, so the server is not what is measured.
    site.server.RequestHandlerClass.disable_nagle_algorithm = True
    # socketserver listens with a backlog of 5: 32 concurrent connects overflow it and the kernel
    # drops SYNs, so fetches stall 1-7 s in SYN retransmits (ListenOverflows in `nstat`). That, not
    # the spider, was the "collapse" at --n 200 in the first version of this benchmark.
    site.server.socket.listen(1024)
    site.start()
    figures = {}
    tree_cpu: dict[str, dict[str, list[tuple[float, float]]]] = {}
    crawl_cpu: dict[str, list[dict[str, float] | None]] = {}
    try:
        sets = build(site, args.n, pdf, args.one_pdf)
        with tempfile.TemporaryDirectory() as tmp:
            runner = Runner(Path(tmp), args.concurrency, args.py_spy, args.cprofile, args.ingest_setting)
            for name, (requests, urls, n_resources) in sets.items():
                if name not in args.sets.split(","):
                    continue
                times: dict[str, list[float]] = {"ingest": [], "bare": [], "tuned": []}
                cpus: dict[str, list[tuple[float, float]]] = {"ingest": [], "bare": [], "tuned": []}
                crawl_cpus: list[dict[str, float] | None] = []
                for _ in range(args.repeat):
                    times["bare"].append(runner.bare(urls))
                    cpus["bare"].append((runner.last_cpu, runner.last_load))
                    times["ingest"].append(runner.ingest(name, requests, n_resources)[0])
                    cpus["ingest"].append((runner.last_cpu, runner.last_load))
                    crawl_cpus.append(runner.last_crawl_cpu)
                    times["tuned"].append(runner.bare(urls, tuned=True))
                    cpus["tuned"].append((runner.last_cpu, runner.last_load))
                figures[name] = times
                tree_cpu[name] = cpus
                crawl_cpu[name] = crawl_cpus
    finally:
        site.stop()
    print(
        "ingest benchmark: %d HTML articles (%d sub-resources) and %d redirect->landing->PDF chains "
        "(%s), concurrency %d; best of %d alternating runs (all runs in brackets)"
        % (
            args.n,
            sets["html"][2],
            args.n,
            "one PDF file in every chain" if args.one_pdf else "a PDF file of its own each",
            args.concurrency,
            args.repeat,
        )
    )
    totals = {"ingest": 0.0, "bare": 0.0, "tuned": 0.0}
    for name, times in figures.items():
        requests, urls, n_resources = sets[name]
        best = {k: min(v) for k, v in times.items()}
        for k in totals:
            totals[k] += best[k]
        runs = {k: "[%s]" % " ".join("%.2f" % t for t in v) for k, v in times.items()}
        extra = ", %.0f resources/s" % (n_resources / best["ingest"]) if n_resources else ""
        print(
            "  %s: ingest %.2f s %s = %.1f complete %s ingests/s%s"
            % (name, best["ingest"], runs["ingest"], len(requests) / best["ingest"], name.upper(), extra)
        )
        for k, label in (
            ("bare", "bare spider, Scrapy defaults"),
            ("tuned", "bare spider, CONCURRENT_ITEMS=4"),
        ):
            print(
                "  %s: %-32s %.2f s %s = %.0f fetches/s of the same %d URLs; ingest/bare ratio %.2f"
                % (name, label, best[k], runs[k], len(urls) / best[k], len(urls), best[k] / best["ingest"])
            )
        for k in ("ingest", "bare", "tuned"):
            print(
                "  %s: %-7s process tree CPU s (start-up included) / load average at its end: %s"
                % (name, k, " ".join("%.1f/%.1f" % pair for pair in tree_cpu[name][k]))
            )
        print(
            "  %s: ingest crawl process CPU s in its crawl window, reactor thread/all its threads"
            " (+ the reactor's wait for a free core): %s"
            % (
                name,
                " ".join(
                    "%.2f/%.2f (+%.2f)" % (c["reactor"], c["process"], c.get("reactor_waited", 0.0))
                    if c
                    else "?"
                    for c in crawl_cpu[name]
                ),
            )
        )
    n_all = sum(len(sets[name][0]) for name in figures)
    print(
        "  all: %.1f ingests/s; ingest URL rate / bare fetch rate: %.2f (Scrapy defaults), %.2f (tuned bare)"
        % (n_all / totals["ingest"], totals["bare"] / totals["ingest"], totals["tuned"] / totals["ingest"])
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
