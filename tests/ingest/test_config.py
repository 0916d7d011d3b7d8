"""The ingest's configuration from settings: block lists replaced or extended."""

from __future__ import annotations

from votersdaily.ingest import hops as H


def test_block_lists_replaced_or_extended_from_settings():
    from scrapy.settings import Settings

    from votersdaily import settings as defaults
    from votersdaily.ingest.config import IngestConfig

    config = IngestConfig.from_settings(Settings(defaults.__dict__))
    assert H.before_fetch("https://archive.org/details/x", config.blocklists) == "skip-url-blocklist"
    assert "google-analytics.com" in config.resource_domain_blocklist
    replaced = IngestConfig.from_settings(
        Settings(
            dict(
                defaults.__dict__,
                INGEST_URL_BLOCKLIST=["://blocked.example/"],
                INGEST_WALL_BLOCKLIST_EXTRA="/members-only,/sso/",
                INGEST_RESOURCE_DOMAIN_BLOCKLIST=["Tracker.Example"],
            )
        )
    )
    assert H.before_fetch("https://archive.org/details/x", replaced.blocklists) is None  # replaced
    assert H.before_fetch("https://blocked.example/a", replaced.blocklists) == "skip-url-blocklist"
    assert H.before_fetch("https://j.example/sso/login", replaced.blocklists) == "skip-wall"  # added
    assert H.before_fetch("https://j.example/password-login", replaced.blocklists) == "skip-wall"  # kept
    assert replaced.resource_domain_blocklist == ("tracker.example",)
    from votersdaily.ingest.resources import is_blocked

    assert is_blocked("https://cdn.tracker.example/t.js", replaced.resource_domain_blocklist)
    assert not is_blocked("https://www.google-analytics.com/x.js", replaced.resource_domain_blocklist)
