"""What a laundromat run does with the links crawled content names (sitemap entries, dump locations,
``void:dataDump`` links): that content is untrusted, so one bad link never stops the others (a
``<loc>`` no request can be made of stopped its sitemap, then every later run at its start). A link
not followed is said once per reason, at WARNING (the others of that reason at DEBUG), and counted:
the stats ``laundromat/not_followed/<reason>``, and the run log's ``not_followed`` (links by reason)
and ``not_followed_links`` (the first ones, each with why).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from votersdaily.plumbing.inputs import checked_url

if TYPE_CHECKING:
    import logging

    from scrapy.crawler import Crawler

#: A link no request can be made of: not a URL (a bad port or IPv6 literal), a control character,
#: longer than MAX_URL, another scheme, no host.
BAD_URL = "bad_url"


class FoundLinks:
    #: How many links not followed the run log names, each with why (it counts them all).
    IN_LOG = 50
    #: Characters of a link the run log keeps.
    LINK_CHARS = 1000

    def __init__(self, crawler: Crawler, logger: logging.Logger | logging.LoggerAdapter[Any]) -> None:
        self.crawler = crawler
        self.logger = logger
        self.not_followed: Counter[str] = Counter()
        self.first: list[dict[str, Any]] = []

    def checked(self, link: str, what: str, where: str) -> str | None:
        """``link`` (``what`` it is, found in ``where``) stripped when a request can be made of it, or
        when it is relative (registered, never fetched); else None, and not followed. A ``file:``
        link passes: the address policy refuses it, as it refuses a link to a private address."""
        try:
            return checked_url(link, what, relative=True)
        except ValueError as exc:
            self.skip(BAD_URL, link, where, str(exc))
            return None

    def skip(self, reason: str, link: str, where: str, why: str, count: int = 1) -> None:
        """``count`` links found in ``where`` (``link`` the first) are not followed, for ``why``."""
        first = reason not in self.not_followed
        self.not_followed[reason] += count
        self.crawler.stats.inc_value("laundromat/not_followed/%s" % reason, count)
        if len(self.first) < self.IN_LOG:
            self.first.append(
                {"reason": reason, "link": link[: self.LINK_CHARS], "where": where, "message": why}
            )
        if first:
            self.logger.warning(
                "not followed: %s (in %s); the run log counts every link not followed (not_followed)",
                why,
                where,
            )
        else:
            self.logger.debug("not followed: %s (in %s)", why, where)

    def report(self, doc: dict[str, Any]) -> None:
        """Add what was not followed to the run log ``doc``."""
        if self.not_followed:
            doc["not_followed"] = dict(self.not_followed)
            doc["not_followed_links"] = self.first
