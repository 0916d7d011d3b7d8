"""Secrets never reach a job log: passwords in URLs are masked in every log record.

Scrapy logs the overridden settings when a crawl starts (``-s VOTERSDAILY_STORE=http://user:pw@…``,
``-s REDIS_URL=redis://:pw@…``, settings scrapyd passes through), and any component may log a URL.
:class:`RedactSecrets` masks every record from before that first one on, so a job log (which
scrapyd serves to anyone who can reach it) holds ``user:***@host`` instead.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

#: ``scheme://user:password@`` (the password never holds ``@``, ``/`` or whitespace unencoded).
CREDENTIALS_RE = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s'\"]*:)[^@/\s'\"]+@")


#: A setting whose name says it is a secret, as Scrapy prints settings: ``'NAME': 'value'``.
SECRET_SETTING_RE = re.compile(
    r"""(['"]\w*(?:PASSWORD|SECRET|TOKEN|PASSWD)\w*['"]:\s*)(['"])(?:(?!\2).)+\2"""
)


#: What each pattern cannot match without: most records hold neither, and the patterns cost tens of
#: nanoseconds a byte (a word boundary is tried as a scheme's start), hundreds of microseconds for a
#: long record, in every record made, emitted or not.
SECRET_WORDS = ("PASSWORD", "SECRET", "TOKEN", "PASSWD")


def redact(text: str) -> str:
    if "://" in text and "@" in text:
        text = CREDENTIALS_RE.sub(r"\1***@", text)
    if any(word in text for word in SECRET_WORDS):
        text = SECRET_SETTING_RE.sub(r"\1\2***\2", text)
    return text


class SecretFilter(logging.Filter):
    """Rewrites a record whose message holds a URL with a password or a secret setting's value
    (the record is kept)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a malformed record is the handler's to report
            return True
        masked = redact(message)
        if masked != message:
            record.msg, record.args = masked, ()
        return True


class RedactSecrets:
    """Extension: masks passwords in every log record of the process from the crawl's start on.

    The masking happens where records are made (a log record factory), not in a handler: Scrapy
    replaces its root handler while a crawl is set up, and records reach other handlers too.
    """

    def __init__(self) -> None:
        install()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedactSecrets:
        return cls()


_FILTER = SecretFilter()


def install() -> None:
    """Idempotent: wraps the current log record factory once."""
    factory = logging.getLogRecordFactory()
    if getattr(factory, "redacts", False):
        return

    logging.setLogRecordFactory(_RedactingFactory(factory))


class _RedactingFactory:
    """A log record factory that redacts what the wrapped one makes; ``redacts`` marks it installed."""

    redacts = True

    def __init__(self, factory: Callable[..., logging.LogRecord]) -> None:
        self.factory = factory

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.factory(*args, **kwargs)
        _FILTER.filter(record)
        return record
