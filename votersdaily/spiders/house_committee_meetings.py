"""House committee hearings, markups and meetings from the docs.house.gov meeting XML.

Discovery reads each committee's RSS feed (``Committee/RSS.ashx?Code=XX00``); every item links a
meeting by EventID and encloses its XML. The EventID is the unique key, so a meeting that moves to
another date supersedes its earlier document instead of appearing twice. A meeting in Washington
gives its place as ``meeting-location/capitol-complex/{room, building}``; a field hearing as
``meeting-location/field/{building-name, city, state/@postal-code}``, kept in ``building``,
``city``, ``state`` and ``location`` (``room`` is empty: the source names none).

Ids (version 1.2): ``bill_ids`` from each meeting document's ``legis-num`` (``HR 188``), its
description and the meeting title ("• H.R. 934 (Rep. McClintock)…"; a placeholder ``H.R. _____``
names none), in the meeting's ``congress-num``; ``committee_ids`` are congress-legislators' ids of
the committees and subcommittees holding it (``II00`` → ``HSII``, ``II10`` → ``HSII10``), while
``committee_code`` keeps the feed's code.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from votersdaily.plumbing.inputs import one_of
from votersdaily.sources.canonical_ids import (
    BILL_IDS,
    COMMITTEE_IDS,
    HOUSE_COMMITTEES,
    PUBLIC_LAWS,
    FoundId,
    bills_in_designation,
    house_committee_ids,
    id_keys,
    named_in_text,
)
from votersdaily.sources.congress import (
    DOCS_HOUSE_STAMPS,
    docs_house_files,
    eastern_iso,
    sitting_on,
    stored_utc,
    to_int,
)
from votersdaily.sources.eastern import parse_local
from votersdaily.sources.errors import MalformedDocument
from votersdaily.sources.rss import parse_rss
from votersdaily.sources.xml import outer_xml, parse_xml, text_of

from .base import EventSpider

if TYPE_CHECKING:
    from collections.abc import Iterator
    from datetime import date, datetime

    from lxml import etree
    from scrapy.http import Request, Response

FEED_URL = "https://docs.house.gov/Committee/RSS.ashx?Code={code}"
EVENT_URL = "https://docs.house.gov/Committee/Calendar/ByEvent.aspx?EventID={event_id}"
EVENT_ID_RE = re.compile(r"EventID=(\d+)", re.I)
#: The standing committees (plus Intelligence) that publish a docs.house.gov meeting feed.
COMMITTEES = tuple("%s00" % letters for letters in HOUSE_COMMITTEES)
MEETING_TYPES = {"HHRG": "Hearing", "HMKP": "Markup", "HMTG": "Meeting"}


class HouseCommitteeMeetingsSpider(EventSpider):
    name = "house_committee_meetings"
    version = "1.2"
    branch = "Legislative"
    entity = "House of Representatives"
    frequency_hours = 6.0
    recordings = {
        "gov/house_committee_meeting/meeting-115955.xml": "https://docs.house.gov/meetings/II/II10/20230523/115955/HHRG-118-II10-20230523.xml",
        "gov/house_committee_meeting/sample_hearing.xml": "https://docs.house.gov/meetings/RU/RU00/20140519/102252/HMTG-113-RU00-20140519.xml",
    }
    #: docs.house.gov is one ASP.NET server for all committees: two requests at a time, 1 s apart.
    custom_settings = {
        **EventSpider.custom_settings,
        "DOWNLOAD_DELAY": 1.0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
    }

    def __init__(self, *args: Any, committees: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: ``-a committees=RU00,SY00`` limits discovery to those committees' feeds.
        self.committees = (
            tuple(one_of("committees", c.strip(), COMMITTEES) for c in committees.split(",") if c.strip())
            if committees
            else COMMITTEES
        )

    @property
    def listing_urls(self) -> tuple[str, ...]:
        return tuple(FEED_URL.format(code=code) for code in self.committees)

    # -- discovery: committee RSS → meeting XML -----------------------------------------------

    def parse_listing(self, response: Response) -> Iterator[Request]:
        """Request the meeting XML each feed item encloses; the feeds end with an empty stub item
        (``<guid>0</guid>``, no title) that is no meeting and is skipped."""
        for item in parse_rss(response.body, response.url).items:
            event_id = self._parse_feed_event_id(item)
            enclosure = item.element.find("enclosure")
            url = enclosure.get("url", "").strip() if enclosure is not None else ""
            if not event_id or not url:
                if item.title or event_id:
                    self.logger.warning(
                        "feed item %r of %s has no meeting XML; skipped", item.title, response.url
                    )
                continue
            meeting_xml = self.linked_url(response, url, "the meeting XML of feed item %s" % event_id)
            if meeting_xml is not None:
                yield self.document_request(meeting_xml, meta={"vd_event_id": event_id})

    @staticmethod
    def _parse_feed_event_id(item: Any) -> str:
        match = EVENT_ID_RE.search(item.link)
        event_id = match.group(1) if match else item.guid
        return event_id if to_int(event_id) else ""

    # -- one meeting XML → one event -----------------------------------------------------------

    def parse_events(self, response: Response) -> Iterator[dict[str, Any]]:
        root = parse_xml(response.body, ("committee-meeting",), response.url)
        details = root.find("meeting-details")
        event_id = self._parse_event_id(root)
        if details is None or not event_id:
            raise MalformedDocument("%s has no <meeting-details> or meeting-id" % response.url)
        committees = self._parse_committees(details)
        main = committees[0] if committees else {}
        place = self._parse_location(details)
        meeting_type = root.get("meeting-type") or ""
        when = details.find("meeting-date")
        start = self._parse_start(when)
        yield {
            "datetime": start,
            "end_datetime": self._parse_end(when),
            "title": self._parse_title(details, main, meeting_type),
            "description": self._parse_description(committees, place["location"]),
            "unique_key": event_id,
            "source_text": outer_xml(root),
            "event_url": EVENT_URL.format(event_id=event_id),
            "event_id": event_id,
            "meeting_id": root.get("meeting-id"),
            "meeting_type": meeting_type,
            "meeting_type_name": MEETING_TYPES.get(meeting_type, ""),
            "meeting_status": text_of(root, "current-status"),
            "congress": to_int(root.get("congress-num")),
            "session": to_int(root.get("session-num")),
            "committee_code": main.get("parent_code") or main.get("code") or "",
            "committee_name": main.get("parent_name") or main.get("name") or "",
            "subcommittee_code": main.get("code", "") if main.get("parent_code") else "",
            "subcommittee_name": main.get("name", "") if main.get("parent_code") else "",
            "committees": committees,
            **self._parse_ids(
                root, details, committees, to_int(root.get("congress-num")) or sitting_on(start)[0]
            ),
            **place,
            "rescheduled_dates": self._parse_rescheduled(details),
            "witnesses": self._parse_witnesses(root),
            "documents": self._parse_documents(root),
            "update_datetime": eastern_iso(root.get("update-date") or "", *DOCS_HOUSE_STAMPS),
        }

    @staticmethod
    def _parse_ids(
        root: etree._Element, details: etree._Element, committees: list[dict[str, Any]], congress: int
    ) -> dict[str, list[Any]]:
        """``bill_ids``, ``public_laws`` and ``committee_ids`` of the meeting, with their evidence."""
        found: list[FoundId] = []
        for committee in committees:
            found += house_committee_ids(committee["parent_code"], "committee-name/@parent-id")
            found += house_committee_ids(committee["code"], "committee-name/@id")
        documents = root.findall("meeting-documents/meeting-document")
        for doc in documents:
            found += bills_in_designation(text_of(doc, "legis-num"), "meeting-document/legis-num", congress)
        found += named_in_text(text_of(details, "meeting-title"), "meeting-title", congress)
        for doc in documents:
            found += named_in_text(text_of(doc, "description"), "meeting-document/description", congress)
        return id_keys(found, (BILL_IDS, PUBLIC_LAWS, COMMITTEE_IDS))

    @staticmethod
    def _parse_event_id(root: etree._Element) -> str:
        """``meeting-id="HHRG115955"`` → ``115955`` (the EventID of the calendar and the feeds)."""
        digits = re.sub(r"^\D+", "", root.get("meeting-id") or "")
        return digits if digits.isdigit() else ""

    @staticmethod
    def _parse_start(when: etree._Element) -> datetime | date:
        day = text_of(when, "calendar-date")
        start = text_of(when, "start-time")
        if start:
            return parse_local("%s %s" % (day, start), "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M")
        return parse_local(day, "%Y-%m-%d").date()

    @staticmethod
    def _parse_end(when: etree._Element) -> datetime | None:
        end = text_of(when, "end-time")
        if not end:
            return None
        return parse_local(
            "%s %s" % (text_of(when, "calendar-date"), end), "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"
        )

    @staticmethod
    def _parse_title(details: etree._Element, main: dict[str, Any], meeting_type: str) -> str:
        title = text_of(details, "meeting-title")
        return title or "%s %s" % (
            main.get("name", "House committee"),
            MEETING_TYPES.get(meeting_type, "meeting"),
        )

    @staticmethod
    def _parse_description(committees: list[dict[str, Any]], location: str) -> str:
        names = [
            "%s (%s)" % (c["name"], c["parent_name"]) if c.get("parent_name") else c["name"]
            for c in committees
        ]
        parts = ["; ".join(names)] if names else []
        if location:
            parts.append(location)
        return ", ".join(parts)

    @staticmethod
    def _parse_location(details: etree._Element) -> dict[str, Any]:
        """Where the meeting is: a room of the Capitol complex (``capitol-complex/{room, building}``:
        "1324 LHOB"), or, for a field hearing, a place outside Washington
        (``field/{building-name, city, state/@postal-code}``: "City Hall, Sonora, CA")."""
        field = details.find("meeting-location/field")
        if field is None:
            room = text_of(details, "meeting-location/capitol-complex/room")
            building = text_of(details, "meeting-location/capitol-complex/building")
            return {
                "room": room,
                "building": building,
                "location": " ".join(p for p in (room, building) if p),
                "field_hearing": False,
            }
        state_el = field.find("state")
        state = (state_el.get("postal-code") or "").strip() if state_el is not None else ""
        building, city = text_of(field, "building-name"), text_of(field, "city")
        return {
            "room": "",
            "building": building,
            "location": ", ".join(p for p in (building, city, state or text_of(field, "state")) if p),
            "field_hearing": True,
            "city": city,
            "state": state,
        }

    @staticmethod
    def _parse_committees(details: etree._Element) -> list[dict[str, Any]]:
        """Full committees and subcommittees holding the meeting (joint meetings list several)."""
        return [
            {
                "code": name.get("id") or "",
                "name": text_of(name),
                "parent_code": name.get("parent-id") or "",
                "parent_name": name.get("parent-name") or "",
            }
            for name in details.xpath("committees/committee-name | subcommittees/committee-name")
        ]

    def _parse_rescheduled(self, details: etree._Element) -> list[dict[str, Any]]:
        return [
            {
                "datetime": stored_utc(self._parse_start(dates)),
                "end_datetime": stored_utc(self._parse_end(dates)),
            }
            for dates in details.iterfind("rescheduled-dates/meeting-dates")
        ]

    @staticmethod
    def _parse_witnesses(root: etree._Element) -> list[dict[str, Any]]:
        """Witnesses, where the XML carries them (the witness-list schema of the meeting package)."""
        return [
            {
                "first_name": text_of(w, "firstname"),
                "last_name": text_of(w, "lastname"),
                "position": text_of(w, "position"),
                "organization": text_of(w, "organization"),
                "witness_type": text_of(w, "witness-type"),
            }
            for w in root.iter("witness")
        ]

    @staticmethod
    def _parse_documents(root: etree._Element) -> list[dict[str, Any]]:
        return [
            {
                "type": doc.get("type") or "",
                "description": text_of(doc, "description"),
                "legis_num": text_of(doc, "legis-num"),
                "legis_stage": text_of(doc, "filename-metadata/legis-stage"),
                "short_desc": text_of(doc, "filename-metadata/short-desc"),
                "version_num": text_of(doc, "filename-metadata/version-num"),
                "publish_date": eastern_iso(doc.get("publish-date") or "", *DOCS_HOUSE_STAMPS),
                "removed": bool((doc.get("remove-date") or "").strip()),
                "files": docs_house_files(doc),
            }
            for doc in root.iterfind("meeting-documents/meeting-document")
        ]
