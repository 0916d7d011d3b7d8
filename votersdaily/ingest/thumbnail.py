"""The page-0 thumbnail of a PDF, by poppler's ``pdftoppm`` (no pypdf here: the crawl process
renders without importing it, :meth:`votersdaily.ingest.spider.IngestSpider._page0`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import BinaryIO

#: pdftoppm (poppler-utils) renders the thumbnail; without it there is none.
PDFTOPPM = shutil.which("pdftoppm")
#: Page 0 only, as JPEG, 180 px wide (sandcrawler's thumbnails are 180 px wide), from stdin.
_PDFTOPPM_ARGS = (
    "-f",
    "1",
    "-l",
    "1",
    "-singlefile",
    "-jpeg",
    "-scale-to-x",
    "180",
    "-scale-to-y",
    "-1",
    "-",
)


#: Seconds a page-0 render may take, from its start.
RENDER_TIMEOUT = 30.0


def render_page0(blob: bytes, timeout: float = RENDER_TIMEOUT) -> bytes | None:
    """A JPEG of the first page, 180 px wide, by poppler's ``pdftoppm``; None when it is not
    installed or fails (sandcrawler renders with poppler too, and also drops tiny images)."""
    return PageZeroRender(blob, timeout).result()


class PageZeroRender:
    """``pdftoppm`` started on a PDF at once, its JPEG collected by :meth:`result`: the render runs
    on another core while the extraction process reads the text (it waited ~10 ms per PDF for it
    before). The same program, arguments and input as one blocking run, so the same bytes; the
    timeout counts from the start, as it did."""

    def __init__(self, blob: bytes, timeout: float) -> None:
        self.deadline = time.monotonic() + timeout
        self.process: subprocess.Popen[bytes] | None = None
        if PDFTOPPM is None:
            return
        try:
            with _readable_copy(blob) as source:
                self.process = subprocess.Popen(  # noqa: S603 - a fixed program and arguments; the PDF comes on stdin
                    [PDFTOPPM, *_PDFTOPPM_ARGS],
                    stdin=source,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                )
        except OSError:
            self.process = None

    def result(self) -> bytes | None:
        """The JPEG, or None (not installed, failed, too small, or past the timeout)."""
        process, self.process = self.process, None
        if process is None:
            return None
        try:
            out, _ = process.communicate(timeout=max(self.deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return None
        if process.returncode != 0 or len(out) < 50:
            return None
        return out

    def cancel(self) -> None:
        """No thumbnail after all (the PDF did not parse): stop the render and reap it."""
        process, self.process = self.process, None
        if process is not None:
            process.kill()
            process.communicate()


def page0_renderable(meta: dict[str, Any]) -> bool:
    """Whether :func:`extract_pdf` (``thumbnail=True``) renders a thumbnail for a PDF whose
    ``pdf_meta`` this is: it was read, and it has a first page."""
    return meta["status"] == "success" and bool((meta.get("pdf_extra") or {}).get("page_count"))


def _readable_copy(blob: bytes) -> BinaryIO:
    """The PDF as a file at its start, for the renderer's stdin: a memory file (no disk, no
    pipe to feed while the renderer runs), or a temporary file where there is none."""
    try:
        handle: BinaryIO = os.fdopen(os.memfd_create("pdf", os.MFD_CLOEXEC), "w+b")
    except (AttributeError, OSError):
        handle = tempfile.TemporaryFile()
    handle.write(blob)
    handle.flush()
    handle.seek(0)
    return handle
