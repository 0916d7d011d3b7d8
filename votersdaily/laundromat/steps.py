"""The processing steps of one file, as plain functions of paths (picklable arguments and results).

Each step returns the keys it adds to the file's record. The spider runs them in a worker process
(so parsing and sorting never hold the reactor's GIL) and persists the state transition around each
one; :func:`launder_file` chains them for tests and benchmarks. The crawl names the steps without
importing what they run (cleaning, recoding: imported in the function): a worker imports
:data:`~.worker_pool.WORKER_MODULES` as it starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import archives
from .clean_types import CleanOptions
from .formats import SNIFF_CHARS, guess_format
from .uris import child_key


def unpack_step(
    path: str,
    out_dir: str,
    parent_key: str,
    name: str,
    depth: int,
    limits: archives.ArchiveLimits,
    used: archives.TreeUsage = archives.TreeUsage(),
) -> dict[str, Any]:
    """One layer of unpacking; ``entries`` are the children to register (key, names, file, size).
    ``used``: what earlier layers of the same archive tree unpacked (the limits hold for the tree)."""
    result = archives.unpack(
        Path(path),
        Path(out_dir),
        lambda entry: child_key(parent_key, entry),
        name=name,
        depth=depth,
        limits=limits,
        used=used,
    )
    return {
        "archive": result.kind,
        "unpacked_bytes": result.unpacked_bytes,
        "entries": [
            {
                "key": Path(e.path).name,
                "entry_name": e.raw_name,
                "name": e.name,
                "path": str(e.path),
                "size": e.size,
            }
            for e in result.entries
        ],
        "skipped_entries": result.skipped,
    }


def recode_step(path: str, dst: str, content_type: str | None) -> dict[str, Any]:
    from .encodings import charset_of, recode_file

    recoded = recode_file(Path(path), Path(dst), charset_of(content_type))
    record = recoded.as_record()
    record["recoded_path"] = str(recoded.path)
    record["number_of_chars"] = recoded.number_of_chars
    return record


def guess_step(path: str, content_type: str | None, name: str | None) -> dict[str, Any]:
    from .encodings import SNIFF_BYTES

    with open(path, "rb") as f:
        head = f.read(min(SNIFF_BYTES, SNIFF_CHARS * 4)).decode("utf-8", "ignore")[:SNIFF_CHARS]
    return guess_format(head, content_type, name).as_record()


def clean_step(
    path: str, fmt: str, key: str, out_dir: str, base_iri: str | None, options: CleanOptions
) -> dict[str, Any]:
    from .cleaning import clean_file

    return clean_file(path, fmt, key, out_dir, base_iri=base_iri, options=options).as_record()


def launder_file(
    path: Path | str,
    key: str,
    out_dir: Path | str,
    *,
    fmt: str | None = None,
    content_type: str | None = None,
    name: str | None = None,
    base_iri: str | None = None,
    options: CleanOptions = CleanOptions(),
) -> dict[str, Any]:
    """Recode, guess (unless ``fmt`` is given) and clean one data file; the merged record keys."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    record = recode_step(str(path), str(out_dir / ("%s.utf8" % key)), content_type)
    recoded = record["recoded_path"]
    record.update(guess_step(recoded, content_type, name if name is not None else str(path)))
    if fmt is not None:
        record["format"] = fmt
    elif record["format"] is None:  # not RDF: nothing to clean
        record["error"] = "not RDF: %s" % record["not_rdf"]
        if recoded != str(path):
            Path(recoded).unlink(missing_ok=True)
        return record
    try:
        record["clean"] = clean_step(recoded, record["format"], key, str(out_dir), base_iri, options)
    finally:
        if recoded != str(path):
            Path(recoded).unlink(missing_ok=True)
    return record
