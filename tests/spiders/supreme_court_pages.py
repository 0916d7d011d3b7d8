"""The real supremecourt.gov listings of many terms the Supreme Court tests read: the pages shipped in
votersdaily/recordings/gov/supreme_court/ and those of earlier terms in tests/fixtures/supreme_court/
(provenance of both in votersdaily/recordings/gov/FIXTURES.md), with where each was published, what it
lists and, where juriscraper recorded one, that project's parse of it as an oracle."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin

from w3lib.url import safe_url_string

from tests.conftest import recording
from votersdaily.sources.supremecourt import ARGUMENT_AUDIO, IN_CHAMBERS, RELATING, SITE, SLIP, parse_date
from votersdaily.spiders.supreme_court_arguments import SupremeCourtArgumentsSpider
from votersdaily.spiders.supreme_court_opinions import SupremeCourtOpinionsSpider
from votersdaily.spiders.supreme_court_orders import SupremeCourtOrdersSpider

EARLIER_TERMS = Path(__file__).resolve().parents[1] / "fixtures" / "supreme_court"
SPIDER_OF = {
    SLIP: SupremeCourtOpinionsSpider,
    IN_CHAMBERS: SupremeCourtOpinionsSpider,
    RELATING: SupremeCourtOrdersSpider,
    ARGUMENT_AUDIO: SupremeCourtArgumentsSpider,
}


@dataclass(frozen=True)
class CourtPage:
    path: Path
    #: The upstream URL: the page's own form action resolved against the listing's address of its time.
    url: str
    kind: str
    #: Events the page gives (its opinion or argument rows).
    events: int
    #: The header rows of its listing tables, as published.
    header: str
    #: juriscraper's expected parse of this very page (.compare.json), if that project recorded one.
    oracle: str = ""

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def spider(self):
        return SPIDER_OF[self.kind]


def _earlier(name: str, *args, oracle: str = "") -> CourtPage:
    return CourtPage(EARLIER_TERMS / name, *args, oracle=str(EARLIER_TERMS / oracle) if oracle else "")


OPINIONS = SITE + "/opinions/"
PAGES = (
    _earlier(
        "slip_2011_trimmed.html",
        OPINIONS + "slipopinions.aspx",
        SLIP,
        28,
        "R- | Date | Docket | Name | J. | Pt.",
    ),
    _earlier("slip_2014.html", OPINIONS + "slipopinion/14", SLIP, 1, "R- | Date | Docket | Name | J. | Pt."),
    _earlier(
        "slip_2015.html",
        OPINIONS + "slipopinions.aspx",
        SLIP,
        18,
        "R- | Date | Docket | Name | Revised | J. | Pt.",
        oracle="slip_2015.compare.json",
    ),
    _earlier(
        "slip_2017.html",
        OPINIONS + "slipopinion/17",
        SLIP,
        52,
        "R- | Date | Docket | Name | Revised | J. | Pt.",
        oracle="slip_2017.compare.json",
    ),
    CourtPage(
        recording("gov/supreme_court/scotus_slip_example.html"),
        OPINIONS + "slipopinion/22",
        SLIP,
        58,
        "R- | Date | Docket | Name | J. | Citation",
        oracle=str(recording("gov/supreme_court/scotus_slip_example.compare.json")),
    ),
    _earlier(
        "relating_2012.html",
        OPINIONS + "relatingtoorders.aspx",
        RELATING,
        9,
        "Date | Docket | Name | J. | Pt.",
    ),
    _earlier(
        "relating_2015.html",
        OPINIONS + "relatingtoorders/15",
        RELATING,
        8,
        "Date | Docket | Name | Revised | J. | Pt.",
        oracle="relating_2015.compare.json",
    ),
    _earlier(
        "relating_2020.html",
        OPINIONS + "relatingtoorders/20",
        RELATING,
        34,
        "Date | Docket | Name | Revised | J. | Pt.",
        oracle="relating_2020.compare.json",
    ),
    CourtPage(
        recording("gov/supreme_court/scotus_relating_2025.html"),
        OPINIONS + "relatingtoorders/25",
        RELATING,
        7,
        "Date | Docket | Name | J. | Citation",
        oracle=str(recording("gov/supreme_court/scotus_relating_2025.compare.json")),
    ),
    _earlier(
        "chambers_2011_trimmed.html",
        OPINIONS + "in-chambers.aspx",
        IN_CHAMBERS,
        0,
        "Date | Docket | Name | J. | Pt.",
    ),
    _earlier(
        "chambers_2013.html", OPINIONS + "in-chambers.aspx", IN_CHAMBERS, 1, "Date | Docket | Name | J. | Pt."
    ),
    _earlier(
        "chambers_2013_2016capture.html",
        OPINIONS + "in-chambers/13",
        IN_CHAMBERS,
        1,
        "Date | Docket | Name | J. | Pt.",
        oracle="chambers_2013_2016capture.compare.json",
    ),
    _earlier(
        "chambers_2015_empty.html",
        OPINIONS + "in-chambers/15",
        IN_CHAMBERS,
        0,
        "Date | Docket | Name | Revised | J. | Pt.",
    ),
    _earlier(
        "chambers_all_terms_2025.html",
        OPINIONS + "in-chambers.aspx",
        IN_CHAMBERS,
        1,
        "Term Year | Date | Docket | Name | Revised | J. | Pt.",
    ),
    _earlier(
        "audio_2010_2013.html",
        SITE + "/oral_arguments/argument_audio.aspx",
        ARGUMENT_AUDIO,
        295,
        "Argument Session: April 21, 2014 - April 30, 2014 | Date Argued",
    ),
    _earlier(
        "audio_2014.html",
        SITE + "/oral_arguments/argument_audio.aspx",
        ARGUMENT_AUDIO,
        9,
        "Argument Session: October 06, 2014 - October 15, 2014 | Date Argued",
        oracle="audio_2014.compare.json",
    ),
    CourtPage(
        recording("gov/supreme_court/scotus_oral_args_example.html"),
        SITE + "/oral_arguments/argument_audio/2017",
        ARGUMENT_AUDIO,
        6,
        "Oral Argument | Date Argued",
        oracle=str(recording("gov/supreme_court/scotus_oral_args_example.compare.json")),
    ),
)


def _case(name: str) -> str:
    """A case name as juriscraper writes it: straight apostrophes, "v." after a bare "v", any case."""
    return re.sub(r"\bv\.? ", "v. ", name.replace("’", "'")).lower()


def _surname(justice: str) -> str:
    return justice.split(",", maxsplit=1)[0].rsplit(maxsplit=1)[-1] if justice else ""


def opinion_oracle_mismatches(events: list[dict], oracle_path: str) -> list:
    """juriscraper lists every PDF of an opinion listing (a revision too, on its own date) without
    its ``#page=`` fragment: the same PDFs, dates, dockets and cases as the events and their
    revisions, and the same author (juriscraper writes "Clarence Thoma", "Elana Kagan")."""
    mine = Counter()
    authors: dict[tuple, list[str]] = {}
    revised_on: dict[tuple, str] = {}
    for e in events:
        for url, day in [(e["pdf_url"], e["datetime"][:10])] + [
            (r["pdf_url"], e["datetime"][:10]) for r in e["revisions"]
        ]:
            key = (url.split("#")[0], day, e["docket"], _case(e["case_name"]))
            mine[key] += 1
            authors.setdefault(key, []).append(_surname(e["justice"]))
        for r in e["revisions"]:  # juriscraper dates a revision by its own date (2015) or its row's (2025)
            revised_on[(r["pdf_url"], parse_date(r["date_text"]).isoformat())] = e["datetime"][:10]
    theirs = Counter()
    problems = []
    for expected in json.loads(Path(oracle_path).read_text("utf-8")):
        url = safe_url_string(urljoin(SITE + "/", expected["download_urls"]))
        day = revised_on.get((url, expected["case_dates"]), expected["case_dates"])
        key = (url, day, expected["docket_numbers"], _case(expected["case_names"]))
        theirs[key] += 1
        their_author = _surname(expected["judges"])
        if not any(a.startswith(their_author[:5]) for a in authors.get(key, [])):
            problems.append(("author", key, their_author, authors.get(key)))
    if mine != theirs:
        problems.append(("rows", mine - theirs, theirs - mine))
    return problems
