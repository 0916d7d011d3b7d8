"""The ingest settings, read in one place (defaults live in votersdaily/settings.py)."""

from __future__ import annotations

from dataclasses import dataclass

from .workers import default_processes


@dataclass(frozen=True)
class IngestConfig:
    max_hops: int = 8
    max_redirects: int = 25
    max_body: int = 128 * 1024 * 1024
    max_resources: int = 200
    max_resource_body: int = 32 * 1024 * 1024
    resource_bytes_per_page: int = 128 * 1024 * 1024
    resource_bytes_per_worker: int = 512 * 1024 * 1024
    fetch_resources: bool = True
    strict_resources: bool = False
    timeout: float = 300.0
    grobid_url: str | None = None
    grobid_timeout: float = 180.0
    pdf_max_pages: int = 50
    ojs_fulltext_fix: bool = True
    requests_db: str = "ingest_requests"
    extract_processes: int = 0

    @property
    def resource_cap(self) -> int:
        """The most one sub-resource download may hold: its size limit, within both budgets."""
        return min(self.max_resource_body, self.resource_bytes_per_page, self.resource_bytes_per_worker)

    @classmethod
    def from_settings(cls, settings) -> IngestConfig:
        return cls(
            max_hops=settings.getint("INGEST_MAX_HOPS", 8),
            max_redirects=settings.getint("INGEST_MAX_REDIRECTS", 25),
            max_body=settings.getint("INGEST_MAX_BODY_BYTES", 128 * 1024 * 1024),
            max_resources=settings.getint("INGEST_MAX_RESOURCES", 200),
            max_resource_body=settings.getint("INGEST_MAX_RESOURCE_BYTES", 32 * 1024 * 1024),
            resource_bytes_per_page=settings.getint("INGEST_RESOURCE_BYTES_PER_PAGE"),
            resource_bytes_per_worker=settings.getint("INGEST_RESOURCE_BYTES_PER_WORKER"),
            fetch_resources=settings.getbool("INGEST_FETCH_RESOURCES", True),
            strict_resources=settings.getbool("INGEST_STRICT_RESOURCES", False),
            timeout=settings.getfloat("INGEST_TIMEOUT", 300.0),
            grobid_url=settings.get("GROBID_URL") or None,
            grobid_timeout=settings.getfloat("GROBID_TIMEOUT", 180.0),
            pdf_max_pages=settings.getint("INGEST_PDF_MAX_PAGES", 50),
            ojs_fulltext_fix=settings.getbool("INGEST_OJS_FULLTEXT_FIX", True),
            requests_db=settings.get("INGEST_REQUESTS_DB", "ingest_requests"),
            extract_processes=(
                settings.getint("INGEST_EXTRACT_PROCESSES")
                if settings.get("INGEST_EXTRACT_PROCESSES") not in (None, "")
                else default_processes()
            ),
        )
