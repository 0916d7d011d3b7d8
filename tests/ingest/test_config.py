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


def test_a_config_sent_to_an_extraction_process_is_the_config_and_pickled_once(monkeypatch):
    """Every extraction call carries the crawl's config: it pickles as the pickle of its fields, made
    once a config (the bytes of the first pickle reused by every later one), and unpickles to an
    equal config, field for field, whose examination of recorded documents is the original's;
    the extraction process makes one config of the same bytes, not one a call."""
    import pickle

    from scrapy.settings import Settings

    from tests.ingest.conftest import recorded_html_pages, recorded_pdfs
    from votersdaily import settings as defaults
    from votersdaily.ingest.config import IngestConfig
    from votersdaily.ingest.process import examine_hop

    configs = [
        IngestConfig(),
        IngestConfig.from_settings(Settings(defaults.__dict__)),
        IngestConfig.from_settings(
            Settings(
                dict(
                    defaults.__dict__,
                    INGEST_URL_BLOCKLIST=["://blocked.example/"],
                    INGEST_PDF_THUMBNAILS=False,
                    INGEST_MAX_BODY_BYTES=12345,
                )
            )
        ),
    ]
    for config in configs:
        first, again = config.__reduce__(), config.__reduce__()
        assert first[1][0] is again[1][0]  # the fields pickled once
        copies = [pickle.loads(pickle.dumps(config, protocol)) for protocol in (2, 4, 5)]
        for copy in copies:
            assert type(copy) is IngestConfig and copy == config and hash(copy) == hash(config)
            for field in config.__dataclass_fields__:
                assert getattr(copy, field) == getattr(config, field)
        assert copies[1] is copies[2]  # the extraction process's one config of these bytes
    sent = pickle.loads(pickle.dumps(configs[2]))
    for name, body in recorded_pdfs()[:3]:
        url = "https://recorded.example.org/" + name
        assert examine_hop(body, url, "application/pdf", "pdf", [url], sent) == examine_hop(
            body, url, "application/pdf", "pdf", [url], configs[2]
        )
    page = recorded_html_pages()[0]
    url = "https://recorded.example.org/" + page.name
    assert examine_hop(page.read_bytes(), url, "text/html", "html", [url], sent) == examine_hop(
        page.read_bytes(), url, "text/html", "html", [url], configs[2]
    )
