"""House roll-call votes from the Clerk's XML (clerk.house.gov/evs/<year>/rollNNN.xml)."""

from __future__ import annotations

import re

from ..clock import now_utc
from ..sources.eastern import parse_local, parse_local_date
from ..sources.xml import outer_xml, parse_xml, text_of
from .base import EventSpider

ROLL_LINK_RE = re.compile(r"rollnumber=(\d+)", re.I)
PAGE_LINK_RE = re.compile(r"ROLL_\d+\.asp$", re.I)
YEAR_RE = re.compile(r"/evs/(\d{4})/", re.I)


def _int(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


class HouseVotesSpider(EventSpider):
    name = "house_votes"
    version = "1.0"
    branch = "Legislative"
    entity = "House of Representatives"
    frequency_hours = 1.0
    recordings = {
        "gov/house_roll_call/roll314.xml": "https://clerk.house.gov/evs/2026/roll314.xml",
        "gov/house_roll_call/clerk-2023-roll037-committee.excerpt.xml": "https://clerk.house.gov/evs/2023/roll037.xml",
    }

    @property
    def listing_urls(self):
        return ("https://clerk.house.gov/evs/%d/index.asp" % now_utc().year,)

    # -- discovery: the year's index → ROLL_nnn.asp pages → rollNNN.xml ---------------------------

    def parse_listing(self, response):
        year = YEAR_RE.search(response.url)
        year = year.group(1) if year else str(now_utc().year)
        for href in response.xpath("//a/@href").getall():
            if PAGE_LINK_RE.search(href):
                yield response.follow(href, callback=self.parse_listing, errback=self.source_error)
                continue
            match = ROLL_LINK_RE.search(href)
            if match:
                url = "https://clerk.house.gov/evs/%s/roll%03d.xml" % (year, int(match.group(1)))
                yield self.document_request(url)

    # -- one roll-call document → one event -----------------------------------------------------

    def parse_events(self, response):
        root = parse_xml(response.body, ("rollcall-vote",), response.url)
        meta = root.find("vote-metadata")
        if meta is None:
            from ..sources.errors import UnexpectedDocument

            raise UnexpectedDocument("%s has no <vote-metadata>" % response.url)
        congress = _int(text_of(meta, "congress"))
        session = _int(re.sub(r"\D", "", text_of(meta, "session")))
        roll = _int(text_of(meta, "rollcall-num"))
        question = text_of(meta, "vote-question")
        legis_num = text_of(meta, "legis-num")
        yield {
            "datetime": self._parse_datetime(meta),
            "title": self._parse_title(roll, question, legis_num, text_of(meta, "vote-desc")),
            "description": text_of(meta, "vote-desc"),
            "unique_key": "%s-%s-%s" % (congress, session, roll),
            "source_text": outer_xml(root),
            "event_url": self._parse_event_url(meta, roll),
            "congress": congress,
            "session": session,
            "roll_call": roll,
            "legis_num": legis_num,
            "vote_question": question,
            "vote_type": text_of(meta, "vote-type"),
            "vote_result": text_of(meta, "vote-result"),
            "amendment_num": text_of(meta, "amendment-num") or None,
            "amendment_author": text_of(meta, "amendment-author") or None,
            "chamber": text_of(meta, "chamber") or text_of(meta, "committee"),
            "committee_of_the_whole": meta.find("committee") is not None,
            "majority": text_of(meta, "majority"),
            "vote_totals": self._parse_totals(meta.find("vote-totals/totals-by-vote")),
            "vote_totals_by_party": {
                text_of(row, "party"): self._parse_totals(row)
                for row in meta.findall("vote-totals/totals-by-party")
            },
            "vote_labels": self._parse_labels(meta.find("vote-totals/totals-by-party-header")),
            "member_votes": self._parse_member_votes(root),
        }

    def _parse_datetime(self, meta):
        day = text_of(meta, "action-date")
        time_el = meta.find("action-time")
        etz = time_el.get("time-etz") if time_el is not None else None
        if etz:
            return parse_local("%s %s" % (day, etz), "%d-%b-%Y %H:%M")
        if time_el is not None and text_of(time_el):
            return parse_local("%s %s" % (day, text_of(time_el)), "%d-%b-%Y %I:%M %p")
        return parse_local_date(day, "%d-%b-%Y")

    @staticmethod
    def _parse_title(roll, question, legis_num, desc):
        title = "Roll Call %s: %s" % (roll, question)
        if legis_num:
            title += " — %s" % legis_num
        if desc:
            title += ": %s" % desc
        return title

    @staticmethod
    def _parse_event_url(meta, roll):
        day = text_of(meta, "action-date")
        year = day[-4:] if day[-4:].isdigit() else None
        if not (year and roll):
            return ""
        return "https://clerk.house.gov/Votes/%s%d" % (year, roll)

    @staticmethod
    def _parse_totals(row):
        if row is None:
            return {}
        return {
            key: _int(text_of(row, "%s-total" % key.replace("_", "-")))
            for key in ("yea", "nay", "present", "not_voting")
        }

    @staticmethod
    def _parse_labels(header):
        if header is None:
            return {}
        return {
            key: text_of(header, "%s-header" % key.replace("_", "-"))
            for key in ("yea", "nay", "present", "not_voting")
        }

    @staticmethod
    def _parse_member_votes(root):
        votes = []
        for row in root.iterfind("vote-data/recorded-vote"):
            member = row.find("legislator")
            if member is None:
                continue
            votes.append({
                "name_id": member.get("name-id"),
                "name": text_of(member),
                "unaccented_name": member.get("unaccented-name"),
                "party": member.get("party"),
                "state": member.get("state"),
                "role": member.get("role"),
                "vote": text_of(row, "vote"),
            })
        return votes
