"""One file never wedges a run: any exception of a step ends that record as ``failed`` with its error,
a crashed run's half-done record resumes to ``failed``, and every other seed is still processed.

The hostile zips are derived from a valid zip written by :mod:`zipfile` (one header field changed);
the nested JSON is generated (a hostile input, not a source's format)."""

from __future__ import annotations

import io
import json
import struct
import tarfile

import pytest

from tests.laundromat import sitedata
from tests.laundromat.test_resume import _docs, _finish, _put_crashed_state, _start
from tests.support.services import shared_dir
from votersdaily.clock import now_iso
from votersdaily.laundromat.cleaning import CleanOptions, DocumentLimitExceeded, clean_file
from votersdaily.laundromat.download_records import download_key
from votersdaily.laundromat.seeds import new_seed
from votersdaily.laundromat.uris import uri_key

NT = b'<http://example.org/s> <http://example.org/p> "kept" .\n'
CENTRAL = b"PK\x01\x02"
LOCAL = b"PK\x03\x04"


def zip_with_version_needed(version: int) -> bytes:
    """A valid zip whose "version needed to extract" (local and central header) says ``version``."""
    data = bytearray(sitedata.zip_of({"a.nt": NT}))
    for signature, offset in ((LOCAL, 4), (CENTRAL, 6)):
        at = data.index(signature) + offset
        data[at : at + 2] = struct.pack("<H", version)
    return bytes(data)


def zip_with_utf8_flag_on_latin1_name() -> bytes:
    """A valid zip of ``cafe.nt`` renamed ``caf\\xe9.nt`` (Latin-1) with the UTF-8 name flag (bit 11) set."""
    data = bytearray(sitedata.zip_of({"cafe.nt": NT}))
    for signature, offset in ((LOCAL, 6), (CENTRAL, 8)):
        at = data.index(signature) + offset
        flags = struct.unpack("<H", data[at : at + 2])[0] | 0x800
        data[at : at + 2] = struct.pack("<H", flags)
    return bytes(data).replace(b"cafe.nt", b"caf\xe9.nt")


def _download(docs: dict, url: str) -> dict:
    (record,) = [d for d in docs.values() if d.get("parent") == uri_key(url) and d.get("http")]
    return record


def test_hostile_files_fail_alone(site, sqlite_uri, tmp_path):
    nested = b"[" * 1000 + b'{"@id": "http://example.org/deep", "http://example.org/p": "v"}' + b"]" * 1000
    urls = {
        "version": site.route("/d/version.zip", zip_with_version_needed(99), content_type="application/zip"),
        "utf8": site.route(
            "/d/utf8.zip", zip_with_utf8_flag_on_latin1_name(), content_type="application/zip"
        ),
        "nested": site.route("/d/nested.json", nested, content_type="application/json"),
        "good": site.route("/d/good.nt", NT, content_type="application/n-triples"),
    }
    pdf = shared_dir() / "fixtures" / "inplace" / "scholarly" / "dummy.pdf"  # a real PDF, in place
    if pdf.exists():
        urls["pdf"] = site.route("/d/paper.pdf", pdf.read_bytes(), content_type="application/pdf")
    _finish(_start(",".join(urls.values()), sqlite_uri, tmp_path / "out"))
    docs = _docs(sqlite_uri)
    for name in ("version", "utf8"):
        record = _download(docs, urls[name])
        assert record["status"] == "failed" and "zip is corrupt" in record["error"], record
    assert "zip file version 9.9" in _download(docs, urls["version"])["error"]
    assert "UnicodeDecodeError" in _download(docs, urls["utf8"])["error"]
    nested_record = _download(docs, urls["nested"])
    assert nested_record["status"] == "parsed" and nested_record["format"] == "JSON-LD"
    assert nested_record["number_of_statements"] == 1
    good = _download(docs, urls["good"])
    assert good["status"] == "parsed" and good["number_of_unique_statements"] == 1
    if "pdf" in urls:  # not RDF is not success: failed, with the guess's evidence
        record = _download(docs, urls["pdf"])
        assert record["status"] == "failed" and record["format"] is None and "clean" not in record
        assert record["error"].startswith("not RDF: content starts with '%PDF-'")


def test_crashed_records_resume_to_failed_and_the_run_goes_on(site, sqlite_uri, tmp_path):
    """A crashed run left one record ``unarchiving`` (a zip the archive module cannot read) and one
    ``guessing`` (its recoded file unreadable: a directory in its place, so the guess step raises);
    the resumed run ends both as failed with their errors and downloads and cleans the other seed."""
    out = tmp_path / "out"
    (out / "files").mkdir(parents=True)
    begin = now_iso()
    crashed = []
    for name, status in (("bad.zip", "unarchiving"), ("data.nt", "guessing")):
        seed = new_seed(site.url + "/old/" + name, interval=86400.0)
        key = download_key(seed["_id"], begin)
        record = {
            "_id": key,
            "parent": seed["_id"],
            "seed": seed["_id"],
            "status": status,
            "uri": seed["uri"],
            "timestamp": {"begin": begin, "end": begin},
            "http": [],
            "file": "files/" + key,
            "base_uri": seed["uri"],
            "name": name,
            "content_type": None,
            "depth": 0,
        }
        if status == "unarchiving":
            (out / record["file"]).write_bytes(zip_with_utf8_flag_on_latin1_name())
        else:
            record["recoded_file"] = "files/%s.utf8" % key
            (out / record["recoded_file"]).mkdir()
        _put_crashed_state(sqlite_uri, dict(seed, processed=begin, download=key), record)
        crashed.append(key)
    good = site.route("/d/good.nt", NT, content_type="application/n-triples")

    _finish(_start(good, sqlite_uri, out))
    docs = _docs(sqlite_uri)
    unarchiving, guessing = (docs[key] for key in crashed)
    assert unarchiving["status"] == "failed" and "UnicodeDecodeError" in unarchiving["error"]
    assert guessing["status"] == "failed" and "IsADirectoryError" in guessing["error"]
    record = _download(docs, good)
    assert record["status"] == "parsed" and record["number_of_unique_statements"] == 1
    assert not site.hits.get("/old/bad.zip") and not site.hits.get("/old/data.nt")


def test_documents_with_the_same_output_keep_their_own_errors(site, sqlite_uri, tmp_path):
    """Two broken Turtle files both give the empty output (one cleaned record, keyed by its hash);
    each document's record keeps its own error, none overwrites the other's."""
    urls = [
        site.route(
            "/d/one.ttl",
            b"<http://example.org/s> <http://example.org/p> oops .\n",
            content_type="text/turtle",
        ),
        site.route(
            "/d/two.ttl",
            b"@prefix ex: <http://example.org/> .\nex:s ex:p ] .\n",
            content_type="text/turtle",
        ),
    ]
    _finish(_start(",".join(urls), sqlite_uri, tmp_path / "out"))
    docs = _docs(sqlite_uri)
    one, two = (_download(docs, url) for url in urls)
    assert one["status"] == two["status"] == "parsed" and one["clean"] == two["clean"]
    assert one["number_of_errors"] == two["number_of_errors"] == 1
    assert one["messages"][0]["line"] == 1 and two["messages"][0]["line"] == 2
    assert one["messages"][0]["message"] != two["messages"][0]["message"]
    assert "messages" not in docs[one["clean"]]


def blank_node_clique(n: int) -> bytes:
    """A JSON-LD document of ``n`` blank nodes, each linked to every other (generated: hostile input,
    RDFC-1.0 cannot tell them apart and tries every permutation)."""
    nodes = [
        {"@id": "_:b%d" % i, "http://example.org/p": [{"@id": "_:b%d" % j} for j in range(n) if j != i]}
        for i in range(n)
    ]
    return json.dumps({"@graph": nodes}).encode()


def test_canonicalisation_has_a_work_bound(tmp_path):
    path = tmp_path / "clique.jsonld"
    path.write_bytes(blank_node_clique(12))
    with pytest.raises(DocumentLimitExceeded, match=r"estimated work .* exceeds 20000"):
        clean_file(
            path, "JSON-LD", "0" * 32, tmp_path / "out", options=CleanOptions(max_canonicalisation_work=20000)
        )
    small = tmp_path / "small.jsonld"
    small.write_bytes(blank_node_clique(4))
    assert clean_file(small, "JSON-LD", "0" * 32, tmp_path / "small").unique == 12
    # Many blank nodes alike but unrelated to each other cost one unit each (not 500!).
    alike = tmp_path / "alike.jsonld"
    alike.write_bytes(
        json.dumps(
            {"@id": "http://example.org/s", "http://example.org/p": [{"@type": "http://example.org/T"}] * 500}
        ).encode()
    )
    assert (
        clean_file(
            alike,
            "JSON-LD",
            "0" * 32,
            tmp_path / "alike",
            options=CleanOptions(max_canonicalisation_work=1000),
        ).unique
        == 1000
    )


@pytest.mark.slow  # a document run into its 10 s limit
def test_a_document_past_its_limits_fails_and_the_run_goes_on(site, sqlite_uri, tmp_path):
    """A blank-node clique (refused by the canonicalisation bound) and a deeply nested HTML page
    (about a minute of html5lib unbounded; killed at the document time limit) fail with their
    reasons; the good document after them is cleaned."""
    nested = (
        "<html><body>"
        + '<div property="http://example.org/p">' * 8000
        + "x"
        + "</div>" * 8000
        + "</body></html>"
    )
    urls = {
        "clique": site.route("/d/clique.jsonld", blank_node_clique(12), content_type="application/ld+json"),
        "nested": site.route("/d/nested.html", nested, content_type="text/html"),
        "good": site.route("/d/good.nt", NT, content_type="application/n-triples"),
    }
    out = tmp_path / "out"
    proc = _start(
        ",".join(urls.values()),
        sqlite_uri,
        out,
        "-s",
        "LAUNDROMAT_DOCUMENT_TIMEOUT=10",
        "-s",
        "LAUNDROMAT_DOCUMENT_SECONDS_PER_MB=0",
    )
    _finish(proc)
    docs = _docs(sqlite_uri)
    clique = _download(docs, urls["clique"])
    assert clique["status"] == "failed" and "blank-node canonicalisation refused" in clique["error"]
    nested_record = _download(docs, urls["nested"])
    assert nested_record["status"] == "failed", nested_record
    assert (
        nested_record["error"]
        == "DocumentTimeout: took longer than its limit of 10 s (LAUNDROMAT_DOCUMENT_TIMEOUT)"
    )
    good = _download(docs, urls["good"])
    assert good["status"] == "parsed" and good["number_of_unique_statements"] == 1


def test_a_stored_record_naming_a_file_outside_the_output_is_never_read_nor_removed(
    site, sqlite_uri, tmp_path
):
    """A crashed run's record (derived: its ``file`` and ``recoded_file`` rewritten, as a store shared
    with another deployment, or edited, may hold) names ``../victim.nt``, a file of the operator's
    beside the output folder. Before: the resumed run cleaned it as the record's document and then
    removed it."""
    out = tmp_path / "out"
    (out / "files").mkdir(parents=True)
    victim = tmp_path / "victim.nt"
    victim.write_bytes(NT)
    begin = now_iso()
    seed = new_seed(site.url + "/old/data.nt", interval=86400.0)
    key = download_key(seed["_id"], begin)
    record = {
        "_id": key,
        "parent": seed["_id"],
        "seed": seed["_id"],
        "status": "guessing",
        "uri": seed["uri"],
        "timestamp": {"begin": begin, "end": begin},
        "http": [],
        "file": "files/../../victim.nt",
        "recoded_file": "../victim.nt",
        "base_uri": seed["uri"],
        "name": "data.nt",
        "content_type": None,
        "depth": 0,
    }
    _put_crashed_state(sqlite_uri, dict(seed, processed=begin, download=key), record)
    _finish(_start(site.route("/d/good.nt", NT, content_type="application/n-triples"), sqlite_uri, out))
    assert victim.read_bytes() == NT
    failed = _docs(sqlite_uri)[key]
    assert failed["status"] == "failed"
    assert failed["error"] == "names ../victim.nt, which is not a file of %s: not read, not removed" % (
        out.resolve() / "files"
    )


def tar_with_a_latin1_member_name() -> bytes:
    """A valid tar (generated here) of one N-Triples file named ``café.nt`` in Latin-1: a tar name is
    bytes, and old archives in the wild carry names that are not UTF-8."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT, encoding="latin-1") as tar:
        info = tarfile.TarInfo("caf\xe9.nt")
        info.size = len(NT)
        tar.addfile(info, io.BytesIO(NT))
    return raw.getvalue()


def test_a_tar_member_named_in_latin1_is_unpacked_and_parsed(site, sqlite_uri, tmp_path):
    """The member's name reached the records and the entry's key as lone surrogates (tarfile's
    ``surrogateescape``), which neither a store nor the key's hash takes: the whole archive failed as
    "tar is corrupt". Its entry is now parsed, its name shown with the byte escaped."""
    from votersdaily.laundromat.archives import printable_name

    assert printable_name("caf\udce9.nt") == "caf\\xe9.nt" and printable_name("café.nt") == "café.nt"
    assert printable_name("lone \ud800") == "lone \\xed\\xa0\\x80"
    url = site.route("/d/latin.tar", tar_with_a_latin1_member_name(), content_type="application/x-tar")
    _finish(_start(url, sqlite_uri, tmp_path / "out"))
    docs = _docs(sqlite_uri)
    assert not [doc for doc in docs.values() if doc.get("status") == "failed"]
    (entry,) = [doc for doc in docs.values() if doc.get("entry_name")]
    assert entry["entry_name"] == "caf\\xe9.nt" and entry["status"] == "parsed"
    assert entry["number_of_statements"] == 1


def _run_log(store_uri: str) -> dict:
    from votersdaily.store import open_store

    store = open_store(store_uri)
    try:
        return max(store.iter_docs("vd_log"), key=lambda d: d["access_datetime"])
    finally:
        store.close()


BAD_LINKS = ["http://[::1/x.nt", "http://127.0.0.1:99999/x"]


def test_a_bad_loc_in_a_sitemap_is_dropped_and_its_neighbours_are_fetched(crawl, site, sqlite_uri, tmp_path):
    """A sitemap (generated: hostile input) listing a good dump, a ``<loc>`` with a broken IPv6
    literal, one with a port out of range, a dump redirected to the first of them, and another good
    dump. Before: run 1 failed with a ValueError traceback, the bad URI stored as a seed stuck
    ``downloading``, the sitemap left ``unarchiving`` and the last dump never fetched; every later
    run then failed at its start ("Port out of range 0-65535", zero requests); the redirect's
    ValueError left its download ``downloading``. The bad links are not followed, each with why, and
    counted; the redirect's download fails with why; the good dumps are cleaned, the sitemap
    depleted, and later runs go on."""
    good = [site.route("/d/%s.nt" % name, NT, content_type="application/n-triples") for name in "ab"]
    moved = site.route("/d/moved.nt", status=302, headers={"Location": BAD_LINKS[0]})
    sitemap = site.route(
        "/sitemap.xml",
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">%s</urlset>'
        % "".join("<url><loc>%s</loc></url>" % loc for loc in [good[0], *BAD_LINKS, moved, good[1]]),
        content_type="application/xml",
    )
    out = "LAUNDROMAT_OUTPUT_DIR=%s" % (tmp_path / "out")
    first = crawl("laundromat", sitemap, sqlite_uri, "-s", out)
    assert first.returncode == 0, first.stderr[-3000:]
    (said,) = [line for line in first.stderr.splitlines() if "not followed" in line]
    assert said.endswith(
        "WARNING: not followed: sitemap entry is not a URL (Invalid IPv6 URL): 'http://[::1/x.nt' (in %s); "
        "the run log counts every link not followed (not_followed)" % sitemap
    )
    docs = _docs(sqlite_uri)
    assert {d["uri"] for d in docs.values() if "parent" not in d and "uri" in d} == {sitemap, moved, *good}
    assert _download(docs, sitemap)["status"] == "depleted"
    assert _download(docs, sitemap)["children"] == [uri_key(url) for url in (good[0], moved, good[1])]
    for url in good:
        assert _download(docs, url)["status"] == "parsed"
    redirected = _download(docs, moved)
    assert (redirected["status"], redirected["error"]) == (
        "failed",
        "redirect target is not a URL (Invalid IPv6 URL): %r" % BAD_LINKS[0],
    )
    log = _run_log(sqlite_uri)
    assert (log["result"], log["not_followed"]) == ("success", {"bad_url": 2})
    assert [(n["link"], n["where"], n["message"]) for n in log["not_followed_links"]] == [
        (BAD_LINKS[0], sitemap, "sitemap entry is not a URL (Invalid IPv6 URL): 'http://[::1/x.nt'"),
        (BAD_LINKS[1], sitemap, "sitemap entry is not a URL (Port out of range 0-65535): %r" % BAD_LINKS[1]),
    ]
    later = crawl("laundromat", None, sqlite_uri, "-s", out)
    assert later.returncode == 0 and "0 of 4 seeds due" in later.stderr, later.stderr[-3000:]


def test_a_stored_seed_no_request_can_be_made_of_fails_alone(crawl, site, sqlite_uri, tmp_path):
    """The store holds what the run before the links were checked left: a seed with a port out of
    range, stuck ``downloading`` with its download record. Before, every run failed at its start
    ("Port out of range 0-65535", exit 1) and fetched nothing. The seed fails for good with why,
    its half-done download with it, and the other seed is fetched."""
    bad = new_seed(BAD_LINKS[1], interval=86400.0)
    begin = now_iso()
    key = download_key(bad["_id"], begin)
    stuck = {"_id": key, "parent": bad["_id"], "seed": bad["_id"], "status": "downloading", "uri": bad["uri"]}
    good = site.route("/d/good.nt", NT, content_type="application/n-triples")
    _put_crashed_state(
        sqlite_uri, dict(bad, status="downloading", download=key), stuck, new_seed(good, interval=86400.0)
    )
    out = "LAUNDROMAT_OUTPUT_DIR=%s" % (tmp_path / "out")
    proc = crawl("laundromat", None, sqlite_uri, "-s", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    docs = _docs(sqlite_uri)
    why = "seed is not a URL (Port out of range 0-65535): %r" % BAD_LINKS[1]
    assert (docs[bad["_id"]]["status"], docs[bad["_id"]]["error"]) == ("failed", why)
    assert docs[key]["status"] == "failed" and "interrupted" in docs[key]["error"]
    assert _download(docs, good)["status"] == "parsed"
    assert _run_log(sqlite_uri)["not_followed"] == {"bad_url": 1}
    later = crawl("laundromat", None, sqlite_uri, "-s", out)
    assert later.returncode == 0, later.stderr[-3000:]
    assert "0 of 2 seeds due; 1 not stale" in later.stderr and "1 failed for good" in later.stderr
