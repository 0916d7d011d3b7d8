"""The ingest settings, read in one place (defaults live in votersdaily/settings.py)."""

from __future__ import annotations

import functools
import pickle
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from votersdaily.defaults import DEFAULTS

from .resources import BLOCKED_HOSTS
from .urls import Blocklists, configured_list
from .workers import default_processes

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.settings import BaseSettings


@dataclass(frozen=True)
class IngestConfig:
    max_hops: int = DEFAULTS["INGEST_MAX_HOPS"]
    max_redirects: int = DEFAULTS["INGEST_MAX_REDIRECTS"]
    max_body: int = DEFAULTS["INGEST_MAX_BODY_BYTES"]
    max_resources: int = DEFAULTS["INGEST_MAX_RESOURCES"]
    max_resource_body: int = DEFAULTS["INGEST_MAX_RESOURCE_BYTES"]
    resource_bytes_per_page: int = DEFAULTS["INGEST_RESOURCE_BYTES_PER_PAGE"]
    resource_bytes_per_worker: int = DEFAULTS["INGEST_RESOURCE_BYTES_PER_WORKER"]
    fetch_resources: bool = DEFAULTS["INGEST_FETCH_RESOURCES"]
    strict_resources: bool = DEFAULTS["INGEST_STRICT_RESOURCES"]
    timeout: float = DEFAULTS["INGEST_TIMEOUT"]
    grobid_url: str | None = DEFAULTS["GROBID_URL"]
    grobid_timeout: float = DEFAULTS["GROBID_TIMEOUT"]
    pdf_max_pages: int = DEFAULTS["INGEST_PDF_MAX_PAGES"]
    ojs_fulltext_fix: bool = DEFAULTS["INGEST_OJS_FULLTEXT_FIX"]
    requests_db: str = DEFAULTS["INGEST_REQUESTS_DB"]
    extract_processes: int = 0
    extract_nice: int = DEFAULTS["INGEST_EXTRACT_NICE"]
    html_by_declared_type: bool = DEFAULTS["INGEST_HTML_BY_DECLARED_TYPE"]
    pdf_thumbnails: bool = DEFAULTS["INGEST_PDF_THUMBNAILS"]
    blocklists: Blocklists = field(default_factory=Blocklists)
    resource_domain_blocklist: tuple[str, ...] = BLOCKED_HOSTS
    #: The crawl's URLLENGTH_LIMIT, a setting of Scrapy's (its default is Scrapy's, read by
    #: :meth:`from_settings`; 0, Scrapy's "none", outside a crawl): a hop link longer as requested is
    #: one no fetch can use (:func:`~.urls.over_length_limit`).
    url_length_limit: int = 0

    def __reduce__(self) -> tuple[Callable[[bytes], IngestConfig], tuple[bytes]]:
        """Pickled as the pickle of its class and field values, made once a config: every call of an
        extraction process carries the crawl's config, and pickling its lists (some 2.4 KB) anew
        cost the reactor 6-7 µs a call; the extraction process makes one config of those bytes and
        uses it for every call that brings them (:func:`_config_from`). Equal to the config pickled."""
        data = self.__dict__.get("_pickled")
        if data is None:
            values = tuple(getattr(self, each.name) for each in fields(self))
            data = pickle.dumps((type(self), values), pickle.HIGHEST_PROTOCOL)
            object.__setattr__(self, "_pickled", data)  # frozen: the fields, not this memo
        return (_config_from, (data,))

    @property
    def resource_cap(self) -> int:
        """The most one sub-resource download may hold: its size limit, within both budgets."""
        return min(self.max_resource_body, self.resource_bytes_per_page, self.resource_bytes_per_worker)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> IngestConfig:
        return cls(
            max_hops=settings.getint("INGEST_MAX_HOPS"),
            max_redirects=settings.getint("INGEST_MAX_REDIRECTS"),
            max_body=settings.getint("INGEST_MAX_BODY_BYTES"),
            max_resources=settings.getint("INGEST_MAX_RESOURCES"),
            max_resource_body=settings.getint("INGEST_MAX_RESOURCE_BYTES"),
            resource_bytes_per_page=settings.getint("INGEST_RESOURCE_BYTES_PER_PAGE"),
            resource_bytes_per_worker=settings.getint("INGEST_RESOURCE_BYTES_PER_WORKER"),
            fetch_resources=settings.getbool("INGEST_FETCH_RESOURCES"),
            strict_resources=settings.getbool("INGEST_STRICT_RESOURCES"),
            timeout=settings.getfloat("INGEST_TIMEOUT"),
            grobid_url=settings.get("GROBID_URL") or None,
            grobid_timeout=settings.getfloat("GROBID_TIMEOUT"),
            pdf_max_pages=settings.getint("INGEST_PDF_MAX_PAGES"),
            ojs_fulltext_fix=settings.getbool("INGEST_OJS_FULLTEXT_FIX"),
            requests_db=settings.get("INGEST_REQUESTS_DB"),
            extract_processes=(
                settings.getint("INGEST_EXTRACT_PROCESSES")
                if settings.get("INGEST_EXTRACT_PROCESSES") not in (None, "")
                else default_processes()
            ),
            extract_nice=settings.getint("INGEST_EXTRACT_NICE"),
            html_by_declared_type=settings.getbool("INGEST_HTML_BY_DECLARED_TYPE"),
            pdf_thumbnails=settings.getbool("INGEST_PDF_THUMBNAILS"),
            blocklists=Blocklists.from_settings(settings),
            resource_domain_blocklist=tuple(
                h.lower() for h in configured_list(settings, "INGEST_RESOURCE_DOMAIN_BLOCKLIST")
            ),
            url_length_limit=settings.getint("URLLENGTH_LIMIT"),
        )


@functools.lru_cache(maxsize=4)
def _config_from(data: bytes) -> IngestConfig:
    """The config pickled as ``data`` (:meth:`IngestConfig.__reduce__`), made once for the same
    bytes: a frozen dataclass of immutable values, shared by the calls that bring it."""
    cls: type[IngestConfig]
    values: tuple[Any, ...]
    cls, values = pickle.loads(data)  # noqa: S301 - the crawl's own config, as before
    return cls(*values)
