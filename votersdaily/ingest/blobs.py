"""Where HTML TEI-XML bodies go (``html/<sha1hex>.tei.xml``, like sandcrawler's SeaweedFS bucket)
and the ``html-teixml`` JSON-lines feed that announces them (like its Kafka topic)."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import re
import stat
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from votersdaily.store.crawler import CrawlerWriter

_SAFE_PATH = re.compile(r"^[a-z0-9]+/[0-9a-f]{40}\.[a-z.]+$")


def tei_path(sha1hex: str) -> str:
    return "html/%s.tei.xml" % sha1hex


def thumbnail_path(sha1hex: str) -> str:
    """A PDF's page-0 JPEG (sandcrawler's ``thumbnail`` bucket, ``<sha1hex>.180px.jpg``)."""
    return "thumbnail/%s.jpg" % sha1hex


class FolderBlobs:
    """Blobs as files under a local folder."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        #: Each blob folder made (or found) by this writer, with its path as text: made once, not
        #: once a blob, and a blob's path is that text and its name (no ``Path`` objects a blob).
        self._folders: dict[str, tuple[Path, str]] = {}

    def put(self, path: str, data: bytes, content_type: str = "application/xml") -> str:
        """Write ``data`` whole as ``path`` (a temporary file renamed over it, so a reader never sees
        half a blob) and return the file's path, ``str(root / path)``."""
        if not _SAFE_PATH.match(path):
            raise ValueError("refusing blob path %r" % path)
        name, _, base = path.partition("/")  # one folder and a file name (_SAFE_PATH)
        folder = self._folders.get(name)
        if folder is None:
            made = self.root / name
            made.mkdir(parents=True, exist_ok=True)
            folder = self._folders[name] = (made, str(made))
        target = "%s/%s" % (folder[1], base)
        if _holds(target, data):  # written before, by an ingest of the same bytes: kept as it is
            return target
        tmp = "%s.tmp%d" % (target, threading.get_ident())
        try:
            try:
                _write_whole(tmp, data)
            except FileNotFoundError:  # the folder was removed since: made again, as before
                folder[0].mkdir(parents=True, exist_ok=True)
                _write_whole(tmp, data)
            os.replace(tmp, target)  # noqa: PTH105 - no Path object a blob (the reason for text paths)
        except OSError:  # a full disk: no half-written file left beside the blobs
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)  # noqa: PTH108 - as above
            raise
        return target

    def get(self, path: str) -> bytes | None:
        target = self.root / path
        return target.read_bytes() if _SAFE_PATH.match(path) and target.exists() else None


def _holds(path: str, data: bytes) -> bool:
    """Whether ``path`` is a regular file holding exactly ``data``. A blob is named by the hash of
    the file it comes from (:func:`tei_path`, :func:`thumbnail_path`) and is only ever there whole
    (renamed into place), so a second ingest of the same file finds the blob it would write already
    there: reading it back costs the file thread some 10-15 µs of CPU, replacing it (a new file
    renamed over the old one) some 160-200 µs, most of it ext4's; a blob not there yet pays the
    failed look-up, some 15 µs more than its 60 µs write. Anything else (no file, another size or
    content, a link, not a file, unreadable) is written as before."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != len(data):
            return False
        chunks = []
        left = len(data) + 1  # one byte more: a file grown since the fstat is not the same
        while left > 0 and (chunk := os.read(fd, left)):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks) == data
    except OSError:
        return False
    finally:
        os.close(fd)


def _write_whole(path: str, data: bytes) -> None:
    """``data`` as the file ``path`` (made or emptied, as ``open(path, "wb")`` does), all of it or an
    error."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


class StoreBlobs:
    """Blobs as CouchDB attachments: document ``<path>`` in the writer's database, attachment
    ``blob``, written through the crawl's writer of that database (batched, and spooled while the
    store does not take them, as the ingest's results are)."""

    def __init__(self, writer: CrawlerWriter) -> None:
        self.writer = writer

    def put(self, path: str, data: bytes, content_type: str = "application/xml") -> str:
        """Hand the blob to the writer (from a worker thread: the writer is the reactor's), once it
        takes it (it holds documents back while the store is behind); its ``<db>/<path>``."""
        from twisted.internet import reactor, threads

        if not _SAFE_PATH.match(path):
            raise ValueError("refusing blob path %r" % path)
        doc = {
            "_id": path,
            "size": len(data),
            "_attachments": {"blob": {"content_type": content_type, "data": base64.b64encode(data).decode()}},
        }
        threads.blockingCallFromThread(reactor, self.writer.add, doc)
        return "%s/%s" % (self.writer.db, path)

    def get(self, path: str) -> bytes | None:
        return self.writer.store.get_attachment(self.writer.db, path, "blob")


class JsonLinesFeed:
    """An append-only JSON-lines topic (one message per line), safe to call from worker threads."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        #: The feed's folder is made (or found) by the first message, not by every one.
        self._folder_made = False

    def publish(self, message: dict[str, Any]) -> None:
        """Append one message as a whole line, or nothing: a write the disk takes only part of is cut
        back (a cut line would also swallow the next message appended after it). The file is locked
        (``lockf``) from the size read to the cut, so the cut never takes the whole lines another
        process appended meanwhile (nodes and workers share one feed)."""
        line = memoryview((json.dumps(message, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
        with self._lock:
            fd = self._open()
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX)  # released by the close
                start = os.fstat(fd).st_size
                try:
                    while line:
                        line = line[os.write(fd, line) :]
                except OSError:
                    os.ftruncate(fd, start)
                    raise
            finally:
                os.close(fd)

    def _open(self) -> int:
        """The feed opened for appending, its folder made the first time (and again if it went)."""
        if not self._folder_made:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._folder_made = True
        try:
            return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except FileNotFoundError:  # the folder was removed since: made again, as before
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
