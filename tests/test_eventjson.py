"""The compiled JSON text of an event (votersdaily/_eventjson.c, schema._clean_json's fast path) held to
``json.dumps`` and the Python path's scan: on every recorded event, on generated values of every kind
it must refuse, and through check_event_json with and without the module."""

import json
import random
import sys

import pytest

from tests.test_schema import hostile_variants, recorded_events
from votersdaily import schema
from votersdaily.schema import BAD_TEXT_RE, check_event_json

#: _eventjson.c's MAX_DEPTH: containers nested deeper are left to the Python path.
MAX_DEPTH = 200


@pytest.fixture(scope="module")
def clean_text():
    from votersdaily import _eventjson  # scripts/setup.sh builds it (scripts/build_native.py)

    assert schema._compiled_clean_text is _eventjson.clean_text
    return _eventjson.clean_text


@pytest.fixture(scope="module")
def recorded() -> list[dict]:
    return recorded_events()


def dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def container_depth(value) -> int:
    """How deep exact lists and dicts nest in ``value`` (without recursion: it may be deep)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, depth = pending.pop()
        children = item if type(item) is list else item.values() if type(item) is dict else None
        if children is not None:
            deepest = max(deepest, depth)
            pending.extend((child, depth + 1) for child in children)
    return deepest


def plain(value) -> bool:
    """Whether the compiled path must answer for ``value`` (computed here, apart from it): exact JSON
    types only, str keys, finite floats, no string (keys included) holding what BAD_TEXT_RE finds."""
    kind = type(value)
    if kind is str:
        return BAD_TEXT_RE.search(value) is None
    if value is None or kind in (bool, int):
        return True
    if kind is float:
        return value - value == 0  # not NaN or an infinity
    if kind is list:
        return all(map(plain, value))
    if kind is dict:
        return all(type(k) is str and plain(k) and plain(v) for k, v in value.items())
    return False


def expected_verdict(value) -> bool:
    """True when the compiled path must give the text: a plain value, not too deep, that json encodes
    (an int past sys.get_int_max_str_digits() it refuses)."""
    if container_depth(value) > MAX_DEPTH or not plain(value):
        return False
    try:
        dumps(value)
    except ValueError:
        return False
    return True


def python_path(value) -> str | None:
    """What schema's Python path makes of a value: the C encoder's text when it encodes the value and
    its scan finds nothing to clean, else None."""
    try:
        text = schema._nested_json(value)
    except (ValueError, TypeError, RecursionError):
        return None
    return None if schema._nested_needs_cleaning(text) else text


def check_one(clean_text, value) -> str | None:
    """The compiled answer for ``value``, held to the verdict, json.dumps and the Python path."""
    found = clean_text(value)
    assert (found is not None) == expected_verdict(value), repr(value)[:300]
    if found is None:
        return None
    text, size = found
    assert type(text) is str
    assert text == dumps(value)
    assert size == len(text.encode("utf-8"))
    # the Python path gives the same text, or refuses it for an escaped backslash before r, b, f or
    # u00 (its scan's false alarm: a string it then cleans of nothing, on the reference path)
    assert python_path(value) in (text, None)
    if python_path(value) is None:
        assert "\\\\" in text
    return text


def test_the_module_is_built_and_used(clean_text):
    assert schema._compiled_clean_text is clean_text


def test_recorded_events_are_json_dumps_text(clean_text, recorded):
    assert len(recorded) > 400
    answered = 0
    for event in recorded:
        text = check_one(clean_text, event)
        answered += text is not None
        assert text is not None or not plain(event), event
    assert answered == len(recorded)  # the recordings are plain and clean: every one is answered


# -- generated values --

CHARS = {
    "ascii": [chr(c) for c in range(0x20, 0x7F)],
    "quote": ['"', "\\", "\\r", "\\u0001"],  # the last two: text that looks like an escape, unescaped
    "tab_newline": ["\t", "\n"],
    "latin1": [chr(c) for c in range(0xA0, 0x100)],
    "bmp": [
        "\u0100",
        "\u07ff",
        "\u0800",
        "\u2028",
        "\u2029",
        "\ud7ff",
        "\ue000",
        "\ufeff",
        "\ufffd",
        "\uffff",
    ],
    "astral": ["\U00010000", "😀", "\U0010ffff"],
    # what BAD_TEXT_RE finds: the controls but tab and newline, DEL, C1, lone surrogates
    "bad": [chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)] if c not in (9, 10)]
    + ["\ud800", "\udbff", "\udc00", "\udfff"],
}
CLEAN_POOLS = [k for k in CHARS if k != "bad"]


def random_string(rng: random.Random) -> str:
    pools = CLEAN_POOLS if rng.random() < 0.75 else list(CHARS)
    chosen = rng.sample(pools, rng.randint(1, len(pools)))
    return "".join(rng.choice(CHARS[rng.choice(chosen)]) for _ in range(rng.choice([0, 1, 2, 5, 20, 80])))


class Str(str):
    pass


class Int(int):
    pass


class Float(float):
    pass


class Dict(dict):
    pass


class List(list):
    pass


BIG = 2**63
INTS = [
    0,
    1,
    -1,
    9,
    10,
    -10,
    BIG - 1,
    BIG,
    BIG + 1,
    -BIG,
    -BIG - 1,
    -BIG + 1,
    2**64,
    -(2**64),
    10**30,
    -(10**100),
]
FLOATS = [0.0, -0.0, 1e16, 1e-7, 5e-324, -5e-324, 1.7976931348623157e308, 0.1, 1 / 3, 123456789.0, 1e22, 2.5]
NOT_FINITE = [float("nan"), float("inf"), float("-inf")]


def random_scalar(rng: random.Random):
    pick = rng.random()
    if pick < 0.45:
        return random_string(rng)
    if pick < 0.6:
        return rng.choice(INTS) if rng.random() < 0.5 else rng.randint(-(10**20), 10**20)
    if pick < 0.72:
        return (
            rng.choice(FLOATS) if rng.random() < 0.5 else rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-30, 30)
        )
    if pick < 0.8:
        return rng.choice([True, False, None])
    if pick < 0.9:  # what the compiled path refuses
        return rng.choice(
            [
                *NOT_FINITE,
                Str("sub"),
                Int(3),
                Float(1.5),
                b"bytes",
                {"a", "set"},
                10**5000,  # past int's str digits limit: json refuses it
                1j,
            ]
        )
    return rng.choice([True, 0, "plain"])


def random_value(rng: random.Random, depth: int = 0):
    if depth > 4 or rng.random() < 0.35:
        return random_scalar(rng)
    size = rng.choice([0, 1, 2, 3, 6])
    pick = rng.random()
    if pick < 0.45:
        value = {}
        for _ in range(size):
            key = random_string(rng) if rng.random() < 0.95 else rng.choice([1, None, 2.5, True, Str("k")])
            value[key] = random_value(rng, depth + 1)
        return Dict(value) if rng.random() < 0.03 else value
    items = [random_value(rng, depth + 1) for _ in range(size)]
    if pick < 0.9:
        return items
    return tuple(items) if pick < 0.95 else List(items)


def nested(depth: int, leaf="x"):
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def test_generated_values_agree_with_json_dumps(clean_text):
    rng = random.Random(20261127)
    answered = refused = 0
    for _ in range(6000):
        value = random_value(rng)
        if check_one(clean_text, value) is None:
            refused += 1
        else:
            answered += 1
    assert answered > 1500 and refused > 1500  # both verdicts are exercised


def test_edge_values(clean_text):
    for value in [*INTS, *FLOATS, *NOT_FINITE, True, False, None, "", [], {}, [[]], {"": {}}]:
        check_one(clean_text, value)
        check_one(clean_text, {"k": value, "list": [value, value]})
    for char in (chr(c) for c in range(0x250)):
        check_one(clean_text, {char: char, "in text %s here" % char: ["a%sb" % char]})
    for char in ["\u2028", "\ud7ff", "\ud800", "\udfff", "\ue000", "😀", "\U0010ffff"]:
        check_one(clean_text, ["é" + char, "plain"])
    # the passes look at 8 bytes (4 two-byte characters) at once: a character at every place of a run
    for prefix in ("", "é", "\u2028", "😀"):
        for char in ['"', "\\", "\n", "\t", "\x01", "\x1f", "\x7f", "\x85", "é", "\u2028", "\ud800", "😀"]:
            for place in range(18):
                check_one(clean_text, ["%s%s%s%s" % (prefix, "x" * place, char, "y" * (17 - place))])
    for digits in (sys.get_int_max_str_digits() - 1, sys.get_int_max_str_digits() + 1):
        check_one(clean_text, [10**digits])


def test_nesting_depth(clean_text):
    for depth in (1, 50, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 900):
        check_one(clean_text, nested(depth))
    assert clean_text(nested(MAX_DEPTH)) is not None
    assert clean_text(nested(MAX_DEPTH + 1)) is None
    assert clean_text(nested(5000)) is None  # json.dumps: RecursionError
    loop: list = []
    loop.append({"again": loop})
    assert clean_text(loop) is None  # a cycle is deeper than any limit


def test_every_escape_is_json_dumps_even_for_bad_text(clean_text):
    """strict=False writes what the strict call refuses (the escapes of every C0 control, DEL, C1,
    lone surrogates raw), so the escapes the event path never reaches are held to json too."""
    for code in [*range(0x250), 0xD800, 0xDFFF, 0x1F600]:
        for text in (chr(code), "a%sb" % chr(code), "é%s\u2028" % chr(code), "😀%s" % chr(code)):
            for value in (text, {text: [text]}):
                found = clean_text(value, False)
                assert found is not None and found[0] == dumps(value), repr(value)
                assert found[1] == len(found[0].encode("utf-8", "surrogatepass"))


def test_mutation_between_calls_is_not_cached(clean_text):
    event = {"title": "a", "list": ["b"]}
    assert clean_text(event) == ('{"title": "a", "list": ["b"]}', 29)
    event["list"].append("c\x01")
    assert clean_text(event) is None
    event["list"][-1] = "c"
    assert clean_text(event) == ('{"title": "a", "list": ["b", "c"]}', 34)


# -- through check_event_json, with and without the module --


def counting(clean_text, answered: list[bool]):
    """``clean_text`` noting in ``answered`` whether it answered each call (or said None)."""

    def counted(value, *args):
        found = clean_text(value, *args)
        answered.append(found is not None)
        return found

    return counted


def check_both_ways(monkeypatch, event: dict, check=check_event_json, compiled=None):
    """``check`` (check_event_json, or check_event) on a copy of ``event`` with the compiled path
    (``compiled``, else the module's), then with the Python path alone (the module absent): each
    outcome, the event after it and what the check returned."""
    outcomes = []
    for clean in (compiled or schema._compiled_clean_text, None):
        with monkeypatch.context() as patch:
            patch.setattr(schema, "_compiled_clean_text", clean)
            if clean is None:  # the Python path alone: its rules too
                patch.setattr(schema, "_compiled_rules", None)
            doc = dict(event)
            try:
                outcomes.append(("checked", check(doc), repr(doc)))
            except schema.InvalidEvent as exc:
                outcomes.append(("invalid", exc.code, repr(doc)))
            except RecursionError:
                outcomes.append(("recursion",))
    return outcomes


def test_check_event_json_is_the_same_without_the_module(clean_text, recorded, monkeypatch):
    calls = []

    counted = counting(clean_text, calls)
    for event in recorded:
        with monkeypatch.context() as patch:
            patch.setattr(schema, "_compiled_clean_text", counted)
            compiled, python = check_both_ways(monkeypatch, event)
        assert compiled == python
        assert compiled[1][1] == dumps(event)
    assert len(calls) == len(recorded) and all(calls)  # the compiled path answered every recording


def test_check_event_json_on_hostile_variants(recorded, monkeypatch):
    """Variants of real events (tests/test_schema.py's): the same outcome either way; the compiled path
    may give a text where the Python path's scan raised a false alarm (the event is unchanged): a
    literal backslash before "r", as in a Windows path (a derived variant of each event, not a source's)."""
    seen_false_alarm = False
    for event in {e["parser_name"]: e for e in recorded}.values():
        for hostile in [*hostile_variants(event), dict(event, room=["C:\\red\\bin"])]:
            compiled, python = check_both_ways(monkeypatch, hostile)
            if compiled == python:
                continue
            assert compiled[0] == python[0] == "checked" and compiled[2] == python[2], hostile
            (cleaned, text), (cleaned_python, text_python) = compiled[1], python[1]
            assert cleaned == cleaned_python == [] and text_python is None
            assert text == dumps(hostile) and "\\\\" in text
            seen_false_alarm = True
    assert seen_false_alarm


def test_a_refusal_takes_the_python_path(recorded, monkeypatch):
    """None from the compiled path is never an answer: the Python path runs unchanged."""
    monkeypatch.setattr(schema, "_compiled_clean_text", lambda value, *args: None)
    for event in recorded[:50]:
        doc = dict(event)
        assert check_event_json(doc) == ([], dumps(event))


def test_memory_errors_propagate(clean_text):
    """Every allocation the call makes failing in turn (CPython's _testcapi hook): MemoryError, or the
    right answer, never a wrong one or a crash."""
    testcapi = pytest.importorskip("_testcapi")
    values = [["x" * 10, 2**100, 1.5], ["a"] * 300, {"k": "é" * 20}]
    for value in values:
        outcomes = set()
        for start in range(8):
            testcapi.set_nomemory(start)
            try:
                found = clean_text(value)
            except MemoryError:
                found = MemoryError
            finally:
                testcapi.remove_mem_hooks()
            assert found is MemoryError or found == (dumps(value), len(dumps(value).encode()))
            outcomes.add(found is MemoryError)
        assert outcomes == {True, False}, value


def test_the_pipelines_event_items_take_the_compiled_path(clean_text, recorded, monkeypatch):
    """The pipeline's events are EventItem, a dict subclass the compiled encoder (exact dicts only)
    reads as a dict in its event mode, without a copy: it answers every recording so, with
    json.dumps's text of the item itself; sound because EventItem overrides nothing json reads a dict
    subclass by."""
    from votersdaily.items import EventItem

    for name in ("items", "keys", "values", "__iter__", "__getitem__", "__len__"):
        assert getattr(EventItem, name) is getattr(dict, name), name
    answered = []

    answering = counting(clean_text, answered)

    def counted(value, *args):
        assert type(value) is EventItem and args == (True, True)
        return answering(value, *args)

    monkeypatch.setattr(schema, "_compiled_clean_text", counted)
    for event in recorded:
        item = EventItem(event)
        assert check_event_json(item) == ([], dumps(item))
    assert len(answered) == len(recorded) and all(answered)


def test_check_event_sizes_nested_values_by_the_module_with_the_same_outcome(
    clean_text, recorded, monkeypatch
):
    """check_event (the path without the text: CouchDB stores, the stage pipelines) has the compiled
    encoder size an event's nested values and say none needs cleaning; with the module absent, and on
    the hostile variants (nested text to clean among them: the module says None), the outcome, the
    event after it and the cleaned keys are the same."""
    answered = []

    counted = counting(clean_text, answered)

    def both_ways(event: dict) -> list[tuple]:
        return check_both_ways(monkeypatch, event, schema.check_event, counted)

    for event in recorded:
        compiled, python = both_ways(event)
        assert compiled == python
    assert answered and all(answered)  # every recording's nested values, by the module
    for event in {e["parser_name"]: e for e in recorded}.values():
        for hostile in hostile_variants(event):
            compiled, python = both_ways(hostile)
            assert compiled == python, hostile
    assert not all(answered)  # some hostile nested text went the Python path
    # derived variants (not a source's format) whose nested text is what takes them past, or keeps them
    # under, the size limit: the module's size is the one the rule reads
    event = recorded[0]
    for over in (True, False):
        room = schema.MAX_DOCUMENT_BYTES - len(dumps(event).encode("utf-8")) - 30
        pieces = room // 1004 + (2 if over else -1)  # 1,000 UTF-8 bytes each, quoted, with ", "
        variant = dict(event, attachments_text=["é" * 500] * pieces)
        compiled, python = both_ways(variant)
        assert compiled == python
        assert (compiled[0], compiled[1]) == (("invalid", "too_large") if over else ("checked", []))


def test_the_event_mode_reads_the_top_mapping_as_a_dict_and_refuses_couchdbs_keys(clean_text, recorded):
    """clean_text(event, True, True): the text of the exact dict, for the top-level mapping alone (a
    dict subclass inside stays refused), and None for a top-level key CouchDB owns (the Python path's
    _check_plain_keys refuses those); without the mode an EventItem is refused as before."""
    from votersdaily.items import EventItem

    for event in recorded:
        assert clean_text(EventItem(event), True, True) == clean_text(dict(event)) is not None
        assert clean_text(EventItem(event)) is None
    event = dict(recorded[0])
    for key in ("_rev", "_deleted", "_attachments", "_", "__", "_x", "_ide", "_i"):
        assert clean_text(dict(event, **{key: 1}), True, True) is None, key
        assert clean_text(EventItem(event, **{key: 1}), True, True) is None, key
        assert clean_text(dict(event, nested={key: 1}), True, True) is not None, key  # nested: plain JSON
        assert clean_text(dict(event, **{key: 1})) is not None, key  # without the mode: plain JSON
    assert clean_text(dict(event, _id="x"), True, True) == clean_text(dict(event, _id="x"))
    assert clean_text(dict(event, nested=EventItem(a=1)), True, True) is None
    assert clean_text(["_rev"], True, True) is None and clean_text("x", True, True) is None
    loop = EventItem(a=1)
    loop["again"] = loop
    assert clean_text(loop, True, True) is None  # a cycle through the top: past the depth limit


def test_the_event_mode_and_the_python_path_agree_on_couchdbs_keys(recorded, monkeypatch):
    """Events with a key of CouchDB's at the top, in a check either way: the same outcome (refused by
    the rule ``reserved``; ``_id`` let through)."""
    from votersdaily.items import EventItem

    event = recorded[0]
    for key in ("_rev", "_deleted", "_x", "_id"):
        outcomes = []
        for clean in (schema._compiled_clean_text, None):
            monkeypatch.setattr(schema, "_compiled_clean_text", clean)
            for kind in (dict, EventItem):
                try:
                    outcomes.append(check_event_json(kind(event, **{key: "1"})))
                except schema.InvalidEvent as exc:
                    outcomes.append(exc.code)
        want = ([], dumps(dict(event, **{key: "1"}))) if key == "_id" else "reserved:%s" % key
        assert outcomes == [want] * 4, key


def test_md5_hex_is_hashlibs_of_bytes_and_of_a_texts_utf8(clean_text):
    """The store's revision digest (votersdaily/_eventjson.c md5_hex): every length around MD5's
    64-byte blocks and its 56-byte padding edge, large data, every buffer kind, and str of each width
    (a lone surrogate has no UTF-8: None)."""
    import hashlib

    from votersdaily import _eventjson

    rng = random.Random(20261127)
    for size in [*range(0, 200), 1000, 2047, 2048, 4096, 65_536, 1_000_003]:
        data = rng.randbytes(size)
        want = hashlib.md5(data).hexdigest()
        assert _eventjson.md5_hex(data) == want, size
        assert _eventjson.md5_hex(bytearray(data)) == _eventjson.md5_hex(memoryview(data)) == want
    for text in ["", "plain", "x" * 3000, "é" * 3000, "\u2028" * 10, "中文" * 999, "😀x" * 77, "a\x00b"]:
        assert _eventjson.md5_hex(text) == hashlib.md5(text.encode("utf-8")).hexdigest(), text[:9]
    for text in ["\ud800", "x" * 100 + "\udfff", "😀\ud83d"]:
        assert _eventjson.md5_hex(text) is None
    with pytest.raises(TypeError):
        _eventjson.md5_hex(12)


def rule_variants(event: dict) -> list[dict]:
    """Variants of a real event (derived, not a source's format), each breaking or just keeping one
    rule the compiled rules read: every required key missing, None, blank, not a str or a str
    subclass; the sets; datetimes; the order of start and end; URLs; id lists and the single id."""

    class Smart(str):
        """A str subclass, as lxml's smart strings are."""

    variants = []
    for key in schema.EVENT_KEYS:
        for value in (..., None, "", " \t\u2003", 7, Smart(str(event.get(key) or "x"))):
            changed = dict(event)
            if value is ...:
                del changed[key]
            else:
                changed[key] = value
            variants.append(changed)
    for changes in [
        {"branch": "Judicial"},
        {"entity": "Supreme Court"},
        {"source_timezone": "America/Chicago"},
        {"source_timezone": "Mars/Olympus"},
        {"datetime": "2026-02-30T10:00:00Z"},
        {"access_datetime": "2026-09-16T25:00:00Z"},
        {"end_datetime": event["datetime"]},
        {"end_datetime": "2000-01-01T00:00:00Z"},
        {"end_datetime": "2999-01-01T00:00:00Z"},
        {"source_url": "ftp://example.org/x"},
        {"event_url": "https://example.org/event"},
        {"event_url": "example.org/no-scheme"},
        {"bill_ids": ["hr1-118", "s2-118"]},
        {"bill_ids": ["hr1-118", "HR1"]},
        {"bill_ids": "hr1-118"},
        {"bill_ids": [7]},
        {"bill_ids": None, "public_laws": []},
        {"dockets": ["22-451", "22O141"]},
        {"vote_id": "h1-118.2024"},
        {"vote_id": "vote 1"},
        {"vote_id": ["h1-118.2024"]},
        {"unique_key": "  "},
        {"unique_key": 5},
        {"unique_key": Smart("k")},
    ]:
        variants.append(dict(event, **changes))
    return variants


def test_the_compiled_rules_agree_with_the_python_rules(recorded, monkeypatch):
    """The compiled rules (``rules_hold``) say True only for an event the Python rules let through,
    and a check either way ends the same (the verdict, the error's rule, the event); on the
    recordings they answer every event (past the first of each datetime and URL, which the Python
    rules check and remember)."""
    from votersdaily.items import EventItem

    assert schema._compiled_rules is not None  # scripts/setup.sh builds it
    spec = schema._rules_spec()

    def python_rules(event) -> str | None:
        try:
            if not schema._required_keys_hold(event):
                schema._required_keys(event, cleaned=True)
            schema._event_rules(event)
        except schema.InvalidEvent as exc:
            return exc.code
        return None

    for event in recorded:
        python_rules(event)  # its datetimes and URLs now in the Python rules' caches
        assert schema._compiled_rules(event, spec) is True, event["unique_key"]
        assert schema._compiled_rules(EventItem(event), spec) is True
    told = broken = 0
    for event in {e["parser_name"]: e for e in recorded}.values():
        for variant in rule_variants(event):
            python_rules(variant)  # fills the caches as a first check of it would
            verdict = python_rules(variant)
            held = schema._compiled_rules(variant, spec)
            assert not held or verdict is None, (verdict, variant)
            told += held
            broken += verdict is not None
            compiled, python = check_both_ways(monkeypatch, variant)
            assert compiled == python, variant
    assert told > 100 and broken > 300  # both verdicts are exercised
    with pytest.raises(TypeError):
        schema._compiled_rules(recorded[0], spec[:-1])
