"""Reading the W3C RDF test manifests (in place, from ../shared/conformance) for the laundromat tests."""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox

from tests.support.services import shared_dir

#: Resolved, as the manifests' file IRIs are: ``../shared`` may be reached through a symlink.
ROOT = (shared_dir() / "conformance" / "w3c-rdf-tests" / "rdf").resolve()
MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
RDFT = "http://www.w3.org/ns/rdftest#"
SUITES = {
    "rdf11/rdf-n-triples": "N-Triples",
    "rdf11/rdf-n-quads": "N-Quads",
    "rdf11/rdf-turtle": "Turtle",
    "rdf11/rdf-trig": "TriG",
    "rdf11/rdf-xml": "RDF/XML",
}
C14N_SUITES = {"rdf12/rdf-n-triples/c14n": "N-Triples", "rdf12/rdf-n-quads/c14n": "N-Quads"}

_QUERY = (
    """
PREFIX mf: <%s>
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
SELECT ?test ?type ?action ?result ?base WHERE {
  ?manifest mf:entries/rdf:rest*/rdf:first ?test .
  OPTIONAL { ?manifest mf:assumedTestBase ?base }
  ?test a ?type ; mf:action ?action .
  OPTIONAL { ?test mf:result ?result }
}
"""
    % MF
)


@dataclass(frozen=True)
class W3CTest:
    suite: str
    id: str
    kind: str  # PositiveSyntax, NegativeSyntax, Eval, NegativeEval, PositiveC14N
    action: Path
    result: Path | None
    base: str

    def __str__(self) -> str:
        return "%s#%s" % (self.suite, self.id)


def _path(iri: str) -> Path:
    return Path(iri[len("file://") :])


def load_manifest(suite: str) -> list[W3CTest]:
    folder = ROOT / suite
    manifest = folder / "manifest.ttl"
    store = ox.Store()
    store.load(path=str(manifest), format=ox.RdfFormat.TURTLE, base_iri=manifest.resolve().as_uri())
    tests = []
    for row in store.query(_QUERY):
        type_iri = row["type"].value
        kind = re.sub(r"^Test(?:NTriples|NQuads|Turtle|Trig|XML)", "", type_iri.rsplit("#", 1)[-1])
        action = _path(row["action"].value)
        rel = action.relative_to(folder.resolve()).as_posix()
        base = (row["base"].value if row["base"] is not None else folder.resolve().as_uri() + "/") + rel
        tests.append(
            W3CTest(
                suite=suite,
                id=row["test"].value.rsplit("#", 1)[-1],
                kind=kind,
                action=action,
                result=_path(row["result"].value) if row["result"] is not None else None,
                base=base,
            )
        )
    return sorted(tests, key=lambda t: t.id)


# Canonical N-Quads as RDF 1.1 and the RDF 1.2 c14n rules write it, written out here (not taken
# from the parser whose output it checks): one space between terms, no blank node (skolemised),
# language tags in lower case (RDF 1.1 Concepts §3.3), no ^^xsd:string, only the escapes \t \b \n
# \r \f \" \\ and \uXXXX (upper-case hex) for the other controls, U+007F, U+FFFE and U+FFFF.
_IRI = r'<[^\x00-\x20<>"{}|^`\\]*>'
_CHAR = r'(?:[^"\\\x00-\x1f\x7f\ufffe\uffff]|\\[tbnrf"\\]|\\u(?:000[0-7BEF]|001[0-9A-F]|007F|FFF[EF]))'
_LITERAL = r'"%s*"(?:@[a-z]+(?:-[a-z0-9]+)*|\^\^(?!<http://www\.w3\.org/2001/XMLSchema#string>)%s)?' % (
    _CHAR,
    _IRI,
)
_CANONICAL_LINE = re.compile(r"^%s %s (?:%s|%s)(?: %s)? \.$" % (_IRI, _IRI, _IRI, _LITERAL, _IRI))


def non_canonical_lines(data: bytes) -> list[str]:
    """The lines of cleaned output that are not canonical N-Quads statements."""
    return [line for line in data.decode("utf-8").split("\n")[:-1] if not _CANONICAL_LINE.match(line)]


def deskolemise(data: bytes) -> bytes:
    """Genid IRIs of the cleaned output back to blank nodes (for isomorphism with mf:result)."""
    return re.sub(
        rb"<[^>]*/\.well-known/genid/[0-9a-f]+/([^>]*)>", lambda m: b"_:g" + m.group(1).hex().encode(), data
    )


def canonical_quads(data: bytes, fmt: ox.RdfFormat) -> set[str]:
    """The dataset in ``data`` with RDFC-1.0 blank node labels, as a set of quad strings."""
    dataset = ox.Dataset(ox.parse(data, fmt))
    dataset.canonicalize(ox.CanonicalizationAlgorithm.RDFC_1_0)
    return {str(q) for q in dataset}


def read_cleaned(record: dict) -> bytes:
    return read_clean_file(record["clean"]["path"])


def read_clean_file(path: str | None) -> bytes:
    """The N-Quads of a cleaned file (nothing when the document gave no file)."""
    if path is None:
        return b""
    with gzip.open(path, "rb") as f:
        return f.read()
