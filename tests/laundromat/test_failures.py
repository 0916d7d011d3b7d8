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
