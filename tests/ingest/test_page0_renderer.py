"""The page-0 thumbnail's renderers (votersdaily/ingest/thumbnail.py): the warm renderer
(votersdaily/ingest/_page0.cc) and its fallback, ``pdftoppm`` itself, both held to the bytes of one
``pdftoppm`` run on every recorded PDF; failures, crashes and timeouts cost only their own PDF."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.ingest.conftest import PDFS, recorded_pdfs, scholarly
from votersdaily.ingest import thumbnail as T

pytestmark = pytest.mark.skipif(T.PDFTOPPM is None, reason="poppler-utils' pdftoppm is not installed")


def pdftoppm(blob: bytes) -> T.Page0:
    """What one blocking ``pdftoppm`` run gives, read the way both renderers read theirs."""
    done = subprocess.run([T.PDFTOPPM, *T._PDFTOPPM_ARGS], input=blob, capture_output=True, check=False)
    return T.outcome(done.returncode, done.stdout, T.RENDER_TIMEOUT)


@pytest.fixture
def warm():
    """This process's warm renderers (skips where the compiled module is not built), ended after."""
    renderer = T.warm_renderer()
    if renderer is None:
        pytest.skip("the warm page-0 renderer (votersdaily.ingest._page0) is not built")
    yield renderer
    renderer.close()


@pytest.fixture
def without_compiled_renderer(monkeypatch):
    """The compiled module unimportable (as where it was not built): ``import`` raises ImportError."""
    monkeypatch.setitem(sys.modules, T.PAGE0_MODULE, None)
    monkeypatch.setattr(T._Warm, "renderer", None)
    monkeypatch.setattr(T._Warm, "checked", False)
    yield
    monkeypatch.setattr(T._Warm, "checked", False)  # the next caller looks again


def test_warm_renderer_gives_pdftoppms_bytes_on_every_recorded_pdf(warm):
    """Each recorded PDF, twice, in two orders, from two renderers at once (what one render leaves
    behind in a process must not change the next): exactly pdftoppm's JPEG, or its failure. The
    password-protected PDF is one poppler cannot open (exit status 1) either way."""
    pdfs = recorded_pdfs()
    expected = {name: pdftoppm(blob) for name, blob in pdfs}
    assert sum(page0.jpeg is not None for page0 in expected.values()) == len(pdfs) - 1
    assert "exit status 1" in (expected["libreoffice-writer-password.pdf"].reason or "")
    got: dict[str, list[T.Page0]] = {name: [] for name, _ in pdfs}

    def render_all(order):
        for name, blob in order:
            got[name].append(warm.render(blob))

    threads = [threading.Thread(target=render_all, args=(order,)) for order in (pdfs, pdfs[::-1])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert got == {name: [page0, page0] for name, page0 in expected.items()}
    assert 1 <= len(warm.pids()) <= 2  # kept for the next renders, one per render at once


def test_without_the_compiled_renderer_pdftoppm_gives_the_same_bytes(without_compiled_renderer):
    """Not built, or poppler's library missing: render_page0 runs pdftoppm itself, same outcome."""
    assert T.warm_renderer() is None
    password = PDFS[0].parent / "libreoffice-writer-password.pdf"
    for name, blob in [*recorded_pdfs()[:6], ("password", password.read_bytes())]:
        assert T.render_page0(blob) == pdftoppm(blob), name


def test_a_pdf_poppler_cannot_open_gives_no_thumbnail_and_the_reason(warm):
    """Variants of the recorded PDF (cut in half; its first 64 bytes): no JPEG, the reason said,
    as pdftoppm says it; a variant poppler still renders (its middle zeroed) renders as pdftoppm
    renders it. The renderer goes on with the next PDF."""
    blob = scholarly("dummy.pdf").read_bytes()
    for variant in (blob[: len(blob) // 2], blob[:64]):
        page0 = warm.render(variant)
        assert page0 == pdftoppm(variant)
        assert page0.jpeg is None and page0.reason == (
            "the page-0 render failed: exit status 1 (poppler could not open the PDF)"
        )
    zeroed = blob[:2000] + bytes(len(blob) - 4000) + blob[-2000:]
    assert warm.render(zeroed) == pdftoppm(zeroed) and warm.render(zeroed).jpeg is not None
    assert warm.render(blob) == pdftoppm(blob)


def run(coroutine):
    """A coroutine's result on a loop of its own (the thread's current loop left alone)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


@pytest.fixture(params=["event loop", "blocking"])
def receive(request):
    """Both ways the answer of a render handed over is read: on an event loop (the crawl's reactor,
    :meth:`~T._RendererProcess.receive`) and from the blocking socket (an extraction process,
    :meth:`~T._RendererProcess.receive_blocking`): the same outcomes."""
    if request.param == "blocking":
        return lambda renderer, answer, timeout: renderer.receive_blocking(answer, timeout)
    return lambda renderer, answer, timeout: run(renderer.receive(answer, timeout))


def stalled_render(
    warm: T.WarmRenderer, part: bytes, timeout: float
) -> tuple[T._RendererProcess, socket.socket]:
    """A render whose PDF stops arriving half way (the caller never ends its side): the renderer
    has taken it and waits inside poppler's read of its stdin, as it would inside a slow render."""
    renderer, _ = warm._take()
    request = renderer.request(timeout)
    assert request is not None
    request.sendall(part)
    assert request.recv(1, socket.MSG_PEEK) == T._TAKEN  # it took the PDF (its answer left unread)
    return renderer, request


def test_a_renderer_crash_costs_only_its_pdf(warm, receive):
    """A renderer process killed by a real SIGSEGV under a PDF (a variant of the recorded PDF cut
    in half, stalled so the signal lands mid-read): that PDF has no thumbnail and the reason names
    the crash; the PDF queued behind it in the same process, never taken, is rendered by a new
    one, and so is the next: both pdftoppm's JPEG."""
    blob = scholarly("dummy.pdf").read_bytes()
    renderer, answer = stalled_render(warm, blob[: len(blob) // 2], 30.0)
    queued: list[T.Page0] = []
    behind = threading.Thread(target=lambda: queued.append(warm.render(blob)))
    behind.start()
    while renderer.outstanding < 2:  # handed to the stalled process, behind the stalled PDF
        behind.join(0.01)
    os.kill(renderer.process.pid, signal.SIGSEGV)
    page0, fate = receive(renderer, answer, 30.0)
    behind.join(30)
    assert (page0, fate) == (T.Page0(None, "the page-0 renderer crashed (SIGSEGV)"), T.Fate.KILLED)
    assert renderer.process.returncode == -signal.SIGSEGV
    assert queued == [pdftoppm(blob)] and queued[0].jpeg is not None
    assert warm.render(blob) == pdftoppm(blob) and renderer.process.pid not in warm.pids()


def test_pdfs_handed_to_one_renderer_at_once_render_one_after_the_other(warm):
    """Up to RENDER_QUEUE_DEPTH PDFs go to one renderer at once (the next is taken as soon as the
    last is written): four recorded PDFs handed at once to two renderers' queues give pdftoppm's
    JPEGs, and no third process is started."""
    warm.close()
    pdfs = recorded_pdfs()[:4]

    async def all_at_once():
        return await asyncio.gather(*(warm.render_async(blob) for _, blob in pdfs))

    assert run(all_at_once()) == [pdftoppm(blob) for _, blob in pdfs]
    assert len(warm.pids()) == len(pdfs) // T.RENDER_QUEUE_DEPTH


def test_a_renderer_built_from_an_older_source_is_not_used(monkeypatch):
    """A compiled module whose answers are not this code's (no PROTOCOL 2: built before its answers
    said that the request was taken; a module object standing in for such a build) is not used:
    pdftoppm renders, the same bytes."""
    import types

    monkeypatch.setitem(sys.modules, T.PAGE0_MODULE, types.ModuleType(T.PAGE0_MODULE))
    monkeypatch.setattr(T._Warm, "renderer", None)
    monkeypatch.setattr(T._Warm, "checked", False)
    blob = scholarly("dummy.pdf").read_bytes()
    assert T.warm_renderer() is None and T.render_page0(blob) == pdftoppm(blob)
    monkeypatch.setattr(T._Warm, "checked", False)  # the next caller looks again


def test_a_render_past_its_deadline_ends_with_the_reason(warm, receive):
    """The renderer's own deadline (SIGALRM) ends a render that takes too long (here a PDF that
    stops arriving, a variant of the recorded PDF cut in half): no thumbnail, the reason says so,
    and the next PDF renders in a new process."""
    blob = scholarly("dummy.pdf").read_bytes()
    renderer, answer = stalled_render(warm, blob[: len(blob) // 2], 0.3)
    page0, fate = receive(renderer, answer, 0.3)
    assert (page0, fate) == (T.Page0(None, "the page-0 render timed out after 0.3 s"), T.Fate.ENDED)
    assert renderer.process.returncode == -signal.SIGALRM
    assert warm.render(blob) == pdftoppm(blob)


def test_a_renderer_that_never_answers_is_killed_at_the_crawls_deadline(warm, receive, monkeypatch):
    """A renderer that cannot even keep its own deadline (stopped by a real SIGSTOP under a PDF, as
    a process the machine starves would be) is waited for until the deadline and its grace, from
    the reactor's side: no thumbnail, the reason says so, the process is killed, and the next PDF
    renders in a new one."""
    monkeypatch.setattr(T, "_GRACE", 0.2)
    blob = scholarly("dummy.pdf").read_bytes()
    renderer, answer = stalled_render(warm, blob[: len(blob) // 2], 0.3)
    os.kill(renderer.process.pid, signal.SIGSTOP)
    page0, fate = receive(renderer, answer, 0.3)
    assert (page0, fate) == (T.Page0(None, "the page-0 render timed out after 0.3 s"), T.Fate.ENDED)
    assert renderer.process.returncode == -signal.SIGKILL
    assert warm.render(blob) == pdftoppm(blob)


def test_an_ended_renderer_is_replaced_before_it_takes_the_pdf(warm):
    """A renderer that ended while idle (killed) is not handed the PDF: a new one renders it."""
    blob = scholarly("dummy.pdf").read_bytes()
    assert warm.render(blob).jpeg is not None
    (pid,) = warm.pids()
    os.kill(pid, signal.SIGKILL)
    assert warm.render(blob) == pdftoppm(blob)
    assert warm.pids() != [pid]


def test_renderers_end_with_the_crawl(warm):
    """close() ends the idle renderers (their control socket closes and they exit); a later render
    starts a new one."""
    blob = scholarly("dummy.pdf").read_bytes()
    warm.render(blob)
    (pid,) = warm.pids()
    warm.close()
    assert warm.pids() == [] and not Path("/proc/%d" % pid).exists()
    assert warm.render(blob).jpeg is not None


@pytest.mark.parametrize("way", ["render", "start and outcome"])
def test_renderers_whose_first_jpeg_is_not_pdftoppms_are_refused(warm, monkeypatch, caplog, way):
    """The first render of a process is also rendered by pdftoppm; where they differ (here pdftoppm
    asked for 90 px, as a poppler upgraded under the module would differ) pdftoppm's JPEG stands,
    a warning says why, and pdftoppm renders from then on. The same for a render handed over
    first and read later (an extraction process's, :meth:`~T.WarmRenderer.collect`)."""
    blob = scholarly("dummy.pdf").read_bytes()
    ours = warm.render(blob)  # (this process's renderers compared with pdftoppm's real arguments)
    monkeypatch.setattr(T, "_PDFTOPPM_ARGS", tuple("90" if a == "180" else a for a in T._PDFTOPPM_ARGS))
    fresh = T.WarmRenderer()
    monkeypatch.setattr(T._Warm, "renderer", fresh)
    monkeypatch.setattr(T._Warm, "checked", True)
    page0 = fresh.render(blob) if way == "render" else fresh.start(blob).outcome()
    assert page0 == pdftoppm(blob) and page0.jpeg is not None and page0.jpeg != ours.jpeg
    assert fresh.refused and "not pdftoppm's" in caplog.text and fresh.pids() == []
    assert T.warm_renderer() is None and T.render_page0(blob) == page0


def test_a_render_from_outside_a_loop_leaves_the_threads_event_loop_as_it_was(warm):
    """render() runs on a loop of its own: the loop set for this thread (the tests' installed
    reactor's, in a crawl) is still the current one afterwards."""
    mine = asyncio.new_event_loop()
    asyncio.set_event_loop(mine)
    try:
        assert warm.render(scholarly("dummy.pdf").read_bytes()).jpeg is not None
        assert asyncio.get_event_loop_policy().get_event_loop() is mine
    finally:
        asyncio.set_event_loop(None)
        mine.close()


def test_a_render_started_before_other_work_gives_pdftoppms_bytes(warm):
    """start() hands the PDF over at once (the extraction process then reads its text while it
    renders); outcome() reads pdftoppm's JPEG, on every recorded PDF, and leaves the renderer idle."""
    for _, blob in recorded_pdfs():
        pending = warm.start(blob)
        assert pending.outcome() == pdftoppm(blob)
    assert len(warm.pids()) == 1


def test_a_started_render_whose_renderer_dies_before_taking_it_goes_to_a_new_one(warm):
    """A renderer stopped (SIGSTOP) when the PDF is handed over, then killed (SIGKILL) before it
    took it: the PDF is rendered by a new process, pdftoppm's bytes."""
    blob = scholarly("dummy.pdf").read_bytes()
    assert warm.render(blob).jpeg is not None
    (pid,) = warm.pids()
    os.kill(pid, signal.SIGSTOP)
    pending = warm.start(blob)  # the control message and the PDF wait in the sockets' buffers
    os.kill(pid, signal.SIGKILL)
    assert pending.outcome() == pdftoppm(blob)
    assert pid not in warm.pids() and len(warm.pids()) == 1


def test_a_started_render_the_renderer_never_reads_ends_at_the_deadline(warm, monkeypatch):
    """A renderer that never reads the PDF (stopped by a real SIGSTOP, as a starved process would
    be) while the PDF is larger than the socket takes (a variant of the recorded PDF padded to
    4 MiB): start() gives up at the deadline and its grace, kills it, and says so; the next PDF
    renders in a new process."""
    monkeypatch.setattr(T, "_GRACE", 0.2)
    blob = scholarly("dummy.pdf").read_bytes()
    assert warm.render(blob).jpeg is not None
    (pid,) = warm.pids()
    os.kill(pid, signal.SIGSTOP)
    padded = blob + b" " * ((4 << 20) - len(blob))
    assert warm.start(padded, 0.3).outcome() == T.Page0(None, "the page-0 render timed out after 0.3 s")
    assert not Path("/proc/%d" % pid).exists() or "zombie" in Path("/proc/%d/status" % pid).read_text()
    assert warm.render(blob) == pdftoppm(blob) and pid not in warm.pids()


def test_a_started_render_is_read_without_an_event_loop(warm, monkeypatch):
    """The answer of a render handed over by start() is read from its blocking socket: no event
    loop is made for it (one per PDF cost an extraction process about 0.3 ms of its 1.5-2 ms per
    PDF), on every recorded PDF, pdftoppm's bytes, the first one compared with pdftoppm's."""
    assert warm.render(scholarly("dummy.pdf").read_bytes()).jpeg is not None  # started, compared

    def no_loop():
        raise AssertionError("an event loop was made to read a started render")

    monkeypatch.setattr(asyncio, "new_event_loop", no_loop)
    for _, blob in recorded_pdfs():
        assert warm.start(blob).outcome() == pdftoppm(blob)
    fresh = T.WarmRenderer()
    try:
        blob = scholarly("dummy.pdf").read_bytes()
        assert fresh.start(blob).outcome() == pdftoppm(blob) and fresh._compared
    finally:
        fresh.close()


def test_a_started_render_whose_renderer_crashes_under_it_goes_to_a_new_one(warm):
    """A renderer killed by a real SIGSEGV after it took a handed-over PDF (stalled half way, a
    variant of the recorded PDF cut in half): the PDF goes once more to a new process, as a render
    on the event loop does, and comes back as pdftoppm renders the whole PDF."""
    blob = scholarly("dummy.pdf").read_bytes()
    renderer, answer = stalled_render(warm, blob[: len(blob) // 2], 30.0)
    os.kill(renderer.process.pid, signal.SIGSEGV)
    assert warm.collect(blob, 30.0, (renderer, answer, 0)) == pdftoppm(blob)
    assert renderer.process.returncode == -signal.SIGSEGV and renderer.process.pid not in warm.pids()


def test_a_renderer_loads_the_module_file_this_process_imported_from_any_folder(warm, tmp_path, monkeypatch):
    """A renderer process started from another folder (a crawl's working directory is anywhere)
    loads the compiled module's file this process imported, not whatever ``votersdaily`` the
    folder or site-packages would give (another checkout's build), and renders pdftoppm's bytes."""
    import importlib

    path = os.path.realpath(importlib.import_module(T.PAGE0_MODULE).__file__)
    monkeypatch.chdir(tmp_path)
    fresh = T.WarmRenderer()
    try:
        blob = scholarly("dummy.pdf").read_bytes()
        assert fresh.render(blob) == pdftoppm(blob)
        (pid,) = fresh.pids()
        mapped = {line.split()[-1] for line in Path("/proc/%d/maps" % pid).read_text().splitlines()}
        assert path in mapped
    finally:
        fresh.close()


def _minor_faults(pid: int) -> int:
    """A process's minor page faults so far (/proc/<pid>/stat's tenth field)."""
    return int(Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()[7])


def test_a_warm_renderer_keeps_its_memory_between_renders():
    """A renderer keeps the memory a page's render takes for the next one (glibc returned the
    bitmap to the kernel at each render's end and the next faulted it in again: some 35 page faults
    a render): in a new renderer, 20 renders of the recorded PDF after the first three, each
    pdftoppm's bytes, fault in next to nothing."""
    if T.warm_renderer() is None:
        pytest.skip("the warm page-0 renderer (votersdaily.ingest._page0) is not built")
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        pytest.skip("AddressSanitizer's allocator (scripts/build_native.py --sanitize) is not glibc's")
    blob = scholarly("dummy.pdf").read_bytes()
    expected = pdftoppm(blob)
    fresh = T.WarmRenderer()
    try:
        for _ in range(3):  # its heap grown to what this page takes
            assert fresh.start(blob).outcome(compare=False) == expected
        (pid,) = fresh.pids()
        before = _minor_faults(pid)
        for _ in range(20):
            assert fresh.start(blob).outcome(compare=False) == expected
        faults = _minor_faults(pid) - before
        assert faults < 20, faults
    finally:
        fresh.close()


def test_a_renderer_started_ahead_renders_the_next_pdf(warm):
    """prestart() starts a renderer when none runs (a second call starts no other); the next PDF
    goes to it and comes back as pdftoppm's JPEG."""
    blob = scholarly("dummy.pdf").read_bytes()
    warm.close()
    warm.prestart()
    warm.prestart()
    (pid,) = warm.pids()
    assert warm.start(blob).outcome() == pdftoppm(blob)
    assert warm.pids() == [pid]


@pytest.mark.parametrize(
    ("landing", "thumbnails", "started"),
    [
        ("plos_one_article.html", True, True),
        ("plos_one_article.html", False, False),
        ("elife_article.html", True, False),
    ],
    ids=["a link to a PDF", "thumbnails off", "no link"],
)
def test_a_pdf_ingests_landing_page_starts_the_renderer_for_its_pdf(warm, landing, thumbnails, started):
    """The extraction process starts its renderer at a PDF ingest's landing page that links a PDF
    (recorded PLOS ONE page), so its start overlaps the PDF's fetch; not when INGEST_PDF_THUMBNAILS
    is off, nor at a page with no link to follow (recorded eLife page, read at another address)."""
    from votersdaily.ingest.config import IngestConfig
    from votersdaily.ingest.process import examine_hop

    warm.close()
    url = "https://example.org/article"
    facts = examine_hop(
        scholarly(landing).read_bytes(),
        url,
        "text/html",
        "pdf",
        [url],
        IngestConfig(pdf_thumbnails=thumbnails),
    )
    assert bool(facts.landing.next_hop) is (landing == "plos_one_article.html")
    assert len(warm.pids()) == int(started)
