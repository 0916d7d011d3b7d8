"""The page-0 thumbnail of a PDF: what ``pdftoppm -f 1 -l 1 -singlefile -jpeg -scale-to-x 180
-scale-to-y -1`` writes, byte for byte.

A ``pdftoppm`` process per PDF spends most of its ~10 ms of CPU starting and ending (linking poppler,
reading fontconfig's configuration); a small page renders in under 1 ms. So the renders go to warm
renderers (:class:`WarmRenderer`): processes running :mod:`votersdaily.ingest._page0` (pdftoppm's
own calls, compiled against poppler, loaded once), each rendering one PDF at a time, so a crash or
a timeout ends that process and costs only its PDF. Without the compiled module (not built, or
poppler's library missing) each render is a ``pdftoppm`` process, as before: the same bytes
(``tests/ingest/test_page0_renderer.py`` holds both to ``pdftoppm`` on every recorded PDF).
No pypdf here: the crawl process renders without importing it
(:meth:`votersdaily.ingest.spider.IngestSpider._page0`)."""

from __future__ import annotations

import array
import asyncio
import atexit
import contextlib
import enum
import importlib
import importlib.util
import logging
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Coroutine
    from typing import BinaryIO

logger = logging.getLogger(__name__)

#: pdftoppm (poppler-utils) renders the thumbnail where the warm renderer is not built.
PDFTOPPM = shutil.which("pdftoppm")
#: Page 0 only, as JPEG, 180 px wide (sandcrawler's thumbnails are 180 px wide), from stdin; the
#: warm renderer runs exactly these (votersdaily/ingest/_page0.cc).
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
#: The compiled renderer (setup.py's ``page0_extension``).
PAGE0_MODULE = "votersdaily.ingest._page0"
#: The answers its ``serve()`` gives (its ``PROTOCOL``): a module built from an older source is not used.
PAGE0_PROTOCOL = 2
#: Renders a warm renderer serves before it is replaced (what poppler leaks on odd PDFs stays bounded).
RENDERS_PER_PROCESS = 1000
#: PDFs handed to one warm renderer at once: it renders them one after the other, the next one
#: taken as soon as the last is written, not a turn of the crawl's event loop later.
RENDER_QUEUE_DEPTH = 2
#: Seconds the caller waits past the renderer's own deadline before killing it.
_GRACE = 2.0
#: The first byte of a warm renderer's every answer: it took the request (``kTaken`` in _page0.cc).
_TAKEN = b"T"
#: A JPEG shorter than this is no thumbnail (sandcrawler also drops tiny images).
_MIN_JPEG_BYTES = 50
#: A warm renderer process: the module's server loop on the control socket given as argv[1]; once the
#: socket ends, it exits at once (no interpreter shutdown for the crawl to wait for at its close).
#: The module is loaded from its file (argv[2], the one this process imported), in an interpreter
#: started without ``site`` and isolated (:data:`_INTERPRETER_FLAGS`): it needs neither the package
#: nor site-packages, whose ``.pth`` files cost each renderer's start 20 ms of its 48 ms of CPU.
_SERVE = """import os, sys
from importlib.machinery import ExtensionFileLoader
from importlib.util import module_from_spec, spec_from_file_location
loader = ExtensionFileLoader(%(name)r, sys.argv[2])
module = module_from_spec(spec_from_file_location(%(name)r, sys.argv[2], loader=loader))
loader.exec_module(module)
module.serve(int(sys.argv[1]))
os._exit(0)""" % {"name": PAGE0_MODULE}
#: No ``site`` (-S), isolated from the user's site folder and PYTHON* variables (-I).
_INTERPRETER_FLAGS = ("-S", "-I")


class Page0(NamedTuple):
    """A render's outcome: the JPEG, or None and why there is none."""

    jpeg: bytes | None
    reason: str | None = None


def render_page0(blob: bytes, timeout: float = RENDER_TIMEOUT) -> Page0:
    """The first page as a 180 px wide JPEG, by a warm renderer or else ``pdftoppm`` (the same
    bytes); no JPEG, with the reason, when neither is installed or the render fails or times out."""
    renderer = warm_renderer()
    if renderer is not None:
        return renderer.render(blob, timeout)
    return render_by_pdftoppm(blob, timeout)


def render_by_pdftoppm(blob: bytes, timeout: float = RENDER_TIMEOUT) -> Page0:
    """One ``pdftoppm`` process's outcome (the fallback, and the warm renderer's first check)."""
    return PageZeroRender(blob, timeout).outcome()


def outcome(returncode: int, out: bytes, timeout: float) -> Page0:
    """A render's result from pdftoppm's exit status (negative: the signal that ended it) and output."""
    if returncode == 0:
        if len(out) < _MIN_JPEG_BYTES:
            return Page0(None, "the page-0 JPEG is %d bytes: too small" % len(out))
        return Page0(out)
    if returncode == -signal.SIGALRM:
        return Page0(None, _timed_out(timeout))
    if returncode < 0:
        return Page0(None, "the page-0 renderer crashed (%s)" % signal.Signals(-returncode).name)
    opened = " (poppler could not open the PDF)" if returncode == 1 else ""
    return Page0(None, "the page-0 render failed: exit status %d%s" % (returncode, opened))


class PageZeroRender:
    """``pdftoppm`` started on a PDF at once, its JPEG collected by :meth:`result`: the render runs
    on another core while the caller reads the text. The same program, arguments and input as one
    blocking run, so the same bytes; the timeout counts from the start."""

    def __init__(self, blob: bytes, timeout: float) -> None:
        self.deadline = time.monotonic() + timeout
        self.timeout = timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.failure = "poppler's pdftoppm is not installed"
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
        except OSError as exc:
            self.failure = "pdftoppm could not start: %s" % exc

    def outcome(self) -> Page0:
        """The JPEG, or None and why (not installed, failed, too small, or past the timeout)."""
        process, self.process = self.process, None
        if process is None:
            return Page0(None, self.failure)
        try:
            out, _ = process.communicate(timeout=max(self.deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return Page0(None, _timed_out(self.timeout))
        return outcome(process.returncode, out, self.timeout)

    def result(self) -> bytes | None:
        """The JPEG, or None (:meth:`outcome` says why)."""
        return self.outcome().jpeg

    def cancel(self) -> None:
        """No thumbnail after all (the PDF did not parse): stop the render and reap it."""
        process, self.process = self.process, None
        if process is not None:
            process.kill()
            process.communicate()


class Fate(enum.Enum):
    """What became of a warm renderer process after a render."""

    READY = "ready for the next PDF"
    ENDED = "ended by its deadline or a failure to answer"
    KILLED = "ended by a signal under the PDF: a crash, or killed from outside"


class _RendererProcess:
    """One warm renderer: a process serving :func:`votersdaily.ingest._page0.serve` on the other end
    of a control socket; each render sends it a socket of its own (the PDF in, the JPEG and the exit
    status out). It ends when the control socket closes (this process closed it, or died)."""

    def __init__(self, module_path: str) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs:
            try:
                self.process = subprocess.Popen(  # noqa: S603 - this interpreter running the module's loop
                    [sys.executable, *_INTERPRETER_FLAGS, "-c", _SERVE, str(theirs.fileno()), module_path],
                    pass_fds=(theirs.fileno(),),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            except OSError:
                ours.close()
                raise
        self.control = ours
        self.renders = 0
        #: PDFs handed to it and not answered yet (:data:`RENDER_QUEUE_DEPTH` at most).
        self.outstanding = 0
        #: Given its last PDF (:data:`RENDERS_PER_PROCESS`): ended once its queue is empty.
        self.retired = False

    async def render(self, blob: bytes, timeout: float, ahead: int = 0) -> tuple[Page0, Fate] | None:
        """Hand it one PDF and read the answer (on the running event loop: no thread waits for
        it); None when the process ended before it took the PDF. ``ahead``: the PDFs it renders
        first, each within its own ``timeout``."""
        request = self.request(timeout)
        if request is None:
            return None
        return await self.receive(request, timeout, blob, ahead)

    def request(self, timeout: float) -> socket.socket | None:
        """A socket of this render's own, its other end handed to the process with the deadline;
        None when the process had ended."""
        ours, theirs = socket.socketpair()
        with theirs:
            try:
                self.control.sendmsg(
                    [struct.pack("d", timeout)],
                    [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [theirs.fileno()]))],
                )
            except OSError:
                ours.close()
                return None
        return ours

    async def receive(
        self, request: socket.socket, timeout: float, blob: bytes | None = None, ahead: int = 0
    ) -> tuple[Page0, Fate] | None:
        """(the outcome, what became of this process) of the render on ``request``, once ``blob``
        is sent (None: the caller sent the PDF itself), waited for as long as the ``ahead`` PDFs
        queued before it and this one may take; None when the process ended before it took this
        PDF (under one queued before it)."""
        request.setblocking(False)
        with request:
            try:
                # In this task (not wait_for's task of its own): two turns of a busy reactor less per
                # render, and the renders' semaphore is held that much less.
                async with asyncio.timeout(timeout * (ahead + 1) + _GRACE):
                    data = await _exchange(request, blob)
            except TimeoutError:
                self.close(kill=True)
                return Page0(None, _timed_out(timeout)), Fate.ENDED
        return self.judge(data, timeout)

    def receive_blocking(
        self, request: socket.socket, timeout: float, ahead: int = 0
    ) -> tuple[Page0, Fate] | None:
        """:meth:`receive` for a caller without an event loop (an extraction process that sent the
        PDF itself, :meth:`WarmRenderer.start`): the same deadline from now, the same outcome, read
        from the blocking socket with no event loop made for it (one a PDF, with its hand-offs,
        cost the extraction process 0.44 ms of the 1.95 ms it spent on the benchmark's PDF)."""
        deadline = time.monotonic() + timeout * (ahead + 1) + _GRACE
        chunks = []
        with request:
            try:
                while (left := deadline - time.monotonic()) > 0:
                    request.settimeout(left)
                    if not (chunk := request.recv(65536)):
                        break
                    chunks.append(chunk)
                else:
                    raise TimeoutError
            except TimeoutError:
                self.close(kill=True)
                return Page0(None, _timed_out(timeout)), Fate.ENDED
            except OSError:  # as _exchange: what came before the error is the answer
                pass
        return self.judge(b"".join(chunks), timeout)

    def judge(self, data: bytes, timeout: float) -> tuple[Page0, Fate] | None:
        """(the outcome, what became of this process) from a render's whole answer; None when the
        process ended before it took the PDF."""
        if not data.startswith(_TAKEN):
            self.close(kill=False)
            return None
        data = data[len(_TAKEN) :]
        if len(data) < 4:  # it ended under this PDF: its exit says how
            returncode = self.close(kill=False)
            killed = returncode < 0 and returncode != -signal.SIGALRM
            return outcome(returncode, b"", timeout), Fate.KILLED if killed else Fate.ENDED
        self.renders += 1
        status = int.from_bytes(data[-4:], sys.byteorder, signed=True)
        return outcome(os.waitstatus_to_exitcode(status), data[:-4], timeout), Fate.READY

    def close(self, kill: bool = False) -> int:
        """End it (closing its socket ends its loop; ``kill`` does not wait for the render under way)
        and reap it; its exit status (negative: the signal that ended it)."""
        self.control.close()
        if kill:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        try:
            return self.process.wait(timeout=RENDER_TIMEOUT + _GRACE)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


class WarmRenderer:
    """Warm renderer processes, started as needed and kept for the next renders. Each is handed up
    to :data:`RENDER_QUEUE_DEPTH` PDFs at once and renders them one after the other (the spider
    bounds the renders under way: that many per extraction process), so a renderer does not sit
    idle between the crawl's reading one answer and sending the next PDF."""

    def __init__(self, module_path: str | None = None) -> None:
        #: The compiled module's file, which each renderer process loads (default: this process's).
        self.module_path = module_path or _page0_path()
        #: The renderers started and not ended, busy or idle.
        self._live: list[_RendererProcess] = []
        self._lock = threading.Lock()
        #: Whether the first render was compared with ``pdftoppm``'s (once a process).
        self._compared = False
        #: Why these renderers are no longer used (their JPEG was not pdftoppm's), or None.
        self.refused: str | None = None

    def render(self, blob: bytes, timeout: float = RENDER_TIMEOUT) -> Page0:
        """:meth:`render_async` for a caller without a running event loop (a thread, a tool), on a
        loop of its own: the thread's current loop (a test's installed reactor) is left as it was,
        which ``asyncio.run`` would not do."""
        return _on_a_loop_of_its_own(self.render_async(blob, timeout))

    def start(self, blob: bytes, timeout: float = RENDER_TIMEOUT) -> PendingRender:
        """Hand the PDF to a renderer now and return, for a caller without an event loop that has
        other work meanwhile (an extraction process reading the PDF's text while the renderer, a
        process of its own, renders its first page): :meth:`PendingRender.outcome` reads the
        answer, with what :meth:`render` does after it (one more process, the first comparison)."""
        try:
            renderer, ahead = self._take()
        except OSError:
            return PendingRender(self, blob, timeout)  # the outcome tries again, or says why
        request = renderer.request(timeout)
        if request is None:  # it had ended before the PDF came
            self._settle(renderer, Fate.ENDED)
            renderer.close()
            return PendingRender(self, blob, timeout)
        request.settimeout(timeout * (ahead + 1) + _GRACE)  # a renderer that never reads the PDF
        try:
            request.sendall(blob)
            request.shutdown(socket.SHUT_WR)
        except TimeoutError:
            request.close()
            renderer.close(kill=True)
            self._settle(renderer, Fate.ENDED)
            return PendingRender(self, blob, timeout, ready=Page0(None, _timed_out(timeout)))
        except (BrokenPipeError, ConnectionResetError):  # it ended: its answer says why
            pass
        return PendingRender(self, blob, timeout, sent=(renderer, request, ahead))

    async def render_async(
        self,
        blob: bytes,
        timeout: float = RENDER_TIMEOUT,
        sent: _Sent | None = None,
        compare: bool = True,
        attempts: int = 2,
        previous: Page0 | None = None,
    ) -> Page0:
        """The PDF's outcome (``sent``: already handed to a renderer, :meth:`start`). The first one
        is also rendered by ``pdftoppm`` (unless ``compare`` is false: an outcome nobody uses):
        should the two differ (a poppler upgraded under a module built for another), these
        renderers are refused for the rest of the process, with a warning, and ``pdftoppm``'s
        outcome stands. ``attempts`` and ``previous``: :meth:`_render`'s."""
        page0 = await self._render(blob, timeout, sent, attempts, previous)
        if not self._compares(compare):
            return page0
        loop = asyncio.get_running_loop()
        return self._checked(page0, await loop.run_in_executor(None, render_by_pdftoppm, blob, timeout))

    def collect(self, blob: bytes, timeout: float, sent: _Sent, compare: bool = True) -> Page0:
        """:meth:`render_async` of a PDF handed over by :meth:`start`, for a caller without an event
        loop: its answer read from the blocking socket (:meth:`_RendererProcess.receive_blocking`);
        only a PDF its process did not render (it ended first, or crashed under it) goes the
        event loop's way, to a new process, as :meth:`_render` sends it."""
        renderer, request, ahead = sent
        answer = renderer.receive_blocking(request, timeout, ahead)
        if answer is None:  # it had ended before the PDF came
            self._settle(renderer, Fate.ENDED)
            renderer.close()
            return _on_a_loop_of_its_own(self.render_async(blob, timeout, compare=compare, attempts=1))
        page0, fate = answer
        self._settle(renderer, fate)
        if fate is Fate.KILLED:
            return _on_a_loop_of_its_own(
                self.render_async(blob, timeout, compare=compare, attempts=1, previous=page0)
            )
        if not self._compares(compare):
            return page0
        return self._checked(page0, render_by_pdftoppm(blob, timeout))

    def _compares(self, compare: bool) -> bool:
        """Whether this outcome is the process's first, to be held to pdftoppm's (marked done now)."""
        if self._compared or PDFTOPPM is None or not compare:
            return False
        self._compared = True
        return True

    def _checked(self, page0: Page0, reference: Page0) -> Page0:
        """``page0``, or pdftoppm's ``reference`` where they differ (these renderers then refused)."""
        if reference.jpeg != page0.jpeg:
            self.refused = "its page-0 JPEG was not pdftoppm's (%s against %s)" % (
                "%d bytes" % len(page0.jpeg) if page0.jpeg else page0.reason,
                "%d bytes" % len(reference.jpeg) if reference.jpeg else reference.reason,
            )
            logger.warning("the warm page-0 renderer is not used: %s; pdftoppm renders", self.refused)
            self.close()
            return reference
        return page0

    async def _render(
        self,
        blob: bytes,
        timeout: float,
        sent: _Sent | None = None,
        attempts: int = 2,
        previous: Page0 | None = None,
    ) -> Page0:
        """A process that ends under the PDF (a signal, not its deadline) may have been killed while
        idle (the OOM killer) or crashed on this PDF: it gets one more, new process; a PDF that
        ends two is reported with the second one's reason. ``sent``: the first process already has
        the PDF (:meth:`start`). ``attempts``: the processes left to try (1 after :meth:`collect`'s
        own), ``previous``: the last one's outcome, when it ended under the PDF."""
        page0 = previous or Page0(None, "the page-0 renderer ended before it took the PDF, twice")
        for _ in range(attempts):
            if sent is not None:
                (renderer, request, ahead), sent = sent, None
                answer = await renderer.receive(request, timeout, None, ahead)
            else:
                try:
                    renderer, ahead = self._take()
                except OSError as exc:
                    return Page0(None, "the page-0 renderer could not start: %s" % exc)
                answer = await renderer.render(blob, timeout, ahead)
            if answer is None:  # it had ended before the PDF came
                self._settle(renderer, Fate.ENDED)
                renderer.close()
                continue
            page0, fate = answer
            self._settle(renderer, fate)
            if fate is not Fate.KILLED:
                return page0
        return page0

    def prestart(self) -> None:
        """Start a renderer now when none runs, ahead of a PDF to come (an extraction process does
        it at a PDF ingest's landing page): its start (an interpreter and poppler's libraries, some
        27 ms of CPU and more of wall clock) then overlaps the fetch of the PDF, where the first PDF
        waited for it. A renderer that cannot start is left to the PDF's render, which says why."""
        with self._lock:
            if self._live:
                return
        try:
            renderer = _RendererProcess(self.module_path)
        except OSError:
            return
        with self._lock:
            self._live.append(renderer)

    def _take(self) -> tuple[_RendererProcess, int]:
        """A renderer for the next PDF and how many PDFs it has before it: the least busy one
        with room in its queue, else a new one."""
        with self._lock:
            room = [r for r in self._live if not r.retired and r.outstanding < RENDER_QUEUE_DEPTH]
            if room:
                renderer = min(room, key=lambda r: r.outstanding)
                renderer.outstanding += 1
                return renderer, renderer.outstanding - 1
        renderer = _RendererProcess(self.module_path)
        with self._lock:
            renderer.outstanding = 1
            self._live.append(renderer)
        return renderer, 0

    def _settle(self, renderer: _RendererProcess, fate: Fate) -> None:
        """A PDF answered: a renderer that ended under it is given no more; one that has served
        :data:`RENDERS_PER_PROCESS` PDFs ends once its queue is empty."""
        with self._lock:
            renderer.outstanding -= 1
            if renderer.renders >= RENDERS_PER_PROCESS:
                renderer.retired = True
            ended = fate is not Fate.READY
            done = ended or (renderer.retired and renderer.outstanding == 0)
            if done and renderer in self._live:
                self._live.remove(renderer)
        if done and not ended:
            renderer.close()

    def close(self) -> None:
        """End the idle renderers (a render under way keeps its own; a later render starts new
        ones): each is told first, then each is reaped, so they end at once, not one after the other."""
        with self._lock:
            idle = [r for r in self._live if r.outstanding == 0]
            self._live = [r for r in self._live if r.outstanding]
        for renderer in idle:
            renderer.control.close()
        for renderer in idle:
            renderer.close()

    def pids(self) -> list[int]:
        """The idle renderers' process ids (tests send them real signals)."""
        with self._lock:
            return [renderer.process.pid for renderer in self._live if renderer.outstanding == 0]


async def _exchange(request: socket.socket, blob: bytes | None) -> bytes:
    """Send the PDF (unless None) and end our side, then read the answer to its end."""
    loop = asyncio.get_running_loop()
    if blob is not None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it ended: its answer says why
            await loop.sock_sendall(request, blob)
            request.shutdown(socket.SHUT_WR)
    chunks = []
    with contextlib.suppress(OSError):
        while chunk := await loop.sock_recv(request, 65536):
            chunks.append(chunk)
    return b"".join(chunks)


#: A PDF handed to a renderer: the process, the render's socket, the PDFs queued before it.
_Sent = tuple[_RendererProcess, socket.socket, int]


@dataclass
class PendingRender:
    """A PDF a warm renderer has (:meth:`WarmRenderer.start`); :meth:`outcome` waits for its JPEG.
    Read it once, even when it is not wanted after all: the renderer is then free again."""

    renderers: WarmRenderer
    blob: bytes
    timeout: float
    #: The renderer that has it (None: none took it yet; :meth:`outcome` hands it over).
    sent: _Sent | None = None
    #: The outcome already known (the renderer never read the PDF).
    ready: Page0 | None = None

    def outcome(self, compare: bool = True) -> Page0:
        """The render's outcome (as :meth:`WarmRenderer.render` gives it); ``compare``: false for an
        outcome that will not be used (the first comparison with pdftoppm waits for one that is)."""
        if self.ready is not None:
            return self.ready
        sent, self.sent = self.sent, None
        if sent is not None:
            return self.renderers.collect(self.blob, self.timeout, sent, compare)
        return _on_a_loop_of_its_own(self.renderers.render_async(self.blob, self.timeout, None, compare))


def _on_a_loop_of_its_own(coroutine: Coroutine[Any, Any, Page0]) -> Page0:
    """``coroutine``'s result on a new event loop, the thread's current one left as it was."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()


def _timed_out(timeout: float) -> str:
    return "the page-0 render timed out after %g s" % timeout


class _Warm:
    """This process's warm renderers, made on first use (:func:`warm_renderer`)."""

    renderer: WarmRenderer | None = None
    checked = False
    lock = threading.Lock()


def warm_renderer() -> WarmRenderer | None:
    """This process's warm renderers; None when the compiled module is not built (or was built
    from an older source), poppler's library cannot be loaded or the renderers were refused (then
    ``pdftoppm`` renders)."""
    if _Warm.checked:
        return _Warm.renderer if _Warm.renderer is None or _Warm.renderer.refused is None else None
    with _Warm.lock:
        if not _Warm.checked:
            try:
                module = importlib.import_module(PAGE0_MODULE)
            except ImportError:
                module = None
            if getattr(module, "PROTOCOL", None) != PAGE0_PROTOCOL:  # not built, or built before
                _Warm.renderer = None
            else:
                _Warm.renderer = WarmRenderer(getattr(module, "__file__", None))
                atexit.register(_Warm.renderer.close)
            _Warm.checked = True
    return warm_renderer()


def _page0_path() -> str:
    """The file of the compiled module this process imports (ImportError: it is not built)."""
    spec = importlib.util.find_spec(PAGE0_MODULE)
    if spec is None or spec.origin is None:
        raise ImportError("%s is not built" % PAGE0_MODULE)
    return spec.origin


def close_renderers(*args: Any, **kwargs: Any) -> None:
    """End this process's idle warm renderers (the crawl closed; a next crawl starts new ones)."""
    if _Warm.renderer is not None:
        _Warm.renderer.close()


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
