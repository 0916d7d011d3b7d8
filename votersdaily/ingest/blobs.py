"""Where HTML TEI-XML bodies go (``html/<sha1hex>.tei.xml``, like sandcrawler's SeaweedFS bucket)
and the ``html-teixml`` JSON-lines feed that announces them (like its Kafka topic)."""

from __future__ import annotations

import base64
import json
import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from votersdaily.store.upsert import upsert

if TYPE_CHECKING:
    from votersdaily.store.base import Store

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
        #: Folders made (or found) by this writer: each blob's folder is made once, not once a blob.
        self._made: set[Path] = set()

    def put(self, path: str, data: bytes, content_type: str = "application/xml") -> str:
        if not _SAFE_PATH.match(path):
            raise ValueError("refusing blob path %r" % path)
        target = self.root / path
        if target.parent not in self._made:
            target.parent.mkdir(parents=True, exist_ok=True)
            self._made.add(target.parent)
        tmp = target.with_suffix(target.suffix + ".tmp%d" % threading.get_ident())
        try:
            try:
                tmp.write_bytes(data)
            except FileNotFoundError:  # the folder was removed since: made again, as before
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp.write_bytes(data)
            tmp.replace(target)
        except OSError:  # a full disk: no half-written file left beside the blobs
            tmp.unlink(missing_ok=True)
            raise
        return str(target)

    def get(self, path: str) -> bytes | None:
        target = self.root / path
        return target.read_bytes() if _SAFE_PATH.match(path) and target.exists() else None


class StoreBlobs:
    """Blobs as CouchDB attachments: document ``<path>`` in database ``db``, attachment ``blob``."""

    def __init__(self, store: Store, db: str) -> None:
        self.store = store
        self.db = db
        self._ready = False

    def put(self, path: str, data: bytes, content_type: str = "application/xml") -> str:
        if not _SAFE_PATH.match(path):
            raise ValueError("refusing blob path %r" % path)
        if not self._ready:
            self.store.ensure_db(self.db)
            self._ready = True
        doc = {
            "_id": path,
            "size": len(data),
            "_attachments": {"blob": {"content_type": content_type, "data": base64.b64encode(data).decode()}},
        }
        upsert(self.store, self.db, [doc])
        return "%s/%s" % (self.db, path)

    def get(self, path: str) -> bytes | None:
        return self.store.get_attachment(self.db, path, "blob")


class JsonLinesFeed:
    """An append-only JSON-lines topic (one message per line), safe to call from worker threads."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        #: The feed's folder is made (or found) by the first message, not by every one.
        self._folder_made = False

    def publish(self, message: dict[str, Any]) -> None:
        """Append one message as a whole line, or nothing: a write the disk takes only part of is cut
        back (a cut line would also swallow the next message appended after it)."""
        line = memoryview((json.dumps(message, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
        with self._lock:
            fd = self._open()
            try:
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
