"""libmagic's mimetype of sub-resource bodies, off the reactor and remembered (docs/ingest.md §10).

A page's sub-resources arrive by the dozen, each to be sniffed once fetched. libmagic takes about
0.2 ms of CPU on a small stylesheet or script (more on a large one) and releases the GIL while it
runs; the reactor's own thread pool costs more than that to hand each body over and back (the HTML
benchmark's 1,496 sub-resources spent 0.5 s in libmagic and about 1 s in the pool's wake-ups), and
sniffing in the reactor keeps the crawl's one busy thread from its downloads. So a few threads of
their own take the bodies from a queue and answer through the event loop (a
:class:`~votersdaily.blocking.ThreadLane`), and a body seen before
(a site's stylesheets, scripts and icons recur on every page of it) is answered from memory.
"""

from __future__ import annotations

from collections import OrderedDict

from votersdaily.blocking import ThreadLane

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


class ResourceSniffer:
    """``await sniffer.mimetype(sha256hex, head)`` from the event loop; :meth:`close` ends the
    threads (started with the first body)."""

    def __init__(self, threads: int = SNIFF_THREADS, memory: SniffMemory | None = None) -> None:
        self.memory = memory if memory is not None else SniffMemory()
        self.lane = ThreadLane(threads, "ingest-sniff")

    async def mimetype(self, sha256hex: str, head: bytes) -> str:
        """libmagic's mimetype of a body (``head``: its first bytes, ``sha256hex``: the whole
        body's), remembered or sniffed in a thread; libmagic's error is raised here."""
        known = self.memory.get(sha256hex)
        if known is not None:
            return known
        mimetype = await self.lane.run(sniff_mimetype, head)
        self.memory.put(sha256hex, mimetype)
        return mimetype

    def close(self, *args: object, **kwargs: object) -> None:
        """Let the threads end once the bodies queued before are sniffed (a signal handler too)."""
        self.lane.close()
