"""The readers of the formats parsed whole or streamed to their first error: Turtle, TriG, RDF/XML
(entities expanded and XML literals made canonical first), JSON-LD (remote contexts loaded first, blank nodes canonicalised within a
bound) and RDFa in HTML (with the JSON-LD scripts it holds)."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox

from . import formats as F
from . import native
from .clean_types import (
    CleaningError,
    CleanOptions,
    DocumentLimitExceeded,
    Messages,
    ox_format,
    serialize_quads,
    syntax_message,
)
from .contexts import ContextError, ContextLoader, has_remote_context, inline_contexts
from .external_sort import RunWriter, SortedSink
from .turtle_ranges import RUNS, TURTLE_BLOCK, Span, fill, read_in_ranges
from .xml_ranges import parse_rdfxml_in_ranges
from .xmlentities import EntityRefused, expand_entities
from .xmlliterals import LiteralStop, canonical_xml_literals

if TYPE_CHECKING:
    pass

#: A ``<script type="application/ld+json">`` element of HTML: group 1 is its JSON text.
_JSONLD_SCRIPT = re.compile(
    r"""<script\b[^>]*\btype\s*=\s*["']?application/ld\+json\b[^>]*>(.*?)</script\s*>""", re.I | re.S
)


def _until_error(
    quads: Iterator[ox.Quad], messages: Messages, stop: LiteralStop | None = None
) -> Iterator[ox.Quad]:
    """The parsed quads up to the first syntax error, which is recorded and ends the document.
    ``stop``: where rewriting the document's XML literals stopped; an error there ends the
    document given to the parser, which is the first error unless the parser finds one before."""
    if stop is not None and stop.kind == "warning":
        messages.add("warning", stop.message, stop.line, stop.column)
        stop = None
    try:
        yield from quads
        if stop is not None:
            messages.add("error", stop.message, stop.line, stop.column)
            messages.add(
                "warning",
                "parsing stopped at the first error (no recovery for this format)",
                stop.line,
                stop.column,
            )
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


def _batched(
    quads: Iterator[ox.Quad], messages: Messages, stop: LiteralStop | None = None, size: int = 10_000
) -> Iterator[bytes]:
    """Serialised blocks of ``size`` parsed quads (the serializer pulls them straight from the parser)."""
    quads = _until_error(quads, messages, stop)
    while True:
        block = ox.serialize(itertools.islice(quads, size), format=ox.RdfFormat.N_QUADS)
        if not block:
            return
        yield block


def _turtle_compiled(path: Path, fmt: str, base_iri: str | None, sink: SortedSink) -> bool:
    """The document's final lines from the compiled Turtle reader (:class:`.native.TurtleLines`)
    into sorted runs (a thread sorts each while the reader goes on; a large document is read in two
    ranges at once, :mod:`.turtle_ranges`): True; False, with nothing added to ``sink``, when the
    reader gives up (the document is then parsed by pyoxigraph)."""
    in_ranges = read_in_ranges(path, fmt == F.TRIG, base_iri, sink)
    if in_ranges is not None:
        return in_ranges
    writer = RunWriter(sink.tmp, "turtle", sink.options.sorted_run_bytes, background=True)
    try:
        lines = native.TurtleLines(path, fmt == F.TRIG, base_iri, sink.skolem.prefix, TURTLE_BLOCK)
        size = path.stat().st_size
        fill(lines, writer, Span(0, size, size), RUNS, sink.options)
        if writer.paths:
            sink.add_runs(writer.flush(), lines.statements, lines.named)
        else:  # it fits one run: kept in memory, like the sink's own (no run file needs room on disk)
            sink.add_lines(writer.take_unsorted(), lines.named, lines.statements)
        return True
    except native.TurtleUnsupported:
        writer.discard()
        return False
    finally:
        writer.close()


def _rdfxml_compiled(path: Path, sink: SortedSink) -> bool:
    """A document smaller than ``run_bytes`` (it is read whole) that the compiled reader reads
    (:func:`.native.rdfxml_lines`): its N-Quads, the bytes pyoxigraph's would be, into ``sink``;
    True. False, with nothing added, otherwise."""
    if not native.available() or path.stat().st_size >= sink.options.run_bytes:
        return False
    lines = native.rdfxml_lines(path.read_bytes())
    if lines is None:
        return False
    sink.add_block(lines)
    return True


def parse_streamed(path: Path, fmt: str, base_iri: str | None, sink: SortedSink, messages: Messages) -> None:
    if fmt in (F.TURTLE, F.TRIG) and native.available() and _turtle_compiled(path, fmt, base_iri, sink):
        return
    stop = None
    if fmt == F.RDF_XML:
        try:
            path = expand_entities(path, sink.tmp / "expanded.rdf")
        except EntityRefused as exc:
            raise CleaningError(str(exc)) from None
        path, stop = canonical_xml_literals(path, sink.tmp / "literals.rdf")
        if stop is None and parse_rdfxml_in_ranges(
            path, base_iri, sink, messages, sink.options.parse_workers
        ):
            return
        if stop is None and _rdfxml_compiled(path, sink):
            return
    if fmt == F.JSON_LD:
        _check_in_memory(path, "JSON-LD", sink.options)
        # The JSON-LD parser needs the whole document; canonical blank node labels keep it deterministic.
        quads = _jsonld(path.read_bytes(), base_iri, sink, messages)
        _from_dataset(ox.Dataset(_until_error(quads, messages)), sink)
        return
    quads = ox.parse(path=str(path), format=ox_format(fmt), base_iri=base_iri)
    for block in _batched(quads, messages, stop):
        sink.add_block(block)


def canonicalisation_work(dataset: ox.Dataset, bound: int) -> int:
    """An estimate of RDFC-1.0's work on ``dataset`` (stops counting past ``bound``).

    Blank nodes with a unique first-degree hash (RDFC-1.0 §4.6: their quads, with themselves as
    ``_:a`` and other blank nodes as ``_:z``) cost nothing more. Each other one is told apart by
    hashing every permutation of its related blank nodes that share a hash (§4.8): the product of
    the factorials of those groups' sizes. A clique of n such nodes costs n·(n-1)!.
    """
    quads_of: dict[str, list[ox.Quad]] = {}
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


def _jsonld(data: bytes, base_iri: str | None, sink: SortedSink, messages: Messages) -> Iterator[ox.Quad]:
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
            sink.result.context_cache_error = sink.result.context_cache_error or loader.cache_error
        data = json.dumps(document).encode("utf-8")
    return ox.parse(data, ox.RdfFormat.JSON_LD, base_iri=base_iri)


def _from_dataset(dataset: ox.Dataset, sink: SortedSink) -> None:
    data = serialize_quads(dataset)
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
    sink.add_block(serialize_quads(dataset))


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


def quads_per_statement(
    data: bytes, fmt: ox.RdfFormat, messages: Messages, base_iri: str | None = None
) -> list[ox.Quad]:
    """The quads of serialised statements (one a line); a line the parser refuses (a relative IRI
    in RDFa without a base) is recorded and costs only itself. With ``base_iri``, the lines are
    read as Turtle, so relative IRIs are resolved against it."""
    if base_iri:
        fmt = ox.RdfFormat.TURTLE
    try:
        return list(ox.parse(data, fmt, base_iri=base_iri))
    except SyntaxError:
        pass
    quads: list[ox.Quad] = []
    for i, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            try:
                quads.extend(ox.parse(line, fmt, base_iri=base_iri))
            except SyntaxError as exc:
                messages.add(
                    "error", "%s: %s" % (syntax_message(exc), line.decode("utf-8", "replace")[:200]), i
                )
    return quads


#: A document that declares itself XML: its RDFa is read with an XML parser (XHTML or XML+RDFa).
_XML_DECLARATION = re.compile(r"\A\s*<\?xml\s")
#: The root of an XHTML document (the XHTML namespace declared on ``<html>``).
_XHTML_ROOT = re.compile(r"""<html\b[^>]*\bxmlns\s*=\s*["']http://www\.w3\.org/1999/xhtml["']""", re.I)


#: An entity declaration (in a DOCTYPE's internal subset).
_ENTITY_DECLARATION = re.compile(r"<!ENTITY\b")
#: A reference to an entity XML does not predefine (``&eacute;``): an XML parser without the DTD
#: would skip it silently, HTML knows it.
_HTML_ENTITY = re.compile(r"&(?!(?:amp|lt|gt|quot|apos);)[A-Za-z_:][\w.:-]*;")


def rdfa_media_types(text: str) -> tuple[list[str], str | None]:
    """The media types (so the RDFa host languages) a document is read as, in order, and why an XML
    document is not read as XML. An XML document is read as XHTML or XML first (an HTML5 parser
    would take ``<span/>`` for an open element, and ignore ``xml:base``), then as HTML (each
    document, and an XML one that is not well-formed). An XML document that uses HTML's named
    entities (``&nbsp;``) is read as HTML, which knows them; one that declares entities too, where
    an entity reference is then text: entities are never expanded from a DTD."""
    if _XML_DECLARATION.match(text) is None:
        return ["text/html"], None
    if _ENTITY_DECLARATION.search(text):
        return ["text/html"], "declares entities (not expanded): its RDFa is read as HTML"
    if _HTML_ENTITY.search(text):
        return ["text/html"], None
    return ["application/xhtml+xml" if _XHTML_ROOT.search(text) else "application/xml", "text/html"], None


def parse_rdfa(path: Path, base_iri: str | None, sink: SortedSink, messages: Messages) -> None:
    """RDFa of an HTML (or XHTML, or XML) document: the recoded text (its declaration made true by
    the recoding) goes to the parser as text, so no charset sniffing can take the document for
    another encoding."""
    _check_in_memory(path, "HTML (RDFa)", sink.options)
    from pyRdfa import pyRdfa
    from pyRdfa.options import Options

    text = path.read_text(encoding="utf-8", errors="replace")
    graph = None
    media_types, not_xml = rdfa_media_types(text)
    if not_xml:
        messages.add("warning", not_xml)
    for media_type in media_types:
        # No vocabulary fetching, no processor graph; a fresh Options each time (pyRdfa sets its
        # host language there).
        no_fetching = dict.fromkeys(
            ("vocab_expansion", "vocab_cache", "refresh_vocab_cache", "embedded_rdf"), False
        )
        options = Options(output_processor_graph=False, output_default_graph=True, **no_fetching)
        processor = pyRdfa(options, base=base_iri or "", media_type=media_type)
        try:
            with _literals_as_written():
                graph = processor.graph_from_source(io.StringIO(text))
        except Exception as exc:  # pyRdfa raises its own and html5lib's errors
            messages.add("error", "RDFa extraction failed: %s: %s" % (type(exc).__name__, exc))
            return
        if processor.http_status != 400:  # pyRdfa's answer to a document it could not parse
            break
        if media_type == "text/html":
            messages.add("error", "RDFa extraction failed: the document could not be parsed")
            return
        messages.add("warning", "not well-formed XML: its RDFa is read as HTML")
    # RDFa leaves IRIs from relative prefixes (``prefix="pr: relative/iri#"``, RDFa Core 1.1 §7.5
    # step 3) as written: the document's base resolves them, as it would in the processor's output.
    statements = _n_triples(graph, messages)
    dataset = ox.Dataset(quads_per_statement(statements, ox.RdfFormat.N_TRIPLES, messages, base_iri))
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


def _n_triples(graph: Any, messages: Messages) -> bytes:  # pyRdfa (untyped) made the rdflib graph
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
