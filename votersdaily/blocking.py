"""Blocking work (a store call, a file copy, a parse) off the reactor, awaited from a coroutine."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

T = TypeVar("T")


async def run_in_thread(func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``func(*args, **kwargs)`` in the reactor's thread pool; its result (or its exception) here.

    Code that chains Deferreds (the store writer's batch chain) calls ``deferToThread`` itself."""
    return await maybe_deferred_to_future(deferToThread(func, *args, **kwargs))
