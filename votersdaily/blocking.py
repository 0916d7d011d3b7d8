"""Blocking work (a store call, a file copy, a parse) off the reactor, awaited from a coroutine."""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

T = TypeVar("T")


async def run_in_thread(func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``func(*args, **kwargs)`` in the reactor's thread pool; its result (or its exception) here.

    Code that chains Deferreds (the store writer's batch chain) calls ``deferToThread`` itself; work
    handed over once per document goes through a :class:`ThreadLane`."""
    return await maybe_deferred_to_future(deferToThread(func, *args, **kwargs))


_LaneCall = tuple[Callable[..., Any], tuple[Any, ...], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


class ThreadLane:
    """``await lane.run(func, *args)``: ``func(*args)`` in one of ``threads`` threads of the lane's
    own, taken from a queue and answered through the event loop (``call_soon_threadsafe``). The
    reactor's thread pool costs the reactor 50-80 us of CPU a call (Twisted's team of workers, its
    queue's condition variable, a Deferred back through the waker); a lane 12-15 us. So work handed
    over once per document (libmagic of a sub-resource, an ingest's files) goes through a lane. The
    threads start with the first call; :meth:`close` ends them."""

    def __init__(self, threads: int, name: str) -> None:
        self.threads = threads
        self.name = name
        self._calls: queue.SimpleQueue[_LaneCall | None] = queue.SimpleQueue()
        self._started: list[threading.Thread] = []

    async def run(self, func: Callable[..., T], *args: Any) -> T:
        """``func(*args)`` in a thread of the lane; its result, or its exception, here."""
        if not self._started:
            self._start()
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[T] = loop.create_future()
        self._calls.put((func, args, loop, answer))
        return await answer

    def _start(self) -> None:
        for n in range(self.threads):
            thread = threading.Thread(target=self._work, name="%s-%d" % (self.name, n), daemon=True)
            thread.start()
            self._started.append(thread)

    def _work(self) -> None:
        while (call := self._calls.get()) is not None:
            func, args, loop, answer = call
            try:
                outcome: tuple[Any, Exception | None] = (func(*args), None)
            except Exception as exc:  # raised in the awaiting coroutine
                outcome = (None, exc)
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody awaits it
                loop.call_soon_threadsafe(_settle, answer, *outcome)

    def close(self, *args: object, wait: bool = False, **kwargs: object) -> None:
        """Let the threads end once the calls queued before are done; ``wait``: return then (a
        signal handler too)."""
        started, self._started = self._started, []
        for _ in started:
            self._calls.put(None)
        if wait:
            for thread in started:
                thread.join()


def _settle(answer: asyncio.Future[Any], result: Any, error: Exception | None) -> None:
    """In the event loop: answer the coroutine, unless it has gone (cancelled meanwhile)."""
    if answer.done():
        return
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(result)
