"""Every field of an ingest request is checked and bounded before it is queued or crawled
(`enqueue ingest` used to take a 10 MB ``link_source_id`` and a NUL inside ``base_url``)."""

from __future__ import annotations

import json

import pytest

from votersdaily.ingest.ingest_requests import (
    MAX_LINE_BYTES,
    IngestRequestError,
    iter_jsonl,
    normalize_request,
)

URL = "https://journals.plos.org/plosone/article?id=10.1371/journal.pone.0213978"


def test_a_request_in_sandcrawlers_shape_passes_unchanged():
    request = {
        "base_url": URL,
        "ingest_type": "html",
        "link_source": "doi",
        "link_source_id": "10.1371/journal.pone.0213978",
        "ingest_request_source": "fatcat-changelog",
        "release_stage": "published",
        "rel": "publisher",
        "oa_status": "gold",
        "force_recrawl": False,
        "ext_ids": {"doi": "10.1371/journal.pone.0213978", "pmcid": None},
        "fatcat": {"release_ident": "hsmo6p4smrganpb3fndaj2lon4"},
        "edit_extra": {"note": "line one\nline two", "tags": ["oa", 1]},
    }
    assert normalize_request(request) == request


@pytest.mark.parametrize(
    "change, message",
    [
        ({"base_url": "https://example.org/a\x00b"}, "base_url holds a control character"),
        ({"base_url": "https://example.org/\r\nSet-Cookie: x"}, "base_url holds a control character"),
        ({"base_url": "https://" + "a" * 9000}, "base_url is longer than 8192 characters"),
        ({"base_url": "https://example.org:99999/"}, "base_url is not a URL (Port out of range"),
        ({"base_url": "http://[example.org/"}, "base_url is not a URL"),
        ({"base_url": "https:///paper.pdf"}, "base_url names no host"),
        ({"base_url": "file:///etc/passwd"}, "base_url is not an http(s) URL"),
        ({"base_url": 42}, "without a base_url"),
        ({"link_source_id": "1" * 10_000_000}, "link_source_id is longer than 1024 characters"),
        ({"link_source": "doi\x00"}, "link_source holds a control character"),
        ({"link_source_id": 10}, "link_source_id must be a string, got int"),
        ({"ingest_request_source": "x\u0085"}, "holds a control character"),  # C1 NEL
        ({"release_stage": "\ud800"}, "release_stage holds a control character"),  # lone surrogate
        ({"ext_ids": ["10.1/x"]}, "ext_ids must be a JSON object, got list"),
        ({"ext_ids": {"doi": "10.1/x\n"}}, "ext_ids.doi holds a control character"),
        ({"ext_ids": {"doi": {"nested": 1}}}, "ext_ids.doi must be a string"),
        ({"fatcat": {"x" * 100: "y"}}, "fatcat key is longer than 64 characters"),
        ({"edit_extra": {"blob": "z" * 20000}}, "edit_extra is larger than 16384 bytes"),
        ({"edit_extra": {"a": ["\x00"]}}, "edit_extra holds a control character"),
        ({"force_recrawl": "yes"}, "force_recrawl must be true or false"),
        ({"ingest_type": "dataset"}, "ingest_type 'dataset' is not one of"),
        ({"base_urll": URL}, "unknown key 'base_urll'"),
    ],
)
def test_a_field_out_of_shape_is_refused_with_a_short_message(change, message):
    with pytest.raises(IngestRequestError) as refused:
        normalize_request({"base_url": URL, "ingest_type": "pdf", **change})
    text = str(refused.value)
    assert message in text
    assert len(text) < 400 and "\x00" not in text and "\n" not in text


def test_requests_files_report_each_bad_line_and_keep_reading(tmp_path):
    """A line too long is skipped without being read whole, a line that is not UTF-8 (a byte of a
    real request flipped to 0xff: a DERIVED variant) is named, and the lines after them are read."""
    good = json.dumps({"base_url": URL, "ingest_type": "html"}).encode()
    path = tmp_path / "requests.jsonl"
    path.write_bytes(
        b"\n".join(
            [
                good,
                b'{"base_url": "%s", "link_source_id": "%s"}' % (URL.encode(), b"1" * (2 * MAX_LINE_BYTES)),
                good.replace(b"plos", b"pl\xffs"),
                b"",
                b"{not json",
                good,
            ]
        )
    )
    found = list(iter_jsonl(path))
    assert [where.rsplit(":", 1)[1] for where, _ in found] == ["1", "2", "3", "5", "6"]
    assert isinstance(found[0][1], dict) and found[-1][1] == found[0][1]
    errors = [str(value) for _, value in found[1:4]]
    assert errors[0] == "line is longer than %d bytes" % MAX_LINE_BYTES
    assert errors[1].startswith("line is not UTF-8") and errors[2].startswith("line is not JSON")


def test_a_line_holding_a_number_no_json_holds_is_a_bad_line(tmp_path):
    """``NaN``, ``Infinity`` and ``1e400`` (read as infinite): Python's json takes them, no store
    holds them. Before, ``ingest enqueue`` queued the line, the store refused it, and the command
    said ``(0 bad)`` with exit 1 and no line naming it (audit, 2026-11-29). Now each such line is a
    bad line naming what is wrong; the lines around it are read. (Variants of a good request.)"""
    good = {"base_url": URL, "ingest_type": "html"}
    path = tmp_path / "requests.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps(good),
                json.dumps(dict(good, edit_extra={"score": float("nan")})),
                json.dumps(dict(good, edit_extra={"score": -float("inf")})),
                json.dumps(good).replace("}", ', "edit_extra": {"score": 1e400}}'),
                json.dumps(good),
            ]
        )
    )
    found = [value for _, value in iter_jsonl(path)]
    assert found[0] == found[-1] == good
    assert [str(value) for value in found[1:4]] == [
        "line is not JSON: NaN is no JSON number",
        "line is not JSON: -Infinity is no JSON number",
        "line is not JSON: '1e400' is too large for a JSON number a store holds",
    ]


@pytest.mark.timeout(60)  # before, each read below never ended
def test_a_device_named_as_an_input_file_is_refused_not_read_for_ever(sqlite_uri):
    """``-a requests=/dev/zero`` (or ``ingest enqueue /dev/zero``, ``-a seedlist=/dev/zero``): a
    device that never ends and has no line end. Before, the run read it line by line for good, deaf to
    SIGTERM and Ctrl-C (audit, 2026-11-29). Now a device or a socket is refused as no file of lines:
    before the run for a spider argument, at once (exit 2) for a command."""
    from tests.support.cli_main import run_main
    from votersdaily.plumbing.inputs import BadSpiderArgument, NotAFileOfLines, bounded_lines, input_file

    with pytest.raises(NotAFileOfLines):
        list(bounded_lines("/dev/zero", MAX_LINE_BYTES))
    with pytest.raises(BadSpiderArgument, match="/dev/zero is a device or a socket, not a file"):
        input_file("ingest", "requests", "/dev/zero")
    proc = run_main("ingest", "enqueue", "/dev/zero", store_uri=sqlite_uri)
    assert (proc.returncode, proc.stderr) == (
        2,
        "votersdaily ingest: cannot read /dev/zero: it is a device or a socket, not a file of lines\n",
    )
