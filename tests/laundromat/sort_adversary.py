"""A crafted order of canonical N-Triples lines against the multikey quicksort of ``_ntscan.c`` as
it was (median-of-three pivot, three-way partition, recursion into both the lesser and the greater
part): McIlroy's "killer adversary" (Software: Practice and Experience, 1999) run against a
simulation of that sort. Lines are frozen byte by byte only when the sort reads them; an unread
byte compares greater than every pivot, so each partition peels two or three lines off and
recurses into the rest: one frame per two or three lines, and quadratic work. A downloaded file
can hold these lines in this order; the tests and the measurement in the report use it.
"""

from __future__ import annotations

import sys

#: The bytes a crafted key is made of, in byte order (IRI-safe).
VALUES = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_UNREAD = None


def crafted_lines(n: int) -> tuple[list[bytes], int]:
    """``n`` statements in the crafted order, and the nesting the old sort reached on them."""
    keys: list[list[int]] = [[] for _ in range(n)]
    used: dict[tuple, int] = {}  # values given so far under each prefix
    order = list(range(n))
    top = len(VALUES) - 1
    deepest = 0

    def byte(item: int, depth: int) -> int | None:
        key = keys[item]
        return key[depth] if depth < len(key) else _UNREAD

    def freeze(item: int, depth: int, value: int | None = None) -> int:
        prefix = tuple(keys[item][:depth])
        if value is None:
            value = used.get(prefix, 0)
            used[prefix] = value + 1
        keys[item].append(min(value, top))
        return keys[item][depth]

    def sort(lo: int, count: int, depth: int, level: int) -> None:
        nonlocal deepest
        deepest = max(deepest, level)
        while count > 1:
            if count < 12:  # the insertion sort: every byte read
                for i in range(lo, lo + count):
                    if byte(order[i], depth) is _UNREAD:
                        freeze(order[i], depth)
                return
            if used.get(tuple(keys[order[lo]][:depth]), 0) > top - 4:
                # Values at this depth run out: every unread line takes the last one (they go on
                # together, one byte deeper).
                for i in range(lo, lo + count):
                    if byte(order[i], depth) is _UNREAD:
                        freeze(order[i], depth, top)
            x, y, z = (
                v if (v := byte(item, depth)) is not _UNREAD else freeze(item, depth)
                for item in (order[lo], order[lo + count // 2], order[lo + count - 1])
            )
            pivot = (y if y < z else (z if x < z else x)) if x < y else (x if x < z else (z if y < z else y))
            lt, i, gt = lo, lo, lo + count - 1
            while i <= gt:
                c = byte(order[i], depth)
                if c is not _UNREAD and c < pivot:
                    order[lt], order[i] = order[i], order[lt]
                    lt += 1
                    i += 1
                elif c is _UNREAD or c > pivot:
                    order[i], order[gt] = order[gt], order[i]
                    gt -= 1
                else:
                    i += 1
            sort(lo, lt - lo, depth, level + 1)
            sort(gt + 1, lo + count - gt - 1, depth, level + 1)
            lo, count, depth = lt, gt + 1 - lt, depth + 1

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, n + 100))
    try:
        sort(0, n, 0, 0)
    finally:
        sys.setrecursionlimit(limit)
    lines = [
        b"<http://example.org/%s> <http://example.org/p> <http://example.org/o> ."
        % bytes(VALUES[v] for v in key)
        for key in keys
    ]
    return lines, deepest
