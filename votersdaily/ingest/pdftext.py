"""A PDF's text as poppler's ``pdftotext -q -l <max pages> - -`` writes it (sandcrawler's PDF text is
poppler's too), page after page, each ended by a form feed.

pypdf read the text before, in Python: 2.8 ms of the 3.2 ms an extraction process spent on the
benchmark's one-page PDF, where poppler's own calls take 0.24 ms. A ``pdftotext`` process per PDF
would cost some 12 ms (linking poppler, starting, ending), so in an extraction process
(:mod:`.workers`) the text comes from the compiled module (``text()`` in
``votersdaily/ingest/_page0.cc``: pdftotext's calls, poppler loaded once). A crash in poppler there
ends that extraction process, which the pool replaces, as a crash in pypdf or lxml did (a call that
kills two is :class:`~.workers.ExtractionCrashed`). Anywhere else (the reactor's threads when
``INGEST_EXTRACT_PROCESSES = 0``, a tool, a test) each text is a ``pdftotext`` process, so that a
crash costs only that process. The first compiled text of a process is held to ``pdftotext``'s:
should they differ (a poppler upgraded under a module built for another), the compiled path is
refused for the rest of the process, with a warning, and ``pdftotext`` reads.
``tests/ingest/test_pdf_text.py`` holds both to ``pdftotext`` on every recorded PDF.
"""

from __future__ import annotations

import importlib
import logging
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable
from typing import NamedTuple

from . import workers
from .thumbnail import PAGE0_MODULE, PAGE0_PROTOCOL

logger = logging.getLogger(__name__)

#: poppler-utils' pdftotext: the reference, and the reader outside extraction processes.
PDFTOTEXT = shutil.which("pdftotext")
#: Seconds a ``pdftotext`` process may take on one PDF.
TEXT_TIMEOUT = 60.0
#: The compiled ``text(pdf, last_page) -> (pdftotext's exit status, its output)``.
TextFunction = Callable[[bytes, int], tuple[int, bytes]]
#: What poppler's text is decoded from (GlobalParams' default text encoding, as pdftotext writes it).
TEXT_ENCODING = "utf-8"


class PdfText(NamedTuple):
    """A text's outcome: the text, or None and why there is none."""

    text: str | None
    reason: str | None = None


def pdf_text(blob: bytes, max_pages: int) -> PdfText:
    """The text of the PDF's first ``max_pages`` pages as ``pdftotext -q -l max_pages - -`` writes
    it, or None and why (poppler could not open it, it has no page, it crashed or timed out, or
    neither the compiled module nor ``pdftotext`` is there)."""
    compiled = _compiled_text()
    if compiled is None:
        return text_by_pdftotext(blob, max_pages)
    status, out = compiled(blob, max_pages)
    ours = _outcome(status, out)
    if _Compiled.compared:
        return ours
    with _Compiled.lock:
        first = not _Compiled.compared
        _Compiled.compared = True
    if not first or PDFTOTEXT is None:
        return ours
    reference = text_by_pdftotext(blob, max_pages)
    if reference != ours:
        _Compiled.refused = "its text was not pdftotext's (%s against %s)" % (
            _described(ours),
            _described(reference),
        )
        logger.warning("poppler's compiled text is not used: %s; pdftotext reads", _Compiled.refused)
        return reference
    return ours


def text_by_pdftotext(blob: bytes, max_pages: int) -> PdfText:
    """One ``pdftotext`` process's outcome (the reader outside extraction processes, and the
    compiled text's reference)."""
    if PDFTOTEXT is None:
        return PdfText(None, "poppler's pdftotext is not installed")
    try:
        done = subprocess.run(  # noqa: S603 - a fixed program and arguments; the PDF comes on stdin
            [PDFTOTEXT, "-q", "-l", str(max_pages), "-", "-"],
            input=blob,
            capture_output=True,
            timeout=TEXT_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return PdfText(None, "pdftotext timed out after %g s" % TEXT_TIMEOUT)
    except OSError as exc:
        return PdfText(None, "pdftotext could not start: %s" % exc)
    return _outcome(done.returncode, done.stdout)


def _outcome(status: int, out: bytes) -> PdfText:
    """A text's outcome from pdftotext's exit status (negative: the signal that ended it) and output."""
    if status == 0:
        return PdfText(out.decode(TEXT_ENCODING, "replace"))
    if status < 0:
        return PdfText(None, "pdftotext crashed (%s)" % signal.Signals(-status).name)
    opened = " (poppler could not open the PDF)" if status == 1 else ""
    return PdfText(None, "pdftotext failed: exit status %d%s" % (status, opened))


def _described(outcome: PdfText) -> str:
    return "%d characters" % len(outcome.text) if outcome.text is not None else str(outcome.reason)


class _Compiled:
    """This process's compiled text reader, looked up on first use (:func:`_compiled_text`)."""

    checked = False
    function: TextFunction | None = None
    #: Whether the first compiled text was held to pdftotext's.
    compared = False
    #: Why the compiled text is no longer used (it was not pdftotext's), or None.
    refused: str | None = None
    lock = threading.Lock()


def _compiled_text() -> TextFunction | None:
    """The compiled module's ``text``, in an extraction process where it is built (the protocol this
    source expects) and not refused; else None (``pdftotext`` reads)."""
    if not workers.in_extraction_process() or _Compiled.refused is not None:
        return None
    if not _Compiled.checked:
        with _Compiled.lock:
            if not _Compiled.checked:
                try:
                    module = importlib.import_module(PAGE0_MODULE)
                except ImportError:
                    module = None
                if getattr(module, "PROTOCOL", None) == PAGE0_PROTOCOL:
                    _Compiled.function = getattr(module, "text", None)
                _Compiled.checked = True
    return _Compiled.function
