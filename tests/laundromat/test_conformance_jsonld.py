"""The W3C JSON-LD 1.1 API toRdf tests through the laundromat's cleaning (clean_file): every positive
one must give the expected statements, every negative one an error on the document's record; each
known failure is listed below with its reason, so a regression or a fix changes the count.

The suite is the copy that rdflib 7.6.0's source distribution carries (test/jsonld/1.1: the
json-ld-api tests' manifest, inputs and expected N-Quads), installed by scripts/setup.sh into the
git-ignored w3c-suites/. Remote contexts come from the suite's own files, through a context cache
filled from them before the run: nothing is fetched (``fetch=False``).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyoxigraph as ox
import pytest

from tests.laundromat.conformance import canonical_quads, deskolemise, non_canonical_lines, read_clean_file
from tests.support.services import REPO
from votersdaily.laundromat.cleaning import CleanOptions, CleanResult, clean_file
from votersdaily.laundromat.contexts import ContextOptions, cache_name

SUITE = REPO / "w3c-suites" / "json-ld-api-1.1"
#: The IRI the suite's documents are published under: their base, and where their contexts live.
BASE = "https://w3c.github.io/json-ld-api/tests/"
POSITIVE = ("jld:PositiveEvaluationTest", "jld:PositiveSyntaxTest")
NEGATIVE = "jld:NegativeEvaluationTest"

if not SUITE.exists() and os.environ.get("CI"):
    raise RuntimeError("%s is absent: scripts/setup.sh installs it" % SUITE)
pytestmark = pytest.mark.skipif(not SUITE.exists(), reason="%s is absent: run scripts/setup.sh" % SUITE)

#: Tests of what a crawled document never asks for: options of the JSON-LD API, or a JSON-LD 1.0
#: processor's result (pyoxigraph is a JSON-LD 1.1 processor).
NOT_APPLICABLE = {
    "t0118": "produceGeneralizedRdf: blank-node predicates are not RDF 1.1",
    "te075": "produceGeneralizedRdf: blank-node predicates are not RDF 1.1",
    "te026": "specVersion json-ld-1.0: a 1.1 processor refuses the colliding @type keyword alias",
    "te071": "specVersion json-ld-1.0: a 1.1 processor refuses the redefined compact IRI",
    "te077": "expandContext option of the API: no document carries one",
    "tdi09": "rdfDirection i18n-datatype (non-normative): the laundromat drops base directions",
    "tdi10": "rdfDirection i18n-datatype (non-normative): the laundromat drops base directions",
    "tdi11": "rdfDirection compound-literal (non-normative): the laundromat drops base directions",
    "tdi12": "rdfDirection compound-literal (non-normative): the laundromat drops base directions",
}
#: pyoxigraph 0.5's JSON-LD parser.
PYOXIGRAPH = {
    "tc013": "a type map uses the containing property's scoped context, not the type's",
    "tli12": "an invalid @base ends the document with an error (the spec drops only the bad IRIs)",
    "t0122": "relative IRIs resolved against an @base with dot segments keep those segments",
    "t0123": "relative IRIs resolved against an @base with dot segments keep those segments",
    "te091": "relative IRIs resolved against an @base with dot segments keep those segments",
    "te062": "a network-path reference (//host/../x) keeps its dot segments",
}
KNOWN_FAILURES = NOT_APPLICABLE | PYOXIGRAPH
#: Positive tests in the manifest: 342 evaluation and 16 syntax tests.
POSITIVE_TESTS = 358
#: Negative tests whose error only a JSON-LD 1.0 processor raises (or one run with the API's
#: processingMode json-ld-1.0 option): what they refuse is valid JSON-LD 1.1.
NOT_REPORTED = {
    "tc029": "processingMode json-ld-1.0: @propagate",
    "tep02": "processingMode json-ld-1.0: @version 1.1",
    "ter21": "processingMode json-ld-1.0: @container @id",
    "ter42": "processingMode json-ld-1.0: a keyword redefined",
    "ttn01": "processingMode json-ld-1.0: @type @none",
    "te115": "specVersion json-ld-1.0: relative property IRIs with @vocab ''",
    "te116": "specVersion json-ld-1.0: relative property IRIs with a relative @vocab",
    "ter24": "specVersion json-ld-1.0: a list of lists",
    "ter32": "specVersion json-ld-1.0: a list of lists",
}
#: Negative tests in the manifest.
NEGATIVE_TESTS = 104


def _manifest(kinds: tuple[str, ...]) -> list[dict]:
    sequence = json.loads((SUITE / "toRdf-manifest.jsonld").read_text(encoding="utf-8"))["sequence"]
    return [t for t in sequence if any(kind in t["@type"] for kind in kinds)]


def _options(context_cache: Path) -> CleanOptions:
    return CleanOptions(
        gzip_level=1, contexts=ContextOptions(cache_dir=str(context_cache), fetch=False, max_count=20)
    )


def _clean(test: dict, options: CleanOptions, out: Path) -> CleanResult:
    base = test.get("option", {}).get("base", BASE + test["input"])
    return clean_file(SUITE / test["input"], "JSON-LD", "0" * 32, out, base_iri=base, options=options)


@pytest.fixture(scope="module")
def context_cache(tmp_path_factory) -> Path:
    """Every JSON file of the suite, cached under the IRI it is published at."""
    cache = tmp_path_factory.mktemp("contexts")
    for path in SUITE.rglob("*.jsonld"):
        shutil.copyfile(path, cache / cache_name(BASE + path.relative_to(SUITE).as_posix()))
    return cache


def _outcome(test: dict, options: CleanOptions, out: Path) -> str | None:
    """Why ``test`` failed, or None."""
    result = _clean(test, options, out)
    if result.errors:
        return "errors: %s" % [m["message"] for m in result.messages if m["kind"] == "error"][:2]
    if non_canonical_lines(read_clean_file(result.path)):
        return "not canonical: %s" % non_canonical_lines(read_clean_file(result.path))[:2]
    if "jld:PositiveSyntaxTest" in test["@type"]:
        return None
    try:
        expected = canonical_quads((SUITE / test["expect"]).read_bytes(), ox.RdfFormat.N_QUADS)
    except SyntaxError as exc:  # generalized RDF: not RDF 1.1
        return "expected output is not RDF 1.1: %s" % exc
    got = canonical_quads(deskolemise(read_clean_file(result.path)), ox.RdfFormat.N_QUADS)
    if got != expected:
        return "not isomorphic: missing %s, extra %s" % (
            sorted(expected - got)[:2],
            sorted(got - expected)[:2],
        )
    return None


def test_json_ld_to_rdf(context_cache, tmp_path):
    tests = _manifest(POSITIVE)
    assert len(tests) == POSITIVE_TESTS
    failures = {}
    for test in tests:
        reason = _outcome(test, _options(context_cache), tmp_path / test["@id"][1:])
        if reason is not None:
            failures[test["@id"][1:]] = reason
    passed = len(tests) - len(failures)
    print("JSON-LD 1.1 toRdf: %d of %d positive tests passed" % (passed, len(tests)))
    unexpected = {k: v for k, v in failures.items() if k not in KNOWN_FAILURES}
    fixed = sorted(set(KNOWN_FAILURES) - set(failures))
    assert (unexpected, fixed) == ({}, [])
    assert passed == POSITIVE_TESTS - len(KNOWN_FAILURES)


def test_json_ld_to_rdf_errors_are_reported(context_cache, tmp_path):
    tests = _manifest((NEGATIVE,))
    assert len(tests) == NEGATIVE_TESTS
    unreported = {
        t["@id"][1:] for t in tests if not _clean(t, _options(context_cache), tmp_path / t["@id"][1:]).errors
    }
    print("JSON-LD 1.1 toRdf: %d of %d negative tests reported" % (len(tests) - len(unreported), len(tests)))
    assert unreported == set(NOT_REPORTED)
