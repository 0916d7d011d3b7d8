"""libmagic's mimetype of sub-resource bodies, off the reactor and remembered (docs/ingest.md §10).

A page's sub-resources arrive by the dozen, each to be sniffed once fetched. libmagic takes about
0.2 ms of CPU on a small stylesheet or script (more on a large one) and releases the GIL while it
runs; the reactor's own thread pool costs more than that to hand each body over and back (the HTML
benchmark's 1,496 sub-resources spent 0.5 s in libmagic and about 1 s in the pool's wake-ups), and
sniffing in the reactor keeps the crawl's one busy thread from its downloads. So a few threads of
their own take the bodies from a queue and answer through the event loop, and a body seen before
(a site's stylesheets, scripts and icons recur on every page of it) is answered from memory.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections import OrderedDict

from .filemeta import sniff_mimetype

#: Bodies whose sniffed mimetype is remembered, by their SHA-256.
SNIFF_MEMORY_ENTRIES = 4096
#: Threads sniffing at once: libmagic runs without the GIL, so two keep a second core busy.
SNIFF_THREADS = 2


class SniffMemory:
    """:func:`~.filemeta.sniff_mimetype` of bodies already seen, by the SHA-256 of the whole body
    (which fixes the bytes libmagic reads, so the answer is the one it would give again); the least
    recently used is forgotten first."""

    def __init__(self, entries: int = SNIFF_MEMORY_ENTRIES) -> None:
        self.entries = entries
        self._known: OrderedDict[str, str] = OrderedDict()

    def get(self, sha256hex: str) -> str | None:
        mimetype = self._known.get(sha256hex)
        if mimetype is not None:
            self._known.move_to_end(sha256hex)
        return mimetype

    def put(self, sha256hex: str, mimetype: str) -> None:
        self._known[sha256hex] = mimetype
        self._known.move_to_end(sha256hex)
        while len(self._known) > self.entries:
            self._known.popitem(last=False)


_Job = tuple[bytes, asyncio.AbstractEventLoop, "asyncio.Future[str]"]


class ResourceSniffer:
    """``await sniffer.mimetype(sha256hex, head)`` from the event loop; :meth:`close` ends the
    threads (started with the first body)."""

    def __init__(self, threads: int = SNIFF_THREADS, memory: SniffMemory | None = None) -> None:
        self.threads = threads
        self.memory = memory if memory is not None else SniffMemory()
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._started: list[threading.Thread] = []

    async def mimetype(self, sha256hex: str, head: bytes) -> str:
        """libmagic's mimetype of a body (``head``: its first bytes, ``sha256hex``: the whole
        body's), remembered or sniffed in a thread; libmagic's error is raised here."""
        known = self.memory.get(sha256hex)
        if known is not None:
            return known
        if not self._started:
            self._start()
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[str] = loop.create_future()
        self._jobs.put((head, loop, answer))
        mimetype = await answer
        self.memory.put(sha256hex, mimetype)
        return mimetype

    def _start(self) -> None:
        for n in range(self.threads):
            thread = threading.Thread(target=self._work, name="ingest-sniff-%d" % n, daemon=True)
            thread.start()
            self._started.append(thread)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            head, loop, answer = job
            try:
                loop.call_soon_threadsafe(_settle, answer, sniff_mimetype(head), None)
            except Exception as exc:  # libmagic's error, for the awaiting coroutine
                loop.call_soon_threadsafe(_settle, answer, "", exc)

    def close(self, *args: object, **kwargs: object) -> None:
        """Let the threads end once the bodies queued before are sniffed (a signal handler too)."""
        for _ in self._started:
            self._jobs.put(None)
        self._started = []


def _settle(answer: asyncio.Future[str], mimetype: str, error: Exception | None) -> None:
    """In the event loop: answer the coroutine, unless it has gone (cancelled at the ingest's
    timeout)."""
    if answer.done():
        return
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(mimetype)
