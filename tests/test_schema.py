"""Every rule of docs/events.md §2, one test per rule."""

import datetime
import json

import pytest

from votersdaily.schema import InvalidEvent, event_id, log_id, validate_event


def valid(**changes):
    doc = {
        "datetime": "2026-09-16T23:05:00Z",
        "title": "Roll Call 314",
        "description": None,
        "end_datetime": None,
        "branch": "Legislative",
        "entity": "House of Representatives",
        "source_url": "https://clerk.house.gov/evs/2026/roll314.xml",
        "source_text": "<rollcall-vote/>",
        "access_datetime": "2026-10-02T18:00:00Z",
        "parser_name": "house_votes",
        "parser_version": "1.0",
        "event_url": None,
        "source_timezone": "America/New_York",
        "unique_key": "119-2-314",
    }
    doc.update(changes)
    return {k: v for k, v in doc.items() if v is not ...}


def code_of(doc):
    with pytest.raises(InvalidEvent) as err:
        validate_event(doc)
    return err.value.code


def test_valid_event_passes():
    validate_event(valid())
    validate_event(valid(description="", event_url="", end_datetime="2026-09-16T23:30:00Z"))
    validate_event(valid(source_url="file:///recordings/roll314.xml"))


@pytest.mark.parametrize(
    "key",
    [
        "datetime",
        "title",
        "description",
        "end_datetime",
        "branch",
        "entity",
        "source_url",
        "source_text",
        "access_datetime",
        "parser_name",
        "parser_version",
        "event_url",
        "source_timezone",
    ],
)
def test_every_required_key_must_be_present(key):
    assert code_of(valid(**{key: ...})) == "missing:%s" % key


@pytest.mark.parametrize("key", ["datetime", "title", "branch", "source_text", "source_url", "parser_name"])
def test_null_only_where_allowed(key):
    assert code_of(valid(**{key: None})) == "null:%s" % key


def test_types():
    assert code_of(valid(title=42)) == "type:title"
    assert code_of(valid(description=["a"])) == "type:description"


def test_empty_string_only_where_allowed():
    assert code_of(valid(title="  ")) == "empty:title"
    assert code_of(valid(source_text="")) == "empty:source_text"


def test_standard_branch_and_entity_names():
    assert code_of(valid(branch="Congressional")) == "branch"
    assert code_of(valid(branch="legislative")) == "branch"
    assert code_of(valid(entity="House")) == "entity"


@pytest.mark.parametrize(
    "value",
    [
        "2026-09-16 23:05:00",
        "2026-09-16T23:05:00+00:00",
        "2026-09-16T23:05Z",
        "2026-09-16",
        "2026-13-16T23:05:00Z",
    ],
)
def test_datetime_format(value):
    assert code_of(valid(datetime=value)) == "datetime:datetime"


def test_end_before_start():
    assert code_of(valid(end_datetime="2026-09-16T22:00:00Z")) == "end_before_start"


def test_absolute_urls():
    assert code_of(valid(source_url="/evs/2026/roll314.xml")) == "url:source_url"
    assert code_of(valid(event_url="Votes/2026314")) == "url:event_url"


def test_timezone_and_unique_key():
    assert code_of(valid(source_timezone="Eastern")) == "timezone"
    assert code_of(valid(unique_key="")) == "missing:unique_key"


def test_not_json_and_too_large():
    assert code_of(valid(extra={1, 2})) == "not_json"
    assert code_of(valid(source_text="x" * (8 * 1024 * 1024))) == "too_large"


def circular():
    loop = []
    loop.append({"again": loop})
    return loop


@pytest.mark.parametrize(
    "extra",
    [
        [{"url": "https://example.org/", "when": datetime.date(2026, 9, 16)}],
        {"roll": [1, float("nan")]},
        {"votes": [{"roll": 1}], "when": {"day": {"at": datetime.time(12, 5)}}},
        circular(),
        [b"bytes"],
    ],
)
def test_nested_values_must_be_json_too(extra):
    assert code_of(valid(bills=extra)) == "not_json"


def test_nested_values_count_towards_the_size_limit():
    assert (
        code_of(valid(bills=[{"text": "x" * (4 * 1024 * 1024)}, {"text": "y" * (4 * 1024 * 1024)}]))
        == "too_large"
    )
    validate_event(valid(bills=[{"text": "x" * (3 * 1024 * 1024)}, {"votes": [[1, 2.5, True, None]] * 1000}]))


def test_the_size_bound_is_never_below_the_json_size():
    """Skipping the JSON round-trip is safe only if the bound holds for any text (escapes, 4-byte
    characters), number and nesting."""
    import json
    import random

    from votersdaily.schema import _json_size_bound

    rng = random.Random(7)
    alphabet = ["a", '"', "\\", "\n", "\x00", "\x1f", "é", "\u2028", "😀", "\ud800"]

    def value(depth):
        kind = rng.randrange(8 if depth < 5 else 6)
        if kind == 0:
            return "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
        if kind == 1:
            return rng.choice([0, -1, 2**63, -(2**64) + 1, 10**19, 10**40])
        if kind == 2:
            return rng.choice([0.1, -1.2345678901234567e-308, 1e308, -0.0, 5e-324])
        if kind in (3, 4, 5):
            return rng.choice([True, False, None])
        if kind == 6:
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        return {"k" + rng.choice(alphabet): value(depth + 1) for _ in range(rng.randrange(4))}

    def json_size(value):
        return len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8", "surrogatepass"))

    for _ in range(3000):
        for doc in (value(0), {"key": value(0), "other": value(1)}):
            bound = _json_size_bound(doc)
            assert bound < 0 or bound >= json_size(doc), doc
    for char in alphabet:
        assert _json_size_bound(char * 100) >= json_size(char * 100)


def test_ids():
    assert (
        event_id("2026-09-16T23:05:00Z", "house_votes", "119-2-314")
        == "2026-09-16T23:05:00Z-house_votes-119-2-314"
    )
    assert event_id("2026-09-16T23:05:00Z", "p", " H.R.  21 \n") == "2026-09-16T23:05:00Z-p-H.R. 21"
    assert (
        log_id("2026-10-02T18:00:00Z", "house_votes", "success") == "2026-10-02T18:00:00Z-house_votes-success"
    )


@pytest.mark.parametrize(
    "key, good, bad",
    [
        (
            "bill_ids",
            ["hr1234-119", "sconres3-119", "s47-108"],
            ["HR1234-119", "hr1234", "hr0-119", "hamdt5-119"],
        ),
        ("public_laws", ["119-21"], ["PL119-21", "119-021"]),
        ("vote_ids", ["h314-119.2026", "s213-108.2004"], ["h314-119", "x1-119.2026"]),
        ("nomination_ids", ["PN123-119", "PN615-2-119"], ["pn123-119", "PN123"]),
        ("dockets", ["24-123", "23A456", "22M45", "22O141"], ["24-0123", "23a456", "141-Orig", "21O141"]),
        ("committee_ids", ["HSAG", "HSII10", "SSFR", "JCSE"], ["II00", "SSFR00"]),
    ],
)
def test_id_keys_hold_canonical_ids_only(key, good, bad):
    validate_event(valid(**{key: good}))
    validate_event(valid(**{key: []}))
    for wrong in bad:
        assert code_of(valid(**{key: [wrong]})) == "ids:%s" % key
        assert code_of(valid(**{key: [*good, wrong + "\n"]})) == "ids:%s" % key
    assert code_of(valid(**{key: good[0]})) == "ids:%s" % key  # a string, not a list


def test_a_roll_call_has_one_canonical_vote_id():
    validate_event(valid(vote_id="h314-119.2026"))
    validate_event(valid(vote_id=None))
    assert code_of(valid(vote_id="roll 314")) == "ids:vote_id"
    assert code_of(valid(vote_id=["h314-119.2026"])) == "ids:vote_id"


# -- hostile text and URLs: generated values, not a source's format ---------------------------------

HOSTILE = "a\ud800b\x00c\x07d\x1be\x7ff\x85g\r\nh\ti\nj"


def test_text_is_cleaned_of_controls_and_lone_surrogates():
    from votersdaily.schema import clean_event

    doc = valid(title=HOSTILE, room={"name\x1b": ["\udfff", 3]}, source_text="<x>\r\n\x00\ud800</x>")
    assert sorted(clean_event(doc)) == ["room", "source_text", "title"]
    assert doc["title"] == "a\ufffdbcdefg\nh\ti\nj"
    assert doc["room"] == {"name": ["\ufffd", 3]}
    assert doc["source_text"] == "<x>\r\n\x00\ufffd</x>"  # the exact fragment keeps its CR and controls
    validate_event(doc)
    assert clean_event(doc) == []


@pytest.mark.parametrize("key", ["title", "description", "unique_key", "parser_version"])
def test_uncleaned_control_characters_are_rejected(key):
    assert code_of(valid(**{key: "x\x1by"})) == "text:%s" % key
    assert code_of(valid(**{key: "x\ud800"})) == "text:%s" % key


@pytest.mark.parametrize("key", ["source_url", "event_url"])
@pytest.mark.parametrize(
    "url",
    [
        "https://clerk.house.gov/a\r\nX-Injected: 1",
        "https://clerk.house.gov/a\x00",
        "https://clerk.house.gov/\ud800",
        "https://clerk.house.gov/a b",
        "javascript:alert(1)",
        "mailto:clerk@house.gov",
        "ftp://clerk.house.gov/x",
        "http://[::1/",
        "//clerk.house.gov/a",
    ],
)
def test_urls_must_be_absolute_web_or_file_urls(key, url):
    assert code_of(valid(**{key: url})) == "url:%s" % key


def test_web_and_file_urls_pass():
    validate_event(valid(event_url="HTTPS://www.senate.gov/x?y=1#z", source_url="file:///r/roll314.xml"))


# -- the one pass the pipeline runs (check_event) against the reference (clean_event, validate_event) --


def recorded_items():
    """``(crawler, item)`` for every event the event spiders parse from their shipped recordings
    (listings followed to the recordings beside them), as the spider yields it (the crawler is its
    spider's)."""
    from pathlib import Path
    from urllib.parse import urlsplit
    from urllib.request import url2pathname

    from scrapy.http import Request
    from scrapy.responsetypes import responsetypes
    from scrapy.utils.project import get_project_settings
    from scrapy.utils.test import get_crawler

    from votersdaily.cli.crawl import event_spiders
    from votersdaily.items import EventItem
    from votersdaily.requestmeta import SOURCE_URL_META

    def respond(request: Request):
        body = Path(url2pathname(urlsplit(request.url).path)).read_bytes()
        cls = responsetypes.from_args(url=request.url, body=body)
        return cls(url=request.url, body=body, request=request)

    for cls in event_spiders(get_project_settings()).values():
        crawler = get_crawler(cls)
        spider = cls.from_crawler(crawler)
        crawler.spider = spider
        for url in cls.recording_urls():
            pending = [(Request(url, meta={SOURCE_URL_META: spider.upstream_url(url)}), spider.parse_given)]
            while pending:
                request, callback = pending.pop()
                try:
                    outputs = list(callback(respond(request)))
                except Exception:  # noqa: S112 - a recording of an error page: its own tests cover it
                    continue
                for out in outputs:
                    if isinstance(out, EventItem):
                        yield crawler, out
                    elif isinstance(out, Request) and out.url.startswith("file:") and out.callback:
                        pending.append((out, out.callback))


def recorded_events() -> list[dict]:
    """Every event of :func:`recorded_items` as the validation pipeline receives it (times normalised)."""
    from votersdaily.pipelines import NormaliseDatetimesPipeline

    events = []
    for crawler, item in recorded_items():
        try:
            events.append(dict(NormaliseDatetimesPipeline(crawler).process_item(item)))
        except Exception:  # noqa: S112 - a datetime the normalising pipeline drops
            continue
    return events


@pytest.fixture(scope="module")
def recorded() -> list[dict]:
    return recorded_events()


def nested(depth: int) -> list:
    value: list = ["x"]
    for _ in range(depth):
        value = [value]
    return value


def hostile_variants(event: dict) -> list[dict]:
    """Variants of a real event, one change each (derived, not a source's format): hostile text at the
    top level and nested, values that are not JSON, subclasses, broken rules."""

    class Smart(str):
        """A str subclass, as lxml's smart strings are."""

    def variant(changes_by_key: dict | None = None, **changes) -> dict:
        changes.update(changes_by_key or {})
        changed = dict(event)
        for key, value in changes.items():
            if value is ...:
                changed.pop(key, None)
            else:
                changed[key] = value
        return changed

    nested_key = {"name\x1b": ["ok", 3]}
    return [
        variant(title=HOSTILE),
        variant(title="ascii \x01 control"),
        variant(description="ascii \x7f delete"),
        variant(source_text=event["source_text"] + "\r\n\x00"),  # kept: the exact fragment
        variant(room=["ascii \x7f in a list"], other={"key": "\x1f"}),
        variant(description="line\r\nnext\x85"),
        variant(source_text=event["source_text"] + "\r\n\x00\ud800"),
        variant(unique_key=event["unique_key"] + "\x07"),
        variant(room={"name": ["a\ud800", 3]}),
        variant(room=nested_key),
        variant(room=[{"name": "back\\\\slash r"}]),  # an escaped backslash before "r": a false alarm
        variant(room=["tab\tand\nnewline", "é😀\u2028"]),
        variant(room=("a", "tuple")),
        variant(room={1: "int key", None: "null key"}),
        variant(room={"deep": nested(40)}),
        variant(room=nested(5000)),
        variant(room=[1, float("nan")]),
        variant(room={"a", "set"}),
        variant(room=circular()),
        variant(room=[b"bytes"]),
        variant(room=datetime.date(2026, 9, 16)),
        variant(room=2**70),
        variant(room=float("inf")),
        variant(room=1.5, count=3, flag=True, nothing=None),
        variant(title=Smart("smart \x1b title")),
        variant(room=[Smart("smart \x1b nested")]),
        variant(room={"k": Smart("clean smart")}),
        variant({"bad\x00key": "value"}),
        variant({7: "non-string key"}),
        variant({"_deleted": True}),  # CouchDB's: it would delete the stored event
        variant({"_rev": "1-0123456789abcdef0123456789abcdef"}),
        variant({"_attachments": {"a.txt": {"content_type": "text/plain", "data": "eA=="}}}),
        variant({"_private": "a key CouchDB refuses"}),
        variant({"_id": "a-spiders-own-id"}),  # taken: the id stage sets it
        variant(title=...),
        variant(source_text=None),
        variant(title=42),
        variant(description=["a"]),
        variant(title="  "),
        variant(branch="Congressional"),
        variant(entity="House"),
        variant(datetime="2026-09-16 23:05:00"),
        variant(end_datetime="1999-01-01T00:00:00Z"),
        variant(source_url="/relative", event_url="javascript:alert(1)"),
        variant(event_url="https://clerk.house.gov/a\r\nX-Injected: 1"),
        variant(source_timezone="Eastern"),
        variant(unique_key=""),
        variant(unique_key=...),
        variant(huge="x" * (8 * 1024 * 1024)),
        variant(huge=["é" * (2 * 1024 * 1024)]),
        variant(huge=["y" * (3 * 1024 * 1024)]),
    ]


def outcome(check, event: dict):
    """What ``check`` makes of a copy of ``event``: (the event after it, the keys cleaned, or the error)."""
    import copy

    doc = {k: copy.copy(v) for k, v in event.items()}
    try:
        result = check(doc)
    except InvalidEvent as exc:
        return doc, ("invalid", exc.code, str(exc))
    except RecursionError:  # a structure deeper than Python's recursion limit (not shown: no repr)
        return None, ("recursion",)
    return doc, ("cleaned", result)


def reference(doc):
    from votersdaily.schema import clean_event

    changed = clean_event(doc)
    validate_event(doc)
    return changed


def test_one_pass_agrees_with_the_reference_on_recorded_events(recorded):
    from votersdaily.schema import check_event

    assert len(recorded) > 400
    assert {e["parser_name"] for e in recorded} >= {"federal_register", "house_floor", "white_house"}
    assert any(isinstance(v, (list, dict)) for e in recorded for v in e.values())
    for event in recorded:
        fast = outcome(check_event, event)
        assert fast == outcome(reference, event), event
        assert fast[1] == ("cleaned", [])  # the recordings are valid as they are


def test_one_pass_agrees_with_the_reference_on_hostile_variants(recorded):
    from votersdaily.schema import check_event

    seen = set()
    for event in {e["parser_name"]: e for e in recorded}.values():  # one event of each spider
        for hostile in hostile_variants(event):
            fast, slow = outcome(check_event, hostile), outcome(reference, hostile)
            assert repr(fast) == repr(slow), hostile  # repr: NaN is not equal to itself
            seen.add(fast[1][:2] if fast[1][0] == "invalid" else fast[1][:1])
    # the variants reach every outcome: cleaning, the rules each variant breaks, a structure too deep
    assert {s[0] for s in seen} == {"cleaned", "invalid", "recursion"}
    codes = {s[1] for s in seen if s[0] == "invalid"}
    assert codes >= {
        "not_json",
        "too_large",
        "text:title",
        "missing:title",
        "url:source_url",
        "timezone",
        "reserved:_deleted",
        "reserved:_rev",
        "reserved:_attachments",
        "reserved:_private",
    }


def test_the_checks_text_is_the_events_json(recorded):
    """The one pass that makes the event's JSON text (check_event_json: the store writes it as it is)
    agrees with the reference like check_event, and its text is the one ``json.dumps`` makes of the
    checked event: on every recording (each of which gets one) and on the hostile variants that pass."""
    from votersdaily.schema import check_event_json

    def text_of(event: dict):
        outcome_ = outcome(check_event_json, event)
        if outcome_[1][0] != "cleaned":
            return None
        doc, (_, (_, text)) = outcome_
        return doc, text

    for event in recorded:
        doc, text = text_of(event)
        assert text == json.dumps(doc, ensure_ascii=False), event
        assert outcome(lambda e: check_event_json(e)[0], event) == outcome(reference, event)
    given = 0
    for event in {e["parser_name"]: e for e in recorded}.values():
        for hostile in hostile_variants(event):
            with_text = outcome(lambda e: check_event_json(e)[0], hostile)
            assert repr(with_text) == repr(outcome(reference, hostile)), hostile
            found = text_of(hostile)
            if found is not None and found[1] is not None:
                given += 1
                assert found[1] == json.dumps(found[0], ensure_ascii=False), hostile
    assert given > 0


def test_the_fast_checks_of_characters_agree_with_the_rules_regexes():
    """ASCII text is checked by a pass over its bytes, not the regex (schema.needs_cleaning,
    is_absolute_url, the nested JSON text): every character, alone and inside text, either way."""
    from votersdaily.schema import BAD_TEXT_RE, SURROGATE_RE, URL_BAD_RE, is_absolute_url, needs_cleaning

    chars = [chr(c) for c in range(0x100)] + ["\u2028", "\ufffd", "\ud800", "\udfff", "😀"]
    for char in chars:
        for text in (char, "abc%sdef" % char, "é%s" % char):
            assert needs_cleaning(text) == bool(BAD_TEXT_RE.search(text)), repr(text)
            assert needs_cleaning(text, SURROGATE_RE) == bool(SURROGATE_RE.search(text)), repr(text)
        url = "https://clerk.house.gov/a%sb" % char
        assert is_absolute_url(url) == (URL_BAD_RE.search(url) is None), repr(url)
