"""Parse and clean: any supported serialisation in, canonical sorted unique gzipped N-Quads out.

* Parser: pyoxigraph (a streaming Rust parser; the most conformant candidate measured in
  LAUNDROMAT.md §3.4). RDFa comes from HTML through pyRdfa3, without vocabulary fetching.
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
* RDF/XML with DTD entity declarations is refused (the parser would expand them: billion laughs);
  external entities are never fetched.
"""

from __future__ import annotations

import gzip
import hashlib
import heapq
import io
import os
import re
import shutil
import subprocess
import tempfile
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Iterator
from urllib.parse import quote_from_bytes

import pyoxigraph as ox

from . import formats as F

GENID_BASE = "https://lodlaundromat.org/.well-known/genid/"
VOID_DATA_DUMP = b"<http://rdfs.org/ns/void#dataDump>"
MAX_MESSAGES = 100
MAX_MESSAGE_CHARS = 1000
#: Bytes of input parsed per call (keeps each GIL-holding call short).
PARSE_CHUNK = 1 << 20
#: Bytes of output lines sorted in memory; larger documents go through an external sort.
RUN_BYTES = 16 << 20
#: Largest HTML document cleaned for RDFa (it is parsed in memory).
MAX_RDFA_BYTES = 32 << 20

OX_FORMATS = {
    F.N_TRIPLES: ox.RdfFormat.N_TRIPLES,
    F.N_QUADS: ox.RdfFormat.N_QUADS,
    F.TURTLE: ox.RdfFormat.TURTLE,
    F.TRIG: ox.RdfFormat.TRIG,
    F.RDF_XML: ox.RdfFormat.RDF_XML,
    F.JSON_LD: ox.RdfFormat.JSON_LD,
}
LINE_BASED = (F.N_TRIPLES, F.N_QUADS)

_IRI = rb"<[^>]*>"
_BN = rb"_:[^ ]+"
_LIT = rb'"(?:[^"\\]|\\.)*"(?:@[^ ]+|\^\^<[^>]*>)?'
#: A canonical N-Quads line as pyoxigraph writes it (subject, object, graph captured).
_CANONICAL = re.compile(
    rb"^(%s|%s) %s (%s|%s|%s)(?: (%s|%s))? \.$" % (_IRI, _BN, _IRI, _IRI, _BN, _LIT, _IRI, _BN), re.S)
#: A blank node label pyoxigraph invented for an anonymous node (hex of a random u128).
_GENERATED = re.compile(rb"^[0-9a-f]{16,32}$")
_PLAIN_LABEL = re.compile(rb"^[A-Za-z0-9._~\-]+$")
_DTD_ENTITY = re.compile(rb"<!ENTITY", re.I)


class CleaningError(Exception):
    """The document could not be cleaned at all (unsupported format, refused input)."""


@dataclass(frozen=True)
class CleanOptions:
    genid_base: str = GENID_BASE
    gzip_level: int = 1
    run_bytes: int = RUN_BYTES
    #: Memory of the external sort (``sort -S``).
    sort_memory: str = "96M"
    max_messages: int = MAX_MESSAGES
    #: Directory for sorted runs (default: beside the output).
    tmp_dir: str | None = None


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
            entry = {"kind": kind, "message": message[:MAX_MESSAGE_CHARS]}
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
    output stays deterministic.
    """

    def __init__(self, genid_base: str, doc_key: str, relabel: bool):
        self.prefix = ("<%s%s/" % (genid_base, doc_key)).encode("utf-8")
        self.relabel = relabel
        self.labels: dict[bytes, bytes] = {}

    def _term(self, token: bytes) -> bytes:
        label = token[2:]
        if self.relabel and _GENERATED.match(label):
            mapped = self.labels.get(label)
            if mapped is None:
                mapped = self.labels[label] = b"-anon%d" % len(self.labels)
            label = mapped
        if not _PLAIN_LABEL.match(label):
            # Labels may hold characters IRIs may not (U+FFF0..U+FFFD, ...): percent-encode.
            label = quote_from_bytes(label, safe="").encode("ascii")
        return self.prefix + label + b">"

    def block(self, block: bytes) -> bytes | None:
        """All blank nodes of a block of canonical lines replaced in one pass, when that is safe;
        else None (go line by line). Unsafe: a ``_:`` after a quote on its line (it may be inside a
        literal, or a graph label after one). A ``_:`` not at a term start is inside an IRI."""
        parts = block.split(b"_:")
        out = [parts[0]]
        prefix = self.prefix
        prev = parts[0]
        quoted = b'"' in prev[prev.rfind(b"\n") + 1:]
        for part in parts[1:]:
            if prev[-1:] in (b" ", b"\n", b""):
                if quoted:
                    return None
                end = part.find(b" ")
                label = part[:end]
                if not label.isascii():
                    label = quote_from_bytes(label, safe="").encode("ascii")
                out.append(prefix)
                out.append(label)
                out.append(b">")
                out.append(part[end:])
            else:
                out.append(b"_:")
                out.append(part)
            newline = part.rfind(b"\n")
            quoted = (b'"' in part[newline + 1:]) if newline >= 0 else (quoted or b'"' in part)
            prev = part
        return b"".join(out)

    def line(self, line: bytes) -> bytes | None:
        """The line with its blank nodes replaced; None when it is not a line this cleaner can read."""
        match = _CANONICAL.match(line)
        if match is None:
            return None
        out, last = [], 0
        for group in (1, 2, 3):
            token = match.group(group)
            if token is not None and token.startswith(b"_:"):
                start, end = match.span(group)
                out.append(line[last:start])
                out.append(self._term(token))
                last = end
        if not out:
            return line
        out.append(line[last:])
        return b"".join(out)


class _Sink:
    """Collects canonical lines; sorts and deduplicates them in bounded memory; writes the gzip.

    Small documents are sorted in memory. Past ``run_bytes`` the lines stream into an external
    ``LC_ALL=C sort -u -S <sort_memory>`` (GNU coreutils, spilling to disk itself), which sorts on
    the other core while parsing goes on; without ``sort``, sorted runs are merged in Python.
    """

    def __init__(self, result: CleanResult, skolem: Skolemiser, messages: _Messages, options: CleanOptions, tmp: Path):
        self.result = result
        self.skolem = skolem
        self.messages = messages
        self.options = options
        self.tmp = tmp
        self.blocks: list[bytes] = []
        self.size = 0
        self.sorter: subprocess.Popen | None = None
        self.runs: list[Path] = []
        #: Whether a statement in a named graph was seen (only quad formats can have one).
        self.named = False
        self.check_graphs = result.format in (F.N_QUADS, F.TRIG, F.JSON_LD)

    def add_block(self, block: bytes, line_no: int | None = None) -> None:
        """A block of canonical lines (newline-terminated) from the serializer."""
        if not block:
            return
        if b"_:" in block or b"<<" in block:
            fast = None if self.skolem.relabel or b"<<" in block else self.skolem.block(block)
            if fast is None:
                lines = self._skolemise(block.split(b"\n")[:-1], line_no)
                fast = b"\n".join(lines) + b"\n" if lines else b""
            block = fast
            if not block:
                return
        if self.check_graphs and not self.named:
            self.named = any(m is not None and m.group(3) for m in map(_CANONICAL.match, block.split(b"\n")))
        self.result.statements += block.count(b"\n")
        if self.sorter is not None:
            self.sorter.stdin.write(block)
            return
        self.blocks.append(block)
        self.size += len(block)
        if self.size >= self.options.run_bytes:
            self._spill()

    def _skolemise(self, lines: list[bytes], line_no: int | None) -> list[bytes]:
        out = []
        for line in lines:
            if b"_:" in line or b"<<" in line:
                fixed = self.skolem.line(line)
                if fixed is None:
                    self.messages.add("error", "statement not representable in RDF 1.1 N-Quads: %s"
                                      % line.decode("utf-8", "replace"), line_no)
                    continue
                line = fixed
            out.append(line)
        return out

    def _sorted_unique(self) -> list[bytes]:
        lines = sorted(set(b"".join(self.blocks).split(b"\n")[:-1]))
        self.blocks, self.size = [], 0
        return lines

    def _spill(self) -> None:
        sort = shutil.which("sort")
        if sort is not None:
            self.sorter = subprocess.Popen(
                [sort, "-u", "-S", self.options.sort_memory, "-T", str(self.tmp)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=dict(os.environ, LC_ALL="C"))
            for block in self.blocks:
                self.sorter.stdin.write(block)
            self.blocks, self.size = [], 0
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
            yield b"\n".join(lines[i:i + 65536]) + b"\n"

    def _from_sorter(self) -> Iterator[bytes]:
        proc = self.sorter
        proc.stdin.close()
        try:
            rest = b""
            while True:
                chunk = proc.stdout.read(1 << 20)
                if not chunk:
                    break
                data = rest + chunk
                cut = data.rfind(b"\n") + 1
                data, rest = data[:cut], data[cut:]
                if data:
                    yield data
        finally:
            proc.stdout.close()
            if proc.wait() != 0:
                raise CleaningError("sort -u failed with status %d" % proc.returncode)

    def abort(self) -> None:
        if self.sorter is not None and self.sorter.poll() is None:
            self.sorter.kill()
            self.sorter.wait()

    def write(self, out_dir: Path) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp_path = self.tmp / "clean.gz"
        digest = hashlib.md5()
        compressor = zlib.compressobj(self.options.gzip_level, zlib.DEFLATED, 31)
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
        r.bytes, r.uncompressed_bytes, r.named_graphs, r.void_data_dumps = final.stat().st_size, raw_bytes, named, dumps


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


def _line_based(path: Path, fmt: str, sink: _Sink, messages: _Messages) -> None:
    oxf = OX_FORMATS[fmt]
    line_offset = 0
    with open(path, "rb") as f:
        rest = b""
        while True:
            chunk = f.read(PARSE_CHUNK)
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
                try:
                    sink.add_block(_serialize(ox.parse(data, oxf)), line_offset + 1)
                except SyntaxError:
                    _per_line(data, oxf, line_offset, sink, messages)
                line_offset += data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
            if not chunk:
                break


def _per_line(data: bytes, oxf, line_offset: int, sink: _Sink, messages: _Messages) -> None:
    for i, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            sink.add_block(_serialize(ox.parse(line, oxf)), line_offset + i)
        except SyntaxError as exc:
            messages.add("error", str(exc), line_offset + i, exc.offset)


def _batched(quads: Iterator, messages: _Messages, size: int = 10_000) -> Iterator[list]:
    """Batches of parsed quads; the first syntax error is recorded and ends the document."""
    batch = []
    while True:
        try:
            quad = next(quads)
        except StopIteration:
            break
        except SyntaxError as exc:
            messages.syntax(exc)
            messages.add("warning", "parsing stopped at the first error (no recovery for this format)",
                         exc.lineno, exc.offset)
            break
        batch.append(quad)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _streamed(path: Path, fmt: str, base_iri: str | None, sink: _Sink, messages: _Messages) -> None:
    if fmt == F.RDF_XML:
        _refuse_entities(path)
    if fmt == F.JSON_LD:
        # The JSON-LD parser needs the whole document; canonical blank node labels keep it deterministic.
        quads = ox.parse(path=str(path), format=OX_FORMATS[fmt], base_iri=base_iri)
        dataset = ox.Dataset()
        for batch in _batched(quads, messages):
            dataset.extend(batch)
        _from_dataset(dataset, sink)
        return
    quads = ox.parse(path=str(path), format=OX_FORMATS[fmt], base_iri=base_iri)
    for batch in _batched(quads, messages):
        sink.add_block(_serialize(batch))


def _from_dataset(dataset: "ox.Dataset", sink: _Sink) -> None:
    dataset.canonicalize(ox.CanonicalizationAlgorithm.RDFC_1_0)
    sink.add_block(_serialize(dataset))


def _refuse_entities(path: Path) -> None:
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    doctype = head.find(b"<!DOCTYPE")
    if doctype >= 0 and _DTD_ENTITY.search(head, doctype):
        raise CleaningError("RDF/XML declares DTD entities; entity expansion is refused")


def _rdfa(path: Path, base_iri: str | None, sink: _Sink, messages: _Messages) -> None:
    if path.stat().st_size > MAX_RDFA_BYTES:
        raise CleaningError("HTML larger than %d bytes is not cleaned for RDFa" % MAX_RDFA_BYTES)
    from pyRdfa import pyRdfa
    from pyRdfa.options import Options

    options = Options(vocab_expansion=False, vocab_cache=False, refresh_vocab_cache=False,
                      embedded_rdf=False, output_processor_graph=False, output_default_graph=True)
    processor = pyRdfa(options, base=base_iri or "", media_type="text/html")
    try:
        graph = processor.graph_from_source(io.BytesIO(path.read_bytes()))
    except Exception as exc:  # pyRdfa raises its own and html5lib's errors
        messages.add("error", "RDFa extraction failed: %s: %s" % (type(exc).__name__, exc))
        return
    data = graph.serialize(format="nt", encoding="utf-8")
    dataset = ox.Dataset()
    for batch in _batched(ox.parse(data, ox.RdfFormat.N_TRIPLES), messages):
        dataset.extend(batch)
    _from_dataset(dataset, sink)


def clean_file(path: Path | str, fmt: str, doc_key: str, out_dir: Path | str, *,
               base_iri: str | None = None, options: CleanOptions = CleanOptions()) -> CleanResult:
    """Clean the UTF-8 document at ``path`` (serialisation ``fmt``) into ``out_dir/<clean key>.n[tq].gz``."""
    path, out_dir = Path(path), Path(out_dir)
    if fmt not in F.FORMATS:
        raise CleaningError("unsupported format %r" % fmt)
    result = CleanResult(format=fmt)
    messages = _Messages(result, options.max_messages)
    skolem = Skolemiser(options.genid_base, doc_key, relabel=fmt not in LINE_BASED)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="clean-", dir=options.tmp_dir or out_dir) as tmp:
        sink = _Sink(result, skolem, messages, options, Path(tmp))
        try:
            if fmt in LINE_BASED:
                _line_based(path, fmt, sink, messages)
            elif fmt == F.RDFA:
                _rdfa(path, base_iri, sink, messages)
            else:
                _streamed(path, fmt, base_iri, sink, messages)
        except CleaningError as exc:
            messages.add("error", str(exc))
        except (OSError, ValueError) as exc:
            messages.add("error", "%s: %s" % (type(exc).__name__, exc))
        try:
            sink.write(out_dir)
        finally:
            sink.abort()
    return result
