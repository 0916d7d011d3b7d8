"""The test site of the laundromat crawls: a semantic sitemap, a gzipped N-Triples dump (with a
duplicate, a blank node, a broken line and a VoID dataDump link), a zip of Turtle files with a nested
tar.gz, and the Turtle file the VoID link names. Written for these tests (not a recorded source).
"""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile

import pyoxigraph as ox

EX = "http://example.org/"
NT_GOOD = (
    '<http://example.org/s1> <http://example.org/p> "one" .\n'
    '<http://example.org/s1> <http://example.org/p> "one" .\n'
    "<http://example.org/s2> <http://example.org/p> _:b1 .\n"
    '_:b1 <http://example.org/q> "caf\\u00E9"@EN .\n'
    "<http://example.org/ds> <http://rdfs.org/ns/void#dataDump> <{site}/dumps/c.ttl> .\n"
)
NT_BAD_LINE = '<http://example.org/s3> <http://example.org/p> "unterminated .\n'
TTL_X = '@prefix ex: <http://example.org/> .\nex:x ex:p "x" ; ex:q [ ex:r 1 ] .\n'
TTL_Y = "PREFIX ex: <http://example.org/>\nex:y ex:p ex:x, ex:y .\n"
NT_Z = '<http://example.org/z> <http://example.org/p> "z"^^<http://www.w3.org/2001/XMLSchema#string> .\n'
TTL_C = '@prefix ex: <http://example.org/> .\nex:c ex:p "from the VoID link" .\n'


def sitemap(site: str) -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:sc="http://sw.deri.org/2007/07/sitemapextension/scschema.xsd">
  <sc:dataset>
    <sc:datasetLabel>Dump A</sc:datasetLabel>
    <sc:linkedDataPrefix>http://example.org/</sc:linkedDataPrefix>
    <sc:dataDumpLocation>{site}/dumps/a.nt.gz</sc:dataDumpLocation>
    <changefreq>weekly</changefreq>
  </sc:dataset>
  <sc:dataset>
    <sc:datasetLabel>Dump B</sc:datasetLabel>
    <sc:dataDumpLocation>{site}/dumps/b.zip</sc:dataDumpLocation>
    <sc:dataDumpLocation>relative/dump.nt</sc:dataDumpLocation>
  </sc:dataset>
</urlset>
"""


def tar_gz(name: str, data: bytes) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def zip_of(entries: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return raw.getvalue()


def mount(site) -> dict[str, str]:
    """Programme ``site``; the URLs by name."""
    base = site.url
    urls = {
        "sitemap": site.route("/sitemap.xml", sitemap(base), content_type="application/xml"),
        "a": site.route(
            "/dumps/a.nt.gz",
            gzip.compress((NT_GOOD.format(site=base) + NT_BAD_LINE).encode()),
            content_type="application/gzip",
        ),
        "b": site.route(
            "/dumps/b.zip",
            zip_of(
                {
                    "x.ttl": TTL_X.encode(),
                    "dir/y.ttl": TTL_Y.encode(),
                    "nested/z.tar.gz": tar_gz("z.nt", NT_Z.encode()),
                }
            ),
            content_type="application/zip",
        ),
        "c": site.route("/dumps/c.ttl", TTL_C, content_type="text/turtle; charset=utf-8"),
    }
    return urls


def expected_graph(text: str, fmt: ox.RdfFormat) -> set[str]:
    """The statements of a test document, read by pyoxigraph directly (blank nodes as a marker)."""
    out = set()
    for q in ox.parse(text, fmt, base_iri=EX):
        terms = [
            ("_:" if isinstance(t, ox.BlankNode) else str(t)) for t in (q.subject, q.predicate, q.object)
        ]
        out.add(" ".join(terms))
    return out
