"""Sub-resource mimetypes off the reactor (votersdaily/ingest/resource_sniff.py): libmagic's own
answer, from threads of their own, remembered by the body's SHA-256."""

from __future__ import annotations

import asyncio
import hashlib

import pytest

from tests.ingest.conftest import PNG, scholarly
from votersdaily.ingest import resource_sniff
from votersdaily.ingest.filemeta import sniff_mimetype
from votersdaily.ingest.resource_sniff import ResourceSniffer, SniffMemory


def _sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def test_each_answer_is_libmagics_and_a_body_seen_before_is_answered_from_memory(monkeypatch):
    page = scholarly("plos_one_article.html").read_bytes()
    bodies = [page[:2000], PNG, page, page[:2000], PNG]  # text, an image, a large body, repeats
    sniffed = []
    monkeypatch.setattr(
        resource_sniff, "sniff_mimetype", lambda head: sniffed.append(head) or sniff_mimetype(head)
    )
    sniffer = ResourceSniffer()

    async def scenario() -> list[str]:
        first = await asyncio.gather(*(sniffer.mimetype(_sha256(b), b) for b in bodies[:3]))
        return first + [await sniffer.mimetype(_sha256(b), b) for b in bodies[3:]]

    try:
        answers = asyncio.run(scenario())
    finally:
        sniffer.close()
    assert answers == [sniff_mimetype(b) for b in bodies]
    assert answers[1] == "image/png" and answers[2] == "text/html"
    assert sorted(sniffed, key=len) == sorted(bodies[:3], key=len)  # each body sniffed once


def test_the_memory_forgets_the_least_recently_used():
    memory = SniffMemory(entries=2)
    memory.put("a", "text/css")
    memory.put("b", "image/png")
    assert memory.get("a") == "text/css"  # now the most recent
    memory.put("c", "text/plain")
    assert (memory.get("a"), memory.get("b"), memory.get("c")) == ("text/css", None, "text/plain")


def test_libmagics_error_reaches_the_caller_and_the_threads_go_on(monkeypatch):
    def broken(head: bytes) -> str:
        if head == b"bad":
            raise RuntimeError("libmagic: cannot read")
        return sniff_mimetype(head)

    monkeypatch.setattr(resource_sniff, "sniff_mimetype", broken)
    sniffer = ResourceSniffer(threads=1)

    async def scenario() -> str:
        with pytest.raises(RuntimeError, match="cannot read"):
            await sniffer.mimetype(_sha256(b"bad"), b"bad")
        return await sniffer.mimetype(_sha256(PNG), PNG)

    try:
        assert asyncio.run(scenario()) == "image/png"
    finally:
        sniffer.close()


def test_an_answer_nobody_awaits_any_more_is_dropped_and_close_ends_the_threads():
    sniffer = ResourceSniffer(threads=1)
    body = scholarly("plos_one_article.html").read_bytes()
    errors: list[dict] = []

    async def scenario() -> str:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: errors.append(context))
        waiting = asyncio.ensure_future(sniffer.mimetype(_sha256(body), body))
        await asyncio.sleep(0)
        waiting.cancel()  # the ingest's time ran out while libmagic read the body
        # one thread, answers in order: once this one is back, the cancelled one's has been settled
        return await sniffer.mimetype(_sha256(PNG), PNG)

    assert asyncio.run(scenario()) == "image/png"
    assert errors == []  # no "invalid state" from answering a cancelled call
    threads = list(sniffer.lane._started)
    sniffer.close()
    for thread in threads:
        thread.join(5)
    assert threads and not any(t.is_alive() for t in threads)
