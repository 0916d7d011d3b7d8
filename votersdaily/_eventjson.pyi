"""The compiled JSON text of an event (``_eventjson.c``; schema.py falls back without it)."""

from typing import Any

def clean_text(value: Any, strict: bool = True, /) -> tuple[str, int] | None: ...
