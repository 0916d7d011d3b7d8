"""What each setting takes, checked before a crawl does any work.

A value Scrapy cannot read (``-s VOTERSDAILY_BATCH_SIZE=abc``, ``-L VERBOSE``) would otherwise fail
deep inside the crawl's start-up, as a Twisted traceback with no run log. :func:`check_settings` names
the first such setting and what it takes, in one line, before anything starts.

What a setting takes comes from ``votersdaily/settings.py``: the type of its default (``int``,
``float``, ``bool``, ``str``, ``list``, ``dict``), or its annotation where the default says too little
(``LAUNDROMAT_WORKERS: int | None = None``, ``VOTERSDAILY_BATCH_SIZE: Annotated[int, AtLeast(1)] = 1000``), with :class:`AtLeast`,
:class:`AtMost` and :class:`OneOf` for ranges and choices, :class:`Matches` for text of a form; the project's own numbers
(``VOTERSDAILY_*``, ``INGEST_*``, …) are never negative. Scrapy's own settings take the type of
Scrapy's default (any number where that is a number: Scrapy reads some whole-number defaults as
floats). The marks live in ``votersdaily/setting_marks.py``, which ``settings.py`` imports.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from votersdaily import settings as project_settings
from votersdaily.plumbing.environment import ENVIRONMENT_NAMES, environment_name, environment_value
from votersdaily.setting_marks import OWN_PREFIXES, AtLeast, AtMost, Matches, OneOf

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


class BadSettingValue(ValueError):
    """A setting holds a value its readers cannot use; the message names it and what it takes."""


TRUE_FALSE = ("True", "False", "true", "false", "1", "0")


#: A lone surrogate: how Python reads a byte that is no UTF-8 from the environment or a command line.
_NOT_UTF8 = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Rule:
    """What one setting takes."""

    kind: type
    optional: bool = False
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = field(default=())
    matches: Matches | None = None

    def describe(self) -> str:
        words = {
            int: "a whole number",
            float: "a number",
            bool: "True or False",
            str: "text (UTF-8)",
            list: "a list (comma-separated)",
            dict: "a JSON object",
        }[self.kind]
        if self.choices:
            words = "one of %s" % ", ".join(self.choices)
        if self.matches is not None:
            words = self.matches.what
        if self.minimum is not None and self.maximum is not None:
            words += " from %g to %g" % (self.minimum, self.maximum)
        elif self.minimum is not None:
            words += " of at least %g" % self.minimum
        elif self.maximum is not None:
            words += " of at most %g" % self.maximum
        return words + (" (or None)" if self.optional else "")

    def accepts(self, value: Any) -> bool:
        if value is None or (self.optional and value in ("", "None")):
            return self.optional
        if self.kind is bool:
            return isinstance(value, bool) or value in (0, 1) or str(value) in TRUE_FALSE
        if self.kind in (int, float):
            return self._accepts_number(value)
        if self.kind is str:  # any text (a path, a URL); a choice must be one of its choices
            if isinstance(value, str) and _NOT_UTF8.search(value):
                return False  # a byte that is no UTF-8, read from the environment: no run log holds it
            if self.matches is not None and not (isinstance(value, str) and self.matches(value)):
                return False
            return not self.choices or value in self.choices
        if self.kind is list:
            return isinstance(value, (str, list, tuple))
        if self.kind is dict:
            return _is_mapping(value)
        return True

    def _accepts_number(self, value: Any) -> bool:
        if isinstance(value, bool):
            return False
        try:
            number = self.kind(value)
        except (TypeError, ValueError, OverflowError):
            return False
        if self.kind is int and isinstance(value, float) and not value.is_integer():
            return False
        if not math.isfinite(number):  # nan, inf, 1e400: no timer, delay or size takes them
            return False
        if self.minimum is not None and number < self.minimum:
            return False
        return self.maximum is None or number <= self.maximum


def _is_mapping(value: Any) -> bool:
    if isinstance(value, Mapping) or hasattr(value, "copy_to_dict"):  # Scrapy's BaseSettings
        return True
    if isinstance(value, str):
        try:
            return isinstance(json.loads(value), dict)
        except ValueError:
            return False
    return False


def rule_from(annotation: Any, default: Any, own: bool) -> Rule | None:
    """The rule of a setting from its annotation (if any) and default; None: nothing to check."""
    kind, optional = None, default is None
    marks: tuple[Any, ...] = ()
    if annotation is not None:
        if typing.get_origin(annotation) is typing.Annotated:
            annotation, *extras = typing.get_args(annotation)
            marks = tuple(extras)
        args = typing.get_args(annotation)
        if typing.get_origin(annotation) in (typing.Union, types.UnionType):
            optional = type(None) in args
            kinds = [a for a in args if a is not type(None)]
            annotation = kinds[0] if len(kinds) == 1 else None
        kind = typing.get_origin(annotation) or annotation
    if kind is None and default is not None:
        kind = type(default)
    if kind not in (int, float, bool, str, list, dict):
        return None
    minimum = 0.0 if own and kind in (int, float) else None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    matches = None
    for mark in marks:
        if isinstance(mark, AtLeast):
            minimum = mark.minimum
        elif isinstance(mark, AtMost):
            maximum = mark.maximum
        elif isinstance(mark, OneOf):
            choices = mark.choices
        elif isinstance(mark, Matches):
            matches = mark
    return Rule(kind, optional, minimum, maximum, choices, matches)


def project_rules() -> dict[str, Rule]:
    """The rule of every setting of ``votersdaily/settings.py`` that has one."""
    module = project_settings
    annotations = typing.get_type_hints(module, include_extras=True)
    rules = {}
    for name in dir(module):
        if not name.isupper():
            continue
        rule = rule_from(annotations.get(name), getattr(module, name), name.startswith(OWN_PREFIXES))
        if rule is not None:
            rules[name] = rule
    return rules


def scrapy_rules() -> dict[str, Rule]:
    """Rules of Scrapy's own settings from the types of Scrapy's defaults (numbers as numbers)."""
    from scrapy.settings import default_settings

    rules = {}
    for name in dir(default_settings):
        value = getattr(default_settings, name)
        if not name.isupper() or value is None:
            continue
        kind = float if type(value) in (int, float) else type(value)
        if kind in (float, bool, dict):
            rules[name] = Rule(kind)
    return rules


def _project_names() -> list[str]:
    return [name for name in dir(project_settings) if name.isupper()]


def _scrapy_names() -> list[str]:
    from scrapy.settings import default_settings

    return [name for name in dir(default_settings) if name.isupper()]


def _typos_apart(given: str, known: str, limit: int) -> bool:
    """Whether ``given`` becomes ``known`` by at most ``limit`` typos (a letter left out, added,
    replaced, or two swapped: optimal string alignment distance). Only the cells within ``limit`` of
    the diagonal can stay within it, and once a row is past it every later row is: names that differ
    early cost a few cells."""
    if abs(len(given) - len(known)) > limit:
        return False
    over = limit + 1
    before: list[int] = []
    row = [j if j <= limit else over for j in range(len(known) + 1)]
    for i, a in enumerate(given, 1):
        current = [i if i <= limit else over] + [over] * len(known)
        for j in range(max(1, i - limit), min(len(known), i + limit) + 1):
            b = known[j - 1]
            cell = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (a != b))
            if i > 1 and j > 1 and a == known[j - 2] and given[i - 2] == b:
                cell = min(cell, before[j - 2] + 1)
            current[j] = min(cell, over)
        if min(current) > limit:
            return False
        before, row = row, current
    return row[-1] <= limit


def typo_of(name: str, known: list[str]) -> str | None:
    """The name of ``known`` (sorted) that ``name``, which is none of them, is a typo of: one or two
    typos away (one for a short name), or the same in another case; None when it is none's."""
    if name in known:
        return None
    folded = {candidate.casefold(): candidate for candidate in known}
    given = name.casefold()
    if given in folded:
        return folded[given]
    limit = 1 if len(given) < 10 else 2
    return next((folded[c] for c in folded if _typos_apart(given, c, limit)), None)


def meant_setting(name: str) -> str | None:
    """The setting (the project's or Scrapy's) that ``name`` is a typo of; None for a known name and
    for another package's (scrapy-redis's ``SCHEDULER_PERSIST`` is taken as it is)."""
    return typo_of(name, sorted({*_project_names(), *_scrapy_names()}))


#: Other packages' settings the project reads itself: the rendering's confinement check reads
#: scrapy-playwright's launch options and contexts (``votersdaily/rendering/confinement.py``).
OTHER_PACKAGES_RULES = {
    "PLAYWRIGHT_LAUNCH_OPTIONS": Rule(dict),
    "PLAYWRIGHT_CONTEXTS": Rule(dict),
}


#: Scrapy's settings the project reads itself, as Scrapy reads them, as whole numbers (Scrapy's
#: numbers are otherwise taken as any number: :func:`scrapy_rules`).
SCRAPY_WHOLE_NUMBERS = {
    "URLLENGTH_LIMIT": Rule(int),  # the ingest's hop links (ingest/urls.py:over_length_limit)
}


def all_rules() -> dict[str, Rule]:
    return {**scrapy_rules(), **SCRAPY_WHOLE_NUMBERS, **OTHER_PACKAGES_RULES, **project_rules()}


def bad_settings(settings: BaseSettings, rules: Mapping[str, Rule] | None = None) -> Iterator[str]:
    """One line for each setting of ``settings`` (a Scrapy ``Settings``) whose value its rule refuses."""
    for name, rule in (all_rules() if rules is None else rules).items():
        if name not in settings:
            continue
        value = settings.get(name)
        if not rule.accepts(value):
            yield "setting %s takes %s, not %r" % (name, rule.describe(), value)


def assign(settings: BaseSettings, name: str, value: str, priority: str = "cmdline") -> None:
    """``settings[name] = value`` from a command line (``-s NAME=VALUE``), checked: a value Scrapy
    cannot even store (text for a component dict) or its readers cannot use is
    :class:`BadSettingValue`, naming the setting and what it takes."""
    rules = all_rules()
    rule = rules.get(name)
    if rule is None and name.startswith(OWN_PREFIXES) and name not in _project_names():
        # A mistyped name of ours would be ignored without a word: the run would use the default.
        close = difflib.get_close_matches(name, _project_names(), n=1, cutoff=0.8)
        raise BadSettingValue(
            "unknown setting %s%s" % (name, "; did you mean %s?" % close[0] if close else "")
        )
    meant = meant_setting(name) if rule is None else None
    if meant is not None:
        # So would a typo in the prefix (VOTERDAILY_BATCH_SIZE) or in one of Scrapy's names.
        raise BadSettingValue("unknown setting %s; did you mean %s?" % (name, meant))
    try:
        settings.set(name, value, priority=priority)
    except (TypeError, ValueError):
        takes = rule.describe() if rule is not None else "another kind of value"
        raise BadSettingValue("setting %s takes %s, not %r" % (name, takes, value)) from None
    if rule is not None and not rule.accepts(settings.get(name)):
        raise BadSettingValue("setting %s takes %s, not %r" % (name, rule.describe(), value))


def bad_environment(rules: Mapping[str, Rule] | None = None) -> Iterator[str]:
    """One line for each project setting given in the environment (which wins over ``-s``:
    votersdaily/plumbing/environment.py) whose value its rule refuses."""
    rules = all_rules() if rules is None else rules
    own = [name for name in _project_names() if name.startswith(OWN_PREFIXES)]
    for name in (*own, *ENVIRONMENT_NAMES):
        value, rule = environment_value(name), rules.get(name)
        if value is not None and rule is not None and not rule.accepts(value):
            yield "environment variable %s takes %s, not %r" % (
                environment_name(name),
                rule.describe(),
                value,
            )
    # A mistyped variable (VOTERSDAILY_STOR=http://…) would be ignored without a word: the run would
    # write to the default store. Only names a typo or two from one the project reads are named.
    read = sorted({environment_name(name) for name in (*own, *ENVIRONMENT_NAMES)})
    for variable, value in sorted(os.environ.items()):
        meant = typo_of(variable, read) if value else None
        if meant is not None:
            yield "unknown environment variable %s; did you mean %s?" % (variable, meant)


def check_settings(settings: BaseSettings) -> None:
    """Raise :class:`BadSettingValue` naming the first setting (given or from the environment) its
    readers could not use."""
    for problem in (*bad_environment(), *bad_settings(settings)):
        raise BadSettingValue(problem)
