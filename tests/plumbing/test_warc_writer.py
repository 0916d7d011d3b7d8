"""The one WARC writer (votersdaily/plumbing/warc_writer.py) on a real full disk: a small tmpfs the
test mounts (root only), filled by the kernel's own ENOSPC. The records are the project's shipped
recordings (real government documents), written as the archive writes them."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.conftest import RECORDINGS
from tests.support.tmpfs import fill, small_tmpfs
from votersdaily.plumbing.warc_reader import WarcDamage, WarcRecordAt, iter_records, read_record_at
from votersdaily.plumbing.warc_writer import WarcFileWriter, response_record


def recorded_documents() -> list[Path]:
    """Every shipped recording (not its headers or provenance), largest first."""
    files = [
        p for p in RECORDINGS.rglob("*") if p.is_file() and not p.name.endswith((".meta.json", ".md", ".py"))
    ]
    return sorted(files, key=lambda p: -p.stat().st_size)


def writer(folder: Path, **kwargs) -> WarcFileWriter:
    return WarcFileWriter(
        folder, lambda serial: "run/run-%05d.warc.gz" % serial, {"software": "test"}, **kwargs
    )


def write(w: WarcFileWriter, document: Path):
    body = document.read_bytes()
    url = document.as_uri()
    return w.submit(
        lambda builder: [response_record(builder, url, 200, [("Content-Type", "text/xml")], body)]
    ).result()


def test_a_folder_that_fills_mid_file_keeps_only_complete_records(tmp_path, caplog):
    """The disk fills while a run writes: the file is cut back to its last complete record, every
    location given out reads back whole, and every later unit is refused at once (no retry)."""
    with small_tmpfs(tmp_path / "archive", size="200k") as folder:
        w = writer(folder)
        written: list[tuple[Path, object]] = []
        documents = recorded_documents()
        with caplog.at_level(logging.INFO, logger="votersdaily.plumbing.warc_writer"):
            for n in range(2000):  # the recordings over and over: 200 KiB fill long before
                document = documents[n % len(documents)]
                location = write(w, document)
                if location is None:
                    break
                written.append((document, location))
            else:
                pytest.fail("the tmpfs never filled")
            assert write(w, documents[0]) is None  # refused at once after the failure
            w.close()
        assert len(written) > 3
        (path,) = folder.glob("run/*.warc.gz")
        entries = list(iter_records(path))
        assert not [e for e in entries if isinstance(e, WarcDamage)]  # no half record left behind
        responses = [e for e in entries if isinstance(e, WarcRecordAt) and e.record.rec_type == "response"]
        assert len(responses) == len(written) == w.records
        last = responses[-1]
        assert path.stat().st_size == last.offset + last.length  # ends where the last record ends
        for document, location in written:
            record = read_record_at(location.path, location.offset)
            assert record.rec_headers.get_header("WARC-Target-URI") == document.as_uri()
            assert record.content_stream().read() == document.read_bytes()
        assert w.not_written == 2 and w.stopped
        assert w.run_log_fields() == {
            "archived": False,
            "archive_error": "the folder %s is full (No space left on device)" % folder,
            "not_archived_count": 2,
        }
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1 and str(folder) in errors[0].getMessage()


def test_a_full_folder_leaves_no_file_and_is_named_once_per_process(tmp_path, caplog):
    """Full before the first record: the file the writer created (its warcinfo did not fit, or only
    the warcinfo did) is removed, since it holds no record; a second writer on the same folder (the
    next spider of the same crawl) does not say it again."""
    with small_tmpfs(tmp_path / "archive", size="64k") as folder:
        fill(folder)
        with caplog.at_level(logging.INFO, logger="votersdaily.plumbing.warc_writer"):
            first, second = writer(folder), writer(folder)
            document = recorded_documents()[0]
            assert write(first, document) is None and write(second, document) is None
            first.close()
            second.close()
        assert not list(folder.rglob("*.warc.gz"))
        assert first.path is None and first.files == []
        said = [r for r in caplog.records if "is full" in r.getMessage()]
        assert [r.levelno for r in said] == [logging.ERROR, logging.INFO]
        assert str(folder) in said[0].getMessage()


def test_a_unit_that_cannot_be_built_costs_only_itself(tmp_path):
    w = writer(tmp_path)
    document = recorded_documents()[-1]

    def broken(builder):
        raise ValueError("a header value the record cannot hold")

    assert w.submit(broken).result() is None
    location = write(w, document)
    w.close()
    assert location is not None and not w.stopped
    assert read_record_at(location.path, location.offset).content_stream().read() == document.read_bytes()
    assert w.run_log_fields()["archived"] is False and w.run_log_fields()["not_archived_count"] == 1


def test_files_rotate_after_max_size_and_every_location_is_exact(tmp_path):
    w = writer(tmp_path, max_size=20000)
    documents = recorded_documents()[:12]
    locations = [write(w, d) for d in documents]
    w.close()
    assert len(w.files) > 1 and all(p.is_file() for p in w.files)
    for document, location in zip(documents, locations, strict=True):
        assert location is not None
        assert read_record_at(location.path, location.offset).content_stream().read() == document.read_bytes()
