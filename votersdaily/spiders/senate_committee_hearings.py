"""Senate committee hearings and meetings from senate.gov ``hearings.xml``.

One event per ``<meeting>``, keyed by its ``identifier``. Dates and times are Eastern wall-clock
times without an offset (``date_iso_8601`` + ``time_iso_8601``). When nothing is scheduled the Senate
publishes one placeholder meeting with an empty ``cmte_code`` and the matter "No committee hearings
scheduled": that is a legitimately empty schedule (a successful run with no events), not a failure.

Null versus empty: ``sub_cmte`` is null for a full-committee meeting (there is no subcommittee) and
the text otherwise; ``video_url``/``event_url`` are "" when the stream is blank (closed hearings) or
still the ``comm=xxxx`` placeholder. A stream's file name ends with the date of the broadcast
(``filename=commerce073026``); committees reuse the link of an earlier meeting (the HELP business
meeting of 30 July 2026 points at ``help072926``) or mistype it (``foreign073036``), so a stream
whose file name carries another date than the meeting's is kept in ``video_url`` (with
``video_file_date``) but is not the meeting's ``event_url``. ``committee_code`` repeats ``cmte_code`` for the
``by_committee_datetime`` view (per-committee feeds).

Ids (version 1.2): the agenda's ``Documents/AssociatedDocument`` states its bills (by THOMAS type
code: ``SN`` S., ``HR`` H.R., ``SE`` S.Res., ``HJ`` H.J.Res.…) and nominations (``PN`` with a
``partition``: ``"03"`` → ``PN937-3-119``, ``"0 "`` → none) in its ``congress``; the ``matter``
adds what it names in text ("S.5038", in the Congress of the meeting's date). ``committee_ids`` are
the committee and subcommittee of ``cmte_code`` (``SSJU22`` → ``SSJU``, ``SSJU22``).
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from lxml import etree

from votersdaily.clock import iso_utc
from votersdaily.sources.canonical_ids import (
    BILL_IDS,
    COMMITTEE_IDS,
    NOMINATION_IDS,
    PUBLIC_LAWS,
    FoundId,
    bill_of_thomas_code,
    id_keys,
    named_in_text,
    nomination_id,
    senate_committee_ids,
)
from votersdaily.sources.congress import sitting_on, stored_utc, to_int
from votersdaily.sources.eastern import parse_local
from votersdaily.sources.errors import UnexpectedDocument
from votersdaily.sources.xml import outer_xml, parse_xml, text_of
from votersdaily.sources.xml_text import element_texts

from .base import EventSpider

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy.http import Response

#: ``2026-07-29T16:36:25.000000Z-04:00``: the Senate writes a "Z" *and* the real offset.
LAST_UPDATE_ISO_RE = re.compile(
    r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.\d+)?Z?(?:([+-])(\d{2}):?(\d{2}))?$"
)
#: The ``MMDDYY`` date at the end of an ISVP stream's file name (``commerce073026``).
VIDEO_FILE_DATE_RE = re.compile(r"(\d{6})$")
#: ISVP player values the Senate leaves in before a committee sets the real stream name.
VIDEO_PLACEHOLDERS = frozenset({"xxxx", ""})


class SenateCommitteeHearingsSpider(EventSpider):
    name = "senate_committee_hearings"
    version = "1.2"
    branch = "Legislative"
    entity = "Senate"
    frequency_hours = 2.0  # regenerated about every 2 hours
    listing_urls = ("https://www.senate.gov/general/committee_schedules/hearings.xml",)
    recordings = {
        "gov/senate_hearings/hearings_2026-07-30_wayback.xml": "https://www.senate.gov/general/committee_schedules/hearings.xml",
        "gov/senate_hearings/hearings.xml": "https://www.senate.gov/general/committee_schedules/hearings.xml",
    }
    custom_settings = {
        **EventSpider.custom_settings,
        # One small file; If-Modified-Since is honoured by senate.gov (304), through the HTTP cache.
        "DOWNLOAD_DELAY": 2.0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    }

    def parse_records(self, response: Response) -> Iterable[Any]:
        """Each ``<meeting>`` with its exact source text."""
        root = parse_xml(response.body, ("css_meetings_scheduled",), response.url)
        meetings = root.findall("meeting")
        texts = element_texts(response.body, "meeting", root.getroottree().docinfo.encoding or "utf-8")
        if texts is None or len(texts) != len(meetings):
            texts = [outer_xml(m) for m in meetings]
        return zip(meetings, texts, strict=True)

    def parse_record(self, record: Any, response: Response) -> dict[str, Any] | None:
        meeting, text = record
        if self._is_placeholder(meeting):
            self.logger.info("%s: no meetings scheduled (%s)", response.url, text_of(meeting, "matter"))
            return None
        return self._event(meeting, text, response.url)

    @staticmethod
    def _is_placeholder(meeting: etree._Element) -> bool:
        return (
            not text_of(meeting, "identifier")
            and not text_of(meeting, "cmte_code")
            and not text_of(meeting, "committee")
        )

    def _event(self, meeting: etree._Element, source_text: str, url: str) -> dict[str, Any]:
        cmte_code = text_of(meeting, "cmte_code")
        when = self._parse_datetime(meeting, url)
        identifier = text_of(meeting, "identifier")
        video_url = self._parse_video_url(meeting)
        video_date = self._parse_video_file_date(video_url)
        return {
            "datetime": when,
            "title": text_of(meeting, "matter"),
            "description": self._parse_description(meeting),
            "unique_key": identifier or "%s-%s" % (cmte_code, when.isoformat()),
            "source_text": source_text,
            "event_url": video_url if video_date in (None, when.date()) else "",
            "identifier": identifier,
            "cmte_code": cmte_code,
            "committee_code": cmte_code,
            "committee": text_of(meeting, "committee"),
            "sub_cmte": text_of(meeting, "sub_cmte") if meeting.find("sub_cmte") is not None else None,
            "meeting_type": text_of(meeting, "type"),
            "room": text_of(meeting, "room"),
            "matter": text_of(meeting, "matter"),
            "video_url": video_url,
            "video_file_date": video_date.isoformat() if video_date else None,
            "senate_cable_channel": text_of(meeting, "senate_cable_channel"),
            "last_update": self._parse_last_update(meeting),
            "documents": self._parse_documents(meeting),
            **self._parse_ids(meeting, cmte_code, sitting_on(when)[0]),
        }

    @staticmethod
    def _parse_datetime(meeting: etree._Element, url: str) -> datetime:
        """Eastern wall time: the ISO pair, else the display ``date`` ("30-JUL-2026 09:45 AM")."""
        day, clock = text_of(meeting, "date_iso_8601"), text_of(meeting, "time_iso_8601")
        try:
            if day and clock:
                return parse_local("%s %s" % (day, clock), "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M")
            return parse_local(text_of(meeting, "date").title(), "%d-%b-%Y %I:%M %p")
        except ValueError as exc:
            raise UnexpectedDocument(
                "%s: meeting %s has no usable date/time: %s" % (url, text_of(meeting, "identifier"), exc)
            ) from None

    @staticmethod
    def _parse_description(meeting: etree._Element) -> str:
        parts = [text_of(meeting, "committee"), text_of(meeting, "sub_cmte"), text_of(meeting, "type")]
        room = text_of(meeting, "room")
        if room:
            parts.append("Room %s" % room)
        return "; ".join(p for p in parts if p)

    @staticmethod
    def _parse_video_url(meeting: etree._Element) -> str:
        """The ISVP stream, or "" when it is empty or still the ``comm=xxxx`` placeholder."""
        value = text_of(meeting, "video_url")
        if not value:
            return ""
        comm = parse_qs(urlsplit(value).query).get("comm", [""])[0]
        return "" if comm.lower() in VIDEO_PLACEHOLDERS else value

    @staticmethod
    def _parse_video_file_date(video_url: str) -> date | None:
        """The date a stream's file name carries (``filename=help072926`` → 2026-07-29), or None."""
        name = parse_qs(urlsplit(video_url).query).get("filename", [""])[0]
        match = VIDEO_FILE_DATE_RE.search(name)
        if not match:
            return None
        try:
            return datetime.strptime(match.group(1), "%m%d%y").date()
        except ValueError:
            return None  # six digits that are no date: the name claims no day

    @staticmethod
    def _parse_last_update(meeting: etree._Element) -> str:
        """UTC ISO text of the last change: the offset of ``last_update_iso_8601`` (its stray "Z"
        ignored), else the Eastern wall time of ``last_update`` ("07-29-2026 04:36:25 PM"); "" if absent."""
        match = LAST_UPDATE_ISO_RE.match(text_of(meeting, "last_update_iso_8601"))
        if match:
            wall = datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S")
            if match.group(2):
                sign = -1 if match.group(2) == "-" else 1
                offset = timedelta(hours=int(match.group(3)), minutes=int(match.group(4)))
                return iso_utc(wall.replace(tzinfo=timezone(sign * offset)))
            return stored_utc(wall)
        text = text_of(meeting, "last_update")
        if not text:
            return ""
        try:
            return stored_utc(parse_local(text, "%m-%d-%Y %I:%M:%S %p"))
        except ValueError:
            return ""

    @staticmethod
    def _parse_ids(meeting: etree._Element, cmte_code: str, congress: int) -> dict[str, list[Any]]:
        """``bill_ids``, ``nomination_ids``, ``public_laws`` and ``committee_ids`` of the meeting."""
        found: list[FoundId] = senate_committee_ids(cmte_code, "cmte_code")
        for doc in meeting.iterfind("Documents/AssociatedDocument"):
            of_congress = to_int(doc.get("congress")) or congress
            prefix, number = (
                (doc.get("document_prefix") or "").strip(),
                (doc.get("document_num") or "").strip(),
            )
            field, text = "AssociatedDocument/@document_prefix @document_num", "%s %s" % (prefix, number)
            if prefix == "PN":
                nomination = nomination_id(number, of_congress, doc.get("partition"))
                if nomination is not None:
                    found.append(FoundId(NOMINATION_IDS, nomination, field, text))
            elif (bill := bill_of_thomas_code(prefix, number, field, of_congress, text)) is not None:
                found.append(bill)
        found += named_in_text(text_of(meeting, "matter"), "matter", congress, nominations=True)
        return id_keys(found, (BILL_IDS, NOMINATION_IDS, PUBLIC_LAWS, COMMITTEE_IDS))

    @staticmethod
    def _parse_documents(meeting: etree._Element) -> list[dict[str, Any]]:
        """Nominations (PN) and bills (SN) on the agenda."""
        return [
            {
                "congress": doc.get("congress", "").strip(),
                "document_prefix": doc.get("document_prefix", "").strip(),
                "document_num": doc.get("document_num", "").strip(),
                "document_description": " ".join(doc.get("document_description", "").split()),
                "partition": doc.get("partition", "").strip(),
            }
            for doc in meeting.iterfind("Documents/AssociatedDocument")
        ]
