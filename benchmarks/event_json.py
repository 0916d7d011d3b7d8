"""The event pipeline's JSON text of an event (``schema._clean_json``): the compiled encoder
(``votersdaily/_eventjson.c``) against the Python path it replaces (the C encoder of Python's ``json``
and a scan of its text), both in one run, on the recorded events (every event the event spiders parse
from their shipped recordings; the Federal Register's apart, the pipeline benchmark's spider).

The modes alternate within each round; the best round of each is printed in microseconds per event,
with the ratio and the load average.

    flock /tmp/bench.lock python3 -m benchmarks.event_json [--repeat 7] [--min-seconds 0.3]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

from tests.test_schema import recorded_events
from votersdaily import schema


def per_event(clean: Callable[[Any], Any], events: list[dict], min_seconds: float) -> float:
    """Microseconds per event of ``clean`` over ``events``, over at least ``min_seconds``."""
    runs, start = 0, time.perf_counter()
    while True:
        for event in events:
            clean(event)
        runs += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return elapsed / (runs * len(events)) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--min-seconds", type=float, default=0.3)
    args = parser.parse_args()
    compiled = schema._compiled_clean_text
    if compiled is None:
        raise SystemExit("votersdaily/_eventjson.c is not built: run python3 scripts/build_native.py")
    print("load average before: %.2f %.2f %.2f (%d CPUs)" % (*os.getloadavg(), os.cpu_count() or 0))
    everything = recorded_events()
    register = [e for e in everything if e["parser_name"] == "federal_register"]
    sets = {"federal_register": register, "all recorded": everything}
    for name, events in sets.items():
        sizes = sorted(len(json.dumps(e, ensure_ascii=False).encode()) for e in events)
        keys = sorted(len(e) for e in events)
        print(
            "%s: %d events, median %d bytes, %d keys"
            % (name, len(events), sizes[len(sizes) // 2], keys[len(keys) // 2])
        )
    best: dict[tuple[str, str], float] = {}
    for _ in range(args.repeat):
        for mode, seam in (("python", None), ("compiled", compiled)):
            schema._compiled_clean_text = seam
            try:
                for name, events in sets.items():
                    took = per_event(schema._clean_json, events, args.min_seconds)
                    best[mode, name] = min(best.get((mode, name), took), took)
            finally:
                schema._compiled_clean_text = compiled
    for name in sets:
        python, fast = best["python", name], best[("compiled", name)]
        print(
            "%-17s python path %6.2f us/event, compiled %6.2f us/event: %.2fx faster"
            % (name, python, fast, python / fast)
        )
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
