"""htmldate's search of a whole page for a date, each pass skipped where it cannot match.

trafilatura's TEI header carries the page's date, found by htmldate. A page whose markup names no
date (the House's and the Supreme Court's pages among the recordings) goes on to htmldate's
``search_page``: ten regular expressions run over the whole serialised page, most starting with
``\\D`` so that Python's engine tries each at every character (htmldate marks that ``findall``
"slow!"), then ``regex_parse``'s month-name expression: 5-9 ms of the recorded gov pages' 20-60 ms,
half of an article's extraction where the page holds no date (the benchmark's, 6 of 13 ms).

Each pass's expression needs a few characters that are rare in text: digits in a date's shape
(``[/.-][0-9][0-9][/.-][0-9][0-9]``), a year (``199x``, ``20[0-3]x``), a copyright sign. A
:class:`Prefiltered` pattern first looks for those with an expression that starts with a digit or a
literal (the engine skips to candidates in C) and, when they are absent, answers as the full pass
would: no match. When present, the full pass runs, unchanged. So the date found, and the order in
which candidates are weighed, are htmldate's own (htmldate's ``idiosyncrasies_search`` does the
same around its numeric cores); ``tests/ingest/test_extraction_corpus.py`` holds every pass and
``extract_body`` to htmldate's own on the recordings, the benchmark's articles and generated text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from htmldate import core, extractors

#: htmldate's years (``extractors.YEAR_RE``: 1990-2039) without its group: in every pass but the
#: copyright one's literals and the day-first ones' shapes, a year is what cannot be missing.
_YEAR = re.compile(r"(?:199|20[0-3])[0-9]")


@dataclass(frozen=True)
class Prefiltered:
    """A compiled htmldate pattern whose ``findall`` and ``search`` first look for what every one
    of its matches contains (``needs``: a pattern, or literals any one of which must occur); other
    attributes are the pattern's own."""

    pattern: re.Pattern[str]
    needs: re.Pattern[str] | tuple[str, ...]

    def _possible(self, string: str, pos: int = 0) -> bool:
        if isinstance(self.needs, tuple):
            return any(string.find(literal, pos) >= 0 for literal in self.needs)
        return self.needs.search(string, pos) is not None

    def findall(self, string: str, pos: int = 0, endpos: int | None = None) -> list[Any]:
        if endpos is None and not self._possible(string, pos):
            return []
        return self.pattern.findall(string, pos, len(string) if endpos is None else endpos)

    def search(self, string: str, pos: int = 0, endpos: int | None = None) -> re.Match[str] | None:
        if endpos is None and not self._possible(string, pos):
            return None
        return self.pattern.search(string, pos, len(string) if endpos is None else endpos)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy and pickle ask before the fields exist
            raise AttributeError(name)
        return getattr(self.pattern, name)


#: What every match of each prefiltered pass contains (a pattern, or literals one of which must
#: occur), by the pass's name in ``htmldate.core`` (``LONG_TEXT_PATTERN``: ``htmldate.extractors``).
#: Each starts with one character class, a separator where the pass has one (rarer than digits),
#: so that the engine skips to its candidates in C; ``[0-9]{4}`` would be tried at every character.
NEEDS: dict[str, re.Pattern[str] | tuple[str, ...]] = {
    "COPYRIGHT_PATTERN": ("©", "&copy;", "Copyright", "(c)"),
    "THREE_LOOSE_PATTERN": re.compile(r"[/.-][0-9][0-9][/.-][0-9][0-9]"),
    "SELECT_YMD_PATTERN": re.compile(r"[/.-][0-9][0-9]?[/.-][0-9][0-9][0-9][0-9]"),
    "DATESTRINGS_PATTERN": re.compile(r"[12][0-9]{7}"),
    "SLASHES_PATTERN": re.compile(r"[/.][0-9][0-9]?[/.][0-9][0-9]"),
    "YYYYMM_PATTERN": re.compile(r"[12][0-9]{3}[/.-][01]"),
    "MMYYYY_PATTERN": re.compile(r"[/.-][12][0-9][0-9][0-9]"),
    "SIMPLE_PATTERN": _YEAR,
    "LONG_TEXT_PATTERN": _YEAR,
}
#: The expressions of htmldate 1.11 those were derived from, all compiled with Python's default flags
#: but the month names' (also ``re.IGNORECASE``, which changes nothing for digits): :func:`install`
#: prefilters a pass only while its expression and flags are still these.
DERIVED_FROM: dict[str, str] = {
    "COPYRIGHT_PATTERN": r"(?:©|\&copy;|Copyright|\(c\))\D{0,99}(?:(?:199[0-9]|20[0-3][0-9]))?-?((?:199[0-9]|20[0-3][0-9]))\D",
    "THREE_LOOSE_PATTERN": r"\D([0-9]{4}[/.-][0-9]{2}[/.-][0-9]{2})\D",
    "SELECT_YMD_PATTERN": r"\D([0-3]?[0-9][/.-][0-1]?[0-9][/.-][0-9]{4})\D",
    "DATESTRINGS_PATTERN": r"(\D19[0-9]{2}[01][0-9][0-3][0-9]\D|\D20[0-9]{2}[01][0-9][0-3][0-9]\D)",
    "SLASHES_PATTERN": r"\D([0-3]?[0-9]/[0-1]?[0-9]/[0129][0-9]|[0-3][0-9]\.[01][0-9]\.[0129][0-9])\D",
    "YYYYMM_PATTERN": r"\D([12][0-9]{3}[/.-](?:1[0-2]|0[1-9]))\D",
    "MMYYYY_PATTERN": r"\D([0-1]?[0-9][/.-][12][0-9]{3})\D",
    "SIMPLE_PATTERN": r"(?<!w3.org)\D((?:199[0-9]|20[0-3][0-9]))\D",
    "LONG_TEXT_PATTERN": r"(?P<month>(?<![^\W\d_])[^\W\d_]{3,})\s(?P<day>[0-3]?[0-9])(?:st|nd|rd|th)?,? "
    r"(?P<year>(?:199[0-9]|20[0-3][0-9]))|(?P<day2>[0-3]?[0-9])(?:st|nd|rd|th|\.)? (?:of )?"
    r"(?P<month2>(?<![^\W\d_])[^\W\d_]{3,})[,.]? (?P<year2>(?:199[0-9]|20[0-3][0-9]))",
}


def _module(name: str) -> Any:
    return extractors if name == "LONG_TEXT_PATTERN" else core


def _flags(name: str) -> int:
    return re.compile("", re.IGNORECASE if name == "LONG_TEXT_PATTERN" else 0).flags


def _own(name: str) -> re.Pattern[str] | None:
    value = getattr(_module(name), name, None)
    return value.pattern if isinstance(value, Prefiltered) else value


def install() -> bool:
    """Prefilter htmldate's passes, each only if its expression and flags are those its prefilter
    was derived from (an htmldate that changed one keeps its own); True when all were."""
    done = 0
    for name, needs in NEEDS.items():
        own = _own(name)
        if isinstance(own, re.Pattern) and own.pattern == DERIVED_FROM[name] and own.flags == _flags(name):
            setattr(_module(name), name, Prefiltered(own, needs))
            done += 1
    loose = core.THREE_LOOSE_PATTERN  # also in the tuple search_page loops over
    core.THREE_COMP_PATTERNS = tuple(  # type: ignore[assignment]  # the same two, one prefiltered
        loose if p is _own("THREE_LOOSE_PATTERN") else p for p in core.THREE_COMP_PATTERNS
    )
    return done == len(NEEDS)


def uninstall() -> None:
    """htmldate's own patterns back (the tests' reference path)."""
    for name in NEEDS:
        own = _own(name)
        if own is not None:
            setattr(_module(name), name, own)
    core.THREE_COMP_PATTERNS = tuple(  # type: ignore[assignment]  # the same two
        p.pattern if isinstance(p, Prefiltered) else p for p in core.THREE_COMP_PATTERNS
    )
