"""House roll-call votes from the Clerk's XML (clerk.house.gov/evs/<year>/rollNNN.xml).

Two serialisations (pretty-printed CRLF today; compact with an external DOCTYPE before), and two
shapes of totals: Yea/Nay (or Aye/No) votes give ``totals-by-vote`` and ``totals-by-party``; an
election of the Speaker gives ``totals-by-candidate`` (``candidate``, ``candidate-total``) with
"Present" and "Not Voting" as two more "candidates", and its ``vote-result`` names the candidate
with the most votes even when nobody was elected. The Speaker is elected by a majority of the votes
cast for a person by name (Present does not count), so a ballot can end without a winner.

Ids (version 1.3): ``vote_id`` (``h314-119.2026``) takes its year from the file's own congress and
session, never the vote's date, so a roll call of 1 or 2 January before the new session keeps the
ending session's year; ``bill_ids`` come from ``legis-num`` (the Clerk's ``H R 21``, ``S 2403``,
``H RES 1142``; an election or a quorum call has none) and the text of ``vote-desc``. An amendment
vote names the bill it amends; the amendment (``amendment-num``) is no bill. Members keep the
Clerk's ``name-id`` (the bioguide id).

``event_url`` (version 1.4): the Clerk's page ``Votes/<year><roll>`` is keyed, like ``evs/<year>/``,
by the year the session began, not the vote's date: a roll call of 2 January 2027 in the 119th
Congress's 2nd session is ``Votes/2026314``, never ``Votes/2027314`` (another session's roll 314).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from scrapy.http import Request, TextResponse

from votersdaily.plumbing.inputs import whole_number
from votersdaily.sources.canonical_ids import (
    BILL_IDS,
    PUBLIC_LAWS,
    bills_in_designation,
    id_keys,
    named_in_text,
    vote_id,
)
from votersdaily.sources.congress import session_year, to_int
from votersdaily.sources.eastern import eastern_today, parse_local, parse_local_date
from votersdaily.sources.errors import UnexpectedDocument
from votersdaily.sources.xml import outer_xml, parse_xml, text_of

from .base import EventSpider

if TYPE_CHECKING:
    from collections.abc import Iterator
    from datetime import date, datetime

    from lxml import etree
    from scrapy.http import Request, Response

ROLL_LINK_RE = re.compile(r"rollnumber=(\d+)", re.I)
PAGE_LINK_RE = re.compile(r"ROLL_\d+\.asp$", re.I)
HEADING_YEAR_RE = re.compile(r"\((\d{4})\)")
URL_YEAR_RE = re.compile(r"/evs/(\d{4})/", re.I)
LINK_YEAR_RE = re.compile(r"[?&]year=(\d{4})", re.I)
#: The two non-candidates of ``totals-by-candidate``, as ``vote_totals`` keys.
NON_CANDIDATES = {"present": "present", "not voting": "not_voting"}
#: Where the Clerk publishes each roll call of a year (3-digit, zero-padded roll number).
ROLL_URL = "https://clerk.house.gov/evs/{year}/roll{roll:03d}.xml"
INDEX_URL = "https://clerk.house.gov/evs/{year}/index.asp"


class HouseVotesSpider(EventSpider):
    name = "house_votes"
    version = "1.4"
    branch = "Legislative"
    entity = "House of Representatives"
    frequency_hours = 1.0
    recordings = {
        "gov/house_roll_call/roll314.xml": "https://clerk.house.gov/evs/2026/roll314.xml",
        "gov/house_roll_call/clerk-2023-roll037-committee.excerpt.xml": "https://clerk.house.gov/evs/2023/roll037.xml",
        "gov/house_roll_call/roll2023_002.xml": "https://clerk.house.gov/evs/2023/roll002.xml",
    }
    #: clerk.house.gov serves one small file per roll call: one at a time, a second apart.
    custom_settings = {
        **EventSpider.custom_settings,
        "DOWNLOAD_DELAY": 1.0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    }

    def __init__(self, *args: Any, year: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: ``-a year=2020`` discovers that year's roll calls instead of the current year's.
        self.year = whole_number("year", year, least=1)

    @property
    def listing_urls(self) -> tuple[str, ...]:
        return (INDEX_URL.format(year=self.year or eastern_today().year),)

    # -- discovery: the year's index.asp → its ROLL_nnn.asp pages → rollNNN.xml ------------------

    def parse_listing(self, response: Response) -> Iterator[Request]:
        """Follow the index's ROLL_nnn.asp pages and request every listed roll's XML.

        The legacy EVS pages link each roll to ``cgi-bin/vote.asp?year=Y&rollnumber=N`` and give
        dates without a year, so the year comes from the page heading ("(2020)"), else the URL.
        """
        if not isinstance(response, TextResponse):
            raise UnexpectedDocument("%s is not an HTML vote index" % response.url)
        year = self._parse_listing_year(response)
        rolls = [
            to_int(match.group(1))
            for href in response.xpath("//tr/td[1]//a/@href").getall()
            if (match := ROLL_LINK_RE.search(href))
        ]
        pages = [href for href in response.xpath("//a/@href").getall() if PAGE_LINK_RE.search(href)]
        if year is None or not (rolls or pages or response.xpath("//h2")):
            raise UnexpectedDocument(
                "%s is not a Clerk roll-call index (no heading year or roll rows)" % response.url
            )
        for href in pages:
            page = self.linked_url(response, href, "a page of the roll-call index")
            if page is not None:
                yield Request(page, callback=self.parse_listing, errback=self.source_error)
        for roll in rolls:
            yield self.document_request(ROLL_URL.format(year=year, roll=roll))

    @staticmethod
    def _parse_listing_year(response: Response) -> int | None:
        heading = " ".join(response.xpath("//h2//text()").getall())
        match = HEADING_YEAR_RE.search(heading)
        if match:
            return int(match.group(1))
        match = URL_YEAR_RE.search(response.url)
        if match:
            return int(match.group(1))
        match = LINK_YEAR_RE.search(" ".join(response.xpath("//a/@href").getall()))
        return int(match.group(1)) if match else None

    # -- one roll-call document → one event -----------------------------------------------------

    def parse_events(self, response: Response) -> Iterator[dict[str, Any]]:
        root = parse_xml(response.body, ("rollcall-vote",), response.url)
        meta = root.find("vote-metadata")
        if meta is None:
            raise UnexpectedDocument("%s has no <vote-metadata>" % response.url)
        congress = to_int(text_of(meta, "congress"))
        session = to_int(re.sub(r"\D", "", text_of(meta, "session")))
        roll = to_int(text_of(meta, "rollcall-num"))
        question = text_of(meta, "vote-question")
        legis_num = text_of(meta, "legis-num")
        candidates = self._parse_candidate_totals(meta)
        by_candidate = meta.find("vote-totals/totals-by-candidate") is not None
        elected = self._parse_elected(candidates) if by_candidate else None
        title = self._parse_title(roll, question, legis_num, text_of(meta, "vote-desc"))
        if by_candidate:
            totals, labels = self._parse_non_candidates(meta)
        else:
            totals = self._parse_totals(meta.find("vote-totals/totals-by-vote"))
            labels = self._parse_labels(meta.find("vote-totals/totals-by-party-header"))
        yield {
            "datetime": self._parse_datetime(meta),
            "title": self._parse_election_title(title, candidates, elected) if by_candidate else title,
            "description": text_of(meta, "vote-desc"),
            "unique_key": "%s-%s-%s" % (congress, session, roll),
            "source_text": outer_xml(root),
            "event_url": self._parse_event_url(meta, congress, session, roll),
            "congress": congress,
            "session": session,
            "roll_call": roll,
            "vote_id": self._parse_vote_id(congress, session, roll),
            **self._parse_ids(legis_num, text_of(meta, "vote-desc"), congress),
            "legis_num": legis_num,
            "vote_question": question,
            "vote_type": text_of(meta, "vote-type"),
            "vote_result": text_of(meta, "vote-result"),
            "amendment_num": text_of(meta, "amendment-num") or None,
            "amendment_author": text_of(meta, "amendment-author") or None,
            "chamber": text_of(meta, "chamber") or text_of(meta, "committee"),
            "committee_of_the_whole": meta.find("committee") is not None,
            "majority": text_of(meta, "majority"),
            "vote_totals": totals,
            "vote_totals_by_party": {
                text_of(row, "party"): self._parse_totals(row)
                for row in meta.findall("vote-totals/totals-by-party")
            },
            "vote_labels": labels,
            "candidate_totals": candidates if by_candidate else None,
            "elected": elected,
            "member_votes": self._parse_member_votes(root),
        }

    @staticmethod
    def _parse_vote_id(congress: int | None, session: int | None, roll: int | None) -> str | None:
        if not (congress and session and roll):
            return None
        return vote_id("h", roll, congress, session_year(congress, session))

    @staticmethod
    def _parse_ids(legis_num: str, description: str, congress: int | None) -> dict[str, list[Any]]:
        """``bill_ids`` and ``public_laws`` the roll call names, with their evidence."""
        found = bills_in_designation(legis_num, "legis-num", congress)
        found += named_in_text(description, "vote-desc", congress)
        return id_keys(found, (BILL_IDS, PUBLIC_LAWS))

    def _parse_datetime(self, meta: etree._Element) -> datetime | date:
        day = text_of(meta, "action-date")
        time_el = meta.find("action-time")
        etz = time_el.get("time-etz") if time_el is not None else None
        if etz:
            return parse_local("%s %s" % (day, etz), "%d-%b-%Y %H:%M")
        if time_el is not None and text_of(time_el):
            return parse_local("%s %s" % (day, text_of(time_el)), "%d-%b-%Y %I:%M %p")
        return parse_local_date(day, "%d-%b-%Y")

    @staticmethod
    def _parse_title(roll: int | None, question: str, legis_num: str, desc: str) -> str:
        title = "Roll Call %s: %s" % (roll, question)
        if legis_num:
            title += " — %s" % legis_num
        if desc:
            title += ": %s" % desc
        return title

    @staticmethod
    def _parse_election_title(
        title: str, candidates: list[dict[str, Any]], elected: dict[str, Any] | None
    ) -> str:
        """Who got how many votes; "elected" only for a candidate with a majority."""
        if elected is not None:
            return "%s — %s elected with %d of %d votes" % (
                title,
                elected["candidate"],
                elected["total"],
                elected["votes_cast"],
            )
        tally = ", ".join("%s %s" % (c["candidate"], c["total"]) for c in candidates)
        return "%s — no majority: %s" % (title, tally) if tally else title

    @staticmethod
    def _candidate_rows(meta: etree._Element) -> Iterator[tuple[str, int | None]]:
        for row in meta.iterfind("vote-totals/totals-by-candidate"):
            yield text_of(row, "candidate"), to_int(text_of(row, "candidate-total"))

    @classmethod
    def _parse_candidate_totals(cls, meta: etree._Element) -> list[dict[str, Any]]:
        """The candidates in the Clerk's order, without Present / Not Voting."""
        return [
            {"candidate": name, "total": total}
            for name, total in cls._candidate_rows(meta)
            if name.lower() not in NON_CANDIDATES
        ]

    @classmethod
    def _parse_non_candidates(cls, meta: etree._Element) -> tuple[dict[str, Any], dict[str, Any]]:
        """``vote_totals`` and ``vote_labels`` of an election: its Present and Not Voting rows."""
        totals, labels = {}, {}
        for name, total in cls._candidate_rows(meta):
            key = NON_CANDIDATES.get(name.lower())
            if key:
                totals[key], labels[key] = total, name
        return totals, labels

    @staticmethod
    def _parse_elected(candidates: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The candidate with a majority of the votes cast for candidates, if one has it."""
        if any(c["total"] is None for c in candidates):
            return None  # a total that is no number: the majority cannot be told
        cast = sum(c["total"] for c in candidates)
        for candidate in candidates:
            if candidate["total"] * 2 > cast:
                return {**candidate, "votes_cast": cast}
        return None

    @staticmethod
    def _parse_event_url(
        meta: etree._Element, congress: int | None, session: int | None, roll: int | None
    ) -> str:
        """The Clerk's page of the roll call, ``Votes/<year><roll>``: the year its session began, as in
        ``evs/<year>/`` and ``vote_id`` (roll numbers restart each session, not each calendar year, so
        a roll call of 2 January before the new session is its ending session's); the date's year only
        when the file gives no congress and session."""
        if congress and session:
            year: int | None = session_year(congress, session)
        else:
            day = text_of(meta, "action-date")
            year = int(day[-4:]) if day[-4:].isdigit() else None
        if not (year and roll):
            return ""
        return "https://clerk.house.gov/Votes/%d%d" % (year, roll)

    @staticmethod
    def _parse_totals(row: etree._Element | None) -> dict[str, int | None]:
        if row is None:
            return {}
        return {
            key: to_int(text_of(row, "%s-total" % key.replace("_", "-")))
            for key in ("yea", "nay", "present", "not_voting")
        }

    @staticmethod
    def _parse_labels(header: etree._Element | None) -> dict[str, str]:
        if header is None:
            return {}
        return {
            key: text_of(header, "%s-header" % key.replace("_", "-"))
            for key in ("yea", "nay", "present", "not_voting")
        }

    @staticmethod
    def _parse_member_votes(root: etree._Element) -> list[dict[str, Any]]:
        votes = []
        for row in root.iterfind("vote-data/recorded-vote"):
            member = row.find("legislator")
            if member is None:
                continue
            votes.append(
                {
                    "name_id": member.get("name-id"),
                    "name": text_of(member),
                    "unaccented_name": member.get("unaccented-name"),
                    "party": member.get("party"),
                    "state": member.get("state"),
                    "role": member.get("role"),
                    "vote": text_of(row, "vote"),
                }
            )
        return votes
