"""End-to-end: ``scrapy crawl laundromat`` in a subprocess against a real local HTTP server, into a real store."""

from __future__ import annotations

import gzip
import itertools
import re
from pathlib import Path

import pyoxigraph as ox
import pytest

from tests.laundromat import sitedata
from votersdaily.laundromat import native
from votersdaily.laundromat.uris import uri_key
from votersdaily.store import open_store

GENID = re.compile(r"<https://lodlaundromat\.org/\.well-known/genid/[0-9a-f]{32}/[^>]+>")


def ok(proc):
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def failed(proc):
    """`scrapy crawl` of a run whose result is a failure (a refused or failed download): exit 1."""
    assert proc.returncode == 1, proc.stderr[-4000:]
    return proc


def documents(store_uri: str, db: str) -> list[dict]:
    store = open_store(store_uri)
    try:
        return list(store.iter_docs(db))
    finally:
        store.close()


def records(store_uri: str) -> dict[str, dict]:
    return {d["_id"]: d for d in documents(store_uri, "ll_seeds")}


def cleaned_statements(out: Path, doc: dict) -> set[str]:
    with gzip.open(out / doc["file"], "rt", encoding="utf-8") as f:
        lines = f.read().split("\n")[:-1]
    assert lines == sorted(set(lines), key=lambda s: s.encode())
    return {GENID.sub("_:", line)[: -len(" .")] for line in lines}


def test_semantic_sitemap_to_cleaned_files(crawl, site, store_uri, tmp_path):
    urls = sitedata.mount(site)
    out = tmp_path / "out"
    first = ok(crawl("laundromat", [urls["sitemap"]], store_uri, "-s", "LAUNDROMAT_OUTPUT_DIR=%s" % out))
    docs = records(store_uri)

    # Seeds: the sitemap, both dumps, the VoID link, and the relative one (registered, never fetched).
    seeds = {d["uri"]: d for d in docs.values() if "uri" in d and "parent" not in d}
    assert set(seeds) == {urls["sitemap"], urls["a"], urls["b"], urls["c"], "relative/dump.nt"}
    for uri, seed in seeds.items():
        assert seed["_id"] == uri_key(uri)
        assert seed["status"] == "added" and seed["added"]
        assert seed["relative"] is (uri == "relative/dump.nt")
    assert seeds["relative/dump.nt"]["processed"] is None
    assert not any("relative" in path for path in site.hits)
    assert seeds[urls["a"]]["interval"] == 7 * 86400 and seeds[urls["a"]]["dataset_label"] == "Dump A"
    assert seeds[urls["c"]]["origin"] == "void:dataDump"

    # Download records: one hop each, content metadata, begin/end.
    downloads = {d["parent"]: d for d in docs.values() if d.get("http")}
    for uri in (urls["sitemap"], urls["a"], urls["b"], urls["c"]):
        rec = downloads[uri_key(uri)]
        assert rec["http"][0]["status"] == 200 and rec["http"][0]["uri"] == uri
        assert rec["http"][0]["version"] == {"major": 1, "minor": 1}
        assert rec["number_of_bytes"] > 0 and rec["timestamp"]["begin"] <= rec["timestamp"]["end"]
        assert site.hits[uri[len(site.url) :]] == 1
    assert downloads[uri_key(urls["sitemap"])]["status"] == "depleted"
    assert downloads[uri_key(urls["a"])]["status"] == "depleted"  # gzip → one entry
    assert downloads[uri_key(urls["b"])]["status"] == "depleted"
    assert downloads[uri_key(urls["c"])]["status"] == "parsed"

    parsed = {d.get("name") or d.get("uri"): d for d in docs.values() if d.get("status") == "parsed"}
    assert set(parsed) == {"a.nt", "x.ttl", "dir/y.ttl", "z.nt", "c.ttl"}
    assert parsed["a.nt"]["format"] == "N-Triples"
    assert parsed["x.ttl"]["format"] == "Turtle" and parsed["dir/y.ttl"]["format"] == "Turtle"
    assert parsed["c.ttl"]["format_content_type"] == "Turtle"
    assert parsed["z.nt"]["depth"] == 3  # b.zip → z.tar.gz → z.tar → z.nt
    assert not any(d.get("status") not in ("added", "depleted", "parsed", "cleaned") for d in docs.values())

    cleaned = {d["dirty"]: d for d in docs.values() if d.get("status") == "cleaned"}
    a = parsed["a.nt"]
    assert a["number_of_statements"] == 5 and a["number_of_duplicates"] == 1 and a["number_of_errors"] == 1
    clean_a = cleaned[a["_id"]]
    assert clean_a["_id"] == a["clean"]
    assert all(d["parent"] == dirty for dirty, d in cleaned.items())  # docs/laundromat.md §2
    assert a["messages"][0]["line"] == 6 and "messages" not in clean_a
    assert cleaned_statements(out, clean_a) == sitedata.expected_graph(
        sitedata.NT_GOOD.format(site=site.url), ox.RdfFormat.N_TRIPLES
    )
    assert cleaned_statements(out, cleaned[parsed["x.ttl"]["_id"]]) == sitedata.expected_graph(
        sitedata.TTL_X, ox.RdfFormat.TURTLE
    )
    assert cleaned_statements(out, cleaned[parsed["z.nt"]["_id"]]) == sitedata.expected_graph(
        sitedata.NT_Z, ox.RdfFormat.N_TRIPLES
    )
    assert cleaned_statements(out, cleaned[parsed["c.ttl"]["_id"]]) == sitedata.expected_graph(
        sitedata.TTL_C, ox.RdfFormat.TURTLE
    )
    for doc in cleaned.values():
        assert (out / doc["file"]).exists()
    # Which cleaned file came from which URL: in the run log, and one log line each.
    store = open_store(store_uri)
    (log,) = [d for d in store.iter_docs("vd_log") if d["parser_name"] == "laundromat"]
    store.close()
    (from_a,) = [c["from"] for c in log["cleaned"] if c["file"] == clean_a["file"]]
    assert from_a == urls["a"] + "/a.nt"  # the gzipped dump's one entry
    assert log["cleaned_count"] == len(log["cleaned"]) >= 4
    assert "cleaned %s from %s" % (out / clean_a["file"], from_a) in first.stderr
    # Which path cleaned them: the checkout's in-place build when it is there, and every document.
    assert log["compiled_path"] == {
        "module": native.location(),
        "documents": log["cleaned_count"] if native.available() else 0,
    }

    # The same crawl again: nothing is stale, nothing is downloaded twice, nothing changes.
    ok(crawl("laundromat", [urls["sitemap"]], store_uri, "-s", "LAUNDROMAT_OUTPUT_DIR=%s" % out))
    assert site.hits["/sitemap.xml"] == 1
    again = records(store_uri)
    assert {k: {x: y for x, y in v.items() if x != "_rev"} for k, v in again.items()} == {
        k: {x: y for x, y in v.items() if x != "_rev"} for k, v in docs.items()
    }


def test_archive_limits_hold_across_the_nested_tree(crawl, site, sqlite_uri, tmp_path):
    """A zip of four gzipped dumps, each 1,120,000 bytes unpacked, under a 3 MiB limit: every layer
    passes alone, the tree does not. The first two dumps are cleaned, the other two refused."""
    content = b"<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .\n" * 20_000
    names = ["p%d.nt.gz" % i for i in range(4)]
    url = site.route(
        "/tree.zip",
        sitedata.zip_of({n: gzip.compress(content) for n in names}),
        content_type="application/zip",
    )
    out = tmp_path / "out"
    ok(
        crawl(
            "laundromat",
            [url],
            sqlite_uri,
            "-s",
            "LAUNDROMAT_OUTPUT_DIR=%s" % out,
            "-s",
            "LAUNDROMAT_MAX_UNPACKED_BYTES=%d" % (3 << 20),
            "-s",
            "LAUNDROMAT_MAX_RATIO=1000000",
        )
    )
    docs = records(sqlite_uri)
    (root,) = [d for d in docs.values() if d.get("archive") == "zip"]
    layers = {d["entry_name"]: d for d in docs.values() if d.get("parent") == root["_id"]}
    assert sorted(layers) == names
    assert [layers[n]["status"] for n in names] == ["depleted", "depleted", "failed", "failed"]
    assert all("unpacked size exceeds %d" % (3 << 20) in layers[n]["error"] for n in names[2:])
    assert all(layers[n]["root"] == root["_id"] for n in names)
    # The root keeps the tree's usage: the zip layer's entries plus two dumps.
    assert root["tree_unpacked_bytes"] == sum(layers[n]["number_of_bytes"] for n in names) + 2 * len(content)
    assert root["tree_entries"] == 4 + 2
    parsed = [d for d in docs.values() if d.get("status") == "parsed"]
    assert len(parsed) == 2 and all(d["number_of_unique_statements"] == 1 for d in parsed)


def test_download_records_keep_every_hop(crawl, site, sqlite_uri, tmp_path):
    """A seed list (``-a seedlist=``) naming a 301 → 200 dump and a 404: the download record has one
    ``http`` entry per hop and the content metadata of the body; the failed one keeps its metadata
    and its error."""
    body = (
        '<http://example.org/r> <http://example.org/p> "caf\u00e9" .\r\n'
        '<http://example.org/r> <http://example.org/q> "2" .\r\n'
    ).encode("utf-8")
    old = site.route("/old.nt", status=301, headers={"Location": "/new.nt", "X-Hop": "first"})
    new = site.route("/new.nt", body, content_type="application/n-triples", headers={"X-Hop": "second"})
    missing = site.route("/missing.nt", "no such dump", status=404, content_type="text/plain")
    seedlist = tmp_path / "seeds.txt"
    seedlist.write_text("# the dumps\n%s\n\n%s\n" % (old, missing), encoding="utf-8")
    out = tmp_path / "out"
    ok(
        crawl(
            "laundromat",
            None,
            sqlite_uri,
            "-a",
            "seedlist=%s" % seedlist,
            "-s",
            "LAUNDROMAT_OUTPUT_DIR=%s" % out,
        )
    )
    docs = records(sqlite_uri)
    assert [site.hits.get(p) for p in ("/old.nt", "/new.nt", "/missing.nt")] == [1, 1, 1]
    seeds = {d["uri"]: d for d in docs.values() if "uri" in d and "parent" not in d}
    assert set(seeds) == {old, missing}
    assert all(s["status"] == "added" and s["processed"] for s in seeds.values())

    (moved,) = [d for d in docs.values() if d.get("parent") == uri_key(old)]
    assert moved["status"] == "parsed" and moved["uri"] == old
    assert [(h["status"], h["uri"]) for h in moved["http"]] == [(301, old), (200, new)]
    assert (
        moved["http"][0]["headers"]["location"] == "/new.nt"
        and moved["http"][0]["headers"]["x-hop"] == "first"
    )
    assert moved["http"][1]["headers"]["content-type"] == "application/n-triples"
    assert moved["http"][1]["headers"]["x-hop"] == "second"
    for h in moved["http"]:
        assert h["version"] == {"major": 1, "minor": 1}
        assert isinstance(h["walltime"], float) and 0 <= h["walltime"] < 60
    assert moved["newline"] == "crlf" and moved["number_of_lines"] == 2
    assert moved["number_of_bytes"] == len(body) and moved["number_of_chars"] == len(body.decode("utf-8"))
    assert moved["number_of_chars"] == moved["number_of_bytes"] - 1  # é is two bytes
    assert moved["timestamp"]["begin"] <= moved["timestamp"]["end"]
    assert moved["base_uri"] == new and moved["number_of_unique_statements"] == 2
    assert docs[moved["clean"]]["parent"] == moved["_id"]

    (failed,) = [d for d in docs.values() if d.get("parent") == uri_key(missing)]
    assert failed["status"] == "failed" and failed["error"] == "HTTP status 404"
    ((status, uri, version, headers),) = [
        (h["status"], h["uri"], h["version"], h["headers"]) for h in failed["http"]
    ]
    assert (status, uri, version) == (404, missing, {"major": 1, "minor": 1})
    assert headers["content-type"] == "text/plain"
    assert failed["body_excerpt"] == {"label": "body excerpt (first 12 of 12 bytes)", "text": "no such dump"}
    assert failed["timestamp"]["begin"] <= failed["timestamp"]["end"]
    assert "file" not in failed and not [d for d in docs.values() if d.get("parent") == failed["_id"]]


def run_logs(store_uri: str) -> list[dict]:
    return sorted(documents(store_uri, "vd_log"), key=lambda d: d["access_datetime"])


def test_a_seed_list_that_cannot_be_read_is_refused_before_the_run(crawl, sqlite_uri, tmp_path):
    """``-a seedlist=`` naming a file that is not there (or a folder) used to end ``success``, exit 0,
    with nothing registered (the operator's whole input lost), then a failed run. It is refused
    before the run, as the ingest's ``-a requests=`` file is: one line naming the argument, the file
    and what is wrong, exit 2, no run log."""
    out = tmp_path / "out"
    for given, problem in ((tmp_path / "seeds.txt", "does not exist"), (tmp_path, "is a folder, not a file")):
        proc = crawl(
            "laundromat",
            None,
            sqlite_uri,
            "-a",
            "seedlist=%s" % given,
            "-s",
            "LAUNDROMAT_OUTPUT_DIR=%s" % out,
        )
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert proc.stderr.splitlines()[-1] == "scrapy crawl: laundromat: -a seedlist=%s: %s %s" % (
            given,
            given,
            problem,
        )
        assert not Path(sqlite_uri.removeprefix("sqlite:///")).exists()  # no store: no run log
    assert not out.exists()


def test_seeds_none_of_which_can_be_fetched_fail_the_run(crawl, sqlite_uri, tmp_path):
    """Every seed of the seed list is refused (no http(s) or file: URL): the run fails (exit 1), as
    the ingest's does when no request is usable, instead of a ``success`` that did nothing. (Such a
    seed given as ``-a url=`` is refused before the run: tests/cli/test_typos.py.)"""
    seedlist = tmp_path / "seeds.txt"
    seedlist.write_text("ftp://example.org/dump.nt\ngopher://example.org/dump.nt\n", encoding="utf-8")
    out = tmp_path / "out"
    failed(
        crawl(
            "laundromat",
            None,
            sqlite_uri,
            "-a",
            "seedlist=%s" % seedlist,
            "-s",
            "LAUNDROMAT_OUTPUT_DIR=%s" % out,
        )
    )
    log = run_logs(sqlite_uri)[-1]
    assert log["result"] == "BadSeed" and log["error_count"] == 2, log


def index_tree(site, levels: int) -> str:
    """Sitemap indexes ``/sm/r``, ``/sm/ra``, ``/sm/rb``, ``/sm/raa`` …, each naming the two one
    level down, ``levels`` deep (generated: a hostile site's endless tree, cut here so that a crawl
    that followed all of it would end); the first one's URL."""
    for depth in range(levels):
        for path in itertools.product("ab", repeat=depth):
            name = "/sm/r" + "".join(path)
            site.route(
                name,
                '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">%s'
                "</sitemapindex>"
                % "".join("<sitemap><loc>%s%s%s</loc></sitemap>" % (site.url, name, c) for c in "ab"),
                content_type="application/xml",
            )
    return site.url + "/sm/r"


def sitemaps_fetched(site) -> int:
    return sum(n for path, n in site.hits.items() if path.startswith("/sm/"))


@pytest.mark.parametrize("max_depth", [0, 1, None])
def test_nested_sitemap_indexes_are_read_only_so_deep(crawl, site, sqlite_uri, tmp_path, max_depth):
    """Sitemap indexes naming indexes, five levels of them. Before, every index was read and each
    named one fetched (the audit's endless tree: 978 sitemaps 26 levels deep in 45 s, still going).
    A sitemap is read only LAUNDROMAT_SITEMAP_MAX_DEPTH deep (2 by default: an index may name
    indexes once), an index only when the sitemaps it names are within it; a deeper one fails with
    why, its links not followed, said once and counted."""
    root = index_tree(site, 5)
    depth = 2 if max_depth is None else max_depth
    extra = [] if max_depth is None else ["-s", "LAUNDROMAT_SITEMAP_MAX_DEPTH=%d" % max_depth]
    proc = crawl(
        "laundromat", root, sqlite_uri, "-s", "LAUNDROMAT_OUTPUT_DIR=%s" % (tmp_path / "out"), *extra
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    read = 2 ** (depth + 1) - 1  # the indexes down to max_depth, each fetched once
    assert sitemaps_fetched(site) == read and max(site.hits.values()) == 1, site.hits
    docs = records(sqlite_uri)
    assert len([d for d in docs.values() if "uri" in d and "parent" not in d]) == read
    too_deep = [d for d in docs.values() if d.get("status") == "failed"]
    assert len(too_deep) == 2**depth and all(
        d["uri"].startswith(root) and len(d["uri"]) == len(root) + depth for d in too_deep
    )
    assert all(
        d["error"]
        == "sitemap index %d deep (its sitemaps would be %d deep), past LAUNDROMAT_SITEMAP_MAX_DEPTH (%d): "
        "its 2 links are not followed" % (depth, depth + 1, depth)
        for d in too_deep
    ), too_deep
    assert len([d for d in docs.values() if d.get("status") == "depleted"]) == read - 2**depth
    (said,) = [line for line in proc.stderr.splitlines() if "not followed" in line]
    assert "WARNING: not followed: sitemap index %d deep" % depth in said
    (log,) = run_logs(sqlite_uri)
    assert (log["result"], log["not_followed"]) == ("success", {"sitemap_too_deep": 2 ** (depth + 1)})


def test_a_run_registers_at_most_its_limit_of_found_seeds(crawl, site, sqlite_uri, tmp_path):
    """The same tree with sitemaps read ten deep, and LAUNDROMAT_MAX_FOUND_SEEDS=3: the run registers
    three new seeds from the indexes it reads (four indexes fetched: the operator's and those three)
    and follows none of the other five links they name, said once and counted."""
    root = index_tree(site, 5)
    proc = crawl(
        "laundromat",
        root,
        sqlite_uri,
        "-s",
        "LAUNDROMAT_OUTPUT_DIR=%s" % (tmp_path / "out"),
        "-s",
        "LAUNDROMAT_SITEMAP_MAX_DEPTH=10",
        "-s",
        "LAUNDROMAT_MAX_FOUND_SEEDS=3",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sitemaps_fetched(site) == 4, site.hits
    docs = records(sqlite_uri)
    assert len([d for d in docs.values() if "uri" in d and "parent" not in d]) == 4
    (said,) = [line for line in proc.stderr.splitlines() if "not followed" in line]
    assert "the run has registered LAUNDROMAT_MAX_FOUND_SEEDS (3) new seeds from crawled content" in said
    (log,) = run_logs(sqlite_uri)
    assert (log["result"], log["not_followed"]) == ("success", {"seed_limit": 5})


def test_a_sitemap_priority_that_is_no_number_json_holds_loses_no_seed(crawl, site, store_uri, tmp_path):
    """``<priority>NaN</priority>`` or ``inf`` (Python's ``float`` reads both): the seeds' records
    held a number JSON cannot hold, the store refused them, and the run went on without a word, its
    files downloaded and cleaned, the seeds lost from the seed list (audit, 2026-11-29). A priority
    that is no finite number is none, as one that is no number at all. (The sitemap is generated,
    in the sitemaps.org schema, with the test site's dumps.)"""
    urls = sitedata.mount(site)
    priorities = {"a": "NaN", "b": "0.5", "c": "inf"}
    sitemap = site.route(
        "/priorities.xml",
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">%s</urlset>'
        % "".join(
            "<url><loc>%s</loc><priority>%s</priority></url>" % (urls[name], priority)
            for name, priority in priorities.items()
        ),
        content_type="application/xml",
    )

    run = ok(crawl("laundromat", [sitemap], store_uri, "-s", "LAUNDROMAT_OUTPUT_DIR=%s" % (tmp_path / "out")))

    assert "not stored" not in run.stderr, run.stderr[-3000:]
    docs = records(store_uri)
    seeds = {d["uri"]: d for d in docs.values() if "uri" in d and "parent" not in d}
    assert {urls[name]: seeds[urls[name]].get("priority") for name in priorities} == {
        urls["a"]: None,
        urls["b"]: 0.5,
        urls["c"]: None,
    }


def test_a_seed_record_the_store_refuses_is_said_and_the_others_are_stored(sqlite_uri):
    """The seed list never drops a record unsaid: a record the store refuses (here a derived one
    holding a NaN, which no JSON holds) raises :class:`RecordNotStored` naming it and why, and the
    other records of the same write are stored."""
    from votersdaily.laundromat.seedlist import RecordNotStored, SeedList
    from votersdaily.laundromat.seeds import new_seed

    store = open_store(sqlite_uri)
    try:
        seeds = SeedList(store)
        seeds.open()
        good, bad = new_seed("http://example.org/good.nt"), new_seed("http://example.org/bad.nt")
        with pytest.raises(RecordNotStored) as refused:
            seeds.put(good, dict(bad, priority=float("nan")))
        assert list(refused.value.failed) == [bad["_id"]] and bad["_id"] in str(refused.value)
        assert seeds.get(good["_id"]) is not None and seeds.get(bad["_id"]) is None
    finally:
        store.close()
