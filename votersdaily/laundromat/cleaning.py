"""Parse and clean: any supported serialisation in, canonical sorted unique gzipped N-Quads out.

One module per job: :mod:`.clean_types` (options, results, messages), :mod:`.line_ranges`
(N-Triples/N-Quads, serial and parallel ranges), :mod:`.readers` (the other formats),
:mod:`.rdf11` (final RDF 1.1 lines), :mod:`.skolem` (blank nodes), :mod:`.external_sort` (sort,
de-duplicate, gzip); this module chooses the reader.

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
  :mod:`.xmlentities`); XML literals (``rdf:parseType="Literal"``) are written in exclusive
  canonical XML (:mod:`.xmlliterals`).
* The output is RDF 1.1: a literal's RDF 1.2 base direction (``"x"@ar--rtl``) is dropped, as JSON-LD
  does by default, and recorded as a warning; statements with triple terms are dropped as errors.
* IRIs of formats that resolve them (all but N-Triples/N-Quads and JSON-LD, which keep IRIs as
  written) have their dot segments removed (RFC 3986 §5.2.4), the base IRI's too.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from votersdaily.plumbing.full_disk import FULL_DISK_ERRORS

from . import formats as F
from . import native
from .clean_types import (
    LINE_BASED,
    CleaningError,
    CleanOptions,
    CleanResult,
    DocumentLimitExceeded,
    Messages,
)
from .external_sort import SortedSink
from .line_ranges import can_fork, parse_line_based, parse_line_based_parallel
from .rdf11 import without_dot_segments
from .readers import parse_rdfa, parse_streamed
from .skolem import Skolemiser

__all__ = ["CleanOptions", "CleanResult", "CleaningError", "DocumentLimitExceeded", "clean_file"]


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
    result = CleanResult(format=fmt, compiled_path=native.available())
    messages = Messages(result, options.max_messages)
    skolem = Skolemiser(options.genid_base, doc_key, relabel=fmt not in LINE_BASED)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="clean-", dir=options.tmp_dir or out_dir) as tmp:
        sink = SortedSink(result, skolem, messages, options, Path(tmp))
        try:
            _parse_into(path, fmt, base_iri, sink, messages, options)
            sink.write(out_dir)
        finally:
            sink.abort()
    return result


def _parse_into(
    path: Path, fmt: str, base_iri: str | None, sink: SortedSink, messages: Messages, options: CleanOptions
) -> None:
    """Every statement of the document into ``sink``; an error that ends the document is recorded
    (what came before it is kept), a bound passed (:class:`DocumentLimitExceeded`) is raised, and
    so is a full disk under the sorted runs: no fault of the document, which waits for room (its
    statements were recorded as cut short by an error of its own, then lost with the runs)."""
    try:
        if fmt in LINE_BASED and path.stat().st_size >= options.run_bytes and can_fork(options.parse_workers):
            parse_line_based_parallel(path, fmt, sink, messages, options.parse_workers)
        elif fmt in LINE_BASED:
            parse_line_based(path, fmt, sink, messages, options.parse_chunk)
        elif fmt == F.RDFA:
            parse_rdfa(path, base_iri, sink, messages)
        else:
            parse_streamed(path, fmt, base_iri, sink, messages)
    except CleaningError as exc:
        messages.add("error", str(exc))
    except (OSError, ValueError) as exc:
        if isinstance(exc, OSError) and exc.errno in FULL_DISK_ERRORS:
            raise
        messages.add("error", "%s: %s" % (type(exc).__name__, exc))
