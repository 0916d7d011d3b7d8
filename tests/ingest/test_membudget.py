"""The byte budgets sub-resource downloads reserve from: first come first served, a reservation
cut to the announced size gives the rest back, and a closed page budget lets nobody else start."""

from __future__ import annotations

import asyncio

import pytest

from votersdaily.ingest.membudget import BudgetClosed, ByteBudget, Reservation, StreamDigest


def test_reservations_wait_for_room_in_both_budgets_and_shrink():
    async def scenario():
        page, worker = ByteBudget(100), ByteBudget(150)
        first = Reservation((page, worker), 60)
        await first.take()
        second = Reservation((page, worker), 60)
        waiting = asyncio.ensure_future(second.take())
        await asyncio.sleep(0)
        assert not waiting.done() and (page.used, worker.used) == (60, 60)
        first.shrink(10)  # Content-Length: 10 bytes
        await asyncio.wait_for(waiting, 1)
        assert (page.used, worker.used) == (70, 70)
        other_page = Reservation((ByteBudget(100), worker), 90)  # the worker budget is the limit now
        blocked = asyncio.ensure_future(other_page.take())
        await asyncio.sleep(0)
        assert not blocked.done()
        second.release()
        await asyncio.wait_for(blocked, 1)
        first.release()
        other_page.release()
        return page.used, worker.used

    assert asyncio.run(scenario()) == (0, 0)


def test_a_closed_page_budget_fails_its_waiters():
    async def scenario():
        page, worker = ByteBudget(10), ByteBudget(100)
        holder = Reservation((page, worker), 10)
        await holder.take()
        waiter = asyncio.ensure_future(Reservation((page, worker), 10).take())
        await asyncio.sleep(0)
        page.close()
        with pytest.raises(BudgetClosed):
            await waiter
        with pytest.raises(BudgetClosed):
            await Reservation((page, worker), 1).take()
        holder.release()
        return worker.used

    assert asyncio.run(scenario()) == 0


def test_stream_digest_matches_the_whole_body_and_keeps_only_its_head():
    import hashlib

    body = bytes(range(256)) * 8192  # 2 MiB
    digest = StreamDigest()
    for i in range(0, len(body), 65536):
        digest.update(body[i : i + 65536])
    assert digest.covers(body) and not digest.covers(body[:-1])
    assert digest.hashes() == {
        "sha1hex": hashlib.sha1(body).hexdigest(),
        "sha256hex": hashlib.sha256(body).hexdigest(),
    }
    assert bytes(digest.head) == body[: 1024 * 1024]
