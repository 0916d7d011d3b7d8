"""Remote JSON-LD contexts through the guarded fetch, the cache and its limits; JSON-LD in HTML;
a statement past the parser's token buffer. Contexts are served by the local test site (loopback:
allowed only where a test says so); the JSON-LD documents are written for these tests."""

from __future__ import annotations

import gzip
import itertools
import json
import subprocess
from dataclasses import replace

import pytest

from tests.laundromat.test_failures import _download
from tests.laundromat.test_resume import _docs, _finish, _start
from tests.support.services import shared_dir
from tests.support.tmpfs import fill, small_tmpfs
from votersdaily.laundromat.cleaning import CleanOptions, clean_file
from votersdaily.laundromat.contexts import ContextOptions, cache_name
from votersdaily.laundromat.steps import launder_file

KEY = "0123456789abcdef0123456789abcdef"
CONTEXT = {
    "@context": {
        "name": "http://example.org/name",
        "knows": {"@id": "http://example.org/knows", "@type": "@id"},
    }
}
EXPECTED = [
    "<http://example.org/a> <http://example.org/knows> <http://example.org/b> .",
    '<http://example.org/a> <http://example.org/name> "A" .',
]


def _doc(context: str) -> bytes:
    return json.dumps(
        {"@context": context, "@id": "http://example.org/a", "name": "A", "knows": "http://example.org/b"}
    ).encode()


def _lines(path: str) -> list[str]:
    with gzip.open(path, "rb") as f:
        return f.read().decode("utf-8").split("\n")[:-1]


def _clean(tmp_path, body: bytes, contexts: ContextOptions | None, name: str = "doc"):
    path = tmp_path / (name + ".jsonld")
    path.write_bytes(body)
    return clean_file(path, "JSON-LD", KEY, tmp_path / name, options=CleanOptions(contexts=contexts))


def test_remote_context_is_loaded_once_and_cached(site, tmp_path):
    url = site.route("/ctx/person.jsonld", json.dumps(CONTEXT), content_type="application/ld+json")
    options = ContextOptions(cache_dir=str(tmp_path / "contexts"), allow_private=True)
    first = _clean(tmp_path, _doc(url), options, "first")
    assert (first.errors, _lines(first.path), first.contexts) == (0, EXPECTED, [url])
    second = _clean(tmp_path, _doc(url), options, "second")
    assert _lines(second.path) == EXPECTED and site.hits["/ctx/person.jsonld"] == 1  # from the cache
    assert (tmp_path / "contexts" / cache_name(url)).is_file()


def test_private_addresses_and_other_schemes_are_refused(site, tmp_path):
    url = site.route("/ctx/person.jsonld", json.dumps(CONTEXT), content_type="application/ld+json")
    for context, reason in (
        (url, "is a private/loopback/link-local address"),
        ("http://169.254.169.254/latest/meta-data/", "is a private/loopback/link-local address"),
        ("file:///etc/passwd", "refusing non-http(s) URL"),
    ):
        result = _clean(tmp_path, _doc(context), ContextOptions(), "refused")
        assert result.errors == 1 and result.statements == 0
        assert result.messages[0]["message"].startswith("remote context not loaded: ")
        assert reason in result.messages[0]["message"]
    assert "/ctx/person.jsonld" not in site.hits
    assert "root:" not in json.dumps(result.messages)


def test_context_limits(site, tmp_path):
    big = site.route("/ctx/big.jsonld", json.dumps({"@context": {"x": "http://example.org/" + "x" * 5000}}))
    result = _clean(tmp_path, _doc(big), ContextOptions(allow_private=True, max_bytes=4096), "big")
    assert result.statements == 0 and "larger than 4096 bytes" in result.messages[0]["message"]
    # A chain of contexts, each naming the next: the count limit ends it.
    for i in range(5):
        site.route(
            "/ctx/chain%d.jsonld" % i, json.dumps({"@context": [site.url + "/ctx/chain%d.jsonld" % (i + 1)]})
        )
    result = _clean(
        tmp_path,
        _doc(site.url + "/ctx/chain0.jsonld"),
        ContextOptions(allow_private=True, max_count=3),
        "chain",
    )
    assert result.statements == 0 and "more than 3 remote contexts" in result.messages[0]["message"]
    assert result.contexts == [site.url + "/ctx/chain%d.jsonld" % i for i in range(3)]


def test_a_prefilled_cache_serves_well_known_contexts_without_fetching(tmp_path):
    """The operator put a context for schema.org in the cache (here a two-term stand-in written by
    the test, not schema.org's real context); every spelling of schema.org's URL finds it and
    nothing is fetched."""
    cache = tmp_path / "contexts"
    cache.mkdir()
    (cache / cache_name("https://schema.org/")).write_text(
        json.dumps({"@context": {"@vocab": "https://schema.org/", "knows": {"@type": "@id"}}})
    )
    options = ContextOptions(cache_dir=str(cache), fetch=False)
    for spelling in ("http://schema.org", "https://schema.org/", "http://schema.org/"):
        result = _clean(tmp_path, _doc(spelling), options, "schema")
        assert result.errors == 0 and result.contexts == ["https://schema.org/"]
        assert '<http://example.org/a> <https://schema.org/name> "A" .' in _lines(result.path)
    missing = _clean(tmp_path, _doc("https://w3id.org/other"), options, "missing")
    assert "is not in the context cache" in missing.messages[0]["message"]


def _cached_contexts(tmp_path, contexts: dict[str, object]) -> ContextOptions:
    cache = tmp_path / "contexts"
    cache.mkdir(exist_ok=True)
    for url, context in contexts.items():
        (cache / cache_name(url)).write_text(json.dumps({"@context": context}))
    return ContextOptions(cache_dir=str(cache), fetch=False)


def test_a_context_that_includes_itself_is_inlined_as_deep_as_the_document(tmp_path):
    """A scoped context naming its own context (JSON-LD 1.1 allows it) is inlined once per level of
    the document; one naming itself twice per level is refused past MAX_INLINED, not expanded
    without end; one naming itself outside a scoped context is refused at once."""
    url = "http://example.org/ctx/self.jsonld"
    options = _cached_contexts(
        tmp_path,
        {
            url: {
                "knows": {"@id": "http://example.org/knows", "@context": url},
                "name": "http://example.org/name",
            }
        },
    )
    doc = {"@context": url, "@id": "http://example.org/a", "knows": {"name": "B", "knows": {"name": "C"}}}
    result = _clean(tmp_path, json.dumps(doc).encode(), options, "self")
    assert (result.errors, result.contexts, result.statements) == (0, [url], 4)
    double = "http://example.org/ctx/double.jsonld"
    options = _cached_contexts(
        tmp_path,
        {
            double: {
                "a": {"@id": "http://example.org/a", "@context": double},
                "b": {"@id": "http://example.org/b", "@context": double},
            }
        },
    )
    deep: dict = {"@id": "http://example.org/x"}
    for _ in range(12):  # 2^12 levels of inlining would be needed
        deep = {"a": deep, "b": deep}
    deep["@context"] = double
    result = _clean(tmp_path, json.dumps(deep).encode(), options, "double")
    assert result.errors == 1 and "more than 1000 remote contexts inlined" in result.messages[0]["message"]
    # With no scoped context in between, a context including itself never ends: an error.
    loop = "http://example.org/ctx/loop.jsonld"
    options = _cached_contexts(tmp_path, {loop: [loop, {"name": "http://example.org/name"}]})
    result = _clean(tmp_path, json.dumps({"@context": loop, "name": "A"}).encode(), options, "loop")
    assert result.errors == 1 and "recursive context inclusion" in result.messages[0]["message"]


def test_contexts_naming_each_other_twice_cannot_expand_past_the_bound(tmp_path):
    """Ten contexts of 60 KB at most, each naming the next twice: inlined, the last would be copied
    512 times (31 MB of context, gigabytes of memory in the parser). The document fails with the
    reason; a chain that stays within max_count × max_bytes is inlined. The bound is given: 1 MiB a
    context (the setting's 4 MiB would let the 31 MB through)."""

    def chain(padding: int) -> ContextOptions:
        urls = ["http://example.org/ctx/%d.jsonld" % i for i in range(10)]
        contexts: dict[str, object] = {url: [nxt, nxt] for url, nxt in itertools.pairwise(urls)}
        terms = {"t%d" % k: "http://example.org/vocab/term%d" % k for k in range(padding)}
        contexts[urls[-1]] = dict(terms, name="http://example.org/name")
        return replace(_cached_contexts(tmp_path, contexts), max_bytes=1 << 20)

    doc = json.dumps(
        {"@context": "http://example.org/ctx/0.jsonld", "@id": "http://example.org/a", "name": "A"}
    )
    bomb = _clean(tmp_path, doc.encode(), chain(1500), "bomb")
    assert bomb.statements == 0 and bomb.errors == 1
    assert "would pass %d bytes" % ((1 << 20) * 10) in bomb.messages[0]["message"]
    small = _clean(tmp_path, doc.encode(), chain(10), "small")
    assert small.statements == 1 and small.errors == 0


def test_a_json_literal_is_data_not_a_context_reference(tmp_path):
    """An ``@json`` value holding "@context" is a literal: nothing is loaded (no loader at all)."""
    doc = {
        "@context": {"data": {"@id": "http://example.org/data", "@type": "@json"}},
        "@id": "http://example.org/a",
        "data": {"@context": "http://example.org/not-a-context", "x": 1},
        "http://example.org/raw": {"@value": {"@context": "http://example.org/nor-this"}, "@type": "@json"},
    }
    result = _clean(tmp_path, json.dumps(doc).encode(), None, "json")
    assert (result.errors, result.statements, result.contexts) == (0, 2, [])
    assert '"{\\"@context\\":\\"http://example.org/not-a-context\\",\\"x\\":1}"' in _lines(result.path)[0]


PLOS = shared_dir() / "fixtures" / "inplace" / "scholarly" / "plos_one_article.html"


@pytest.mark.skipif(not PLOS.exists(), reason="../shared is absent")
def test_jsonld_in_html_is_rdf(tmp_path):
    """The PLOS ONE article page (real RDFa), derived: a JSON-LD script (with an inline context)
    added to its head. Its statements join the page's RDFa ones; a broken second script is an
    error of its own."""
    html = PLOS.read_text(encoding="utf-8")
    script = (
        '<script type="application/ld+json">%s</script>'
        '<script type="application/ld+json">{"@id": broken</script>'
    ) % json.dumps(
        {
            "@context": CONTEXT["@context"],
            "@id": "http://example.org/a",
            "name": "A",
            "knows": "http://example.org/b",
        }
    )
    path = tmp_path / "article.html"
    path.write_text(html.replace("</head>", script + "</head>", 1), encoding="utf-8")
    base = "https://journals.plos.org/plosone/article?id=10.1371/journal.pone.0213978"
    record = launder_file(path, KEY, tmp_path / "out", content_type="text/html", base_iri=base)
    lines = _lines(record["clean"]["path"])
    assert set(EXPECTED) <= set(lines) and any("<http://ogp.me/ns#title>" in line for line in lines)
    assert record["clean"]["number_of_errors"] == 1
    assert record["clean"]["messages"][0]["message"].startswith("JSON-LD script 2: ")


@pytest.mark.parametrize("fmt", ["N-Triples", "Turtle"])
def test_a_statement_past_the_token_buffer(tmp_path, fmt):
    """One literal of 17 MiB (past pyoxigraph's 16 MiB token buffer): in N-Triples only that line is
    lost, with the reason and its line number; Turtle keeps what came before and says why it stopped."""
    big = b'<http://example.org/s> <http://example.org/p> "' + b"x" * (17 << 20) + b'" .\n'
    path = tmp_path / "big"
    path.write_bytes(
        b'<http://example.org/a> <http://example.org/p> "1" .\n'
        + big
        + b'<http://example.org/b> <http://example.org/p> "2" .\n'
    )
    result = clean_file(path, fmt, KEY, tmp_path / "out")
    assert result.errors == 1 and "buffer" in result.messages[0]["message"]
    if fmt == "N-Triples":
        assert result.statements == 2 and result.messages[0]["line"] == 2
        assert result.messages[0]["message"].startswith("statement of %d bytes dropped" % (len(big) - 1))
    else:
        assert result.statements == 1


def test_the_crawl_loads_contexts_through_its_settings(site, sqlite_uri, tmp_path):
    url = site.route("/ctx/person.jsonld", json.dumps(CONTEXT), content_type="application/ld+json")
    doc = site.route("/d/a.jsonld", _doc(url), content_type="application/ld+json")
    refused = site.route(
        "/d/refused.jsonld", _doc(url.replace("person", "other")), content_type="application/ld+json"
    )
    out = tmp_path / "out"
    # Contexts go through the crawl's one address policy: the local site's host:port is on
    # LAUNDROMAT_PRIVATE_HOSTS (set by _start), as for sitemap entries and dump links.
    _finish(_start(doc, sqlite_uri, out))
    # Without it (the default), crawled data never reaches loopback.
    _finish(_start(refused, sqlite_uri, out, "-s", "LAUNDROMAT_PRIVATE_HOSTS="))
    docs = _docs(sqlite_uri)
    record = _download(docs, doc)
    assert record["status"] == "parsed" and record["number_of_unique_statements"] == 2
    assert record["contexts"] == [url] and (out / "contexts" / cache_name(url)).is_file()
    refused_record = _download(docs, refused)
    assert (
        refused_record["number_of_statements"] == 0
        and "is a private/loopback/link-local address" in refused_record["messages"][0]["message"]
    )
    assert "/ctx/other.jsonld" not in site.hits


@pytest.mark.parametrize("cache", ["full", "read-only"])
def test_a_context_cache_that_takes_nothing_costs_no_statement(crawl, site, sqlite_uri, tmp_path, cache):
    """Two JSON-LD documents naming one remote context; the cache folder is on a full 64 KiB tmpfs, or
    on one mounted read-only (a real filesystem: root or not, nothing is written). Before, writing
    the fetched context failed, and its OSError ended each document ``parsed`` with no statement
    ("OSError: [Errno 28] No space left on device") and a 0-byte ``.part`` in the cache: the seed was
    not due again for a day. The cache is a copy and the context is in hand: both documents are
    cleaned whole, nothing is left in the cache, and one WARNING names the folder."""
    url = site.route("/ctx/person.jsonld", json.dumps(CONTEXT), content_type="application/ld+json")
    docs = [site.route("/d/%s.jsonld" % n, _doc(url), content_type="application/ld+json") for n in "ab"]
    with small_tmpfs(tmp_path / "cache", "64k") as folder:
        if cache == "full":
            fill(folder)
        else:
            subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        contexts = folder / "contexts"
        proc = crawl(
            "laundromat",
            docs,
            sqlite_uri,
            "-s",
            "LAUNDROMAT_OUTPUT_DIR=%s" % (tmp_path / "out"),
            "-s",
            "LAUNDROMAT_CONTEXT_CACHE_DIR=%s" % contexts,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        said = [line for line in proc.stderr.splitlines() if "context cache" in line]
        assert len(said) == 1 and said[0].endswith(
            "WARNING: the JSON-LD context cache %s cannot take contexts (%s): documents are cleaned with "
            "the contexts fetched, without caching them (LAUNDROMAT_CONTEXT_CACHE_DIR)"
            % (contexts, "No space left on device" if cache == "full" else "Read-only file system")
        ), said
        assert not [p for p in folder.rglob("*") if p.is_file() and p.name != "filler"]
    records = _docs(sqlite_uri)
    for doc in docs:
        record = _download(records, doc)
        assert record["status"] == "parsed" and record["contexts"] == [url], record
        assert (record["number_of_unique_statements"], record["number_of_errors"]) == (2, 0), record
