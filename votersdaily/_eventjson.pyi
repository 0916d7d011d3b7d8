"""The compiled JSON text of an event and the MD5 of a text (``_eventjson.c``; schema.py and
store/embedded.py fall back without it)."""

from typing import Any, overload

def clean_text(value: Any, strict: bool = True, event: bool = False, /) -> tuple[str, int] | None: ...
@overload
def md5_hex(data: str, /) -> str | None: ...
@overload
def md5_hex(data: bytes | bytearray | memoryview, /) -> str: ...
