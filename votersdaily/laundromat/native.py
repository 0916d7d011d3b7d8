"""The laundromat's compiled fast paths (``_ntscan.c``), when built, else None: every caller has a
pure-Python path that gives the same result, only slower.

The build backend compiles it when the package is installed (``pip install``, a wheel of
``python -m build``; setup.py's optional extension: without a C compiler the install goes on without
it); ``python3 scripts/build_native.py`` rebuilds it in place in a checkout. A scrapyd job runs the
package installed on its node, compiled module included (docs/operations.md). Whether it is there:
``python -c "from votersdaily.laundromat import native; print(native.available(), native.location())"``;
the laundromat's run log says it as ``compiled_path``.

* :func:`canonical_lines`: the lines of an N-Triples/N-Quads block that already are canonical
  statements, copied (blank nodes skolemised) without building a Python object per statement; the
  other lines go to pyoxigraph as before. tests/laundromat/test_native.py checks that both paths
  clean every W3C N-Triples/N-Quads test, the benchmark's statements and mutated real lines alike.
  The same scanner takes the lines pyoxigraph's serializer writes from the other formats (Turtle,
  RDF/XML, JSON-LD): their canonical lines are copied, the rest go through :mod:`.rdf11` in Python.
* :func:`sorted_unique`, :func:`write_sorted_run` and :func:`merge_runs` (:func:`run_merger`: the
  merge read in fixed pieces, for the gzip): the external sort of the cleaned lines (runs sorted by
  a multikey quicksort on 8-byte characters, written front-coded, merged k ways), in the byte order
  of ``LC_ALL=C sort -u``. The sort nests at most log2 n frames
  and falls back to a heapsort when a crafted order keeps defeating its pivots
  (tests/laundromat/sort_adversary.py builds one).
* :func:`utf8_counts`: strict UTF-8 validation counting characters and line endings in one pass.
* :func:`xml_cuts`: where a large RDF/XML document can be cut between its top-level elements, so
  that :mod:`.xml_ranges` parses its ranges at once.
* :class:`TurtleLines` (``_turtle.c``): the final lines of a Turtle or TriG document, read by a
  strict reader of a subset of the grammar (ASCII IRIs, names and labels, no escapes in IRIs, no
  RDF 1.2 syntax, no dot segments) that writes what pyoxigraph, :mod:`.rdf11` and :mod:`.skolem`
  would, its anonymous blank nodes numbered in the order pyoxigraph gives them. A document outside
  the subset, or with any syntax error, raises :class:`TurtleUnsupported` (the caller cleans it with
  pyoxigraph, which reports the error). tests/laundromat/test_native.py holds both paths to the same
  output on the W3C Turtle and TriG suites, variants of their documents and the benchmark's file.
  It also reads a range of a document (``start``, ``stop``; a later range's anonymous nodes
  renumbered by :func:`renumbered`), so that :mod:`.turtle_ranges` reads a large one in two
  processes; tests/laundromat/test_turtle_ranges.py holds that to one reading.
* :func:`rdfxml_lines` (``_rdfxml.c``): the N-Quads pyoxigraph gives for plain RDF/XML (the flat
  shape of rapper's and most dumps), without a Python object per statement; None for anything
  else (nesting, ``rdf:parseType``, relative IRIs, any error), which pyoxigraph then parses.
  tests/laundromat/test_native.py holds it to pyoxigraph's bytes on the W3C RDF/XML suite, variants
  of its documents and of the benchmark's, and generated shapes.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import NamedTuple, Protocol

#: Lines this long or longer are left to pyoxigraph, which refuses a token past its 16 MiB buffer
#: (the statement is dropped with that reason): both paths drop the same statements.
MAX_FAST_LINE = 1 << 24

_module: ModuleType | None
try:
    _module = importlib.import_module("votersdaily.laundromat._ntscan")
except ImportError:  # not built: the pure-Python paths are used
    _module = None


def available() -> bool:
    return _module is not None


def location() -> str | None:
    """The file the compiled module was loaded from; None when the pure-Python paths run."""
    return getattr(_module, "__file__", None)


class Scanned(NamedTuple):
    """What :func:`canonical_lines` found in a block of lines."""

    #: The canonical statements, skolemised.
    canonical: bytes
    #: The other lines, newline-terminated, for pyoxigraph.
    slow: bytes
    #: Their 0-based line numbers in the block (a sequence of ints).
    slow_line_numbers: memoryview
    #: Whether a canonical statement has a graph label.
    named: bool
    #: Lines in the block (one without a newline at its end counted).
    lines: int
    #: Statements in ``canonical``.
    statements: int


#: canonical_lines flags (_ntscan.c's F_RELABEL, F_DOTS).
_RELABEL, _DOTS = 1, 2


def canonical_lines(
    data: bytes, quads: bool, genid_prefix: bytes, *, relabel: bool = False, dots: bool = False
) -> Scanned:
    """The lines of ``data`` that are canonical statements (skolemised under ``genid_prefix``) and
    the others. With ``relabel``, a line with a blank node label a parser may have invented (which
    :class:`.skolem.Skolemiser` numbers in order) is one of the others; with ``dots``, a line with a
    dot segment pattern (which :mod:`.rdf11` removes from IRIs) is too."""
    flags = (_RELABEL if relabel else 0) | (_DOTS if dots else 0)
    out, slow, where, named, lines, copied = _built().canonical_lines(
        data, quads, genid_prefix, MAX_FAST_LINE, flags
    )
    return Scanned(out, slow, memoryview(where).cast("q"), named, lines, copied)


def _built() -> ModuleType:
    if _module is None:
        raise RuntimeError("votersdaily.laundromat._ntscan is not built (run scripts/setup.sh)")
    return _module


def sorted_unique(block: bytes) -> bytes:
    """The lines of ``block`` (newline-terminated) in unsigned byte order, each once."""
    return _built().sorted_unique(block)


def write_sorted_run(block: bytes, fd: int) -> int:
    """The lines of ``block`` in unsigned byte order, each once, written to file descriptor ``fd`` as
    a sorted run (each line front-coded: what it shares with the line before, then its other bytes;
    what :func:`merge_runs` and :func:`run_merger` read); how many. Runs without the GIL."""
    return int(_built().write_sorted_run(block, fd))


def merge_runs(paths: Sequence[str | os.PathLike[str]], fd: int) -> int:
    """Sorted runs (:func:`write_sorted_run`) merged into one written to file descriptor ``fd``,
    each line once; lines written.
    ``paths`` is copied before any is opened. Runs without the GIL (call it from a thread to
    overlap the reader's work)."""
    return _built().merge_runs(paths, fd)


class RunMerger(Protocol):
    """Sorted unique run files merged k ways, each line once, read in pieces of a fixed size
    (``_ntscan.RunMerger``; :func:`run_merger`)."""

    #: Unique lines and their bytes read so far.
    lines_read: int
    bytes_read: int

    def read(self, size: int) -> bytes:
        """The next ``size`` bytes of the merged lines (a line may run on into the next piece);
        fewer at the end, ``b""`` when done. Runs without the GIL; one thread at a time."""
        ...

    def marked(self) -> bytes:
        """The lines read since the last call whose predicate (second field) holds the mark,
        newline-terminated."""
        ...

    def close(self) -> None: ...


def run_merger(paths: Sequence[str | os.PathLike[str]], mark: bytes) -> RunMerger:
    """A :class:`RunMerger` of the runs at ``paths`` (copied, each opened now) noting the lines whose
    predicate holds ``mark``: the merge gives the gzip its fixed pieces straight (no line blocks
    cut and joined in Python on the way)."""
    merger: RunMerger = _built().RunMerger(paths, mark)
    return merger


class TurtleUnsupported(ValueError):
    """The document is not one the compiled Turtle reader reads (the reason says why and where)."""


class TurtleLines:
    """The final lines of the Turtle (TriG with ``trig``) document at ``path``, read with
    ``base_iri``, blank nodes skolemised under ``genid_prefix``, in blocks of about ``block`` bytes.
    Iterating raises :class:`TurtleUnsupported` when the reader gives up (after some blocks, maybe).

    A range of the document (:mod:`.turtle_ranges`): with ``stop``, the lines of the statements
    before that byte, when a statement of the top level starts there and no directive came after the
    first statement (:attr:`at_cut`; else the reader reads on to the end); :meth:`resume` reads on
    past it. With ``start``, the prologue's directives are read, then the statements from that byte
    on; such a range numbers its anonymous nodes from 0 and gives their statements apart
    (:meth:`take_deferred`, for :func:`renumbered` once the count before it is known), and gives up
    on a label that looks generated (the ranges before it may have numbered it)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        trig: bool,
        base_iri: str | None,
        genid_prefix: bytes,
        block: int,
        *,
        start: int = 0,
        stop: int = -1,
    ) -> None:
        self._module = _built()
        self._reader = self._module.TurtleReader(path, trig, base_iri, genid_prefix, start, stop)
        self.block = block

    def __iter__(self) -> Iterator[bytes]:
        paused = False
        try:
            while (data := self._reader.read(self.block)) is not None:
                yield data
            paused = self._reader.at_cut
        except self._module.TurtleUnsupported as exc:
            raise TurtleUnsupported(str(exc)) from None
        finally:
            if not paused:  # a range stopped at its end stays open for resume()
                self._reader.close()

    @property
    def position(self) -> int:
        """The byte of the document the reader is at (0 once closed)."""
        return int(self._reader.position)

    @property
    def numbered(self) -> int:
        """Blank nodes numbered so far (anonymous ones, labels that look generated)."""
        return int(self._reader.numbered)

    def take_deferred(self) -> bytes:
        """A later range's statements with an anonymous node, given since the last call, their
        numbers marked for :func:`renumbered` (the range's other lines are final)."""
        return bytes(self._reader.take_deferred())

    @property
    def at_cut(self) -> bool:
        """Whether the reader stopped at ``stop`` (where a statement of the top level starts, after
        no directive but the prologue's): the lines given are those of the statements before it."""
        return bool(self._reader.at_cut)

    def resume(self) -> None:
        """After stopping at ``stop``: iterating again gives the lines of the rest of the document."""
        self._reader.resume()

    def close(self) -> None:
        self._reader.close()

    @property
    def statements(self) -> int:
        """Lines given so far."""
        return int(self._reader.statements)

    @property
    def named(self) -> bool:
        """Whether a line given has a graph label."""
        return bool(self._reader.named)


def renumbered(deferred: bytes, offset: int) -> bytes:
    """A later range's deferred statements (:meth:`TurtleLines.take_deferred`) made final: each number
    it gave plus ``offset``, the blank nodes numbered before the range."""
    return _built().renumber(deferred, offset)


def xml_cuts(path: str | os.PathLike[str], start: int, span: int) -> list[int] | None:
    """Where the RDF/XML document at ``path``, whose root's start tag ends at ``start``, can be cut
    into ranges of
    about ``span`` bytes or more (:mod:`.xml_ranges`): the starts of lines on which a top-level
    element starts; None when the root's content is not plain markup the scanner follows (text,
    CDATA or a DOCTYPE at the top level, an attribute named ID, a tag it cannot read)."""
    return _built().xml_cuts(path, start, span)


def file_contains(path: str | os.PathLike[str], start: int, needle: bytes) -> bool:
    """Whether the file at ``path`` holds ``needle`` at or after byte ``start`` (one pass over the
    mapped file: the RDF/XML checks of :mod:`.xmlentities` and :mod:`.xmlliterals` skip their own
    when what they look for cannot be there)."""
    return bool(_built().file_contains(path, start, needle))


def rdfxml_lines(document: bytes) -> bytes | None:
    """The N-Quads pyoxigraph's RDF/XML parser and serializer give for ``document``, byte for byte and
    in order, when it is plain RDF/XML the compiled reader (``_rdfxml.c``) reads: flat node elements
    with an absolute ``rdf:about`` or an ``rdf:nodeID``, property elements with a resource, a node
    or text (with a datatype or a language tag). None for anything else and on any error: the
    caller parses the document with pyoxigraph, which reads the rest and reports the errors."""
    return _built().rdfxml_lines(document)


def utf8_counts(data: bytes | memoryview) -> tuple[int, int, int, int, int]:
    """(bytes that are whole valid UTF-8 sequences from the start, characters, LF, CR, CR LF in them)."""
    return _built().utf8_counts(data)
