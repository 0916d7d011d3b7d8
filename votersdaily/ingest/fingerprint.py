"""trafilatura's content fingerprint (the TEI header's ``<idno type="fingerprint">``): its own
numbers, counted over all the tokens at once in C rather than a token at a time in Python.

``trafilatura.deduplication.Simhash.create_hash`` adds each sampled token's 64-element vector of
+1/-1 (a bit of its BLAKE2b digest each) to a running vector with ``list(map(add, ...))``: a Python
step and a new 64-element list a token, 6.5-14 ms of the recorded scholarly articles' 26-76 ms
``extract_body`` (a fifth of it on First Monday's). Its bit ``i`` is set when the sum of the tokens'
bit ``i`` (as +1/-1) is not negative, that is when twice the number of tokens whose digest has bit
``i`` is at least the number of tokens. :func:`create_hash` counts those bits over all the tokens'
digests at once (each digest's byte ``k`` is a slice of their concatenation; a bit of it counted with
``bytes.translate`` and ``bytes.count``): 2.4-3.7 ms where trafilatura's took 9.6-12.5 ms on those
articles, the tokens sampled by trafilatura's own ``sample_tokens``.

:func:`install` puts it in place only where it gives trafilatura's own fingerprint of a probe text,
so a trafilatura whose algorithm changed keeps its own (and another width than 64 bits is
trafilatura's); ``tests/ingest/test_extraction_corpus.py`` holds it to trafilatura's on every
recorded page.
"""

from __future__ import annotations

import functools
from hashlib import blake2b

from trafilatura import deduplication

#: The hash's width that :func:`create_hash` computes (trafilatura's default, the fingerprint's).
BITS = 64
#: For each bit ``j`` of a byte, a table mapping a byte to that bit (0 or 1), for ``bytes.translate``.
_BIT_OF = tuple(bytes((value >> j) & 1 for value in range(256)) for j in range(8))

_OWN_CREATE_HASH = deduplication.Simhash.create_hash
#: A text whose fingerprint :func:`install` compares (words of several lengths, punctuation, repeats).
_PROBE = (
    "The ingest reads a landing page, then its PDF; a fingerprint of the text (title and body) "
    "is written in the TEI header. Words repeat, words repeat: hashing, hashing, hashed! 2026."
)


@functools.lru_cache(maxsize=2**14)
def _digest(token: str) -> bytes:
    """The token's 8-byte BLAKE2b digest, as trafilatura's ``_vector_to_add`` hashes it."""
    return blake2b(token.encode(), digest_size=8).digest()


def create_hash(self: deduplication.Simhash, inputstring: str) -> int:
    """``Simhash.create_hash`` for a 64-bit hash: bit ``i`` set when at least half the sampled
    tokens' digests have bit ``i`` (a digest read big-endian); another width is trafilatura's own."""
    if self.length != BITS:
        return _OWN_CREATE_HASH(self, inputstring)
    tokens = deduplication.sample_tokens(inputstring, self.length)
    digests = b"".join(map(_digest, tokens))
    total = len(tokens)
    value = 0
    for k in range(8):  # byte k of each digest holds bits 8 * (7 - k) to 8 * (7 - k) + 7
        column = digests[k::8]
        for j in range(8):
            if 2 * column.translate(_BIT_OF[j]).count(1) >= total:
                value |= 1 << (8 * (7 - k) + j)
    return value


def install() -> bool:
    """Put :func:`create_hash` in trafilatura's place if it gives trafilatura's own fingerprint of a
    probe text; True when it was installed."""
    uninstall()
    own = deduplication.content_fingerprint(_PROBE)
    deduplication.Simhash.create_hash = create_hash  # type: ignore[method-assign]
    if deduplication.content_fingerprint(_PROBE) == own:
        return True
    uninstall()
    return False


def uninstall() -> None:
    """trafilatura's own back (the tests' reference path)."""
    deduplication.Simhash.create_hash = _OWN_CREATE_HASH  # type: ignore[method-assign]
