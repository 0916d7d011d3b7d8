"""What reading ids costs the spiders: each spider that reads them parses its shipped recordings with
its id helpers, and without them (the baseline, in the same run: the helpers swapped for one that
finds nothing), rounds interleaved. Prints records per second of both and their ratio per spider and
for all of them together (the main job's parse work).

    python3 -m benchmarks.event_ids [--repeat 5] [--min-seconds 0.5]

Parsing only (no pipelines, no store): benchmarks.pipeline measures the whole path. Local files only.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from scrapy.http import HtmlResponse, Request, Response, TextResponse, XmlResponse
from scrapy.utils.test import get_crawler

from votersdaily.items import EventItem
from votersdaily.recordings import recording_path
from votersdaily.requestmeta import SOURCE_URL_META
from votersdaily.spiders.base import EventSpider

#: Spider module → the attribute that reads its ids (a static method, or the module's docket helper).
ID_READERS = {
    "house_floor": "HouseFloorSpider._parse_ids",
    "house_votes": "HouseVotesSpider._parse_ids",
    "senate_votes": "SenateVotesSpider._parse_ids",
    "house_committee_meetings": "HouseCommitteeMeetingsSpider._parse_ids",
    "house_floor_schedule": "HouseFloorScheduleSpider._parse_ids",
    "senate_committee_hearings": "SenateCommitteeHearingsSpider._parse_ids",
    "white_house": "WhiteHouseSpider._parse_ids",
    "federal_register": "FederalRegisterSpider._parse_ids",
    "supreme_court_arguments": "docket_keys",
    "supreme_court_opinions": "docket_keys",
    "supreme_court_orders": "docket_keys",
}
RESPONSES: dict[str, type[Response]] = {".xml": XmlResponse, ".html": HtmlResponse, ".json": TextResponse}


def nothing(*args: Any, **kwargs: Any) -> dict[str, Any]:
    return {}


@contextmanager
def without_ids(module_name: str) -> Iterator[None]:
    module = importlib.import_module("votersdaily.spiders." + module_name)
    owner_name, _, attribute = ID_READERS[module_name].rpartition(".")
    owner = getattr(module, owner_name) if owner_name else module
    replacement = staticmethod(nothing) if owner_name else nothing
    with mock.patch.object(owner, attribute, replacement):
        yield


def parser_of(module_name: str) -> tuple[Callable[[], int], int]:
    """A function parsing every recording of the spider once (returns the events), and their count."""
    module = importlib.import_module("votersdaily.spiders." + module_name)
    cls = next(
        c
        for c in vars(module).values()
        if isinstance(c, type) and issubclass(c, EventSpider) and getattr(c, "name", None) == module_name
    )
    crawler = get_crawler(cls, {"TWISTED_REACTOR": None})
    spider = cls.from_crawler(crawler)
    crawler.spider = spider
    responses = []
    for name, upstream in cls.recordings.items():
        path = recording_path(name)
        url = path.resolve().as_uri()
        request = Request(url, meta={SOURCE_URL_META: upstream})
        responses.append(RESPONSES[Path(name).suffix](url=url, body=path.read_bytes(), request=request))

    def parse() -> int:
        return sum(
            1
            for response in responses
            for item in spider.parse_document(response)
            if isinstance(item, EventItem)
        )

    return parse, parse()


def rate(parse: Callable[[], int], count: int, min_seconds: float) -> float:
    """Events per second over at least ``min_seconds`` of parsing."""
    runs, start = 0, time.perf_counter()
    while True:
        parse()
        runs += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return runs * count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--min-seconds", type=float, default=0.5)
    args = parser.parse_args()
    rows = []
    total_with, total_without = [], []
    for module_name in ID_READERS:
        parse, count = parser_of(module_name)
        with_ids, without = [], []
        for _ in range(args.repeat):
            with_ids.append(rate(parse, count, args.min_seconds))
            with without_ids(module_name):
                without.append(rate(parse, count, args.min_seconds))
        ratios = [a / b for a, b in zip(with_ids, without, strict=True)]
        rows.append((module_name, count, statistics.median(with_ids), statistics.median(without), ratios))
        total_with.append(count / statistics.median(with_ids))
        total_without.append(count / statistics.median(without))
    print("%-27s %7s %12s %12s %8s  %s" % ("spider", "events", "with ids/s", "without/s", "ratio", "rounds"))
    for name, count, a, b, ratios in rows:
        print(
            "%-27s %7d %12.0f %12.0f %7.2fx  %s"
            % (name, count, a, b, statistics.median(ratios), ", ".join("%.2f" % r for r in ratios))
        )
    print(
        "every recording once: %.3f s with ids, %.3f s without (%.2fx the time)"
        % (sum(total_with), sum(total_without), sum(total_with) / sum(total_without))
    )


if __name__ == "__main__":
    main()
