"""``ThreadLane``: calls in threads of the lane's own, answered through the event loop."""

from __future__ import annotations

import asyncio
import threading

import pytest

from votersdaily.blocking import ThreadLane


def test_a_lane_answers_each_call_with_its_result_or_its_exception():
    lane = ThreadLane(2, "test-lane")

    def where(n: int) -> tuple[int, str]:
        if n == 3:
            raise ValueError("three")
        return n, threading.current_thread().name

    async def main() -> list:
        return await asyncio.gather(*(lane.run(where, n) for n in range(6)), return_exceptions=True)

    try:
        answers = asyncio.run(main())
    finally:
        lane.close(wait=True)
    assert [a if isinstance(a, ValueError) else a[0] for a in answers[:3]] == [0, 1, 2]
    assert isinstance(answers[3], ValueError) and str(answers[3]) == "three"
    assert {a[1] for a in answers if not isinstance(a, Exception)} <= {"test-lane-0", "test-lane-1"}


def test_close_lets_the_queued_calls_finish_and_ends_the_threads():
    lane = ThreadLane(1, "test-lane")
    release = threading.Event()
    done: list[int] = []

    def step(n: int) -> None:
        release.wait(5)
        done.append(n)

    async def main() -> None:
        calls = [asyncio.ensure_future(lane.run(step, n)) for n in range(3)]
        await asyncio.sleep(0)  # the calls are queued
        threads = list(lane._started)
        release.set()
        await asyncio.gather(*calls)
        lane.close(wait=True)
        assert threads and not any(t.is_alive() for t in threads)

    asyncio.run(main())
    assert done == [0, 1, 2]


def test_an_answer_for_a_cancelled_call_or_a_closed_loop_is_dropped():
    lane = ThreadLane(1, "test-lane")
    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(5)
        return "late"

    async def main() -> None:
        call = asyncio.ensure_future(lane.run(slow))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 5)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(main())  # the loop closes with the call still running
    release.set()

    async def next_call() -> str:
        return await asyncio.wait_for(lane.run(str, "next"), 5)

    try:  # the lane's one thread answered the closed loop and went on to the next call
        assert asyncio.run(next_call()) == "next"
    finally:
        lane.close(wait=True)
