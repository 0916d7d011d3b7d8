"""The blob folder (votersdaily/ingest/blobs.py): each blob's folder made once, and again if it goes."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.ingest.conftest import recorded_html_pages
from votersdaily.ingest.blobs import FolderBlobs, tei_path, thumbnail_path
from votersdaily.ingest.filemeta import hashes


def test_blobs_are_written_whole_with_their_folders_made_once_and_again_when_removed(tmp_path, monkeypatch):
    """The recorded pages stored as blobs: every one read back byte for byte; the two folders are made
    by one mkdir each, not one a blob; a folder removed during the run is made again (as every blob
    made it before)."""
    pages = [path.read_bytes() for path in recorded_html_pages()]
    blobs = FolderBlobs(tmp_path / "blobs")
    made: list[Path] = []
    mkdir = Path.mkdir

    def counted(self: Path, *args: object, **kwargs: object) -> None:
        if kwargs.get("parents"):  # a writer's call (pathlib's own recursion passes parents=False)
            made.append(self)
        mkdir(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "mkdir", counted)
    for body in pages:
        sha1hex = hashes(body)["sha1hex"]
        for path in (tei_path(sha1hex), thumbnail_path(sha1hex)):
            assert Path(blobs.put(path, body)).read_bytes() == body
            assert blobs.get(path) == body
    blob_folders = [tmp_path / "blobs" / "html", tmp_path / "blobs" / "thumbnail"]
    assert sorted(made) == [tmp_path / "blobs", *blob_folders]  # the root once, by pathlib, for the first
    shutil.rmtree(tmp_path / "blobs")
    sha1hex = hashes(pages[0])["sha1hex"]
    assert blobs.get(tei_path(sha1hex)) is None
    assert Path(blobs.put(tei_path(sha1hex), pages[0])).read_bytes() == pages[0]
    assert not list((tmp_path / "blobs").rglob("*.tmp*"))


def test_the_feed_appends_whole_lines_with_its_folder_made_once_and_again_when_removed(tmp_path):
    """One message a recorded page (its text as the TEI), read back line by line; the feed's folder
    removed during the run is made again for the next message."""
    import json

    from votersdaily.ingest.blobs import JsonLinesFeed

    feed = JsonLinesFeed(tmp_path / "feeds" / "teixml.jsonl")
    pages = [path.read_bytes().decode("utf-8", "replace") for path in recorded_html_pages()[:4]]
    for n, text in enumerate(pages):
        feed.publish({"key": str(n), "tei_xml": text})
    lines = (tmp_path / "feeds" / "teixml.jsonl").read_text().splitlines()
    assert [json.loads(line)["tei_xml"] for line in lines] == pages
    shutil.rmtree(tmp_path / "feeds")
    feed.publish({"key": "after", "tei_xml": pages[0]})
    assert [json.loads(line)["key"] for line in feed.path.read_text().splitlines()] == ["after"]


def test_a_blob_is_the_file_pathlib_writes_under_every_kind_of_root(tmp_path, monkeypatch):
    """The blob writer opens, writes and renames with plain os calls, not a ``Path`` a blob: for a
    root given absolute, relative (``.``, ``a/../b``), with a trailing slash or as text, each
    recorded page and PDF comes back as the path ``str(root / path)`` names, byte for byte, with
    the permissions ``Path.write_bytes`` gives a file there, and no temporary file is left; an
    empty blob is an empty file."""
    from tests.ingest.conftest import recorded_pdfs

    bodies = [path.read_bytes() for path in recorded_html_pages()] + [b for _, b in recorded_pdfs()] + [b""]
    monkeypatch.chdir(tmp_path)
    for root in (tmp_path / "abs", ".", "rel/../rel2", str(tmp_path / "slash") + "/", Path("p")):
        blobs = FolderBlobs(root)
        for body in bodies:
            sha1hex = hashes(body)["sha1hex"]
            for path in (tei_path(sha1hex), thumbnail_path(sha1hex)):
                written = blobs.put(path, body)
                assert written == str(Path(root) / path)
                assert Path(written).read_bytes() == body
                reference = Path(written).with_name("reference")
                reference.write_bytes(body)
                assert Path(written).stat().st_mode == reference.stat().st_mode
                reference.unlink()
        assert not list(Path(root).rglob("*.tmp*"))


def _written_as_before(folder: Path, path: str, data: bytes) -> Path:
    """What the writer made of ``path`` before it read an existing blob back: a new file holding
    ``data`` renamed over whatever was there."""
    target = folder / path
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(target)
    return target


def test_a_blob_already_written_is_kept_and_anything_else_is_written_as_before(tmp_path, monkeypatch):
    """Each recorded page and PDF, and an empty blob, put where its blob already is (a second
    ingest of the same file) is not written again (no rename), and the file is the one the writer
    made before; put over what is not that blob (another content of the same size, a longer or
    shorter file, a link to the same bytes, a pipe) is written as before: the same bytes, a
    regular file of the same permissions, no temporary file left."""
    import os
    import stat

    from tests.ingest.conftest import recorded_pdfs
    from votersdaily.ingest import blobs as blobs_module

    bodies = [path.read_bytes() for path in recorded_html_pages()] + [b for _, b in recorded_pdfs()] + [b""]
    renames: list[str] = []
    replace = os.replace

    def counted(src: str, dst: str) -> None:
        renames.append(dst)
        replace(src, dst)

    monkeypatch.setattr(blobs_module.os, "replace", counted)
    blobs = FolderBlobs(tmp_path / "blobs")
    for body in bodies:
        sha1hex = hashes(body)["sha1hex"]
        path = thumbnail_path(sha1hex)
        before = _written_as_before(tmp_path / "before", path, body)
        target = Path(blobs.put(path, body, "image/jpeg"))
        inode = target.stat().st_ino
        renames.clear()
        assert blobs.put(path, body, "image/jpeg") == str(target)
        assert renames == []  # kept as it was: not written again
        assert target.stat().st_ino == inode
        assert target.read_bytes() == before.read_bytes() == body
        assert target.stat().st_mode == before.stat().st_mode
        others = [body + b"x"]
        if body:  # the same size with another last byte; a shorter file
            others += [body[:-1] + bytes([body[-1] ^ 1]), body[: len(body) // 2]]
        for other in others:
            target.write_bytes(other)
            renames.clear()
            blobs.put(path, body, "image/jpeg")
            assert renames == [str(target)]
            assert target.read_bytes() == body
        elsewhere = tmp_path / "elsewhere"
        elsewhere.write_bytes(body)
        target.unlink()
        target.symlink_to(elsewhere)
        blobs.put(path, body, "image/jpeg")
        assert not target.is_symlink() and target.read_bytes() == body
        assert elsewhere.read_bytes() == body
        target.unlink()
        os.mkfifo(target)  # read, it would block: written over as before
        blobs.put(path, body, "image/jpeg")
        assert stat.S_ISREG(target.lstat().st_mode) and target.read_bytes() == body
        assert target.stat().st_mode == before.stat().st_mode
    assert not list((tmp_path / "blobs").rglob("*.tmp*"))


def test_a_feed_line_waits_for_another_process_writing_the_same_feed(tmp_path):
    """Nodes and workers share one feed; a writer that fails part-way cuts the file back to where it
    began. Without a lock between processes, the cut took the whole line another process appended
    in the meantime (seen on a full tmpfs). Here another process holds the feed's lock and appends a
    line; this process's message waits for it, and both lines are whole, in that order."""
    import json
    import subprocess
    import sys
    import threading

    from votersdaily.ingest.blobs import JsonLinesFeed

    path = tmp_path / "feed.jsonl"
    other = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys\n"
            "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT)\n"
            "fcntl.lockf(fd, fcntl.LOCK_EX)\n"
            "print('locked', flush=True)\n"
            "sys.stdin.readline()\n"
            'os.write(fd, b\'{"key": "other"}\\n\')\n',
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert other.stdout.readline() == "locked\n"
        feed = JsonLinesFeed(path)
        writer = threading.Thread(target=feed.publish, args=({"key": "this"},))
        writer.start()
        writer.join(0.5)
        assert writer.is_alive(), "the message was written while another process held the feed"
        other.stdin.write("go\n")
        other.stdin.flush()
        writer.join(30)
        assert not writer.is_alive()
    finally:
        other.stdin.close()
        assert other.wait(30) == 0
    assert [json.loads(line)["key"] for line in path.read_text().splitlines()] == ["other", "this"]
