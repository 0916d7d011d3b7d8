"""Hardening: secrets stay out of job logs, no remote-control endpoint in a crawl, and
an event spider refuses a response far larger than any event document."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import recording
from votersdaily.store import open_store

ROLL314 = recording("gov/house_roll_call/roll314.xml")
FR = recording("gov/federal_register/documents_executive_orders.json")


def test_secrets_stay_out_of_the_job_log(crawl, sqlite_uri):
    """Scrapy logs the overridden settings at start (a secret setting's value included) and a feed
    URI with its password when the upload fails: the job log holds both masked."""
    result = crawl(
        "house_votes",
        [ROLL314],
        sqlite_uri,
        "-s",
        "AWS_SECRET_ACCESS_KEY=s3cret-aws",
        "-o",
        "ftp://uploader:s3cret-ftp@127.0.0.1:9/events.json",  # nobody listens: the upload fails
    )
    log = result.stderr
    assert "'AWS_SECRET_ACCESS_KEY': '***'" in log, log[-3000:]
    assert "ftp://uploader:***@127.0.0.1:9/events.json" in log
    assert "s3cret" not in log


def test_the_filter_masks_passwords_in_any_record():
    import logging

    from votersdaily.redact import SecretFilter

    record = logging.LogRecord(
        "scrapy.crawler", logging.INFO, __file__, 1, "Overridden settings:\n%(settings)s", None, None
    )
    record.args = {"settings": "{'REDIS_URL': 'redis://:pw1@r:6379/0', 'X': 'http://u:p%40w@h/a@b'}"}
    assert SecretFilter().filter(record)
    assert record.getMessage() == (
        "Overridden settings:\n{'REDIS_URL': 'redis://:***@r:6379/0', 'X': 'http://u:***@h/a@b'}"
    )


def test_the_masks_quick_checks_change_no_text():
    """``redact`` runs each pattern only on text holding what it needs ("://" and "@"; a secret
    word): the same text as both patterns run everywhere, on every recorded source document (the
    shipped recordings, cut in records' sizes), each also with a password and a secret setting put
    in (derived variants), and on the settings line above."""
    import itertools

    from votersdaily.redact import CREDENTIALS_RE, SECRET_SETTING_RE, redact

    def everywhere(text: str) -> str:
        return SECRET_SETTING_RE.sub(r"\1\2***\2", CREDENTIALS_RE.sub(r"\1***@", text))

    recordings = Path(__file__).parents[1] / "votersdaily" / "recordings"
    texts = ["{'REDIS_URL': 'redis://:pw1@r:6379/0', 'X': 'http://u:p%40w@h/a@b'}"]
    for path in sorted(p for p in recordings.rglob("*") if p.is_file()):
        text = path.read_bytes().decode("utf-8", "replace")
        texts += [text[i : i + 4000] for i in range(0, min(len(text), 40000), 4000)]
    settings = ("AWS_SECRET_ACCESS_KEY", "API_TOKEN", "DB_PASSWORD", "FTP_PASSWD")
    secrets = ["", " ftp://uploader:s3cret@127.0.0.1:9/x "] + [" '%s': 's3' " % name for name in settings]
    masked = 0
    for text, secret in itertools.product(texts, secrets):
        variant = text[: len(text) // 2] + secret + text[len(text) // 2 :]
        assert redact(variant) == everywhere(variant), variant[:200]
        masked += redact(variant) != variant
    assert len(texts) > 100 and masked >= 5 * (len(texts) - 1)  # every put-in secret was masked


def test_no_remote_control_endpoint_in_a_crawl(crawl, sqlite_uri):
    result = crawl("house_votes", [ROLL314], sqlite_uri)
    assert result.returncode == 0, result.stderr[-3000:]
    enabled = result.stderr.split("Enabled extensions:", 1)[1].split("]", 1)[0]
    assert "votersdaily.redact.RedactSecrets" in enabled
    assert "RemoteControl" not in enabled and "TelnetConsole" not in enabled


def test_an_event_spider_refuses_an_oversized_response(crawl, site, sqlite_uri):
    """The recorded Federal Register response, its results repeated past the limit (a derived
    variant): refused while downloading, with the reason in the run log; nothing is parsed."""
    data = json.loads(FR.read_text(encoding="utf-8"))
    data["results"] = data["results"] * 400
    data["next_page_url"] = None
    body = json.dumps(data).encode()
    assert len(body) > 2_000_000
    url = site.route("/api/v1/documents.json", body, content_type="application/json; charset=utf-8")
    result = crawl("federal_register", url, sqlite_uri, "-s", "VOTERSDAILY_EVENT_MAXSIZE=1000000")
    assert "larger than download max size (1000000)" in result.stderr
    store = open_store(sqlite_uri)
    (log,) = list(store.iter_docs("vd_log"))
    assert log["result"] == "DownloadCancelledError", log
    assert log["items_scraped"] == 0
    assert "vd_events" not in store.list_dbs() or store.count("vd_events") == 0
    # The default limit lets the same response through.
    result = crawl("federal_register", url, sqlite_uri)
    assert result.returncode == 0, result.stderr[-3000:]
