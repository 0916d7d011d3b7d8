"""What cleaning is told and what it says: options, the result of one document with its bounded
messages, the errors that end a document, and the serialisations pyoxigraph parses."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from votersdaily.defaults import DEFAULTS

from . import formats as F

if TYPE_CHECKING:
    from collections.abc import Iterable

    import pyoxigraph as ox

    from .contexts import ContextOptions

GENID_BASE: str = DEFAULTS["LAUNDROMAT_GENID_BASE"]
MAX_MESSAGES = 100
MAX_MESSAGE_CHARS = 1000
#: Bytes of input parsed per call (keeps each GIL-holding call short).
PARSE_CHUNK = 1 << 20
#: Bytes of output lines sorted in memory; larger documents go through an external sort.
RUN_BYTES = 16 << 20
#: Bytes of lines per sorted run written by the compiled path (small enough to sort in cache).
SORTED_RUN_BYTES = 4 << 20
#: Largest document of a format that is parsed in memory (JSON-LD, RDFa from HTML).
MAX_IN_MEMORY_BYTES = 32 << 20

LINE_BASED = F.LINE_BASED

# pyoxigraph is imported where it parses or writes: the crawl imports this module (its options)
# without it, the cleaning workers import it with their steps (5-7 ms of the crawl's start).


def ox_format(fmt: str) -> ox.RdfFormat:
    """pyoxigraph's serialisation for ``fmt`` (KeyError for a format it does not parse)."""
    import pyoxigraph as ox

    return {
        F.N_TRIPLES: ox.RdfFormat.N_TRIPLES,
        F.N_QUADS: ox.RdfFormat.N_QUADS,
        F.TURTLE: ox.RdfFormat.TURTLE,
        F.TRIG: ox.RdfFormat.TRIG,
        F.RDF_XML: ox.RdfFormat.RDF_XML,
        F.JSON_LD: ox.RdfFormat.JSON_LD,
    }[fmt]


def serialize_quads(quads: Iterable[ox.Quad]) -> bytes:
    """Canonical N-Quads of ``quads`` (pyoxigraph's serializer writes canonical terms)."""
    import pyoxigraph as ox

    return ox.serialize(quads, format=ox.RdfFormat.N_QUADS) or b""


class CleaningError(Exception):
    """The document could not be cleaned at all (unsupported format, refused input)."""


class DocumentLimitExceeded(Exception):
    """Cleaning the document would pass a bound on its work: the document fails (not recorded as
    a parse error of an otherwise cleaned document)."""


@dataclass(frozen=True)
class CleanOptions:
    genid_base: str = GENID_BASE
    gzip_level: int = DEFAULTS["LAUNDROMAT_GZIP_LEVEL"]
    run_bytes: int = RUN_BYTES
    #: Lines per sorted run when the compiled path (:mod:`.native`) sorts and merges.
    sorted_run_bytes: int = SORTED_RUN_BYTES
    #: Buffer of each external sort (``sort -S``): fixed, so memory does not grow with the document
    #: (SORT_BATCH runs are merged in one pass: up to 4 GiB of lines per sort in one pass).
    sort_memory: str = "8M"
    max_messages: int = MAX_MESSAGES
    #: Directory for sorted runs (default: beside the output).
    tmp_dir: str | None = None
    #: Threads of the external sort (``sort --parallel``; the parsing workers use the other core).
    sort_threads: int = 1
    #: Processes parsing a large line-based document in parallel (1: in the cleaning process).
    parse_workers: int = 2
    #: Largest JSON-LD or HTML (RDFa) document cleaned: those parsers hold the whole document.
    max_in_memory_bytes: int = MAX_IN_MEMORY_BYTES
    #: Bytes of input parsed per call (keeps each GIL-holding call short; the parallel work unit).
    parse_chunk: int = PARSE_CHUNK
    #: Bound on blank-node canonicalisation, in estimated permutations (0: none).
    max_canonicalisation_work: int = DEFAULTS["LAUNDROMAT_MAX_CANONICALISATION_WORK"]
    #: Loading remote JSON-LD contexts (None: a document naming one is an error).
    contexts: ContextOptions | None = None


@dataclass
class CleanResult:
    format: str
    key: str | None = None
    path: str | None = None
    statements: int = 0
    unique: int = 0
    duplicates: int = 0
    errors: int = 0
    warnings: int = 0
    messages: list[dict[str, Any]] = field(default_factory=list)
    bytes: int = 0
    uncompressed_bytes: int = 0
    named_graphs: bool = False
    void_data_dumps: list[str] = field(default_factory=list)
    #: Remote JSON-LD contexts the document named (loaded from the cache or fetched).
    contexts: list[str] = field(default_factory=list)
    #: Why the context cache folder did not take a context fetched for it (a full disk, a read-only
    #: folder): the crawl says so once; the document is cleaned with the context all the same.
    context_cache_error: str | None = None
    #: Whether the process that cleaned it had the compiled fast path (:mod:`.native`).
    compiled_path: bool = False

    def as_record(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["number_of_statements"] = doc.pop("statements")
        doc["number_of_unique_statements"] = doc.pop("unique")
        doc["number_of_duplicates"] = doc.pop("duplicates")
        doc["number_of_errors"] = doc.pop("errors")
        doc["number_of_warnings"] = doc.pop("warnings")
        doc["number_of_bytes"] = doc.pop("bytes")
        return doc


class Messages:
    def __init__(self, result: CleanResult, cap: int) -> None:
        self.result = result
        self.cap = cap

    def add(self, kind: str, message: str, line: int | None = None, column: int | None = None) -> None:
        if kind == "error":
            self.result.errors += 1
        else:
            self.result.warnings += 1
        if len(self.result.messages) < self.cap:
            entry: dict[str, str | int] = {"kind": kind, "message": message[:MAX_MESSAGE_CHARS]}
            if line is not None:
                entry["line"] = line
            if column is not None:
                entry["column"] = column
            self.result.messages.append(entry)

    def syntax(self, exc: SyntaxError, line: int | None = None) -> None:
        """A parser's syntax error; its position goes in the fields alone: ``line`` is the
        document's line of the text the parser was given (else the parser's own line)."""
        self.add("error", syntax_message(exc), line if line is not None else exc.lineno, exc.offset)


#: The position pyoxigraph writes before its message; the record keeps it in ``line``/``column``.
_POSITION = re.compile(
    r"^Parser error (?:at line \d+(?: between columns \d+ and \d+| column \d+)?"
    r"|between line \d+ column \d+ and line \d+ column \d+): "
)


def syntax_message(exc: SyntaxError) -> str:
    """A parser's message without the position it writes in its text (which, for a line parsed on
    its own, is always line 1)."""
    return _POSITION.sub("", exc.msg or str(exc))
