"""Ingest throughput: ``python benchmarks/ingest.py [--n N]``.

Serves N HTML articles (5-10 sub-resources each) and N redirect → landing page → PDF chains from a
local server, runs ``scrapy crawl ingest`` over them (embedded store, everything stored), then a bare
Scrapy spider fetching exactly the same URLs in the same run, and prints ingests/s, resources/s and
the ratio to the bare fetch rate. Traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.services import LocalSite  # noqa: E402

BARE_SPIDER = '''
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
'''


def article(i: int, n_res: int) -> str:
    head = "".join('<link rel="stylesheet" href="/a%d/s%d.css">' % (i, k) for k in range(n_res // 3))
    head += "".join('<script src="/a%d/j%d.js"></script>' % (i, k) for k in range(n_res // 3))
    imgs = "".join('<img src="/a%d/i%d.png">' % (i, k) for k in range(n_res - 2 * (n_res // 3)))
    paras = "".join("<p>%s.</p>" % " ".join("word%d_%d" % (p, w) for w in range(100)) for p in range(15))
    return ('<!DOCTYPE html><html><head><title>Article %d</title><meta name="citation_title" content="Article %d">'
            '<meta name="citation_doi" content="10.5555/bench.%d">%s</head><body><article><h1>Article %d</h1>%s%s'
            '</article></body></html>' % (i, i, i, head, i, paras, imgs))


def build(site: LocalSite, n: int, pdf: bytes) -> tuple[list[dict], list[str], int]:
    requests, urls, resources = [], [], 0
    png = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                        "1f15c4890000000d4944415478da63f8cfc0f01f0005000201c5b0d52a0000000049454e44ae426082")
    for i in range(n):
        n_res = 5 + i % 6
        site.route("/art/%d" % i, article(i, n_res), content_type="text/html")
        urls.append(site.url + "/art/%d" % i)
        for k in range(n_res // 3):
            site.route("/a%d/s%d.css" % (i, k), "body{margin:%dpx}" % k, content_type="text/css")
            site.route("/a%d/j%d.js" % (i, k), "var x%d=%d;" % (k, i), content_type="application/javascript")
            urls += [site.url + "/a%d/s%d.css" % (i, k), site.url + "/a%d/j%d.js" % (i, k)]
        for k in range(n_res - 2 * (n_res // 3)):
            site.route("/a%d/i%d.png" % (i, k), png, content_type="image/png")
            urls.append(site.url + "/a%d/i%d.png" % (i, k))
        resources += n_res
        requests.append({"base_url": site.url + "/art/%d" % i, "ingest_type": "html"})
        site.route("/doi/%d" % i, status=302, headers={"Location": "/land/%d" % i})
        site.route("/land/%d" % i, '<html><head><meta name="citation_title" content="Paper %d">'
                   '<meta name="citation_pdf_url" content="/pdf/%d.pdf"></head><body>x</body></html>' % (i, i),
                   content_type="text/html")
        site.route("/pdf/%d.pdf" % i, pdf, content_type="application/pdf")
        urls += [site.url + "/doi/%d" % i, site.url + "/land/%d" % i, site.url + "/pdf/%d.pdf" % i]
        requests.append({"base_url": site.url + "/doi/%d" % i, "ingest_type": "pdf"})
    return requests, urls, resources


def elapsed(stderr: str) -> float:
    m = re.search(r"'elapsed_time_seconds': ([0-9.]+)", stderr)
    if not m:
        raise RuntimeError("no elapsed time in crawl output:\n" + stderr[-3000:])
    return float(m.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200, help="HTML articles (and as many PDF chains)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--py-spy", metavar="OUT", help="record the ingest crawl with py-spy (all threads) into OUT")
    args = parser.parse_args()
    pdf_path = REPO.parent / "shared" / "fixtures" / "inplace" / "scholarly" / "dummy.pdf"
    pdf = pdf_path.read_bytes() if pdf_path.exists() else b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
    site = LocalSite()
    # http.server writes headers and body separately: with Nagle on a keep-alive connection every
    # response waits for a delayed ACK (~40 ms). Off, so the server is not what is measured.
    site.server.RequestHandlerClass.disable_nagle_algorithm = True
    # socketserver listens with a backlog of 5: 32 concurrent connects overflow it and the kernel
    # drops SYNs, so fetches stall 1-7 s in SYN retransmits (seen as ListenOverflows in nstat).
    site.server.socket.listen(1024)
    site.start()
    try:
        requests, urls, n_resources = build(site, args.n, pdf)
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            (tmp / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in requests))
            (tmp / "urls.json").write_text(json.dumps(urls))
            (tmp / "bare.py").write_text(BARE_SPIDER)
            common = ["-s", "LOG_LEVEL=INFO", "-s", "CONCURRENT_REQUESTS=%d" % args.concurrency,
                      "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=%d" % args.concurrency]
            env = {"VOTERSDAILY_STORE": "sqlite:///%s" % (tmp / "store.db"), "PATH": "/usr/bin:/bin",
                   "PYTHONPATH": str(REPO), "SCRAPY_SETTINGS_MODULE": "votersdaily.settings", "HOME": str(tmp)}
            import os

            env = dict(os.environ, **env)
            spy = [shutil.which("py-spy") or "py-spy", "record", "--threads", "--subprocesses", "-r", "200", "-f", "raw", "-o", args.py_spy,
                   "--"] if args.py_spy else []
            ingest = subprocess.run(
                [*spy, sys.executable, "-m", "scrapy", "crawl", "ingest", "-a", "requests=%s" % (tmp / "requests.jsonl"),
                 "-s", "INGEST_ALLOW_PRIVATE=True", "-s", "INGEST_ALLOWED_HOSTS=127.0.0.1",
                 "-s", "INGEST_BLOB_DIR=%s" % (tmp / "blobs"), "-s", "INGEST_TEIXML_FEED=%s" % (tmp / "feed.jsonl"),
                 *common], cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
            if ingest.returncode:
                print(ingest.stderr[-3000:])
                return 1
            statuses = dict(re.findall(r"'ingest/status/([a-z-]+)': (\d+)", ingest.stderr))
            t_ingest = elapsed(ingest.stderr)
            bare = subprocess.run(
                [sys.executable, "-m", "scrapy", "runspider", str(tmp / "bare.py"), "-a", "urls=%s" % (tmp / "urls.json"),
                 *common], cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
            if bare.returncode:
                print(bare.stderr[-3000:])
                return 1
            t_bare = elapsed(bare.stderr)
    finally:
        site.stop()
    n_ingests = len(requests)
    fetched = len(urls)
    print("ingest benchmark: %d HTML articles (%d sub-resources) + %d landing->PDF chains, concurrency %d"
          % (args.n, n_resources, args.n, args.concurrency))
    print("  statuses: %s" % statuses)
    print("  ingest spider : %.2f s  %.1f ingests/s  (%.1f HTML ingests/s incl. resources, %.1f resources/s)"
          % (t_ingest, n_ingests / t_ingest, args.n / t_ingest, n_resources / t_ingest))
    print("  bare spider   : %.2f s  %.1f fetches/s over the same %d URLs" % (t_bare, fetched / t_bare, fetched))
    print("  ingest URL rate / bare fetch rate: %.2f" % ((fetched / t_ingest) / (fetched / t_bare)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
