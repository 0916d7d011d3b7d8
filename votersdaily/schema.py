"""The event and run-log contracts of docs/events.md §2–3, in one place: names, keys and their rules."""

from __future__ import annotations

import functools
import json
import math
import operator
import re
from collections.abc import Callable, Mapping, MutableMapping
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import pytz

from .items import EventItem
from .json_encoder import ReusableJsonEncoder

EVENTS_DB = "vd_events"
LOG_DB = "vd_log"

BRANCHES = ("Executive", "Legislative", "Judicial", "Other")

#: Standard entity names. Extend this list (never spell an entity inline in a spider).
ENTITIES = (
    "White House",
    "Senate",
    "House of Representatives",
    "Congress",
    "Supreme Court",
    "Federal Register",
    "Federal Election Commission",
)

#: Required event keys; ``True`` marks the ones that may be null (the source never provides them).
EVENT_KEYS: dict[str, bool] = {
    "datetime": False,
    "title": False,
    "description": True,
    "end_datetime": True,
    "branch": False,
    "entity": False,
    "source_url": False,
    "source_text": False,
    "access_datetime": False,
    "parser_name": False,
    "parser_version": False,
    "event_url": True,
    "source_timezone": False,
}

#: Keys that may hold an empty string ("normally provided, missing for this item").
MAY_BE_EMPTY = frozenset({"description", "event_url"})

#: ``"archived": false`` on an event whose document could not be archived (the archive's disk was
#: full): it has no ``warc_*`` pointer (votersdaily.archive).
NOT_ARCHIVED = "archived"

#: Keys ignored when deciding whether a re-scraped event changed.
#: The archive pointer (``warc_*``, or the mark that there is none) is one of them: an unchanged event
#: keeps pointing at the first archived document it came from, also when a later run could not archive.
VOLATILE_EVENT_KEYS = ("access_datetime", "warc_file", "warc_record_id", "warc_offset", NOT_ARCHIVED)
#: When an event was observed (its source document fetched): of two versions of one event, or two
#: events of one key, the one observed later is the newer, whichever was written last (a spooled
#: copy delivered after an outage).
EVENT_OBSERVED_AT = "access_datetime"

#: A key whose stored value, when it differs, proves at once that an event changed (the writer reads
#: it before anything else): a reparse by a new parser version changes every event it reparses.
EVENT_CHANGE_PROBE = ("parser_version",)

DATETIME_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")

#: CouchDB's default max_document_size is 8 MB; stay clearly below it.
MAX_DOCUMENT_BYTES = 7 * 1024 * 1024

#: Never in stored text: C0 controls but tab and newline, DEL, C1 controls, and lone surrogates
#: (valid in a JSON string, but not Unicode: UTF-8 cannot encode them, strict parsers refuse them).
BAD_TEXT_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
#: ``source_text`` is the exact fragment (CR/LF line ends, whatever the source sent): only what
#: cannot be stored at all goes.
SURROGATE_RE = re.compile("[\ud800-\udfff]")
#: Keys whose value is a URL (absolute http, https or file, nothing to clean in it).
URL_KEYS = ("source_url", "event_url")
URL_SCHEMES = frozenset({"http", "https", "file"})
#: Characters a URL never holds raw (controls, space, lone surrogates).
URL_BAD_RE = re.compile("[\x00-\x20\x7f-\x9f\ud800-\udfff]")


#: The canonical ids an event may carry (docs/events.md §2, "Ids"): each key a list of whole strings of
#: these forms, built by :mod:`votersdaily.sources.canonical_ids` and read by the views ``by_bill``,
#: ``by_docket`` and ``by_vote``.
ID_FORMS: dict[str, re.Pattern[str]] = {
    "bill_ids": re.compile(r"(?:hr|hres|hjres|hconres|s|sres|sjres|sconres)[1-9][0-9]*-[1-9][0-9]*"),
    "public_laws": re.compile(r"[1-9][0-9]*-[1-9][0-9]*"),
    "vote_ids": re.compile(r"[hs][1-9][0-9]*-[1-9][0-9]*\.[0-9]{4}"),
    "nomination_ids": re.compile(r"PN[1-9][0-9]*(?:-[1-9][0-9]*)?-[1-9][0-9]*"),
    "dockets": re.compile(r"(?:[0-9]{2}-[1-9][0-9]*|[0-9]{2}[AM][1-9][0-9]*|22O[1-9][0-9]*)"),
    "committee_ids": re.compile(r"[HSJ][A-Z]{3}(?:0[1-9]|[1-9][0-9])?"),
}
#: ``vote_id`` (a roll call's own id) has the form of a ``vote_ids`` member.
ID_FORMS_SINGLE = {"vote_id": ID_FORMS["vote_ids"]}


class InvalidEvent(ValueError):
    """An event breaks the contract; ``code`` is the short reason counted in stats and the run log."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def is_absolute_url(value: str) -> bool:
    """An absolute http(s) URL with a host, or a file URL with a path, with no raw control
    character, space or lone surrogate in it (a CR/LF in a URL would split an iCalendar line)."""
    if not isinstance(value, str) or (
        _ascii_holds(value, _ASCII_BAD_URL) if value.isascii() else URL_BAD_RE.search(value)
    ):
        return False
    try:
        parts = urlsplit(value)
    except ValueError:  # e.g. an unbalanced "[" in the host
        return False
    scheme = parts.scheme.lower()
    if scheme not in URL_SCHEMES:
        return False
    if scheme == "file":
        return bool(parts.path)
    return bool(parts.hostname)


#: What :data:`BAD_TEXT_RE` and :data:`URL_BAD_RE` find in ASCII text, as bytes: ASCII text (most
#: text) is checked in one pass over its bytes, several times faster than a regex or ``isprintable``.
_ASCII_BAD_TEXT = bytes([*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F])
_ASCII_BAD_URL = bytes([*range(0x00, 0x21), 0x7F])


def _ascii_holds(text: str, chars: bytes) -> bool:
    """Whether ASCII ``text`` holds any of ``chars``."""
    data = text.encode("ascii")
    return len(data.translate(None, chars)) != len(data)


def needs_cleaning(value: str, pattern: re.Pattern[str] = BAD_TEXT_RE) -> bool:
    """Whether ``value`` holds what ``pattern`` forbids (ASCII or printable text, the common case,
    is told apart without a regex)."""
    if value.isascii():
        if pattern is SURROGATE_RE:
            return False
        if pattern is BAD_TEXT_RE:
            return _ascii_holds(value, _ASCII_BAD_TEXT)
    elif pattern is BAD_TEXT_RE and value.isprintable():
        return False
    return pattern.search(value) is not None


def clean_text(value: str, pattern: re.Pattern[str] = BAD_TEXT_RE) -> str:
    """``value`` without what :data:`BAD_TEXT_RE` forbids: CR/LF and lone CR become a newline, a
    lone surrogate U+FFFD (as a decoder would replace it), other controls are removed."""
    if not needs_cleaning(value, pattern):
        return value
    if pattern is BAD_TEXT_RE:
        value = value.replace("\r\n", "\n").replace("\r", "\n")
    return pattern.sub(lambda m: "\ufffd" if "\ud800" <= m.group() <= "\udfff" else "", value)


def storable_value(value: Any) -> Any:
    """``value`` as JSON any store takes, for a record that must be kept whatever went into it (a
    run log: the message of a failure may come from a file name decoded with ``surrogateescape``, a
    receiver of ``run_log_building`` may add any object). A lone surrogate becomes U+FFFD (text keeps
    everything else, the source's own text included), a key that is no string becomes its text, a
    tuple a list; NaN, an infinity and what JSON has no form for (a date, a set) become their text."""
    if isinstance(value, str):
        return clean_text(str(value), SURROGATE_RE)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {storable_value(str(key)): storable_value(member) for key, member in value.items()}
    if isinstance(value, (list, tuple)):
        return [storable_value(member) for member in value]
    return storable_value(str(value))


def clean_value(value: Any, pattern: re.Pattern[str] = BAD_TEXT_RE) -> Any:
    """``value`` with every string in it (nested, keys too) cleaned by :func:`clean_text`; the same
    object when nothing needed cleaning."""
    kind = type(value)
    if kind is str:
        return clean_text(value, pattern)
    if kind is list or kind is tuple:
        cleaned = [clean_value(member, pattern) for member in value]
        return value if all(a is b for a, b in zip(cleaned, value, strict=True)) else kind(cleaned)
    if isinstance(value, Mapping):
        items = [(clean_value(k, pattern), clean_value(v, pattern)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    return value


def clean_event(event: MutableMapping[str, Any]) -> list[str]:
    """Clean the text of ``event`` in place (see :data:`BAD_TEXT_RE`); the keys that changed.

    URLs are not cleaned: :func:`validate_event` rejects a URL with a control character in it.
    """
    changed = []
    for key, value in event.items():
        if type(value) is str:  # the common case, without a call per value
            pattern = SURROGATE_RE if key == "source_text" else BAD_TEXT_RE
            if not needs_cleaning(value, pattern) or key in URL_KEYS:
                continue
            cleaned = clean_text(value, pattern)
        elif type(value) in (list, dict, tuple) or isinstance(value, Mapping):
            cleaned = clean_value(value)
            if cleaned is value:
                continue
        else:
            continue
        changed.append(key)
        event[key] = cleaned  # same key: the dict's size does not change while iterating
    try:
        keys = "".join(event)
    except TypeError:  # a key that is not a string: JSON serialisation reports it
        keys = ""
    if needs_cleaning(keys):
        for key in [k for k in event if type(k) is str and BAD_TEXT_RE.search(k)]:
            event[clean_text(key)] = event.pop(key)
            changed.append(clean_text(key))
    return changed


def parse_iso_utc(value: str) -> datetime:
    if not DATETIME_RE.match(value):
        raise ValueError("not ISO 8601 UTC to the second: %r" % (value,))
    return datetime.fromisoformat(value[:-1])


#: The standard names as sets (membership is what validation asks).
_BRANCH_SET = frozenset(BRANCHES)
_ENTITY_SET = frozenset(ENTITIES)


@functools.cache
def _zone_set() -> frozenset[str]:
    """The IANA zones, once (pytz's ``all_timezones_set`` is a lazy proxy), at the first event
    checked: listing them looks for each zone's file (8 ms), which every crawl's start paid for when
    this module was imported (the run log imports it), a laundromat crawl's too."""
    return frozenset(pytz.all_timezones)


def validate_event(event: Mapping[str, Any]) -> None:
    """Raise :class:`InvalidEvent` for the first broken rule of docs/events.md §2."""
    _required_keys(event, cleaned=False)
    _check_own_keys(event)
    _event_rules(event)
    unique_key = event["unique_key"]
    if BAD_TEXT_RE.search(unique_key):
        raise InvalidEvent("text:unique_key", "unique_key holds a control character or a lone surrogate")
    if not 0 <= _json_size_bound(event) < MAX_DOCUMENT_BYTES:
        _check_size(event)


#: In the JSON text of a nested value (``ensure_ascii=False``), a string holding a character of
#: :data:`BAD_TEXT_RE` leaves either the escape of a C0 control but tab and newline (``\\r``, ``\\b``,
#: ``\\f``, ``\\u00XX``; an escaped backslash before such a letter matches too, a false alarm that
#: costs only the reference path) or a DEL, C1 control or lone surrogate, left raw.
_ESCAPED_CONTROL_RE = re.compile(r"\\(?:[rbf]|u00[01])")
_RAW_BAD_RE = re.compile("[\x7f-\x9f\ud800-\udfff]")


def _nested_needs_cleaning(text: str) -> bool:
    """Whether the JSON text of a nested value may hold a string :func:`clean_value` would change."""
    if "\\" in text and _ESCAPED_CONTROL_RE.search(text):
        return True
    if text.isascii():  # of the raw ones, ASCII text can hold only a DEL
        return "\x7f" in text
    return _RAW_BAD_RE.search(text) is not None


#: Nested values as JSON text (validation needs it strict: NaN is no JSON).
_nested_json = ReusableJsonEncoder(ensure_ascii=False, allow_nan=False)

#: The compiled JSON text of an event with nothing to clean (``_eventjson.c``: the same text as
#: :data:`_nested_json`, or None for anything else, which then takes the Python path); None when the
#: module is not built (``scripts/build_native.py``).
_compiled_clean_text: Callable[..., tuple[str, int] | None] | None
#: The dict subclasses whose JSON text is their plain copy's (json reads a subclass through its
#: ``items()``; these override nothing a dict is read by): the compiled encoder reads such an event
#: as a dict (its ``event`` mode), without a copy. The events of the pipeline are :class:`EventItem`.
_READ_AS_DICTS = frozenset({EventItem})


def _compiled_reads(event: Mapping[str, Any]) -> bool:
    """Whether the compiled module reads ``event`` as it is: an exact dict or one of :data:`_READ_AS_DICTS`."""
    kind = type(event)
    return kind is dict or kind in _READ_AS_DICTS


#: The rules of :func:`_check_rules` but the size, compiled (``_eventjson.c``: True when they surely
#: hold, False when the Python rules must decide; their spec :func:`_rules_spec`); None when the
#: module is not built.
_compiled_rules: Callable[[Any, tuple[Any, ...]], bool] | None
try:
    from ._eventjson import clean_text as _compiled_clean_text
    from ._eventjson import rules_hold as _compiled_rules
except ImportError:  # not built: the C encoder of Python's json, then a scan of its text
    _compiled_clean_text = _compiled_rules = None


class _Reference(Exception):
    """Raised inside :func:`check_event` for what only the reference path decides."""


def check_event(event: MutableMapping[str, Any]) -> list[str]:
    """:func:`clean_event` then :func:`validate_event`, in one pass: the keys cleaned, or
    :class:`InvalidEvent` for the first broken rule. What the event pipeline runs when nothing would
    use the event's JSON text (:func:`check_event_json` makes it, at some cost).

    Each top-level value is looked at once: a string is cleaned if it must be and its JSON size bound
    is taken from its length; the nested values (lists, dicts) are serialised together once, by the
    compiled encoder (:data:`_compiled_clean_text`, which also says none of their strings needs
    cleaning) or else by the C encoder of Python's json, whose text shows whether any string needs it;
    either proves them JSON and gives their size.
    Anything else (a nested string to clean, a value that is not plain JSON, a subclass of str or dict,
    a key that is not a clean string) is left to the reference functions, on the untouched event,
    so the two paths always give the same event, keys and error (``tests/test_schema.py`` holds them
    to it on every recording and on hostile variants)."""
    try:
        cleaned, size = _clean_plain(event)
    except _Reference:
        changed = clean_event(event)
        validate_event(event)
        return changed
    for key, value in cleaned:
        event[key] = value  # same keys: the dict's size does not change
    _check_rules(event, size)
    return [key for key, _ in cleaned]


def check_event_json(event: MutableMapping[str, Any]) -> tuple[list[str], str | None]:
    """:func:`check_event`, and the event's JSON text (``json.dumps(event, ensure_ascii=False)``)
    when the check made it, else None: what the event pipeline runs, handing the text on to the store
    (which then does not encode the event again).

    The common case is told from that text alone: the whole event is serialised once by the C
    encoder, which proves it JSON and gives its exact size, and its text shows whether any string in
    it (keys too) holds what :data:`BAD_TEXT_RE` forbids (the escape of a control, or a DEL, C1
    control or lone surrogate left raw). Nothing to clean: only the rules are left. Anything else (a
    string to clean, a value that is not plain JSON, a key that is not a clean string) takes
    :func:`check_event`, so the paths always give the same event, keys and error
    (``tests/test_schema.py`` holds them to the reference functions on every recording and on
    hostile variants)."""
    try:
        text, size = _clean_json(event)
    except _Reference:
        return check_event(event), None
    _check_rules(event, size)
    return [], text


def _clean_json(event: Mapping[str, Any]) -> tuple[str, int]:
    """The JSON text of an event with nothing to clean in it, and its size in bytes;
    :class:`_Reference` when it is not JSON or has something to clean."""
    if _compiled_clean_text is not None and _compiled_reads(event):
        # Its event mode also refuses what _check_plain_keys refuses (a key not a clean string, or
        # CouchDB's): an answer needs no other check.
        found = _compiled_clean_text(event, True, True)
        if found is not None:
            return found
    _check_plain_keys(event)
    try:
        text = _nested_json(event)
    except Exception:  # not JSON (a set, NaN, a cycle, too deep): the values decide
        raise _Reference from None
    if _nested_needs_cleaning(text):
        raise _Reference
    # No lone surrogate in it (it would be left raw): it encodes.
    return text, len(text) if text.isascii() else len(text.encode("utf-8"))


#: The keys of events seen, in order, that hold nothing to clean and no key of CouchDB's, each with
#: the length of the keys joined.
_CLEAN_KEYS: dict[tuple[Any, ...], int] = {}
_CLEAN_KEYS_MAX = 4096


def _check_plain_keys(event: Mapping[str, Any]) -> int:
    """The length of the event's keys joined; :class:`_Reference` when one is not a string, holds
    what :data:`BAD_TEXT_RE` forbids, or starts with an underscore (:func:`_check_own_keys`)."""
    keys = tuple(event)
    length = _CLEAN_KEYS.get(keys)  # the events of a spider mostly have the same keys
    if length is None:
        try:
            joined = "".join(keys)
        except TypeError:
            raise _Reference from None
        if needs_cleaning(joined) or any(key[:1] == "_" and key != "_id" for key in keys):
            raise _Reference
        if len(_CLEAN_KEYS) >= _CLEAN_KEYS_MAX:
            _CLEAN_KEYS.clear()
        length = _CLEAN_KEYS[keys] = len(joined)
    return length


def _check_own_keys(event: Mapping[str, Any]) -> None:
    """:class:`InvalidEvent` for a key starting with an underscore other than ``_id``. Such keys are
    CouchDB's: ``_deleted`` would delete the stored event, ``_rev`` and ``_attachments`` are the
    store's to set, and CouchDB refuses any other (docs/events.md §2)."""
    for key in event:
        if isinstance(key, str) and key[:1] == "_" and key != "_id":
            raise InvalidEvent(
                "reserved:%s" % key,
                "key %r starts with an underscore: such keys are CouchDB's, and an event holds none but _id"
                % key,
            )


def _clean_plain(event: Mapping[str, Any]) -> tuple[list[tuple[str, str]], int]:
    """The cleaned top-level strings (key, new value) and an upper bound of the event's JSON size,
    without changing ``event``; :class:`_Reference` for anything the reference path must decide.

    The strings are checked together (one scan of their joined text for what :data:`BAD_TEXT_RE`
    finds); only when it finds something is each looked at, by its key's rule (``source_text`` keeps
    its controls, URLs are not cleaned: validation refuses a bad one)."""
    size = 2 + 6 * _check_plain_keys(event) + 6 * len(event)  # each key quoted, escaped, ": " and ", "
    texts = []
    nested = []
    cleaned = []
    for value in event.values():
        kind = type(value)
        if kind is str:
            texts.append(value)
        elif value is None or kind is bool:
            size += 5
        elif kind is int:
            if not -_INT_BOUND < value < _INT_BOUND:
                raise _Reference
            size += 21
        elif kind is float:
            if not math.isfinite(value):
                raise _Reference
            size += 24
        elif kind is list or kind is dict or kind is tuple:
            nested.append(value)
        else:
            raise _Reference
    text = "".join(texts)
    size += 6 * len(text) + 2 * len(texts)
    if needs_cleaning(text):  # some string holds something: each is looked at, by its key's rule
        for key, value in event.items():
            if type(value) is not str or key in URL_KEYS:
                continue
            pattern = SURROGATE_RE if key == "source_text" else BAD_TEXT_RE
            if needs_cleaning(value, pattern):
                cleaned.append((key, clean_text(value, pattern)))
    if nested:
        found = None if _compiled_clean_text is None else _compiled_clean_text(nested)
        if found is not None:  # all of them plain, nothing to clean: their exact size
            return cleaned, size + found[1]
        try:
            text = _nested_json(nested)  # all of them in one call of the C encoder
        except Exception:  # not JSON (a set, NaN, a cycle, too deep): the reference says which
            raise _Reference from None
        if _nested_needs_cleaning(text):
            raise _Reference
        size += len(text) if text.isascii() else 4 * len(text)
    return cleaned, size


def _check_rules(event: Mapping[str, Any], size_bound: int) -> None:
    """:func:`validate_event`'s rules in its order, for an event :func:`_clean_plain` cleaned: every
    string in it is plain and clean (the text rule cannot fail) and ``size_bound`` bounds its JSON.
    The compiled rules tell an event that keeps them all; any other goes through these, which say
    the first rule it breaks."""
    if not (_compiled_rules is not None and _compiled_reads(event) and _compiled_rules(event, _rules_spec())):
        if not _required_keys_hold(event):
            _required_keys(event, cleaned=True)  # raises for the first one broken
        _event_rules(event)
    if size_bound >= MAX_DOCUMENT_BYTES:
        _check_size(event)


def _required_keys(event: Mapping[str, Any], *, cleaned: bool) -> None:
    """Each required key's rules, in :data:`EVENT_KEYS` order; the text rule only for an event that
    :func:`_clean_plain` did not clean (after it, the rule cannot fail: every string is clean)."""
    for key, nullable in EVENT_KEYS.items():
        if key not in event:
            raise InvalidEvent("missing:%s" % key, "required key %r is missing" % key)
        value = event[key]
        if value is None:
            if not nullable:
                raise InvalidEvent("null:%s" % key, "key %r may not be null" % key)
            continue
        if not isinstance(value, str):
            raise InvalidEvent(
                "type:%s" % key, "key %r must be a string, got %s" % (key, type(value).__name__)
            )
        if not value.strip() and key not in MAY_BE_EMPTY:
            raise InvalidEvent("empty:%s" % key, "key %r may not be empty" % key)
        if (
            not cleaned
            and key not in URL_KEYS
            and (SURROGATE_RE if key == "source_text" else BAD_TEXT_RE).search(value)
        ):
            raise InvalidEvent("text:%s" % key, "key %r holds a control character or a lone surrogate" % key)


_NOT_NULL_KEYS = tuple(key for key, nullable in EVENT_KEYS.items() if not nullable)
_read_not_null = operator.itemgetter(*_NOT_NULL_KEYS)
_NULLABLE_KEYS = tuple(key for key, nullable in EVENT_KEYS.items() if nullable)


def _required_keys_hold(event: Mapping[str, Any]) -> bool:
    """Whether every required key of a plain event keeps its own rules, told by a few calls in C
    for the keys that may not be null (present, a string, not blank); False when
    :func:`_required_keys` must say which rule breaks first."""
    try:
        if not all(map(str.strip, _read_not_null(event))):  # a blank one
            return False
    except (KeyError, TypeError):  # missing, or not a string (None included)
        return False
    for key in _NULLABLE_KEYS:
        if key not in event:
            return False
        value = event[key]
        if value is not None and (type(value) is not str or (key not in MAY_BE_EMPTY and not value.strip())):
            return False
    return True


#: Datetimes and URLs that kept their rule: the events of a document share their access time,
#: source URL and often their datetime.
_VALID_ISO: set[str] = set()
_VALID_URLS: set[str] = set()
_VALID_MAX = 4096


def _valid_iso(value: str) -> bool:
    if value in _VALID_ISO:
        return True
    parse_iso_utc(value)  # raises ValueError
    if len(_VALID_ISO) >= _VALID_MAX:
        _VALID_ISO.clear()
    _VALID_ISO.add(value)
    return True


def _valid_url(value: str) -> bool:
    if value in _VALID_URLS:
        return True
    if not is_absolute_url(value):
        return False
    if len(_VALID_URLS) >= _VALID_MAX:
        _VALID_URLS.clear()
    _VALID_URLS.add(value)
    return True


#: The keys of an event that hold a time.
_DATETIME_KEYS = ("datetime", "access_datetime", "end_datetime")


@functools.cache
def _rules_spec() -> tuple[Any, ...]:
    """What the compiled rules check against, in the order ``_eventjson.c`` reads it: the sets and
    caches of the Python rules themselves (the same objects: a datetime or URL they found valid is
    valid to it), and the keys each rule reads."""
    return (
        _NOT_NULL_KEYS,
        _NULLABLE_KEYS,
        MAY_BE_EMPTY,
        _BRANCH_SET,
        _ENTITY_SET,
        _VALID_ISO,
        _VALID_URLS,
        _zone_set(),
        _DATETIME_KEYS,
        URL_KEYS,
        tuple(ID_FORMS.items()),
        tuple(ID_FORMS_SINGLE.items()),
        ("datetime", "end_datetime", "branch", "entity", "source_timezone", "unique_key"),
    )


def _event_rules(event: Mapping[str, Any]) -> None:
    """The rules after each required key's own (both validations share them, in this order)."""
    if event["branch"] not in _BRANCH_SET:
        raise InvalidEvent("branch", "branch %r is not one of %s" % (event["branch"], ", ".join(BRANCHES)))
    if event["entity"] not in _ENTITY_SET:
        raise InvalidEvent("entity", "entity %r is not a standard entity name" % (event["entity"],))
    for key in _DATETIME_KEYS:
        value = event[key]
        if value is None or value in _VALID_ISO:  # the check's own cache, without a call
            continue
        try:
            _valid_iso(value)
        except ValueError as exc:
            raise InvalidEvent("datetime:%s" % key, "%s: %s" % (key, exc)) from None
    if event["end_datetime"] is not None and event["end_datetime"] < event["datetime"]:
        raise InvalidEvent(
            "end_before_start",
            "end_datetime %s is before datetime %s" % (event["end_datetime"], event["datetime"]),
        )
    for key in URL_KEYS:
        value = event[key]
        if value and value not in _VALID_URLS and not _valid_url(value):
            raise InvalidEvent("url:%s" % key, "%s %r is not an absolute http(s) or file URL" % (key, value))
    if event["source_timezone"] not in _zone_set():
        raise InvalidEvent("timezone", "source_timezone %r is not an IANA zone" % (event["source_timezone"],))
    validate_ids(event)
    unique_key = event.get("unique_key")
    if not isinstance(unique_key, str) or not unique_key.strip():
        raise InvalidEvent("missing:unique_key", "the event has no unique_key")


def _check_size(event: Mapping[str, Any]) -> None:
    """The exact JSON size against the limit (when a bound of it is not clearly under)."""
    try:
        size = len(json.dumps(dict(event), ensure_ascii=False, allow_nan=False).encode("utf-8"))
    except (TypeError, ValueError) as exc:
        raise InvalidEvent("not_json", "the event is not JSON-serialisable: %s" % exc) from None
    if size > MAX_DOCUMENT_BYTES:
        raise InvalidEvent("too_large", "the event is %d bytes, over %d" % (size, MAX_DOCUMENT_BYTES))


def validate_ids(event: Mapping[str, Any]) -> None:
    """The id keys an event has hold canonical ids only (:data:`ID_FORMS`): the views and the site's
    pages are keyed by them."""
    for key, form in ID_FORMS.items():
        ids = event.get(key)
        if ids is None:
            continue
        if type(ids) is not list or (ids and not all(type(i) is str and form.fullmatch(i) for i in ids)):
            raise InvalidEvent("ids:%s" % key, "%s %r is not a list of canonical ids" % (key, ids))
    for key, form in ID_FORMS_SINGLE.items():
        one = event.get(key)
        if one is not None and not (type(one) is str and form.fullmatch(one)):
            raise InvalidEvent("ids:%s" % key, "%s %r is not a canonical id" % (key, one))


#: Integers up to this magnitude are at most 20 digits and a sign in JSON.
_INT_BOUND = 2**64
#: Deeper nesting is left to the JSON round-trip (which also reports circular references).
_MAX_FAST_DEPTH = 32


def _json_size_bound(value: Any, depth: int = 0) -> int:
    """An upper bound of the UTF-8 JSON size of ``value`` (a UTF-8 character is at most 4 bytes, an
    escape 6), or -1 when it holds anything but str-keyed mappings, lists, tuples, str, int, finite
    float, bool and None: when the bound is under the limit the JSON round-trip can be skipped."""
    kind = type(value)
    if kind is str:
        return 6 * len(value) + 2
    if kind is bool or value is None:
        return 5
    if kind is int:
        return 21 if -_INT_BOUND < value < _INT_BOUND else -1
    if kind is float:
        return 24 if math.isfinite(value) else -1
    if depth >= _MAX_FAST_DEPTH:
        return -1
    total = 2
    if kind is list or kind is tuple:
        for member in value:
            size = _json_size_bound(member, depth + 1)
            if size < 0:
                return -1
            total += size + 2  # ", "
        return total
    if kind is dict or (depth == 0 and isinstance(value, Mapping)):
        for key, member in value.items():
            size = _json_size_bound(member, depth + 1)
            if size < 0 or type(key) is not str:
                return -1
            total += 6 * len(key) + size + 6  # quotes, ": ", ", "
        return total
    return -1


def event_id(datetime_iso: str, parser_name: str, unique_key: str) -> str:
    """``<datetime>-<parser_name>-<unique_key>`` (docs/events.md §2), whitespace in the key folded."""
    key = " ".join(unique_key.split())
    return "%s-%s-%s" % (datetime_iso, parser_name, key)


def log_id(access_datetime: str, parser_name: str, result: str) -> str:
    return "%s-%s-%s" % (access_datetime, parser_name, result)


def is_live(doc: dict[str, Any]) -> bool:
    """Neither rescheduled nor taken back by a reparse (``withdrawn_by``, ``replaced_by``: see
    :mod:`votersdaily.reparse`): the documents feeds, the site and the live views show."""
    return not (doc.get("superseded_by") or doc.get("withdrawn_by") or doc.get("replaced_by"))
