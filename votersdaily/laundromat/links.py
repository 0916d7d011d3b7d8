"""What a laundromat run does with the links crawled content names (sitemap entries, dump locations,
``void:dataDump`` links). That content is untrusted: one bad link never stops the others (a
``<loc>`` no request can be made of stopped its sitemap, then every later run at its start), and it
never steers a run into endless fetching (sitemap indexes naming new indexes were followed without
end): sitemaps are read at most ``LAUNDROMAT_SITEMAP_MAX_DEPTH`` deep, and a run registers at most
``LAUNDROMAT_MAX_FOUND_SEEDS`` new seeds from them. A link not followed is said once per reason, at
WARNING (the others of that reason at DEBUG), and counted: the stats
``laundromat/not_followed/<reason>``, and the run log's ``not_followed`` (links by reason) and
``not_followed_links`` (the first ones, each with why).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from votersdaily.plumbing.inputs import checked_url, shown

if TYPE_CHECKING:
    import logging

    from scrapy.crawler import Crawler

#: A link no request can be made of: not a URL (a bad port or IPv6 literal), a control character,
#: longer than MAX_URL, another scheme, no host.
BAD_URL = "bad_url"
#: A link of a sitemap nested deeper than LAUNDROMAT_SITEMAP_MAX_DEPTH.
TOO_DEEP = "sitemap_too_deep"
#: A new seed past the run's LAUNDROMAT_MAX_FOUND_SEEDS.
SEED_LIMIT = "seed_limit"


class FoundLinks:
    #: How many links not followed the run log names, each with why (it counts them all).
    IN_LOG = 50
    #: Characters of a link the run log keeps.
    LINK_CHARS = 1000

    def __init__(self, crawler: Crawler, logger: logging.Logger | logging.LoggerAdapter[Any]) -> None:
        self.crawler = crawler
        self.logger = logger
        self.max_depth = crawler.settings.getint("LAUNDROMAT_SITEMAP_MAX_DEPTH")
        self.max_found = crawler.settings.getint("LAUNDROMAT_MAX_FOUND_SEEDS")
        #: New seeds the run registered from crawled content.
        self.found = 0
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

    def sitemap_too_deep(self, kind: str, depth: int, links: list[str], where: str) -> str | None:
        """Why the ``links`` of the sitemap ``where`` (``depth`` sitemaps above it) are not followed,
        and said so, when it is too deep: it is deeper than LAUNDROMAT_SITEMAP_MAX_DEPTH, or it is an
        index whose sitemaps would be. None when they are followed."""
        deepest = depth + (kind == "sitemapindex")
        if deepest <= self.max_depth or not links:
            return None
        why = "%s %d deep%s, past LAUNDROMAT_SITEMAP_MAX_DEPTH (%d): its %d links are not followed" % (
            "sitemap index" if kind == "sitemapindex" else "sitemap",
            depth,
            " (its sitemaps would be %d deep)" % deepest if deepest > depth else "",
            self.max_depth,
            len(links),
        )
        self.skip(TOO_DEEP, links[0], where, why, count=len(links))
        return why

    @property
    def full(self) -> bool:
        """Whether the run has registered its LAUNDROMAT_MAX_FOUND_SEEDS new seeds from crawled content."""
        return 0 < self.max_found <= self.found

    def over_limit(self, link: str, where: str) -> None:
        """``link``, found in ``where``, would be a new seed past LAUNDROMAT_MAX_FOUND_SEEDS: not followed."""
        self.skip(
            SEED_LIMIT,
            link,
            where,
            "%s: the run has registered LAUNDROMAT_MAX_FOUND_SEEDS (%d) new seeds from crawled content "
            "(a later run that reads what names it registers it)" % (shown(link), self.max_found),
        )

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
