"""Item types. Events are dicts (ad hoc keys are part of the contract), typed so pipelines can tell
them from the other jobs' items; every component reads them through ``ItemAdapter``."""

from __future__ import annotations

from typing import Any


class EventItem(dict[str, Any]):
    """One event of docs/events.md §2, plus ``unique_key`` and any ad hoc keys of its source."""
