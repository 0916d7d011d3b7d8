"""Reading WARC files back (votersdaily/plumbing/warc_reader.py) when they are damaged. Each damaged
file is derived from a sound one the shared writer wrote from the shipped recordings (real government
documents), by the damage the issue met: one flipped byte, a file cut inside a record or at a record
boundary, a gzip member of raw binary bytes appended, the file gone."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tests.plumbing.test_warc_writer import recorded_documents, write, writer
from votersdaily.plumbing.warc_reader import (
    DamagedWarc,
    WarcDamage,
    WarcRecordAt,
    iter_records,
    printable,
    read_record_at,
)


@pytest.fixture
def sound_warc(tmp_path) -> tuple[Path, list[Path], list[int]]:
    """A WARC of six recordings (one gzip member a record, as the writer writes them), the
    documents in order and their records' offsets."""
    w = writer(tmp_path / "archive")
    documents = recorded_documents()[:6]
    offsets = [write(w, d).offset for d in documents]
    w.close()
    (path,) = w.files
    return path, documents, offsets


def read_all(path: Path) -> list[tuple[WarcRecordAt | WarcDamage, bytes | None]]:
    """Every entry of the file, each record's payload read before the next is asked for."""
    return [
        (e, e.record.content_stream().read() if isinstance(e, WarcRecordAt) else None)
        for e in iter_records(path)
    ]


def bodies(entries) -> list[bytes]:
    """The payloads of the response records."""
    return [body for e, body in entries if isinstance(e, WarcRecordAt) and e.record.rec_type == "response"]


def damages(entries) -> list[WarcDamage]:
    return [e for e, _ in entries if isinstance(e, WarcDamage)]


def test_a_sound_file_reads_back_whole(sound_warc):
    path, documents, offsets = sound_warc
    entries = read_all(path)
    assert not damages(entries)
    assert [e.offset for e, _ in entries if e.record.rec_type == "response"] == offsets
    assert bodies(entries) == [d.read_bytes() for d in documents]


def test_one_flipped_byte_costs_one_record_named_by_file_and_offset(sound_warc):
    path, documents, offsets = sound_warc
    data = bytearray(path.read_bytes())
    data[(offsets[2] + offsets[3]) // 2] ^= 0xFF  # inside the third record's compressed bytes
    path.write_bytes(bytes(data))
    entries = read_all(path)
    (damage,) = damages(entries)
    assert (damage.path, damage.offset, damage.resumed_at) == (path, offsets[2], offsets[3])
    assert "does not decompress" in damage.reason
    kept = [d.read_bytes() for i, d in enumerate(documents) if i != 2]
    assert bodies(entries) == kept  # every other record, before and after
    with pytest.raises(DamagedWarc, match="%s at offset %d" % (path, offsets[2])):
        read_record_at(path, offsets[2])


def test_a_file_cut_inside_a_record_reads_up_to_it(sound_warc):
    path, documents, offsets = sound_warc
    data = path.read_bytes()
    path.write_bytes(data[: offsets[5] + 100])
    entries = read_all(path)
    (damage,) = damages(entries)
    assert (damage.offset, damage.resumed_at) == (offsets[5], None)
    assert "cut short" in damage.reason
    assert bodies(entries) == [d.read_bytes() for d in documents[:5]]


def test_a_file_cut_at_a_record_boundary_has_no_damage_and_no_record_there(sound_warc):
    """Nothing in the file is wrong: what is missing is found by checking the events' pointers (reparse)."""
    path, _, offsets = sound_warc
    path.write_bytes(path.read_bytes()[: offsets[5]])
    entries = read_all(path)
    assert not damages(entries)
    assert offsets[5] not in [e.offset for e, _ in entries]
    with pytest.raises(DamagedWarc, match="offset %d" % offsets[5]):
        read_record_at(path, offsets[5])


def test_bytes_that_are_no_record_never_enter_a_reason_raw(sound_warc):
    """A gzip member holding raw gzip bytes (binary, control characters: a recording gzipped) appended."""
    path, documents, _ = sound_warc
    raw = path.read_bytes()
    path.write_bytes(raw + gzip.compress(gzip.compress(documents[0].read_bytes())))
    (damage,) = damages(read_all(path))
    assert damage.offset == len(raw) and damage.resumed_at is None
    assert damage.reason.isascii() and damage.reason.isprintable() and len(damage.reason) <= 200
    assert "\x1f" not in damage.describe() and "\\x1f" in damage.describe()


def test_a_missing_file_is_one_damage_at_offset_zero(tmp_path):
    path = tmp_path / "gone.warc.gz"
    (damage,) = damages(read_all(path))
    assert (damage.path, damage.offset, damage.resumed_at) == (path, 0, None)
    assert "No such file" in damage.reason


def test_printable_escapes_and_bounds():
    assert printable("ok \x1f\x8b\u00e9\n") == "ok \\x1f\\x8b\\xe9\\n"
    assert len(printable("\x00" * 1000)) == 200
