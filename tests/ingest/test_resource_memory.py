"""Memory per page is bounded: a real article page (the PLOS ONE recording) with 40 large
sub-resources added (a derived variant: only the ``<img>`` tags are ours, and the 8 MiB images are
generated, as hostile sizes may be) is ingested with the crawl's peak RSS (the largest of the crawl
process and its extraction processes) close to that of the same page with 40 tiny images, and every
sub-resource's hashes, size and mimetype right. The code before the streaming hashes held every body
of the page at once and then pickled them all to an extraction process: 40 x 8 MiB twice over."""

from __future__ import annotations

import hashlib
import random
import sys

import pytest

from tests.ingest.conftest import PNG, read_results, scholarly, write_requests
from tests.support.services import run_cli

pytestmark = pytest.mark.slow  # a crawl subprocess measured for its peak memory

N_BIG = 40
BIG = 8 * 1024 * 1024
MIB = 1024 * 1024
#: The budgets of this test: a worker holds at most 64 MiB of sub-resource bodies at once.
SETTINGS = (
    "INGEST_EXTRACT_PROCESSES=1",
    "INGEST_MAX_RESOURCE_BYTES=%d" % (16 * MIB),
    "INGEST_RESOURCE_BYTES_PER_PAGE=%d" % (32 * MIB),
    "INGEST_RESOURCE_BYTES_PER_WORKER=%d" % (64 * MIB),
)
#: Runs ``sys.argv[1:]`` and prints the peak RSS (KiB) of the largest process of its tree.
PEAK_RSS = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    "sys.exit(code)\n"
)


def _page(site, path: str, images: list[str]) -> str:
    html = scholarly("plos_one_article.html").read_bytes()
    tags = "".join('<img src="%s">' % src for src in images).encode()
    assert b"</body>" in html
    return site.route(
        path, html.replace(b"</body>", tags + b"</body>"), content_type="text/html; charset=utf-8"
    )


def _ingest_peak_rss(url: str, tmp_path, name: str) -> tuple[int, dict]:
    store = "sqlite:///%s" % (tmp_path / ("%s.db" % name))
    requests = write_requests(tmp_path / ("%s.jsonl" % name), [{"base_url": url, "ingest_type": "html"}])
    args = [sys.executable, "-c", PEAK_RSS, sys.executable, "-m", "scrapy", "crawl", "ingest"]
    args += ["-a", "requests=%s" % requests, "-s", "LOG_LEVEL=INFO"]
    for setting in (
        *SETTINGS,
        "INGEST_ALLOW_PRIVATE=True",
        "INGEST_ALLOWED_HOSTS=127.0.0.1",
        "INGEST_BLOB_DIR=%s" % (tmp_path / name / "blobs"),
        "INGEST_TEIXML_FEED=%s" % (tmp_path / name / "feed.jsonl"),
    ):
        args += ["-s", setting]
    proc = run_cli(args, store)
    assert proc.returncode == 0, proc.stderr[-4000:]
    (result,) = read_results(store).values()
    return int(proc.stdout.split()[-1]) * 1024, result


def test_a_page_of_large_sub_resources_stays_within_the_memory_budgets(site, tmp_path):
    bodies = [PNG + random.Random(i).randbytes(BIG) for i in range(4)]
    for i in range(N_BIG):
        site.route("/big/%d.png" % i, bodies[i % 4], content_type="image/png")
        site.route("/small/%d.png" % i, PNG, content_type="image/png")
    # one stylesheet sent gzip-encoded: its hashes are of the decoded bytes, as Scrapy hands them over
    css = scholarly("plos_one_article.html").read_bytes()[:20000]
    site.route("/small/style.css", css, content_type="text/css", gzip=True)
    light = _page(site, "/light", ["/small/%d.png" % i for i in range(N_BIG)] + ["/small/style.css"])
    heavy = _page(site, "/heavy", ["/big/%d.png" % i for i in range(N_BIG)])

    light_rss, light_result = _ingest_peak_rss(light, tmp_path, "light")
    heavy_rss, heavy_result = _ingest_peak_rss(heavy, tmp_path, "heavy")

    for result in (light_result, heavy_result):
        assert result["status"] == "success", result.get("error_message")
    fetched = {r["url"]: r for r in heavy_result["html_resources"]}
    for i in range(N_BIG):
        body = bodies[i % 4]
        record = fetched[site.url + "/big/%d.png" % i]
        assert (record["status_code"], record["size"], record["mimetype"]) == (200, len(body), "image/png")
        assert record["sha1hex"] == hashlib.sha1(body).hexdigest()
        assert record["sha256hex"] == hashlib.sha256(body).hexdigest()
    small = {r["url"]: r for r in light_result["html_resources"]}
    assert small[site.url + "/small/0.png"]["sha1hex"] == hashlib.sha1(PNG).hexdigest()
    style = small[site.url + "/small/style.css"]
    assert (style["sha1hex"], style["size"]) == (hashlib.sha1(css).hexdigest(), len(css))
    # 320 MiB of sub-resources; a worker may hold 64 MiB of them (plus Scrapy's copy of the one
    # being finished). Holding them all, as before, is 320 MiB more, and pickling them 320 MiB again.
    extra = heavy_rss - light_rss
    assert extra < 160 * MIB, "peak RSS %d MiB with large sub-resources vs %d MiB with tiny ones" % (
        heavy_rss // MIB,
        light_rss // MIB,
    )
