"""Parse and clean: any supported serialisation in, canonical sorted unique gzipped N-Quads out.

* Parser: pyoxigraph (a streaming Rust parser; the most conformant candidate measured in
  docs/laundromat.md §4). RDFa comes from HTML through pyRdfa3, without vocabulary fetching.
* Line-based formats (N-Triples, N-Quads) are parsed in chunks; a chunk with an error is re-parsed
  line by line, so one bad statement costs only its own line (LL-style per-statement recovery).
  Other formats stop at their first error (what came before is kept): a parser's guess past a
  syntax error is not a statement of the document.
* Output: canonical N-Quads (identical to canonical N-Triples for default-graph statements, and the
  file is named ``.nt.gz`` when there is no named graph), one statement per line, blank nodes
  skolemised to ``<genid base><document key>/<label>``, sorted in byte order (``LC_ALL=C``) and
  deduplicated with bounded memory: large documents go through ``LC_ALL=C sort -u`` (GNU coreutils,
  an external merge sort with a fixed memory budget).
* The cleaned file is content-addressed: its key is the MD5 of the gzip stream.
* RDF/XML: simple internal entities (Protégé's namespace entities) are expanded before parsing,
  with a bound; any other entity declaration is refused (billion laughs, external entities: see
  :mod:`.xmlentities`).
* The output is RDF 1.1: a literal's RDF 1.2 base direction (``"x"@ar--rtl``) is dropped, as JSON-LD
  does by default, and recorded as a warning; statements with triple terms are dropped as errors.
* IRIs of formats that resolve them (all but N-Triples/N-Quads) have their dot segments removed
  (RFC 3986 §5.2.4), the base IRI's too.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import heapq
import importlib
import io
import itertools
import json
import math
import multiprocessing
import os
import re
import shutil
import subprocess
import tempfile
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import IO
from urllib.parse import quote_from_bytes

import pyoxigraph as ox

from ..defaults import DEFAULTS
from . import formats as F
from .contexts import ContextError, ContextLoader, ContextOptions, has_remote_context, inline_contexts
from .uris import remove_dot_segments
from .xmlentities import EntityRefused, expand_entities

isal_zlib: ModuleType | None
try:
    isal_zlib = importlib.import_module("isal.isal_zlib")
except ImportError:  # optional: zlib is used instead
    isal_zlib = None

GENID_BASE: str = DEFAULTS["LAUNDROMAT_GENID_BASE"]
VOID_DATA_DUMP = b"<http://rdfs.org/ns/void#dataDump>"
MAX_MESSAGES = 100
MAX_MESSAGE_CHARS = 1000
#: Bytes of input parsed per call (keeps each GIL-holding call short).
PARSE_CHUNK = 1 << 20
#: Bytes of output lines sorted in memory; larger documents go through an external sort.
RUN_BYTES = 16 << 20
#: Sorted runs ``sort`` merges at once: enough for one merge pass at any size we sort (a second pass
#: would write the whole document to disk once more before the first line comes out).
SORT_BATCH = 256
#: Largest document of a format that is parsed in memory (JSON-LD, RDFa from HTML).
MAX_IN_MEMORY_BYTES = 32 << 20

OX_FORMATS = {
    F.N_TRIPLES: ox.RdfFormat.N_TRIPLES,
    F.N_QUADS: ox.RdfFormat.N_QUADS,
    F.TURTLE: ox.RdfFormat.TURTLE,
    F.TRIG: ox.RdfFormat.TRIG,
    F.RDF_XML: ox.RdfFormat.RDF_XML,
    F.JSON_LD: ox.RdfFormat.JSON_LD,
}
LINE_BASED = (F.N_TRIPLES, F.N_QUADS)

_IRI = rb'<[^<>"\s]*>'
_BN = rb"_:[^ ]+"
_LIT = rb'"(?:[^"\\]|\\.)*"(?:@[^ ]+|\^\^<[^>]*>)?'
#: A canonical N-Quads line as pyoxigraph writes it (subject, object, graph captured).
_CANONICAL = re.compile(
    rb"^(%s|%s) %s (%s|%s|%s)(?: (%s|%s))? \.$" % (_IRI, _BN, _IRI, _IRI, _BN, _LIT, _IRI, _BN), re.S
)
#: A blank node label pyoxigraph invented for an anonymous node (hex of a random u128).
_GENERATED = re.compile(rb"^[0-9a-f]{16,32}$")
#: A ``<script type="application/ld+json">`` element of HTML: group 1 is its JSON text.
_JSONLD_SCRIPT = re.compile(
    r"""<script\b[^>]*\btype\s*=\s*["']?application/ld\+json\b[^>]*>(.*?)</script\s*>""", re.I | re.S
)
#: An RDF 1.2 directional language tag at the end of a canonical literal: group 1 is the plain tag.
_DIRECTION = re.compile(rb'"(@[^ ]+?)--(?:ltr|rtl)$')
#: An IRI whose path may hold dot segments.
_DOTTED = (b"/./", b"/../", b"/.>", b"/..>", b"/.?", b"/..?", b"/.#", b"/..#")
_IRI_PARTS = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*:(?://[^/?#]*)?)(/[^?#]*)(.*)$", re.S)

# Blank nodes in a block of canonical lines are found by position, so that "_:" inside a literal is
# never touched: the block is split at every "_:<label>" (one regex with a literal prefix: fast), and
# a label is a term when it starts a line (a subject), ends a line (the object of a triple, or a
# graph label), or follows the predicate's ">" and comes before a graph label (an IRI, or a blank
# node ending the line). Literals hold no raw
# newline, so none of these can match inside one. Labels never hold white space, quotes or angle
# brackets.
_BLANK = re.compile(rb'_:([^\s"<>]+)')
_GRAPH_TAIL = re.compile(rb' <[^\s"<>]*> \.\n')


def label_segment(label: bytes) -> bytes:
    """A blank node label as an IRI path segment: characters IRIs may not hold are percent-encoded."""
    return quote_from_bytes(label, safe=":").encode("ascii")


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
    max_canonicalisation_work: int = 20000
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
    messages: list[dict] = field(default_factory=list)
    bytes: int = 0
    uncompressed_bytes: int = 0
    named_graphs: bool = False
    void_data_dumps: list[str] = field(default_factory=list)
    #: Remote JSON-LD contexts the document named (loaded from the cache or fetched).
    contexts: list[str] = field(default_factory=list)

    def as_record(self) -> dict:
        doc = asdict(self)
        doc["number_of_statements"] = doc.pop("statements")
        doc["number_of_unique_statements"] = doc.pop("unique")
        doc["number_of_duplicates"] = doc.pop("duplicates")
        doc["number_of_errors"] = doc.pop("errors")
        doc["number_of_warnings"] = doc.pop("warnings")
        doc["number_of_bytes"] = doc.pop("bytes")
        return doc


class _Messages:
    def __init__(self, result: CleanResult, cap: int):
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

    def syntax(self, exc: SyntaxError, line_offset: int = 0) -> None:
        line = exc.lineno + line_offset if exc.lineno else None
        self.add("error", str(exc), line, exc.offset)


class Skolemiser:
    """Blank nodes → well-known genid IRIs under the document's key.

    The document's own labels are kept (they are stable, so a document cleaned as N-Triples or as
    Turtle gives the same output). With ``relabel=True`` (formats with anonymous blank nodes, for
    which the parser invents random 128-bit hex labels) such labels are numbered in order of first
    appearance as ``-anonN``, which no document label can be (labels cannot start with "-"), so the
    output stays deterministic. A document label that happens to look like a generated one is
    numbered too; the mapping is per document and one-to-one, so equal labels stay equal and
    distinct labels distinct.
    """

    def __init__(self, genid_base: str, doc_key: str, relabel: bool):
        self.prefix = ("<%s%s/" % (genid_base, doc_key)).encode("utf-8")
        self.relabel = relabel
        self.labels: dict[bytes, bytes] = {}

    def term(self, label: bytes) -> bytes:
        """The genid IRI of blank node ``label``."""
        if self.relabel and _GENERATED.match(label):
            mapped = self.labels.get(label)
            if mapped is None:
                mapped = self.labels[label] = b"-anon%d" % len(self.labels)
            label = mapped
        elif label.isascii():
            # N-Triples allows only letters, digits, "_", ":", "-" and "." in ASCII labels: all IRI-safe.
            return self.prefix + label + b">"
        return self.prefix + label_segment(label) + b">"

    def block(self, block: bytes) -> bytes:
        """All blank nodes of a block of canonical lines (newline-terminated, without triple terms) replaced."""
        term, prefix, relabel = self.term, self.prefix, self.relabel
        parts = _BLANK.split(b"\n" + block)
        for i in range(1, len(parts), 2):
            before, after = parts[i - 1], parts[i + 1]
            if (
                before[-1:] == b"\n"
                or after[:3] == b" .\n"
                or (
                    before[-2:] == b"> "
                    and (
                        _GRAPH_TAIL.match(after) is not None
                        or (after == b" " and parts[i + 3][:3] == b" .\n")
                    )
                )
            ):
                label = parts[i]
                # (ASCII labels of N-Triples hold only IRI-safe characters.)
                parts[i] = prefix + label + b">" if not relabel and label.isascii() else term(label)
            else:
                parts[i] = b"_:" + parts[i]
        return b"".join(parts)[1:]


def without_dot_segments(iri: str) -> str:
    """``iri`` with the dot segments of its hierarchical path removed (as resolution does)."""
    match = _IRI_PARTS.match(iri)
    if match is None or not any(s in (".", "..") for s in match.group(2).split("/")):
        return iri
    return match.group(1) + remove_dot_segments(match.group(2)) + match.group(3)


def _iri_term(term: bytes) -> bytes:
    if term[:1] != b"<":
        return term
    return b"<" + without_dot_segments(term[1:-1].decode("utf-8")).encode("utf-8") + b">"


def _rdf11_line(line: bytes, messages: _Messages, line_no: int | None, dots: bool) -> bytes:
    """A canonical line with its literal's base direction dropped (recorded) and, with ``dots``, the
    dot segments of its IRIs removed."""
    match = _CANONICAL.match(line)
    if match is None:
        return line
    subject, obj, graph = match.group(1), match.group(2), match.group(3)
    predicate = line[match.end(1) + 1 : match.start(2) - 1]
    if obj[:1] == b'"' and (obj.endswith(b"--ltr") or obj.endswith(b"--rtl")):
        direction = _DIRECTION.search(obj)
        if direction is not None:
            messages.add(
                "warning",
                "base direction %s dropped (the output is RDF 1.1)" % obj[direction.end(1) + 2 :].decode(),
                line_no,
            )
            obj = obj[: direction.end(1)]
    if dots:
        subject, predicate, obj = _iri_term(subject), _iri_term(predicate), _iri_term(obj)
        graph = _iri_term(graph) if graph else graph
    return b" ".join(t for t in (subject, predicate, obj, graph) if t) + b" ."


def canonical_lines(
    block: bytes, skolem: Skolemiser, messages: _Messages, line_no: int | None, dots: bool = False
) -> bytes:
    """Serializer output made final: statements RDF 1.1 cannot hold dropped (recorded as errors),
    base directions dropped (recorded), with ``dots`` dot segments removed, blank nodes skolemised."""
    if b"<<" in block:
        keep = []
        for line in block.split(b"\n")[:-1]:
            if b"<<" in line and _CANONICAL.match(line) is None:
                messages.add(
                    "error",
                    "statement not representable in RDF 1.1 N-Quads: %s" % line.decode("utf-8", "replace"),
                    line_no,
                )
                continue
            keep.append(line)
        block = b"\n".join(keep) + b"\n" if keep else b""
    dotted = dots and any(d in block for d in _DOTTED)
    if dotted or (b"--" in block and (b"--ltr" in block or b"--rtl" in block)):
        block = b"".join(
            _rdf11_line(line, messages, line_no, dots) + b"\n" for line in block.split(b"\n")[:-1]
        )
    if b"_:" in block:
        block = skolem.block(block)
    return block


def has_named_graph(block: bytes) -> bool:
    return any(m is not None and m.group(3) for m in map(_CANONICAL.match, block.split(b"\n")))


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    """A pipe of a ``sort`` started with ``subprocess.PIPE`` (``Popen`` types its pipes Optional)."""
    if stream is None:
        raise CleaningError("sort was started without this pipe")
    return stream


class _Sink:
    """Collects canonical lines; sorts and deduplicates them in bounded memory; writes the gzip.

    Small documents are sorted in memory. Past ``run_bytes`` the lines stream into an external
    ``LC_ALL=C sort -u -S <sort_memory>`` (GNU coreutils, spilling to disk itself), which sorts
    while parsing goes on (with parallel parsing workers: one sort each, merged by ``sort -m -u``);
    without ``sort``, sorted runs are merged in Python.
    """

    def __init__(
        self, result: CleanResult, skolem: Skolemiser, messages: _Messages, options: CleanOptions, tmp: Path
    ):
        self.result = result
        self.skolem = skolem
        self.messages = messages
        self.options = options
        self.tmp = tmp
        self.blocks: list[bytes] = []
        self.size = 0
        self.sorter: subprocess.Popen | None = None
        #: The sorts feeding ``sorter`` (``sort -m``) when parsing workers each have their own.
        self.parts: list[subprocess.Popen] = []
        self.runs: list[Path] = []
        #: Whether a statement in a named graph was seen (only quad formats can have one).
        self.named = False
        self.check_graphs = result.format in (F.N_QUADS, F.TRIG, F.JSON_LD)
        #: Size of the document (sizes the external sort's buffer).
        self.input_bytes = 0
        #: Whether the format resolves IRIs (their dot segments are removed).
        self.dots = result.format not in LINE_BASED

    def add_block(self, block: bytes, line_no: int | None = None) -> None:
        """A block of serializer output (newline-terminated canonical lines)."""
        if not block:
            return
        self.add_lines(canonical_lines(block, self.skolem, self.messages, line_no, self.dots))

    def add_lines(self, block: bytes) -> None:
        """A block of final (skolemised) lines."""
        if not block:
            return
        if self.check_graphs and not self.named:
            self.named = has_named_graph(block)
        self.result.statements += block.count(b"\n")
        if self.sorter is not None:
            _pipe(self.sorter.stdin).write(block)
            return
        self.blocks.append(block)
        self.size += len(block)
        if self.size >= self.options.run_bytes:
            self._spill()

    def _sorted_unique(self) -> list[bytes]:
        lines = sorted(set(b"".join(self.blocks).split(b"\n")[:-1]))
        self.blocks, self.size = [], 0
        return lines

    def _sort_process(self, args: list[str], **popen) -> subprocess.Popen:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, env=dict(os.environ, LC_ALL="C"), **popen)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is None:  # stdin not piped (the merging sort)
                continue
            with contextlib.suppress(OSError):  # bigger pipes: fewer wake-ups of both sides
                fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
        return proc

    def _sort_args(self) -> list[str] | None:
        """``LC_ALL=C sort -u`` with a fixed buffer (None when there is no ``sort``)."""
        sort = shutil.which("sort")
        if sort is None:
            return None
        memory = self.options.sort_memory
        return [
            sort,
            "-u",
            "-S",
            memory,
            "--parallel=%d" % self.options.sort_threads,
            "--batch-size=%d" % SORT_BATCH,
            "-T",
            str(self.tmp),
        ]

    def start_sorter(self) -> bool:
        """Send every line from now on to ``LC_ALL=C sort -u`` (False when there is no ``sort``)."""
        args = self._sort_args()
        if args is None:
            return False
        self.sorter = self._sort_process(args, stdin=subprocess.PIPE)
        stdin = _pipe(self.sorter.stdin)
        for block in self.blocks:
            stdin.write(block)
        self.blocks, self.size = [], 0
        return True

    def start_sorters(self, n: int) -> list[subprocess.Popen] | None:
        """``n`` sorts, one per parsing worker, whose outputs ``sort -m -u`` merges: the final merges
        run in parallel and no worker waits for another's write. None when there is no ``sort``."""
        args = self._sort_args()
        if args is None or self.blocks:
            return None
        parts = [self._sort_process(args, stdin=subprocess.PIPE) for _ in range(n)]
        fds = [_pipe(part.stdout).fileno() for part in parts]
        self.sorter = self._sort_process(
            args[:1] + ["-m", "-u", "-T", str(self.tmp)] + ["/dev/fd/%d" % fd for fd in fds],
            stdin=subprocess.DEVNULL,
            pass_fds=fds,
        )
        for part in parts:
            _pipe(part.stdout).close()  # the merging sort holds them now
        self.parts = parts
        return parts

    def _spill(self) -> None:
        if self.start_sorter():
            return
        lines = self._sorted_unique()
        path = self.tmp / ("run-%05d" % len(self.runs))
        with open(path, "wb") as f:
            f.write(b"\n".join(lines))
            f.write(b"\n")
        self.runs.append(path)

    def merged(self) -> Iterator[bytes]:
        """Every unique line in byte order, newline-terminated, in blocks of whole lines."""
        if self.sorter is not None:
            yield from self._from_sorter()
            return
        if self.runs:
            if self.blocks:
                self._spill()
            yield from _heap_merge(self.runs)
            return
        lines = self._sorted_unique()
        for i in range(0, len(lines), 65536):
            yield b"\n".join(lines[i : i + 65536]) + b"\n"

    def _from_sorter(self) -> Iterator[bytes]:
        proc = self.sorter
        if proc is None:
            raise CleaningError("no sort was started")
        stdout = _pipe(proc.stdout)
        for writer in [proc.stdin] + [part.stdin for part in self.parts]:
            if writer is not None and not writer.closed:
                writer.close()
        try:
            rest = b""
            while True:
                chunk = stdout.read(1 << 20)
                if not chunk:
                    break
                data = rest + chunk
                cut = data.rfind(b"\n") + 1
                data, rest = data[:cut], data[cut:]
                if data:
                    yield data
        finally:
            stdout.close()
            for sorter in [*self.parts, proc]:
                if sorter.wait() != 0:
                    raise CleaningError("sort failed with status %d" % sorter.returncode)

    def abort(self) -> None:
        for sorter in self.parts + ([self.sorter] if self.sorter is not None else []):
            if sorter.poll() is None:
                sorter.kill()
                sorter.wait()

    def write(self, out_dir: Path) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp_path = self.tmp / "clean.gz"
        digest = hashlib.md5()
        compressor = _gzip_compressor(self.options.gzip_level)
        unique = raw_bytes = 0
        dumps: list[str] = []
        with open(tmp_path, "wb") as out:
            for block in self.merged():
                unique += block.count(b"\n")
                raw_bytes += len(block)
                if VOID_DATA_DUMP in block and len(dumps) < 1000:
                    for line in block.split(b"\n"):
                        if VOID_DATA_DUMP in line:
                            dumps.extend(_data_dump(line))
                data = compressor.compress(block)
                if data:
                    digest.update(data)
                    out.write(data)
            tail = compressor.flush()
            digest.update(tail)
            out.write(tail)
        named = self.named
        key = digest.hexdigest()
        final = out_dir / ("%s.%s.gz" % (key, "nq" if named else "nt"))
        os.replace(tmp_path, final)
        r = self.result
        r.key, r.path, r.unique, r.duplicates = key, str(final), unique, r.statements - unique
        r.bytes, r.uncompressed_bytes, r.named_graphs, r.void_data_dumps = (
            final.stat().st_size,
            raw_bytes,
            named,
            dumps,
        )


def _gzip_compressor(level: int):
    """A gzip stream compressor: ISA-L (``isal``, several times faster than zlib at levels 0-3) when
    installed, else zlib. Either way the output is ordinary gzip."""
    if isal_zlib is not None and level <= isal_zlib.ISAL_BEST_COMPRESSION:
        return isal_zlib.compressobj(level, isal_zlib.DEFLATED, 31)
    return zlib.compressobj(level, zlib.DEFLATED, 31)


def _data_dump(line: bytes) -> list[str]:
    match = _CANONICAL.match(line)
    if match and match.group(2).startswith(b"<") and VOID_DATA_DUMP in line.split(b" ", 2)[1]:
        return [match.group(2)[1:-1].decode("utf-8")]
    return []


def _heap_merge(runs: list[Path]) -> Iterator[bytes]:
    """Merge sorted run files without ``sort`` (slower; for systems without GNU coreutils)."""
    files = [open(p, "rb") for p in runs]
    try:
        last, block = None, []
        for line in heapq.merge(*files):
            if line != last:
                block.append(line)
                last = line
                if len(block) >= 65536:
                    yield b"".join(block)
                    block = []
        if block:
            yield b"".join(block)
    finally:
        for f in files:
            f.close()


# -- statement sources -------------------------------------------------------------------------


def _serialize(quads: Iterable) -> bytes:
    return ox.serialize(quads, format=ox.RdfFormat.N_QUADS) or b""


def _parse_lines(data: bytes, oxf, skolem: Skolemiser, messages: _Messages, line_offset: int) -> bytes:
    """The final lines of a block of whole N-Triples/N-Quads lines. A block with an error is parsed
    again line by line, so one bad statement costs only its own line (a line longer than the
    parser's token buffer too: it raises MemoryError)."""
    try:
        return canonical_lines(_serialize(ox.parse(data, oxf)), skolem, messages, line_offset + 1)
    except (SyntaxError, MemoryError):
        pass
    out = []
    for i, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            out.append(canonical_lines(_serialize(ox.parse(line, oxf)), skolem, messages, line_offset + i))
        except SyntaxError as exc:
            messages.add("error", str(exc), line_offset + i, exc.offset)
        except MemoryError as exc:
            messages.add("error", "statement of %d bytes dropped: %s" % (len(line), exc), line_offset + i)
    return b"".join(out)


def _line_count(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _line_based(path: Path, fmt: str, sink: _Sink, messages: _Messages, chunk_bytes: int) -> None:
    oxf = OX_FORMATS[fmt]
    line_offset = 0
    with open(path, "rb") as f:
        rest = b""
        while True:
            chunk = f.read(chunk_bytes)
            data = rest + chunk
            if chunk:
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    rest = data
                    continue
                data, rest = data[:cut], data[cut:]
            else:
                rest = b""
            if data:
                sink.add_lines(_parse_lines(data, oxf, sink.skolem, messages, line_offset))
                line_offset += _line_count(data)
            if not chunk:
                break


# -- line-based documents in parallel ------------------------------------------------------------
#
# A large N-Triples/N-Quads document is cut into ``parse_chunk`` byte ranges; each forked worker takes the
# next range (the lines that start in it), parses, serialises and skolemises it, and writes the lines
# straight into its own external sort; ``sort -m -u`` merges the workers' sorted outputs. Workers
# report counts and messages per range; line numbers are made absolute afterwards.


def _read_range(f, index: int, span: int, size: int) -> bytes:
    """The whole lines that start in byte range ``index`` (of ``span`` bytes each) of the file."""
    start, end = index * span, min((index + 1) * span, size)
    if index:
        f.seek(start - 1)
        data = f.read(end - start + 1)
        newline = data.find(b"\n")
        if newline < 0:
            return b""  # no line starts here: the previous range's last line runs through it
        data = data[newline + 1 :]
    else:
        f.seek(0)
        data = f.read(end)
    if end < size and data and not data.endswith(b"\n"):
        parts = [data]
        while True:
            more = f.read(1 << 16)
            newline = more.find(b"\n")
            if newline >= 0:
                parts.append(more[: newline + 1])
                break
            parts.append(more)
            if not more:
                break
        data = b"".join(parts)
    return data


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _parse_ranges(
    path: str,
    fmt: str,
    skolem: Skolemiser,
    check_graphs: bool,
    cap: int,
    counter,
    n_ranges: int,
    span: int,
    fd: int,
) -> list[tuple]:
    """Parse the next untaken byte range until none is left, writing the final lines to ``fd``
    (a sort's input); per range: its index, lines, statements, errors, warnings, messages, and
    whether a named graph was seen so far."""
    oxf = OX_FORMATS[fmt]
    size = os.path.getsize(path)
    done, named = [], False
    with open(path, "rb") as f:
        while True:
            with counter.get_lock():
                index = counter.value
                counter.value = index + 1
            if index >= n_ranges:
                return done
            data = _read_range(f, index, span, size)
            local = CleanResult(format=fmt)
            out = _parse_lines(data, oxf, skolem, _Messages(local, cap), 0) if data else b""
            if out:
                if check_graphs and not named:
                    named = has_named_graph(out)
                _write_all(fd, out)
            done.append(
                (
                    index,
                    _line_count(data),
                    out.count(b"\n"),
                    local.errors,
                    local.warnings,
                    local.messages,
                    named,
                )
            )


def _range_worker(*args, conn) -> None:
    """:func:`_parse_ranges` in a forked process; the answer (or the error) goes back on ``conn``."""
    try:
        conn.send(_parse_ranges(*args))
    except BaseException as exc:  # reported to the parent, which fails the document
        conn.send(("error", "%s: %s" % (type(exc).__name__, exc)))
    finally:
        conn.close()


def _can_fork(workers: int) -> bool:
    return (
        workers > 1
        and "fork" in multiprocessing.get_all_start_methods()
        and not multiprocessing.current_process().daemon
    )


def _line_based_parallel(path: Path, fmt: str, sink: _Sink, messages: _Messages, workers: int) -> None:
    span = sink.options.parse_chunk
    sorters = sink.start_sorters(workers)
    if sorters is None:
        _line_based(path, fmt, sink, messages, span)
        return
    ctx = multiprocessing.get_context("fork")
    n_ranges = max(1, -(-path.stat().st_size // span))
    counter = ctx.Value("q", 0)
    shared = (str(path), fmt, sink.skolem, sink.check_graphs, messages.cap, counter, n_ranges, span)
    jobs = []
    # This process parses too (with the first sort): one process fewer holding a copy of its memory.
    for sorter in sorters[1:]:
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(
            target=_range_worker,
            daemon=True,
            args=(*shared, _pipe(sorter.stdin).fileno()),
            kwargs={"conn": send},
        )
        proc.start()
        send.close()
        jobs.append((recv, proc))
    for sorter in sorters[1:]:
        _pipe(sorter.stdin).close()  # the workers hold it: each sort ends when the workers are done
    done, failure = [], None
    try:
        done.extend(_parse_ranges(*shared, _pipe(sorters[0].stdin).fileno()))
    except Exception as exc:  # the workers are still collected below
        failure = "%s: %s" % (type(exc).__name__, exc)
    finally:
        _pipe(sorters[0].stdin).close()
    for recv, proc in jobs:
        try:
            answer = recv.recv()
        except EOFError:
            answer = ("error", "a parsing worker died (exit code %s)" % proc.exitcode)
        recv.close()
        proc.join()
        if isinstance(answer, tuple):
            failure = answer[1]
        else:
            done.extend(answer)
    if failure is not None:
        raise CleaningError("parsing failed: %s" % failure)
    result, line_offset = sink.result, 0
    for _, lines, statements, errors, warnings, found, named in sorted(done):
        result.statements += statements
        result.errors += errors
        result.warnings += warnings
        for message in found:
            if len(result.messages) < messages.cap:
                if "line" in message:
                    message["line"] += line_offset
                result.messages.append(message)
        sink.named = sink.named or named
        line_offset += lines


def _until_error(quads: Iterator, messages: _Messages) -> Iterator:
    """The parsed quads up to the first syntax error, which is recorded and ends the document."""
    try:
        yield from quads
    except MemoryError as exc:  # a token past the parser's buffer (16 MiB)
        messages.add("error", "a token longer than the parser's buffer: %s" % exc)
        messages.add("warning", "parsing stopped at the first error (no recovery for this format)")
    except SyntaxError as exc:
        messages.syntax(exc)
        messages.add(
            "warning",
            "parsing stopped at the first error (no recovery for this format)",
            exc.lineno,
            exc.offset,
        )


def _batched(quads: Iterator, messages: _Messages, size: int = 10_000) -> Iterator[bytes]:
    """Serialised blocks of ``size`` parsed quads (the serializer pulls them straight from the parser)."""
    quads = _until_error(quads, messages)
    while True:
        block = ox.serialize(itertools.islice(quads, size), format=ox.RdfFormat.N_QUADS)
        if not block:
            return
        yield block


def _streamed(path: Path, fmt: str, base_iri: str | None, sink: _Sink, messages: _Messages) -> None:
    if fmt == F.RDF_XML:
        try:
            path = expand_entities(path, sink.tmp / "expanded.rdf")
        except EntityRefused as exc:
            raise CleaningError(str(exc)) from None
    if fmt == F.JSON_LD:
        _check_in_memory(path, "JSON-LD", sink.options)
        # The JSON-LD parser needs the whole document; canonical blank node labels keep it deterministic.
        quads = _jsonld(path.read_bytes(), base_iri, sink, messages)
        _from_dataset(ox.Dataset(_until_error(quads, messages)), sink)
        return
    quads = ox.parse(path=str(path), format=OX_FORMATS[fmt], base_iri=base_iri)
    for block in _batched(quads, messages):
        sink.add_block(block)


def canonicalisation_work(dataset: ox.Dataset, bound: int) -> int:
    """An estimate of RDFC-1.0's work on ``dataset`` (stops counting past ``bound``).

    Blank nodes with a unique first-degree hash (RDFC-1.0 §4.6: their quads, with themselves as
    ``_:a`` and other blank nodes as ``_:z``) cost nothing more. Each other one is told apart by
    hashing every permutation of its related blank nodes that share a hash (§4.8): the product of
    the factorials of those groups' sizes. A clique of n such nodes costs n·(n-1)!.
    """
    quads_of: dict[str, list] = {}
    for quad in dataset:
        for label in {
            t.value for t in (quad.subject, quad.object, quad.graph_name) if isinstance(t, ox.BlankNode)
        }:
            quads_of.setdefault(label, []).append(quad)

    def first_degree(label: str) -> int:
        rows = []
        for quad in quads_of[label]:
            terms = (quad.subject, quad.predicate, quad.object, quad.graph_name)
            rows.append(
                " ".join(
                    ("_:a" if t.value == label else "_:z") if isinstance(t, ox.BlankNode) else str(t)
                    for t in terms
                )
            )
        return hash(tuple(sorted(rows)))

    hashes = {label: first_degree(label) for label in quads_of}
    shared = Counter(hashes.values())
    work = 0
    for label, first in hashes.items():
        if shared[first] == 1:
            continue
        related = {
            t.value
            for quad in quads_of[label]
            for t in (quad.subject, quad.object, quad.graph_name)
            if isinstance(t, ox.BlankNode) and t.value != label
        }
        permutations = 1
        for size in Counter(hashes[r] for r in related).values():
            permutations *= math.factorial(min(size, 20))
        work += permutations
        if work > bound:
            break
    return work


def _jsonld(data: bytes, base_iri: str | None, sink: _Sink, messages: _Messages) -> Iterator:
    """The quads of a JSON-LD document, its remote contexts loaded first (through the cache and
    the guarded fetch: :mod:`.contexts`)."""
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        document = None  # the parser says what is wrong
    try:
        remote = document is not None and has_remote_context(document)
    except RecursionError:  # nested deeper than Python recurses: the parser refuses it anyway
        remote = False
    if remote:
        if sink.options.contexts is None:
            raise CleaningError("remote context not loaded: no context loader is configured")
        loader = ContextLoader(sink.options.contexts)
        try:
            document = inline_contexts(document, base_iri, loader)
        except ContextError as exc:
            raise CleaningError("remote context not loaded: %s" % exc) from None
        finally:
            sink.result.contexts.extend(u for u in loader.urls if u not in sink.result.contexts)
        data = json.dumps(document).encode("utf-8")
    return ox.parse(data, ox.RdfFormat.JSON_LD, base_iri=base_iri)


def _from_dataset(dataset: ox.Dataset, sink: _Sink) -> None:
    data = _serialize(dataset)
    if b"_:" not in data:  # no blank node (a literal's "_:" at worst costs the check below)
        sink.add_block(data)
        return
    bound = sink.options.max_canonicalisation_work
    if bound:
        work = canonicalisation_work(dataset, bound)
        if work > bound:
            raise DocumentLimitExceeded(
                "blank-node canonicalisation refused: its estimated work (%d permutations) exceeds %d "
                "(LAUNDROMAT_MAX_CANONICALISATION_WORK)" % (work, bound)
            )
    dataset.canonicalize(ox.CanonicalizationAlgorithm.RDFC_1_0)
    sink.add_block(_serialize(dataset))


def _check_in_memory(path: Path, kind: str, options: CleanOptions) -> None:
    if path.stat().st_size > options.max_in_memory_bytes:
        raise CleaningError(
            "%s larger than %d bytes is not cleaned (it would be parsed in memory)"
            % (kind, options.max_in_memory_bytes)
        )


@contextlib.contextmanager
def _literals_as_written() -> Iterator[None]:
    """rdflib normalises typed literals it builds (``"007"^^xsd:integer`` → ``"7"``, ``Z`` →
    ``+00:00``) unless told not to: the laundromat keeps a document's lexical forms."""
    import rdflib

    saved = rdflib.NORMALIZE_LITERALS
    rdflib.NORMALIZE_LITERALS = False
    try:
        yield
    finally:
        rdflib.NORMALIZE_LITERALS = saved


def _quads_per_statement(data: bytes, fmt, messages: _Messages) -> list:
    """The quads of serialised statements (one a line); a line the parser refuses (a relative IRI
    in RDFa without a base) is recorded and costs only itself."""
    try:
        return list(ox.parse(data, fmt))
    except SyntaxError:
        pass
    quads: list = []
    for i, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            try:
                quads.extend(ox.parse(line, fmt))
            except SyntaxError as exc:
                messages.add("error", "%s: %s" % (exc, line.decode("utf-8", "replace")[:200]), i)
    return quads


def _rdfa(path: Path, base_iri: str | None, sink: _Sink, messages: _Messages) -> None:
    """RDFa of an HTML document: the recoded text (its declaration made true by the recoding) goes
    to the parser as text, so no charset sniffing can take the document for another encoding."""
    _check_in_memory(path, "HTML (RDFa)", sink.options)
    from pyRdfa import pyRdfa
    from pyRdfa.options import Options

    options = Options(
        vocab_expansion=False,
        vocab_cache=False,
        refresh_vocab_cache=False,
        embedded_rdf=False,
        output_processor_graph=False,
        output_default_graph=True,
    )
    processor = pyRdfa(options, base=base_iri or "", media_type="text/html")
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        with _literals_as_written():
            graph = processor.graph_from_source(io.StringIO(text))
    except Exception as exc:  # pyRdfa raises its own and html5lib's errors
        messages.add("error", "RDFa extraction failed: %s: %s" % (type(exc).__name__, exc))
        return
    dataset = ox.Dataset(_quads_per_statement(_n_triples(graph, messages), ox.RdfFormat.N_TRIPLES, messages))
    for number, script in enumerate(_JSONLD_SCRIPT.finditer(text), start=1):
        # JSON-LD embedded in HTML is RDF too (JSON-LD 1.1 §7.3); each script is its own document.
        line = text.count("\n", 0, script.start(1)) + 1
        try:
            quads = list(_jsonld(script.group(1).encode("utf-8"), base_iri, sink, messages))
        except (CleaningError, SyntaxError, ValueError) as exc:
            messages.add("error", "JSON-LD script %d: %s" % (number, exc), line)
            continue
        for quad in quads:
            dataset.add(quad)
    _from_dataset(dataset, sink)


def _n_triples(graph, messages: _Messages) -> bytes:
    """An rdflib graph as N-Triples, one statement at a time: a term rdflib cannot write (an IRI
    with a space) costs its own statement, recorded, not the graph's."""
    from rdflib.plugins.serializers.nt import _nt_row  # the row writer of rdflib's N-Triples serializer

    rows = []
    for triple in graph:
        try:
            rows.append(_nt_row(triple))
        except Exception as exc:  # rdflib refuses terms it cannot write
            messages.add("error", "statement dropped: %s" % exc)
    return "".join(sorted(rows)).encode("utf-8")


def clean_file(
    path: Path | str,
    fmt: str,
    doc_key: str,
    out_dir: Path | str,
    *,
    base_iri: str | None = None,
    options: CleanOptions = CleanOptions(),
) -> CleanResult:
    """Clean the UTF-8 document at ``path`` (serialisation ``fmt``) into ``out_dir/<clean key>.n[tq].gz``."""
    path, out_dir = Path(path), Path(out_dir)
    if base_iri:
        base_iri = without_dot_segments(base_iri)
    if fmt not in F.FORMATS:
        raise CleaningError("unsupported format %r" % fmt)
    result = CleanResult(format=fmt)
    messages = _Messages(result, options.max_messages)
    skolem = Skolemiser(options.genid_base, doc_key, relabel=fmt not in LINE_BASED)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="clean-", dir=options.tmp_dir or out_dir) as tmp:
        sink = _Sink(result, skolem, messages, options, Path(tmp))
        sink.input_bytes = path.stat().st_size if path.exists() else 0
        try:
            _parse_into(path, fmt, base_iri, sink, messages, options)
            sink.write(out_dir)
        finally:
            sink.abort()
    return result


def _parse_into(
    path: Path, fmt: str, base_iri: str | None, sink: _Sink, messages: _Messages, options: CleanOptions
) -> None:
    """Every statement of the document into ``sink``; an error that ends the document is recorded
    (what came before it is kept), a bound passed (:class:`DocumentLimitExceeded`) is raised."""
    try:
        if (
            fmt in LINE_BASED
            and path.stat().st_size >= options.run_bytes
            and _can_fork(options.parse_workers)
        ):
            _line_based_parallel(path, fmt, sink, messages, options.parse_workers)
        elif fmt in LINE_BASED:
            _line_based(path, fmt, sink, messages, options.parse_chunk)
        elif fmt == F.RDFA:
            _rdfa(path, base_iri, sink, messages)
        else:
            _streamed(path, fmt, base_iri, sink, messages)
    except CleaningError as exc:
        messages.add("error", str(exc))
    except (OSError, ValueError) as exc:
        messages.add("error", "%s: %s" % (type(exc).__name__, exc))
