"""Senate roll-call votes from the LIS vote XML, discovered through the session's vote menu.

Quirks: ``vote_date`` has two spaces before the time; a ``<count>`` position nobody took may be an
empty element (``<present/>``), which is 0, not unknown; a member who gives a live pair votes
"Present, Giving Live Pair" and, in newer files, names the absent partner's LIS id in
``vote_cast/@pair`` (``<vote_cast crp=" " pair="S375">``), which is kept as the member's ``pair``.

Ids (version 1.2): ``vote_id`` (``s213-108.2004``) takes its year from the file's ``congress_year``
(the year the session began, also for a vote cast on 1 or 2 January before the next session), else
from its congress and session. What the vote is on comes from ``<document>`` (``document_type``
``S.``, ``H.J.Res.``… and ``document_number``, in ``document_congress``; ``PN`` with ``373`` or
``615-2`` is a nomination; an en bloc vote repeats the element) and the question and title texts;
an amendment (``Coons Amdt. No. 23``) is no bill. Members keep the Senate's ``lis_member_id``.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from votersdaily.plumbing.inputs import one_of, whole_number
from votersdaily.sources.canonical_ids import (
    BILL_IDS,
    NOMINATION_IDS,
    PUBLIC_LAWS,
    FoundId,
    bills_in_designation,
    id_keys,
    named_in_text,
    nominations_in_text,
    vote_id,
)
from votersdaily.sources.congress import congress_session, eastern_iso, session_year, to_int
from votersdaily.sources.eastern import eastern_today, parse_local
from votersdaily.sources.errors import MalformedDocument
from votersdaily.sources.xml import outer_xml, parse_xml, text_of

from .base import EventSpider

if TYPE_CHECKING:
    from collections.abc import Iterator

    from lxml import etree
    from scrapy.http import Request, Response

MENU_URL = "https://www.senate.gov/legislative/LIS/roll_call_lists/vote_menu_{congress}_{session}.xml"
VOTE_URL = (
    "https://www.senate.gov/legislative/LIS/roll_call_votes/vote{congress}{session}/"
    "vote_{congress}_{session}_{vote:05d}.{ext}"
)
#: ``vote_cast`` values → the four positions of ``<count>`` (yeas, nays, present, absent).
POSITIONS = {"yea": "yeas", "guilty": "yeas", "nay": "nays", "not guilty": "nays", "not voting": "absent"}


def position_of(vote_cast: str) -> str:
    """The ``<count>`` position of one member's vote ("Present, Giving Live Pair" → present)."""
    value = vote_cast.strip().lower()
    if value.startswith("present"):
        return "present"
    return POSITIONS.get(value, value)


#: The sessions of a Congress whose vote menus senate.gov publishes (``-a session=``).
SESSIONS = ("1", "2")


class SenateVotesSpider(EventSpider):
    name = "senate_votes"
    version = "1.2"
    branch = "Legislative"
    entity = "Senate"
    frequency_hours = 2.0
    recordings = {
        "gov/senate_vote/senate-vote-108-2-00213.xml": "https://www.senate.gov/legislative/LIS/roll_call_votes/vote1082/vote_108_2_00213.xml",
    }
    #: senate.gov sits behind a CDN that rate-limits bursts: one request at a time, 2 s apart.
    custom_settings = {
        **EventSpider.custom_settings,
        "DOWNLOAD_DELAY": 2.0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    }

    def __init__(
        self, *args: Any, congress: str | None = None, session: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        #: ``-a congress=119 -a session=1`` discovers that session's votes instead of the current one's.
        self.congress = whole_number("congress", congress, least=1)
        self.session = int(one_of("session", session, SESSIONS)) if session else None

    @property
    def listing_urls(self) -> tuple[str, ...]:
        congress, session = congress_session(eastern_today().year)
        return (MENU_URL.format(congress=self.congress or congress, session=self.session or session),)

    # -- discovery: vote_menu_CC_S.xml → vote_CC_S_NNNNN.xml ------------------------------------

    def parse_listing(self, response: Response) -> Iterator[Request]:
        menu = parse_xml(response.body, ("vote_summary",), response.url)
        congress, session = to_int(text_of(menu, "congress")), to_int(text_of(menu, "session"))
        for number in menu.iterfind("votes/vote/vote_number"):
            vote = to_int(text_of(number))
            if congress and session and vote:
                yield self.document_request(self.vote_url(congress, session, vote, "xml"))

    @staticmethod
    def vote_url(congress: int, session: int, vote: int, ext: str) -> str:
        return VOTE_URL.format(congress=congress, session=session, vote=vote, ext=ext)

    # -- one vote document → one event -----------------------------------------------------------

    def parse_events(self, response: Response) -> Iterator[dict[str, Any]]:
        root = parse_xml(response.body, ("roll_call_vote",), response.url)
        congress = to_int(text_of(root, "congress"))
        session = to_int(text_of(root, "session"))
        number = to_int(text_of(root, "vote_number"))
        if not (congress and session and number):
            raise MalformedDocument("%s lacks its congress, session or vote_number" % response.url)
        members = self._parse_member_votes(root)
        yield {
            "datetime": parse_local(text_of(root, "vote_date"), "%B %d, %Y, %I:%M %p"),
            "title": self._parse_title(root),
            "description": text_of(root, "vote_document_text"),
            "unique_key": "%s-%s-%s" % (congress, session, number),
            "source_text": outer_xml(root),
            "event_url": self.vote_url(congress, session, number, "htm"),
            "xml_url": self.vote_url(congress, session, number, "xml"),
            "congress": congress,
            "session": session,
            "vote_number": number,
            "vote_id": self._parse_vote_id(root, congress, session, number),
            **self._parse_ids(root, congress),
            "question": text_of(root, "question"),
            "vote_question_text": text_of(root, "vote_question_text"),
            "vote_title": text_of(root, "vote_title"),
            "vote_result": text_of(root, "vote_result"),
            "vote_result_text": text_of(root, "vote_result_text"),
            "majority_requirement": text_of(root, "majority_requirement"),
            "modify_datetime": self._parse_modify_datetime(root),
            "document": self._parse_block(root.find("document"), "document_"),
            "amendment": self._parse_block(root.find("amendment"), "amendment_"),
            "tie_breaker": self._parse_block(root.find("tie_breaker"), ""),
            "counts": self._parse_counts(root),
            "counts_by_party": self._parse_counts_by_party(members),
            "member_votes": members,
        }

    @staticmethod
    def _parse_vote_id(root: etree._Element, congress: int, session: int, number: int) -> str:
        year = to_int(text_of(root, "congress_year")) or session_year(congress, session)
        return vote_id("s", number, congress, year)

    @staticmethod
    def _parse_ids(root: etree._Element, congress: int) -> dict[str, list[Any]]:
        """``bill_ids``, ``nomination_ids`` and ``public_laws`` the vote is on, with their evidence."""
        found: list[FoundId] = []
        for document in root.iterfind("document"):
            of_congress = to_int(text_of(document, "document_congress")) or congress
            kind, number = text_of(document, "document_type"), text_of(document, "document_number")
            if kind.upper() == "PN":
                found += nominations_in_text("PN" + number, "document", of_congress)
            elif kind and number:
                found += bills_in_designation("%s %s" % (kind, number), "document", of_congress)
        for field in ("vote_question_text", "vote_title", "vote_document_text"):
            found += named_in_text(text_of(root, field), field, congress, nominations=True)
        return id_keys(found, (BILL_IDS, NOMINATION_IDS, PUBLIC_LAWS))

    @staticmethod
    def _parse_title(root: etree._Element) -> str:
        return text_of(root, "vote_question_text") or text_of(root, "question") or text_of(root, "vote_title")

    @staticmethod
    def _parse_modify_datetime(root: etree._Element) -> str | None:
        return eastern_iso(text_of(root, "modify_date"), "%B %d, %Y, %I:%M %p")

    @staticmethod
    def _parse_block(block: etree._Element, prefix: str) -> dict[str, Any] | None:
        """``<document>``/``<amendment>``/``<tie_breaker>`` children as keys, prefix dropped."""
        if block is None:
            return None
        return {
            child.tag[len(prefix) :] if child.tag.startswith(prefix) else child.tag: text_of(child)
            for child in block
            if isinstance(child.tag, str)
        }

    @staticmethod
    def _parse_counts(root: etree._Element) -> dict[str, Any]:
        """The four totals; an empty element (``<present/>``) is 0, a missing one unknown (None)."""
        count = root.find("count")
        totals = {}
        for key in ("yeas", "nays", "present", "absent"):
            element = count.find(key) if count is not None else None
            text = text_of(element)
            totals[key] = None if element is None else (to_int(text) if text else 0)
        return totals

    @staticmethod
    def _parse_counts_by_party(members: list[dict[str, Any]]) -> dict[str, Any]:
        counts: dict[str, Counter[str]] = {}
        for member in members:
            counts.setdefault(member["party"], Counter())[position_of(member["vote"])] += 1
        return {
            party: {key: tally.get(key, 0) for key in ("yeas", "nays", "present", "absent")}
            for party, tally in sorted(counts.items())
        }

    @staticmethod
    def _parse_pair(member: etree._Element) -> str | None:
        """The LIS id of the absent senator a live pair was given to (``vote_cast/@pair``)."""
        cast = member.find("vote_cast")
        pair = (cast.get("pair") or "").strip() if cast is not None else ""
        return pair or None

    @staticmethod
    def _parse_member_votes(root: etree._Element) -> list[dict[str, Any]]:
        return [
            {
                "lis_member_id": text_of(member, "lis_member_id"),
                "name": text_of(member, "member_full"),
                "first_name": text_of(member, "first_name"),
                "last_name": text_of(member, "last_name"),
                "party": text_of(member, "party"),
                "state": text_of(member, "state"),
                "vote": text_of(member, "vote_cast"),
                "pair": SenateVotesSpider._parse_pair(member),
            }
            for member in root.iterfind("members/member")
        ]
