"""White House posts from the whitehouse.gov WordPress RSS feeds (presidential actions, news).

One event per post, at its ``pubDate`` (RFC 822 with an offset, honoured as given); the unique key
is the WordPress post id from the guid (``https://www.whitehouse.gov/?p=51617`` → ``51617``), so a
post that moves between feeds or changes its slug stays one event. The feeds' ETag/Last-Modified are
site-wide, so conditional GETs save bandwidth but never stand in for de-duplication by guid.

Ids (version 1.1): the bills, Public Laws ("Public Law 107-89") and nominations (by their Senate
number) a post names in its title, excerpt or text; a bill's Congress is the one sitting when the
post was published (a bill the President signs on 3 January after the old Congress ended is the new
Congress's by that rule unless the text says "118th Congress"). Statutes citations ("49 Stat.
1895"), a bare "Joint Resolution 115" and executive order numbers name no id.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from votersdaily.sources.canonical_ids import BILL_IDS, NOMINATION_IDS, PUBLIC_LAWS, id_keys, named_in_text
from votersdaily.sources.congress import sitting_on
from votersdaily.sources.errors import UnexpectedDocument
from votersdaily.sources.html import html_text, link_urls
from votersdaily.sources.rss import FeedItem, parse_rss, wordpress_excerpt_text

from .base import EventSpider

if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import datetime

    from scrapy.http import Response

#: Every feed item is filed under this category besides its specific kind.
FEED_CATEGORIES = frozenset({"Presidential Actions", "News"})
POST_ID_RE = re.compile(r"^\d+$")


class WhiteHouseSpider(EventSpider):
    name = "white_house"
    version = "1.1"
    branch = "Executive"
    entity = "White House"
    # The posts' locale; the feed's own +0000 offsets are honoured, this only places the event's day.
    source_timezone = "America/New_York"
    frequency_hours = 1.0
    listing_urls = (
        "https://www.whitehouse.gov/presidential-actions/feed/",
        "https://www.whitehouse.gov/news/feed/",
    )
    recordings = {
        "gov/white_house/presidential-actions_feed.xml": "https://www.whitehouse.gov/presidential-actions/feed/",
    }
    custom_settings = {
        **EventSpider.custom_settings,
        # Large feeds (≈600 KB): one at a time, and conditional GETs through the HTTP cache.
        "DOWNLOAD_DELAY": 2.0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    }

    def parse_records(self, response: Response) -> Iterable[Any]:
        feed = parse_rss(response.body, response.url)
        return ((item, feed.title) for item in feed.items)

    def parse_record(self, record: tuple[FeedItem, str], response: Response) -> dict[str, Any]:
        item, feed_title = record
        if item.published is None:
            raise UnexpectedDocument("%s: item %r has no pubDate" % (response.url, item.guid or item.title))
        post_id = self._parse_post_id(item)
        description = wordpress_excerpt_text(item.description_html)
        return {
            "datetime": item.published,
            "title": item.title,
            "description": description,
            "unique_key": post_id,
            "source_text": item.source_text,
            "event_url": item.link,
            "post_id": post_id,
            "guid": item.guid,
            "published": item.published_text,
            "categories": item.categories,
            "action_types": [c for c in item.categories if c not in FEED_CATEGORIES],
            "creator": item.creator,
            "pdf_urls": self._parse_pdf_urls(item),
            "feed_title": feed_title,
            **self._parse_ids(item, item.published, description),
        }

    @staticmethod
    def _parse_post_id(item: FeedItem) -> str:
        """The ``p`` query parameter of the guid; a guid without one is used whole."""
        values = parse_qs(urlsplit(item.guid).query).get("p", [])
        if values and POST_ID_RE.match(values[0]):
            return values[0]
        if item.guid:
            return item.guid
        raise UnexpectedDocument("feed item %r has no guid" % item.title)

    @staticmethod
    def _parse_ids(item: FeedItem, published: datetime, description: str) -> dict[str, list[Any]]:
        """``bill_ids``, ``public_laws`` and ``nomination_ids`` the post names, with their evidence."""
        congress = sitting_on(published)[0]
        found = named_in_text(item.title, "title", congress, nominations=True)
        found += named_in_text(description, "description", congress, nominations=True)
        found += named_in_text(html_text(item.content_html), "content:encoded", congress, nominations=True)
        return id_keys(found, (BILL_IDS, PUBLIC_LAWS, NOMINATION_IDS))

    @staticmethod
    def _parse_pdf_urls(item: FeedItem) -> list[str]:
        """The PDFs the post links (executive order texts, annexes), from its full content."""
        return link_urls(item.content_html or item.description_html, item.link)
