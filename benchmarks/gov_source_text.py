"""Cost of keeping each event's exact source text, on the real recordings.

Baseline: decoding alone (``json.loads`` for the Federal Register page, lxml ``parse_xml`` +
re-serialising every element with ``outer_xml`` for the White House feed and Senate hearings).
Measured: the helpers the spiders use for byte-exact fragments (``json_text.load_with_text``,
``xml_text.element_texts``). Prints ms per document and the ratio to the baseline.

    python -m benchmarks.gov_source_text [repeats]
"""

from __future__ import annotations

import json
import sys
import time

from votersdaily.recordings import HERE
from votersdaily.sources.json_text import load_with_text
from votersdaily.sources.xml import outer_xml, parse_xml
from votersdaily.sources.xml_text import element_texts

GOV = HERE / "gov"


def timed(fn, repeats: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats * 1000


def main(repeats: int = 200) -> None:
    fr = (GOV / "federal_register" / "documents_newest20.json").read_bytes()
    feed = (GOV / "white_house" / "presidential-actions_feed.xml").read_bytes()
    hearings = (GOV / "senate_hearings" / "hearings_2026-07-30_wayback.xml").read_bytes()
    cases = [
        ("federal_register 20 results (28.8 KB)", lambda: json.loads(fr), lambda: load_with_text(fr)),
        (
            "white_house feed 30 items (593 KB)",
            lambda: [outer_xml(e) for e in parse_xml(feed, ("rss",)).iter("item")],
            lambda: (parse_xml(feed, ("rss",)), element_texts(feed, "item")),
        ),
        (
            "senate hearings 17 meetings (22.6 KB)",
            lambda: [outer_xml(e) for e in parse_xml(hearings, ("css_meetings_scheduled",)).iter("meeting")],
            lambda: (parse_xml(hearings, ("css_meetings_scheduled",)), element_texts(hearings, "meeting")),
        ),
    ]
    print("%-40s %12s %12s %7s" % ("document", "baseline ms", "exact ms", "ratio"))
    for label, base, exact in cases:
        b, e = timed(base, repeats), timed(exact, repeats)
        print("%-40s %12.3f %12.3f %6.2fx" % (label, b, e, e / b))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
