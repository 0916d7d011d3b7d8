"""JSON text of many small values, fast: one C encoder made once and reused.

``json.dumps(value, ensure_ascii=False)`` builds a :class:`json.JSONEncoder` and a C encoder for
every call, which costs as much as encoding a small document; the hot paths (the event validation,
the embedded store's bodies) encode tens of thousands of documents a run and reuse one instead. The
text is exactly ``json.dumps``'s with the same options.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from functools import partial
from typing import Any


class ReusableJsonEncoder:
    """``encoder(value)`` is ``json.dumps(value, ensure_ascii=..., allow_nan=...)``.

    The C encoder keeps the ids of the containers it is inside (the circular-reference check); a
    value it refuses (not JSON, a cycle) can leave some behind, so it is made again after a failure.
    """

    def __init__(self, *, ensure_ascii: bool = True, allow_nan: bool = True):
        self.ensure_ascii = ensure_ascii
        self.allow_nan = allow_nan
        self._encode = self._make()

    def _make(self) -> Callable[[Any], str]:
        encoder = json.JSONEncoder(ensure_ascii=self.ensure_ascii, allow_nan=self.allow_nan)
        make = getattr(json.encoder, "c_make_encoder", None)  # CPython's C accelerator
        if make is None:
            return encoder.encode
        chunks = make(
            {},
            encoder.default,
            json.encoder.encode_basestring_ascii if self.ensure_ascii else json.encoder.encode_basestring,
            None,  # indent
            ": ",
            ", ",
            False,  # sort_keys
            False,  # skipkeys
            self.allow_nan,
        )
        return partial(_joined, chunks)

    def __call__(self, value: Any) -> str:
        try:
            return self._encode(value)
        except BaseException:
            self._encode = self._make()
            raise


def _joined(chunks: Callable[[Any, int], Any], value: Any) -> str:
    return "".join(chunks(value, 0))
