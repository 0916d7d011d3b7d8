"""The marks ``votersdaily/settings.py`` annotates its settings with, and which settings are the project's.

``settings.py`` imports this module (so it imports nothing but the standard library);
``votersdaily/setting_rules.py`` reads the marks back to check values before a crawl, and the
environment resolver (``votersdaily/plumbing/environment.py``) knows the project's settings by their
prefix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Prefixes of the settings this project defines (Scrapy's own settings have Scrapy's defaults).
OWN_PREFIXES = ("VOTERSDAILY_", "INGEST_", "LAUNDROMAT_", "GROBID_", "FEDERAL_REGISTER_", "SPLASH_")

#: The levels Python's logging knows by name (``LOG_LEVEL``, ``--log-level``).
LOG_LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG")


@dataclass(frozen=True)
class AtLeast:
    minimum: float


@dataclass(frozen=True)
class AtMost:
    maximum: float


@dataclass(frozen=True)
class OneOf:
    choices: tuple[str, ...]

    def __init__(self, *choices: str):
        object.__setattr__(self, "choices", choices)


@dataclass(frozen=True)
class Matches:
    """Text that matches ``pattern`` whole; ``what`` says what it takes, in the refusal's words."""

    pattern: str
    what: str

    def __call__(self, value: str) -> bool:
        return re.fullmatch(self.pattern, value) is not None


#: What a database name takes: CouchDB's rule (docs: "Database name"), whatever the store: the
#: embedded store would hold ``Bad DB``, which no CouchDB can, so data queued or stored under it
#: could not move to one (``INGEST_*_DB``, a command's ``--db``, the file table's name).
DATABASE_NAME = Matches(
    r"[a-z][a-z0-9_$()+/-]*",
    "a CouchDB database name: a lowercase letter, then lowercase letters, digits or _$()+-/",
)

#: What a database name prefix takes: CouchDB's rule for the start of a database name (docs:
#: "Database name"), empty for no prefix (``VOTERSDAILY_DB_PREFIX``, checked before any work, and by
#: each store as it opens: votersdaily/store/names.py).
DB_PREFIX = Matches(
    "(?:%s)?" % DATABASE_NAME.pattern,
    "the start of a CouchDB database name: a lowercase letter, then lowercase letters, digits or _$()+-/",
)

#: What a Redis URL takes: redis-py reads ``redis://host:6379/abc`` (or ``/l`` for ``/1``) as database
#: 0 without a word, so a queue would go where the workers do not read (``REDIS_URL``, its
#: environment variable, ``enqueue --redis-url``).
REDIS_URL_FORM = Matches(
    r"(?:rediss?://[^/?#]*(?:/[0-9]*)?|unix://[^?#]+)(?:\?[^#]*)?(?:#.*)?",
    "a Redis URL: redis://[user:password@]host:port/<database number> (or rediss://, unix://)",
)

#: What the data home takes: an absolute folder (``~`` for the user's home): a relative one would be
#: another folder from every working folder, and every relative location under it. Its name is
#: text (UTF-8): a byte that is not (read from the environment as a lone surrogate) cannot be
#: written in a run log or a spool file's name, and the run died of it after it began.
ABSOLUTE_FOLDER = Matches(
    r"\s*(?:/|~)[^\ud800-\udfff]*", "an absolute folder named in UTF-8 (/srv/votersdaily, ~/votersdaily)"
)
