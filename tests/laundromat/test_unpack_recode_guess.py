"""Archives (nesting, bombs, traversal), encodings (BOM, Latin-1, invalid UTF-8) and format guessing
on the W3C suites' files with their extensions removed and no Content-Type."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.laundromat import sitedata
from tests.laundromat.conformance import ROOT, SUITES, load_manifest
from votersdaily.laundromat import encodings
from votersdaily.laundromat.archives import (
    ArchiveError,
    ArchiveLimitExceeded,
    ArchiveLimits,
    TreeUsage,
    archive_kind,
    safe_name,
    unpack,
)
from votersdaily.laundromat.encodings import detect_encoding, recode_file
from votersdaily.laundromat.formats import SNIFF_CHARS, guess_format, sniff
from votersdaily.laundromat.uris import child_key

LIMITS = ArchiveLimits(max_total_bytes=64 << 20, max_ratio=100.0, max_entries=50, max_depth=4)


def layer(path: Path, out: Path, depth: int = 0, name: str = ""):
    return unpack(path, out, lambda entry: child_key(path.name, entry), name=name, depth=depth, limits=LIMITS)


def unpack_all(path: Path, out: Path, depth: int = 0, name: str = "") -> dict[str, bytes]:
    """Unpack recursively the way the processor does (one record per layer)."""
    result = layer(path, out, depth, name)
    if result.kind is None:
        return {name: path.read_bytes()}
    found = {}
    for entry in result.entries:
        found.update(unpack_all(entry.path, out, depth + 1, entry.name))
    return found


def test_nested_tar_gz_inside_zip(tmp_path):
    inner = sitedata.tar_gz("deep/z.nt", b"<a:z> <a:p> <a:o> .\n")
    archive = tmp_path / "b.zip"
    archive.write_bytes(sitedata.zip_of({"x.ttl": b"x", "nested/z.tar.gz": inner}))
    assert archive_kind(archive) == "zip"
    found = unpack_all(archive, tmp_path / "out", name="b.zip")
    assert found == {"x.ttl": b"x", "deep/z.nt": b"<a:z> <a:p> <a:o> .\n"}


@pytest.mark.parametrize(
    "kind,compress", [("gzip", gzip.compress), ("bzip2", bz2.compress), ("xz", lzma.compress)]
)
def test_single_stream_compressions(tmp_path, kind, compress):
    path = tmp_path / "d.nt.x"
    path.write_bytes(compress(b"<a:s> <a:p> <a:o> .\n"))
    result = layer(path, tmp_path / "out", name="d.nt." + {"gzip": "gz", "bzip2": "bz2", "xz": "xz"}[kind])
    assert result.kind == kind
    (entry,) = result.entries
    assert entry.name == "d.nt" and entry.path.read_bytes() == b"<a:s> <a:p> <a:o> .\n"


def test_zip_bomb_refused_and_nothing_left_behind(tmp_path):
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("bomb.nt", b"\0" * (50 << 20))  # ~50 KB compressed, ratio ~1000
    path = tmp_path / "bomb.zip"
    path.write_bytes(raw.getvalue())
    out = tmp_path / "out"
    with pytest.raises(ArchiveLimitExceeded, match="ratio"):
        layer(path, out)
    assert list(out.iterdir()) == []


def test_gzip_bomb_refused(tmp_path):
    path = tmp_path / "bomb.gz"
    path.write_bytes(gzip.compress(b"\0" * (40 << 20)))
    with pytest.raises(ArchiveLimitExceeded):
        layer(path, tmp_path / "out")


def test_deep_nesting_refused(tmp_path):
    data = b"<a:s> <a:p> <a:o> .\n"
    for _ in range(LIMITS.max_depth + 2):
        data = gzip.compress(data)
    path = tmp_path / "deep.gz"
    path.write_bytes(data)
    with pytest.raises(ArchiveLimitExceeded, match="nesting"):
        unpack_all(path, tmp_path / "out")


def test_too_many_entries_refused(tmp_path):
    path = tmp_path / "many.zip"
    path.write_bytes(sitedata.zip_of({"f%03d" % i: b"x" for i in range(LIMITS.max_entries + 1)}))
    with pytest.raises(ArchiveLimitExceeded, match="entries"):
        layer(path, tmp_path / "out")


def test_path_traversal_neutralised(tmp_path):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name in ("../../evil.nt", "/etc/passwd", "ok/../../x.nt"):
            info = tarfile.TarInfo(name)
            info.size = 1
            tar.addfile(info, io.BytesIO(b"!"))
        link = tarfile.TarInfo("link")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/shadow"
        tar.addfile(link)
    path = tmp_path / "t.tar"
    path.write_bytes(raw.getvalue())
    out = tmp_path / "deep" / "out"
    result = layer(path, out)
    assert [e.name for e in result.entries] == ["evil.nt", "etc/passwd", "x.nt"]
    assert [e.raw_name for e in result.entries] == ["../../evil.nt", "/etc/passwd", "ok/../../x.nt"]
    assert all(e.path.parent == out for e in result.entries)
    assert result.skipped == [{"name": "link", "reason": "not a regular file"}]
    assert not (tmp_path / "evil.nt").exists() and not (tmp_path / "deep" / "evil.nt").exists()
    assert safe_name("C:\\windows\\..\\..\\x") == "x" and safe_name("..") == "data"


@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_duplicate_entry_names_stay_two_entries(tmp_path, kind):
    """Archives may repeat a name (zip appends, tar concatenates): each entry keeps its own content."""
    path = tmp_path / ("dup." + kind)
    contents = [b"<a:s> <a:p> <a:first> .\n", b"<a:s> <a:p> <a:second> .\n"]
    if kind == "zip":
        with zipfile.ZipFile(path, "w") as z, pytest.warns(UserWarning, match="Duplicate name"):
            for data in contents:
                z.writestr("a.nt", data)
    else:
        with tarfile.open(path, "w") as tar:
            for data in contents:
                info = tarfile.TarInfo("a.nt")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    result = layer(path, tmp_path / "out")
    assert [e.name for e in result.entries] == ["a.nt", "a.nt"]
    assert len({e.path for e in result.entries}) == 2
    assert [e.path.read_bytes() for e in result.entries] == contents
    assert result.unpacked_bytes == sum(map(len, contents))


def test_corrupt_archive_is_an_error(tmp_path):
    path = tmp_path / "c.gz"
    path.write_bytes(gzip.compress(bytes(range(256)) * 64)[:200])
    with pytest.raises(ArchiveError):
        layer(path, tmp_path / "out")


# -- encodings ---------------------------------------------------------------------------------


def test_utf16_with_bom(tmp_path):
    text = '<http://ex.org/s> <http://ex.org/p> "Grüße ☃" .\n'
    src = tmp_path / "u16.nt"
    src.write_bytes(text.encode("utf-16"))  # with BOM
    rec = recode_file(src, tmp_path / "out.nt")
    assert (rec.encoding, rec.source) == ("utf-16", "bom")
    assert rec.path.read_text(encoding="utf-8") == text and rec.number_of_replacements == 0


def test_latin1_without_declaration(tmp_path):
    text = '<http://ex.org/s> <http://ex.org/p> "Ça été déjà très élégant à Málaga, señor" .\n' * 20
    src = tmp_path / "l1.nt"
    src.write_bytes(text.encode("latin-1"))
    rec = recode_file(src, tmp_path / "out.nt")
    assert rec.source == "detector" and rec.encoding in (
        "latin-1",
        "iso8859-1",
        "cp1252",
        "iso8859-15",
    )  # read as the file's text
    assert rec.path.read_text(encoding="utf-8") == text and rec.number_of_replacements == 0


def test_invalid_utf8_is_recorded(tmp_path):
    good = '<http://ex.org/s> <http://ex.org/p> "ok é" .\n'.encode()
    src = tmp_path / "bad.nt"
    src.write_bytes(good + b'<http://ex.org/s> <http://ex.org/p> "bad \xff\xfe byte" .\n')
    rec = recode_file(src, tmp_path / "out.nt", http_charset="utf-8")
    assert rec.encoding == "utf-8" and rec.source == "http"
    assert rec.number_of_replacements == 2
    assert [r["bytes"] for r in rec.replacements] == ["ff", "fe"]
    assert rec.replacements[0]["offset"] == len(good) + len(b'<http://ex.org/s> <http://ex.org/p> "bad ')
    assert "\ufffd\ufffd" in rec.path.read_text(encoding="utf-8")


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"], ids=["plain", "bom"])
@pytest.mark.parametrize("chunk", [1 << 20, 7], ids=["1MiB", "7B"])
def test_replacement_offsets_across_chunk_boundaries(tmp_path, monkeypatch, bom, chunk):
    """Offsets count the file's bytes, whether or not a sequence is cut by a read boundary (the
    decoder holds its first bytes back) or a BOM starts the file."""
    monkeypatch.setattr(encodings, "CHUNK", chunk)
    start = b"a" * (chunk - 1 - len(bom))  # "é" straddles the first boundary
    data = bom + start + "é".encode() + b"\xff" + b"b" * (chunk - 2) + b"\xfe" + b"\xc3" + b"x\n"
    src = tmp_path / "bad.nt"
    src.write_bytes(data)
    rec = recode_file(src, tmp_path / "out.nt", http_charset="utf-8")
    assert rec.encoding == "utf-8" and rec.number_of_replacements == 3
    assert [(r["offset"], r["bytes"]) for r in rec.replacements] == [
        (data.index(b"\xff"), "ff"),
        (data.index(b"\xfe"), "fe"),
        (data.index(b"\xc3x"), "c3"),
    ]
    assert rec.path.read_bytes() == data[len(bom) :].decode("utf-8", "replace").encode()


def test_encoding_order():
    assert detect_encoding(b'\xef\xbb\xbf<?xml version="1.0" encoding="latin-1"?>', "ascii") == (
        "utf-8-sig",
        "bom",
    )
    assert detect_encoding(b'<?xml version="1.0" encoding="ISO-8859-1"?><a/>', "utf-8") == (
        "iso8859-1",
        "xml-declaration",
    )
    assert detect_encoding(b"plain", "windows-1252") == ("cp1252", "http")
    assert detect_encoding(b"plain \xc3\xa9", None) == ("utf-8", "detector")


# -- format guessing ---------------------------------------------------------------------------

#: Formats whose grammar contains the given one (a document valid in one is valid in the others).
SUPERSETS = {
    "N-Triples": {"N-Triples"},
    "N-Quads": {"N-Quads", "N-Triples"},
    "Turtle": {"Turtle", "N-Triples"},
    "TriG": {"TriG", "Turtle", "N-Triples", "N-Quads"},
    "RDF/XML": {"RDF/XML"},
}


@pytest.mark.skipif(not ROOT.exists(), reason="%s is absent (../shared/conformance)" % ROOT)
@pytest.mark.parametrize("suite", sorted(SUITES))
def test_guessing_on_suite_files_without_extension(suite, tmp_path):
    """Positive tests: the guess is the suite's format, or a format it contains whose cleaning of the
    document records no error and (eval tests) gives the very same cleaned output."""
    from votersdaily.laundromat.steps import launder_file

    fmt = SUITES[suite]
    wrong = []
    for test in load_manifest(suite):
        if test.kind not in ("PositiveSyntax", "Eval"):
            continue
        head = test.action.read_bytes()[:40000].decode("utf-8", "replace")
        guess = guess_format(head, None, None)
        assert guess.extension is None and guess.content_type_format is None
        if guess.format == fmt:
            continue
        if guess.format not in SUPERSETS[fmt]:
            wrong.append((test.id, guess.format))
            continue
        as_guessed = launder_file(test.action, "0" * 32, tmp_path / "g", fmt=guess.format, base_iri=test.base)
        as_suite = launder_file(test.action, "0" * 32, tmp_path / "s", fmt=fmt, base_iri=test.base)
        if as_guessed["clean"]["number_of_errors"] or as_guessed["clean"]["key"] != as_suite["clean"]["key"]:
            wrong.append((test.id, guess.format))
    assert wrong == []


def test_guess_records_all_three_and_disagreements():
    g = guess_format(
        "@prefix ex: <http://ex.org/> .\nex:a ex:b ex:c .\n", "application/rdf+xml", "data.nt.gz"
    )
    assert (g.format, g.sniffed, g.content_type_format, g.extension, g.extension_format) == (
        "Turtle",
        "Turtle",
        "RDF/XML",
        ".nt",
        "N-Triples",
    )
    # Every pair that differs: Turtle content (it has a prefix) is not the N-Triples the name says.
    assert g.disagreements == [
        "content says Turtle, content-type says RDF/XML",
        "content says Turtle, extension says N-Triples",
        "content-type says RDF/XML, extension says N-Triples",
    ]
    # Content that fits the format declared (N-Triples is Turtle) is no disagreement.
    assert guess_format("<a:s> <a:p> <a:o> .\n", "text/turtle", "x.ttl").disagreements == []
    assert sniff('{"@context": {}, "@id": "x"}') == "JSON-LD"
    assert sniff("<!DOCTYPE html><html><body vocab='http://schema.org/'></body></html>") == "RDFa"
    assert sniff('<?xml version="1.0"?>\n<rdf:RDF xmlns:rdf="x"></rdf:RDF>') == "RDF/XML"
    assert sniff("<a:s> <a:p> <a:o> <a:g> .\n") == "N-Quads"
    assert sniff("{ <a:s> <a:p> <a:o> . }") == "TriG"
    assert guess_format("", "text/turtle", None).format == "Turtle"
    assert guess_format("", None, "x.jsonld").format == "JSON-LD"


NT = ROOT / "rdf11" / "rdf-n-triples"


@pytest.mark.skipif(not ROOT.exists(), reason="%s is absent (../shared/conformance)" % ROOT)
def test_a_first_statement_longer_than_the_window_is_read_line_by_line(tmp_path):
    """A valid N-Triples file whose first line outruns the guessing window (its literal of 17 MiB,
    past the parser's token buffer) was guessed Turtle, whose parse stops at its first error: 0 of
    2 statements kept, no disagreement recorded though the name said N-Triples. Derived from
    nt-syntax-string-01.nt (its literal padded) and nt-syntax-string-02.nt (the second line)."""
    from votersdaily.laundromat.steps import launder_file

    first = (NT / "nt-syntax-string-01.nt").read_text(encoding="utf-8").strip()
    second = (NT / "nt-syntax-string-02.nt").read_text(encoding="utf-8").strip()
    assert first.endswith('"string" .')
    path = tmp_path / "dump.nt"
    path.write_text(
        first.replace('"string"', '"%s"' % ("s" * (17 << 20))) + "\n" + second + "\n", encoding="utf-8"
    )
    record = launder_file(path, "0" * 32, tmp_path / "out", name="dump.nt")
    assert (record["format"], record["format_sniffed"], record["format_disagreements"]) == (
        "N-Triples",
        "N-Triples",
        [],
    )
    clean = record["clean"]
    assert clean["number_of_unique_statements"] == 1 and clean["number_of_errors"] == 1
    assert clean["messages"][0]["line"] == 1 and "statement of" in clean["messages"][0]["message"]


def test_a_cut_off_statement_weighs_what_is_declared():
    """No line ends inside the window and it starts a statement: the Content-Type and extension
    decide (a line-based one first), else N-Triples; a declaration the content cannot be is
    recorded, and so is a Content-Type that differs from the extension."""
    head = ('<http://example/s> <http://example/p> "%s' % ("s" * SNIFF_CHARS))[:SNIFF_CHARS]
    cases = [
        (None, None, "N-Triples", []),
        (None, "dump.nt", "N-Triples", []),
        (None, "dump.nq", "N-Quads", []),
        ("text/turtle", "dump.ttl", "Turtle", []),
        ("text/turtle", "dump.nt", "N-Triples", ["content-type says Turtle, extension says N-Triples"]),
        (
            "application/rdf+xml",
            "dump.nq",
            "N-Quads",
            [
                "content says N-Triples, content-type says RDF/XML",
                "content-type says RDF/XML, extension says N-Quads",
            ],
        ),
    ]
    for content_type, name, fmt, disagreements in cases:
        guess = guess_format(head, content_type, name)
        assert (guess.format, guess.sniffed, guess.disagreements) == (fmt, "N-Triples", disagreements), (
            content_type,
            name,
        )
    # Not a statement's start (a prefixed name): still the Turtle family's guess.
    assert (
        guess_format(('ex:s ex:p "%s' % ("s" * SNIFF_CHARS))[:SNIFF_CHARS], None, "dump.nt").format
        == "Turtle"
    )
    # A window that holds a whole line is judged by its lines, as before.
    assert guess_format(head[:200] + '" .\n' + head[: SNIFF_CHARS - 205], None, None).format == "N-Triples"


def test_limits_hold_for_the_whole_tree(tmp_path):
    """Layers of one download's archive tree share the size, ratio and entry budgets: every layer
    below is harmless on its own, the tree is not."""
    limits = ArchiveLimits(max_total_bytes=3 << 20, max_ratio=1e6, max_entries=50, max_depth=4)  # size only
    content = b"<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .\n" * 20_000  # 1,120,000 bytes
    members = {"p%d.nt.gz" % i: gzip.compress(content) for i in range(4)}
    archive = tmp_path / "tree.zip"
    archive.write_bytes(sitedata.zip_of(members))
    root = archive.stat().st_size
    top = unpack(archive, tmp_path / "out", lambda e: child_key("root", e), name="tree.zip", limits=limits)
    used = TreeUsage(top.unpacked_bytes, len(top.entries), root)
    assert used.unpacked_bytes == sum(len(m) for m in members.values())
    outcomes = []
    for entry in top.entries:
        alone = unpack(
            entry.path,
            tmp_path / "alone",
            lambda e: child_key("alone", e),
            name=entry.name,
            depth=1,
            limits=limits,
        )  # each layer passes by itself
        assert alone.unpacked_bytes == len(content)
        try:
            layer_result = unpack(
                entry.path,
                tmp_path / "tree",
                lambda e, parent=entry.name: child_key(parent, e),
                name=entry.name,
                depth=1,
                limits=limits,
                used=used,
            )
        except ArchiveLimitExceeded as exc:
            outcomes.append(str(exc))
            continue
        used = TreeUsage(used.unpacked_bytes + layer_result.unpacked_bytes, used.entries + 1, root)
        outcomes.append("ok")
    # 4 x 1,120,000 bytes: the third layer takes the tree past 3 MiB.
    assert outcomes[:2] == ["ok", "ok"]
    assert all("unpacked size exceeds %d" % (3 << 20) in o for o in outcomes[2:]), outcomes

    # Ratio: small layers (under the 1 MiB grace each) of a tiny download add up to a huge ratio.
    many = {"z%02d.nt.gz" % i: gzip.compress(content[:800_000]) for i in range(12)}
    archive.write_bytes(sitedata.zip_of(many))
    limits = ArchiveLimits(max_total_bytes=1 << 30, max_ratio=200.0, max_entries=50, max_depth=4)
    top = unpack(archive, tmp_path / "out2", lambda e: child_key("r2", e), name="tree.zip", limits=limits)
    root = archive.stat().st_size
    used, refused = TreeUsage(top.unpacked_bytes, len(top.entries), root), None
    for i, entry in enumerate(top.entries):
        assert (
            unpack(
                entry.path,
                tmp_path / "alone2",
                lambda e: child_key("a2", e),
                name=entry.name,
                depth=1,
                limits=limits,
            ).unpacked_bytes
            == 800_000
        )  # harmless alone
        try:
            layer_result = unpack(
                entry.path,
                tmp_path / "tree2",
                lambda e, parent=entry.name: child_key(parent, e),
                name=entry.name,
                depth=1,
                limits=limits,
                used=used,
            )
        except ArchiveLimitExceeded as exc:
            refused = (i, str(exc))
            break
        used = TreeUsage(used.unpacked_bytes + layer_result.unpacked_bytes, used.entries + 1, root)
    total = top.unpacked_bytes + 800_000 * (refused[0] + 1) if refused else None
    assert refused is not None and "compression ratio exceeds 200" in refused[1]
    # Refused at the first layer that takes the tree past both the grace and 200 x the download.
    first = next(i for i in range(12) if top.unpacked_bytes + 800_000 * (i + 1) > max(1 << 20, 200 * root))
    assert refused[0] == first and total / root > 200

    # Entries count across the tree too.
    with pytest.raises(ArchiveLimitExceeded, match="more than 50 entries"):
        unpack(
            archive,
            tmp_path / "out3",
            lambda e: child_key("r3", e),
            name="tree.zip",
            limits=limits,
            used=TreeUsage(0, 40, None),
        )


@pytest.mark.parametrize("tail, chars", [(b"", 1003), (b"\xff", None), (b"\xc3", None)])
def test_large_documents_are_checked_in_two_halves(tmp_path, monkeypatch, tail, chars):
    """The halves meet at a character boundary (the middle byte here is inside an "é"); a bad byte
    in either half makes the whole document need recoding."""
    from votersdaily.laundromat import encodings

    monkeypatch.setattr(encodings, "PARALLEL_CHECK_BYTES", 1)
    path = tmp_path / "doc.nt"
    path.write_bytes(b"ab" + "é".encode() * 1000 + b"z" + tail)
    assert (
        tail or path.read_bytes()[path.stat().st_size // 2] & 0xC0 == 0x80
    )  # the middle is inside a character
    counts = encodings._valid_utf8_chars(path)
    assert (counts.chars if counts else None) == chars
    path.write_bytes(tail + b"ab" + "é".encode() * 1000 + b"z")
    counts = encodings._valid_utf8_chars(path)
    assert (counts.chars if counts else None) == chars


def test_lines_are_counted_in_the_pass_that_checks_the_encoding(tmp_path, monkeypatch):
    """A CR LF cut by the split between the two halves is one line ending, not two; the recode
    step's record says how many lines and which ending (no second read of the file)."""
    from votersdaily.laundromat import encodings

    monkeypatch.setattr(encodings, "PARALLEL_CHECK_BYTES", 1)
    path = tmp_path / "doc.nt"
    body = b"a" * 10 + b"\r\n" + b"b" * 8 + b"\r\nc"
    path.write_bytes(body)
    assert body[len(body) // 2 - 1 : len(body) // 2 + 1] == b"\r\n"  # the halves split the CR LF
    record = recode_file(path, tmp_path / "out.nt").as_record()
    assert record["newline"] == "crlf" and record["number_of_lines"] == 3
    path.write_bytes("é\ré\n".encode("latin-1"))  # not UTF-8: counted on the recoded text
    record = recode_file(path, tmp_path / "out.nt", http_charset="latin-1").as_record()
    assert record["number_of_lines"] == 2 and record["newline"] in ("cr", "lf")


def test_pdf_and_plain_text_are_not_rdf(tmp_path):
    """A real PDF and a real plain-text file (read in place from ../shared) are not RDF: no format,
    the guess's evidence recorded, nothing cleaned; N-Triples served as text/plain still is RDF."""
    from tests.support.services import shared_dir
    from votersdaily.laundromat.steps import launder_file

    pdf = shared_dir() / "fixtures" / "inplace" / "scholarly" / "dummy.pdf"
    text = shared_dir() / "conformance" / "README.md"
    if not pdf.exists() or not text.exists():
        pytest.skip("../shared is absent")
    record = launder_file(pdf, "p" * 32, tmp_path / "pdf", content_type="application/pdf", name="dummy.pdf")
    assert record["format"] is None and "clean" not in record
    assert record["error"] == (
        "not RDF: content starts with '%PDF-': a PDF document; content-type application/pdf; extension .pdf"
    )
    record = launder_file(text, "t" * 32, tmp_path / "txt", content_type="text/plain", name="README")
    assert record["format"] is None and "clean" not in record
    assert record["not_rdf"].startswith("content parses as no RDF serialisation (first line '# W3C RDF")
    nt = tmp_path / "data"
    nt.write_bytes(b"<http://example.org/s> <http://example.org/p> <http://example.org/o> .\n")
    record = launder_file(nt, "n" * 32, tmp_path / "nt", content_type="text/plain")
    assert record["format"] == "N-Triples" and record["clean"]["number_of_statements"] == 1
    assert guess_format("# only a comment\n").format == "N-Triples"  # nothing to tell, nothing lost


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_every_one_byte_corruption_is_unpacked_or_an_archive_error(tmp_path, kind):
    """Every byte of a valid archive (zip, tar.gz: written by the standard library) changed to
    three other values in turn: each variant unpacks or raises ArchiveError, never anything else
    (a zip's version field or UTF-8 name flag used to raise NotImplementedError/UnicodeDecodeError
    and wedge the record), and a failed one leaves no file behind."""
    entries = {
        "a.nt": b'<http://example.org/s> <http://example.org/p> "x" .\n',
        "b.ttl": b"@prefix ex: <e:> .\n",
    }
    valid = sitedata.zip_of(entries) if kind == "zip" else sitedata.tar_gz("a.nt", entries["a.nt"])
    outcomes = {"unpacked": 0, "ArchiveError": 0}
    for at in range(len(valid)):
        for value in {0x00, 0xFF, valid[at] ^ 0x08} - {valid[at]}:
            path = tmp_path / "variant"
            path.write_bytes(valid[:at] + bytes([value]) + valid[at + 1 :])
            out = tmp_path / ("out-%d-%d" % (at, value))
            try:
                layer(path, out)
                outcomes["unpacked"] += 1
            except ArchiveError:
                outcomes["ArchiveError"] += 1
                assert not out.exists() or not any(out.iterdir())
    assert outcomes["unpacked"] and outcomes["ArchiveError"]
