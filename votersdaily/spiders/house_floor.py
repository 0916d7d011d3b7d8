"""House floor proceedings from the Clerk's daily floor summary XML (clerk.house.gov/floor/YYYYMMDD.xml).

One event per ``floor_action`` at ``action_time/@for-search`` (Eastern wall-clock time). The file of
a legislative day is regenerated while the House sits, so the spider reads today's and yesterday's
file (a legislative day can run past midnight). A floor action that cannot become an event (no
``unique-id``, an unreadable time) is dropped alone with its reason and the rest of the day is kept;
only a sine die adjournment with an unreadable time fails the page (it decides every action's session).

Congress and session are the action's, not the file's. On the day a Congress or session ends and
the next convenes, ``legislative_congress`` names both, in no reliable order
(``congress="119:118" session="2:1"`` on 3 January 2025: the 118th's 2nd session, then the 119th's
1st); it may also name only the next one. Actions up to the sine die adjournment (the adjournment
action, act-id H61000, saying "sine die") belong to the ending session; without one, actions
before noon belong to the ending Congress (20th amendment). The Clerk restarts ``unique-id`` with
each Congress, so the key is ``<congress>-<unique-id>``; ``replaces_key`` is the bare unique-id
the spider keyed events by before (version 1.0), so the store retires those documents.

Ids (version 1.2): the bills an action names come from its ``action_item`` (the measure under
consideration, often with no link in the description), the description's congress.gov bill links
(which state their Congress) and its text ("pursuant to H. Con. Res. 1"); the roll calls it cites
("(Roll no. 5)") are ``vote_ids`` of the action's own Congress and session, so an action before the
sine die adjournment of 3 January cites the ending session's roll calls and names its bills.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import parse_qs, urlsplit

from votersdaily.sources.canonical_ids import (
    BILL_IDS,
    PUBLIC_LAWS,
    VOTE_IDS,
    FoundId,
    bill_in_link,
    bills_in_designation,
    house_rolls_in_text,
    id_keys,
    named_in_text,
)
from votersdaily.sources.congress import (
    eastern_iso,
    end_of_day,
    previous_session,
    session_year,
    sitting_on,
    sitting_year,
    to_int,
)
from votersdaily.sources.eastern import eastern_today, parse_local
from votersdaily.sources.errors import MalformedDocument
from votersdaily.sources.xml import outer_xml, parse_xml, text_of

from .base import EventSpider

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from lxml import etree
    from scrapy.http import Request, Response

    from votersdaily.items import EventItem

DAY_URL = "https://clerk.house.gov/floor/{day:%Y%m%d}.xml"
EVENT_URL = "https://clerk.house.gov/floorsummary/floor.aspx?day={day}#{unique_id}"
#: A full stop that ends a sentence: not after an abbreviation ("Mr.", "H.R.", "Res.", "p.m.") or
#: an initial ("H. Res.", "John F. Kennedy"), but after a one-letter roman numeral of a rule, title
#: or article ("clause 13 of Rule I."). The full stop comes first, so the look-behinds run only at
#: full stops (14x faster).
SENTENCE_END = re.compile(
    r"\.(?=\s|$)(?:"
    r"(?<=\brule [IVXLC]\.)|(?<=\btitle [IVXLC]\.)|(?<=\barticle [IVXLC]\.)"
    r"|(?<!\bMr\.)(?<!\bMrs\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bRes\.)(?<!\bCon\.)(?<!\bRept\.)"
    r"(?<!\bAmdt\.)(?<!\bNo\.)(?<!\bJr\.)(?<!\bSr\.)(?<!\bSt\.)(?<!\b[A-Za-z]\.))",
    re.I,
)


#: The description's links to congress.gov bill pages (nested twice, at times).
BILL_LINKS = ".//action_description//a[@rel='bill']"
#: The Clerk's activity code of an adjournment; with "sine die" in its text it ends a session.
ADJOURNMENT_ACT = "H61000"
SINE_DIE = re.compile(r"\bsine\s+die\b", re.I)
#: (congress, session)
Sitting = tuple[int, int]


class LegislativeDay(NamedTuple):
    """What a floor action needs of its file: the day (``YYYYMMDD``), and the sitting before and
    after the last instant of a session that ends that day (``boundary``, None on an ordinary day)."""

    day: str
    boundary: datetime | None
    before: Sitting
    after: Sitting

    def sitting(self, when: datetime | date) -> Sitting:
        """The (congress, session) of an action at ``when``; a date-only action counts as the end
        of its day."""
        return self.before if self.boundary and end_of_day(when) <= self.boundary else self.after


class HouseFloorSpider(EventSpider):
    name = "house_floor"
    version = "1.2"
    branch = "Legislative"
    entity = "House of Representatives"
    frequency_hours = 1.0
    recordings = {
        "gov/house_floor_summary/20261001.xml": "https://clerk.house.gov/floor/20261001.xml",
        "gov/house_floor_summary/20260902.xml": "https://clerk.house.gov/floor/20260902.xml",
        "gov/house_floor_summary/20250103.xml": "https://clerk.house.gov/floor/20250103.xml",
    }
    #: A day without a sitting has no file: the Clerk answers 404, which is no failure here.
    handle_httpstatus_list = [404]
    #: Two small files an hour from clerk.house.gov (the file changes every 15 minutes).
    custom_settings = {
        **EventSpider.custom_settings,
        "DOWNLOAD_DELAY": 2.0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    }

    @property
    def listing_urls(self) -> tuple[str, ...]:
        today = eastern_today()
        return tuple(DAY_URL.format(day=day) for day in (today - timedelta(days=1), today))

    def parse_listing(self, response: Response) -> Iterator[Request | EventItem]:
        if response.status == 404:
            self.logger.info("no floor summary at %s: the House did not sit that day", response.url)
            return
        yield from self.parse_document(response)

    # -- one legislative day → one event per floor action --------------------------------------------

    def parse_records(self, response: Response) -> Iterable[Any]:
        """Each ``floor_action`` with its day; which Congress and session an action belongs to
        depends on the whole file (the Congresses it names, its sine die adjournment)."""
        root = parse_xml(response.body, ("legislative_activity",), response.url)
        day_el = root.find("legislative_day")
        day = day_el.get("date", "") if day_el is not None else ""
        actions = root.find("floor_actions")
        if not re.fullmatch(r"\d{8}", day) or actions is None:
            raise MalformedDocument("%s has no legislative_day/@date or floor_actions" % response.url)
        records = actions.findall("floor_action")
        congress_el = root.find("legislative_congress")
        boundary = self._parse_boundary(records, congress_el, day, response.url)
        legislative_day = LegislativeDay(day, boundary, *self._parse_sittings(congress_el, boundary, day))
        return [(action, legislative_day) for action in records]

    def parse_record(self, record: Any, response: Response) -> dict[str, Any] | None:
        action, legislative_day = record
        day = legislative_day.day
        unique_id = (action.get("unique-id") or "").strip()
        if not unique_id:
            raise MalformedDocument(
                "%s: the floor_action on line %s has no unique-id" % (response.url, action.sourceline)
            )
        when = self._parse_datetime(action, day)
        congress, session = legislative_day.sitting(when)
        description = text_of(action, "action_description")
        item = text_of(action, "action_item")
        links = action.findall(BILL_LINKS)
        return {
            "datetime": when,
            "title": self._parse_title(item, description),
            "description": description,
            "unique_key": "%d-%s" % (congress, unique_id),
            "replaces_key": unique_id,
            "source_text": outer_xml(action),
            "event_url": EVENT_URL.format(day=day, unique_id=unique_id),
            "unique_id": unique_id,
            "act_id": action.get("act-id") or "",
            "action_item": item,
            "action_time_text": text_of(action, "action_time"),
            "update_datetime": eastern_iso(
                action.get("update-date-time") or "", "%Y%m%dT%H:%M", "%Y%m%dT%H:%M:%S"
            ),
            "legislative_day": "%s-%s-%s" % (day[:4], day[4:6], day[6:]),
            "congress": congress,
            "session": session,
            "bills": self._parse_bills(links),
            "votes": self._parse_votes(action),
            **self._parse_ids(links, item, description, congress, session),
        }

    @staticmethod
    def _numbers(element: etree._Element, name: str) -> list[int]:
        """``congress="119:118"`` → [118, 119]."""
        text = element.get(name, "") if element is not None else ""
        return sorted({n for part in text.split(":") if (n := to_int(part)) is not None})

    @classmethod
    def _parse_boundary(
        cls, actions: etree._Element, congress_el: etree._Element, day: str, url: str
    ) -> datetime | None:
        """The last instant of the ending session: its sine die adjournment, else (when the file names
        two Congresses or sessions) the moment before noon; None on an ordinary day. A sine die
        adjournment whose time cannot be read fails the page: it decides every action's session."""
        adjournments = []
        for action in actions:
            if action.get("act-id") != ADJOURNMENT_ACT or not SINE_DIE.search(
                text_of(action, "action_description")
            ):
                continue
            try:
                when = cls._parse_datetime(action, day)
            except ValueError as exc:
                raise MalformedDocument("%s: the sine die adjournment's time: %s" % (url, exc)) from None
            if isinstance(when, datetime):
                adjournments.append(when)
        if adjournments:
            return max(adjournments)
        if len(cls._numbers(congress_el, "congress")) > 1 or len(cls._numbers(congress_el, "session")) > 1:
            return datetime.strptime(day, "%Y%m%d") + timedelta(hours=12, microseconds=-1)
        return None

    @classmethod
    def _parse_sittings(
        cls, congress_el: etree._Element, boundary: datetime | None, day: str
    ) -> tuple[Sitting, Sitting]:
        """(Congress, session) before and after ``boundary``, from what the file names."""
        congresses, sessions = cls._numbers(congress_el, "congress"), cls._numbers(congress_el, "session")
        if not (congresses and sessions):  # unnamed: the calendar's
            after = sitting_on(datetime.strptime(day, "%Y%m%d").date())
            return (sitting_on(boundary) if boundary else after), after
        after = (congresses[-1], 1 if len(congresses) > 1 else sessions[-1])
        if boundary is None:
            before = after
        elif len(congresses) > 1:
            before = (congresses[0], sessions[-1]) if len(sessions) > 1 else previous_session(*after)
        elif len(sessions) > 1:
            before = (congresses[0], sessions[0])
        elif session_year(*after) > sitting_year(boundary):  # it names the session that follows
            before = previous_session(*after)
        else:
            before = after
        return before, after

    @staticmethod
    def _parse_datetime(action: etree._Element, day: str) -> datetime | date:
        time_el = action.find("action_time")
        stamp = time_el.get("for-search", "") if time_el is not None else ""
        if stamp.strip():
            return parse_local(stamp, "%Y%m%dT%H:%M:%S", "%Y%m%dT%H:%M")
        return parse_local(day, "%Y%m%d").date()

    @staticmethod
    def _parse_title(item: str, description: str) -> str:
        """The action item (if any) and the description's first sentence."""
        match = SENTENCE_END.search(description)
        sentence = description[: match.end()] if match else description
        return "%s: %s" % (item, sentence) if item else sentence or item

    @staticmethod
    def _parse_bills(links: list[etree._Element]) -> list[dict[str, Any]]:
        """Bill links of the description, once each (the Clerk nests duplicate ``<a rel="bill">``)."""
        bills: dict[str, dict[str, Any]] = {}
        for link in links:
            href = (link.get("href") or "").strip()
            if href and href not in bills:
                bills[href] = {"legis_num": text_of(link), "url": href}
        return list(bills.values())

    @staticmethod
    def _parse_ids(
        links: list[etree._Element], item: str, description: str, congress: int, session: int
    ) -> dict[str, list[Any]]:
        """``bill_ids``, ``public_laws`` and ``vote_ids`` of the action, with their evidence."""
        found: list[FoundId] = bills_in_designation(item, "action_item", congress)
        for link in links:
            bill = bill_in_link(link.get("href") or "", BILL_LINKS)
            if bill is not None:
                found.append(bill)
        found += named_in_text(description, "action_description", congress)
        found += house_rolls_in_text(
            description, "action_description", congress, session_year(congress, session)
        )
        return id_keys(found, (BILL_IDS, PUBLIC_LAWS, VOTE_IDS))

    @staticmethod
    def _parse_votes(action: etree._Element) -> list[dict[str, Any]]:
        votes = []
        for link in action.iterfind(".//action_description//a[@rel='vote']"):
            href = (link.get("href") or "").strip()
            query = parse_qs(urlsplit(href).query)
            votes.append(
                {
                    "roll_call": to_int((query.get("rollnumber") or [""])[0]),
                    "year": to_int((query.get("year") or [""])[0]),
                    "text": text_of(link),
                    "url": href,
                }
            )
        return votes
