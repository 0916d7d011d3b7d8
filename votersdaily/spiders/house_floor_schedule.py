"""The House's weekly floor schedule ("Bills this week") from the docs.house.gov floor XML.

Each ``floor-item`` is a bill or resolution that may be considered during the week: an all-day
event spanning the week (``week-date`` to the Sunday after it), keyed by the item's ``id``.
A week whose file does not exist is answered with HTTP 200 and an HTML "File Not Found" page; it
is reported as :class:`~votersdaily.sources.errors.ErrorPage`, never stored.

Ids (version 1.1): ``bill_ids`` from the item's ``legis-num`` (``S. 283``, ``S.790``, ``H.J. Res.
210``; "Senate amendments to H.R. 5334" is read as text), its ``floor-text`` (a rule names the
measures it provides for: "providing for consideration of the bill (H.R. 9576)") and its subitems
(their "Rules Committee Print 119-41" and "H. Rept. 119-825" name no bill), in the file's
``congress-num``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from votersdaily.sources.canonical_ids import (
    BILL_IDS,
    PUBLIC_LAWS,
    bills_in_designation,
    id_keys,
    named_in_text,
)
from votersdaily.sources.congress import (
    DOCS_HOUSE_STAMPS,
    docs_house_files,
    docs_house_updates,
    eastern_iso,
    sitting_on,
    to_int,
)
from votersdaily.sources.eastern import eastern_today, parse_local
from votersdaily.sources.errors import MalformedDocument
from votersdaily.sources.xml import outer_xml, parse_xml, required_attribute, text_of

from .base import EventSpider

if TYPE_CHECKING:
    from collections.abc import Iterable

    from lxml import etree
    from scrapy.http import Response

WEEK_URL = "https://docs.house.gov/floor/Download.aspx?file=/billsthisweek/{day:%Y%m%d}/{day:%Y%m%d}.xml"
WEEK_PAGE_URL = "https://docs.house.gov/floor/Default.aspx?date={day:%Y-%m-%d}"


class HouseFloorScheduleSpider(EventSpider):
    name = "house_floor_schedule"
    version = "1.1"
    branch = "Legislative"
    entity = "House of Representatives"
    frequency_hours = 6.0
    recordings = {
        "gov/house_docs_floor/billsthisweek_20260914.xml": "https://docs.house.gov/floor/Download.aspx?file=/billsthisweek/20260914/20260914.xml",
    }
    #: One file a week, revised a few times a day: a single slow request is enough.
    custom_settings = {
        **EventSpider.custom_settings,
        "DOWNLOAD_DELAY": 2.0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    }

    @property
    def listing_urls(self) -> tuple[str, ...]:
        today = eastern_today()
        return (WEEK_URL.format(day=today - timedelta(days=today.weekday())),)

    # -- one week's schedule → one all-day event per floor item ---------------------------------------

    def parse_records(self, response: Response) -> Iterable[Any]:
        """Each ``floor-item`` with its category and the week of the document."""
        root = parse_xml(response.body, ("floorschedule",), response.url)
        try:
            week = parse_local(root.get("week-date") or "", "%Y-%m-%d").date()
        except ValueError:
            raise MalformedDocument(
                "%s has no valid week-date: %r" % (response.url, root.get("week-date"))
            ) from None
        congress = to_int(root.get("congress-num"))
        for category in root.iterfind("category"):
            for item in category.iterfind("floor-items/floor-item"):
                yield item, category, week, congress

    def parse_record(self, record: Any, response: Response) -> dict[str, Any] | None:
        item, category, week, congress = record
        item_id = required_attribute(item, "id", response.url)
        legis_num = text_of(item, "legis-num")
        floor_text = text_of(item, "floor-text")
        return {
            "datetime": week,
            "end_datetime": week + timedelta(days=6),
            "title": self._parse_title(legis_num, floor_text),
            "description": category.get("type") or "",
            "unique_key": item_id,
            "source_text": outer_xml(item),
            "event_url": None,
            "week_url": WEEK_PAGE_URL.format(day=week),
            "floor_item_id": item_id,
            "legis_num": legis_num,
            "floor_text": floor_text,
            "category": category.get("type") or "",
            "category_sort_order": to_int(category.get("sort-order")),
            "sort_order": to_int(item.get("sort-order")),
            "week_date": week.isoformat(),
            "congress": congress,
            **self._parse_ids(item, congress or sitting_on(week)[0]),
            **self._parse_item_dates(item),
            "files": docs_house_files(item),
            "updates": docs_house_updates(item),
            "subitems": self._parse_subitems(item),
        }

    @staticmethod
    def _parse_title(legis_num: str, floor_text: str) -> str:
        return "%s: %s" % (legis_num, floor_text) if legis_num and floor_text else legis_num or floor_text

    @staticmethod
    def _parse_ids(item: etree._Element, congress: int) -> dict[str, list[Any]]:
        """``bill_ids`` and ``public_laws`` the item and its subitems name, with their evidence."""
        found = bills_in_designation(text_of(item, "legis-num"), "legis-num", congress)
        found += named_in_text(text_of(item, "floor-text"), "floor-text", congress)
        for sub in item.iterfind("floor-subitems/floor-subitem"):
            found += bills_in_designation(text_of(sub, "legis-num"), "floor-subitem/legis-num", congress)
            found += named_in_text(text_of(sub, "floor-text"), "floor-subitem/floor-text", congress)
        return id_keys(found, (BILL_IDS, PUBLIC_LAWS))

    @staticmethod
    def _parse_item_dates(item: Any) -> dict[str, Any]:
        """When the item was added to, published in and (if so) removed from the schedule."""
        return {
            "%s_datetime" % key: eastern_iso(item.get("%s-date" % key) or "", *DOCS_HOUSE_STAMPS)
            for key in ("add", "publish", "remove")
        }

    @staticmethod
    def _parse_subitems(item: Any) -> list[dict[str, Any]]:
        """Rules Committee prints, reports and other papers that accompany the item."""
        return [
            {
                "id": sub.get("id") or "",
                "legis_num": text_of(sub, "legis-num"),
                "floor_text": text_of(sub, "floor-text"),
                "sort_order": to_int(sub.get("sort-order")),
                "files": docs_house_files(sub),
            }
            for sub in item.iterfind("floor-subitems/floor-subitem")
        ]
