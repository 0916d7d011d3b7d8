"""The scheduler's loop stops when asked: Ctrl-C or SIGTERM, real signals, even when Python drops the
``KeyboardInterrupt`` (no scrapyd needed: one that is down is a pass like any other)."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from tests.support.processes import SchedulerLoop
from tests.support.services import free_port


def test_a_ctrl_c_dropped_in_a_finalizer_still_stops_the_loop(tmp_path, monkeypatch):
    """Python prints and drops an exception raised while a finalizer runs, and a signal's handler
    runs wherever the main thread is: a Ctrl-C whose ``KeyboardInterrupt`` met a ``__del__`` ended
    nothing, and the loop went on (a scheduler in CI did not stop in 20 s). A real SIGINT, raised in
    a real finalizer: the loop stops after that pass."""
    from votersdaily.deploy.periodic import Plan, RecurringScheduler
    from votersdaily.deploy.scrapyd import Scrapyd
    from votersdaily.interrupts import stop_requests
    from votersdaily.store import open_store

    store = open_store("sqlite:///%s" % (tmp_path / "sched.db"))
    scheduler = RecurringScheduler(
        Scrapyd("http://127.0.0.1:%d/" % free_port()), store, [Plan("house_votes", 1.0, {}, {})]
    )
    dropped: list = []
    monkeypatch.setattr(sys, "unraisablehook", dropped.append)

    class InterruptedWhileFinalized:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10_000):  # a loop: the handler runs here, inside the finalizer
                pass

    passes = []
    one_pass = scheduler.run_once

    def counted_pass():
        passes.append(time.monotonic())
        assert len(passes) < 5, "the loop went on after Ctrl-C"
        if len(passes) == 2:
            InterruptedWhileFinalized()  # made and finalized at once
        return one_pass()

    monkeypatch.setattr(scheduler, "run_once", counted_pass)
    try:
        with stop_requests() as stop:
            scheduler.run_forever(0.01, stop=stop)
    finally:
        store.close()
    assert [type(u.exc_value) for u in dropped] == [KeyboardInterrupt], "the exception was dropped"
    assert len(passes) == 2


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_the_scheduler_loop_stops_on_ctrl_c_or_sigterm_with_exit_0(sqlite_uri, tmp_path, signum):
    """SIGTERM (``systemctl stop``, ``kill``) ended the loop as a killed process (exit -15); Ctrl-C
    was the only way out. Either now ends it: one line of header, the decisions, no traceback."""
    out = tmp_path / "scheduler.out"
    loop = SchedulerLoop(
        *("http://127.0.0.1:%d/" % free_port(), sqlite_uri, out),
        *("--interval", "0.2", "--spider", "house_votes", "--offline"),
    )
    try:
        loop.wait_for("scrapyd-unavailable", time.monotonic() + 60)
        time.sleep(0.5)  # a few passes more
    finally:
        status = loop.stop(signum)
    text = out.read_text()
    assert status == 0, text[-3000:]
    assert "scrapyd-unavailable" in text and "Traceback" not in text, text[-3000:]
