"""Laundromat throughput against rapper and serdi, in one run, measured as a user runs it.

    python3 -m benchmarks.laundromat [--sizes 2000000,10000000] [--repeat 3] [--formats nt,ttl,rdf,jsonld]
                                     [--jsonld-size 50000] [--gzip-level N]

For each size: generates N-Triples statements (about 5% duplicate lines; IRIs, blank nodes, plain,
escaped, language-tagged and typed literals of many datatypes) and writes the same statements as
Turtle (by ``serdi``, else pyoxigraph), RDF/XML (by ``rapper``) and, at ``--jsonld-size`` statements
(the laundromat parses JSON-LD in memory, up to LAUNDROMAT_MAX_IN_MEMORY_BYTES), JSON-LD (by
pyoxigraph). Each file is cleaned by ``scrapy crawl laundromat -a url=file:///…`` in a subprocess
(download streamed to disk → recode → guess → parse → skolemise → sort/dedup → gzip → content key,
records in a fresh embedded store) and parsed by the references on the same file: ``rapper -i <format>
-o ntriples`` (raptor2-utils) and ``serdi -i <format> -o ntriples`` (serd's, which only parses and
prints; it reads N-Triples, Turtle and TriG). rapper reads no JSON-LD: its nearest format, RDF/JSON
of the same statements (written here), is its reference. The runs alternate ``--repeat`` times (the
machine is shared); best and median of each are printed, the ratios as the reference's time over
the crawl's, and the peak of the summed RSS of the crawl's whole process tree (cleaning workers
included), sampled every 50 ms. The CPU time (user and system) of each, the crawl's whole tree
included, is printed too: on a shared machine it is what the load disturbs least (the crawl uses
both cores, the references one). Load averages are printed before each format. A large
N-Triples/N-Quads document is cleaned by the cleaning worker and one process it forks (the second
core); Turtle and TriG by the compiled reader (``laundromat/_turtle.c``; built by scripts/setup.sh,
else pyoxigraph), a large document in two ranges on both cores (``laundromat/turtle_ranges.py``),
each with a thread sorting runs; RDF/XML in ranges on both cores, each read by the
compiled reader of plain RDF/XML (``laundromat/_rdfxml.c``, else pyoxigraph); rapper and serdi use
one core. Only local files. The package's bytecode is compiled first (:func:`compile_package`), as an
installed package's is.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from votersdaily.laundromat import native

REPO = Path(__file__).resolve().parents[1]

XSD = "http://www.w3.org/2001/XMLSchema#"
LANGS = ["en", "EN-gb", "fr", "de-CH", "nl", "ja"]


def statement(i: int, rnd: random.Random) -> str:
    subject = (
        "<http://example.org/resource/%d>" % rnd.randrange(200_000)
        if rnd.random() < 0.8
        else "_:b%d" % rnd.randrange(50_000)
    )
    predicate = "<http://example.org/vocab#p%d>" % rnd.randrange(60)
    kind = i % 12
    if kind == 0:
        obj = '"plain literal %d with \\"quotes\\", a tab\\t and a newline\\n"' % i
    elif kind == 1:
        obj = '"%d"^^<%sinteger>' % (rnd.randrange(-(10**6), 10**6), XSD)
    elif kind == 2:
        obj = '"chaîne numéro %d"@%s' % (i, rnd.choice(LANGS))
    elif kind == 3:
        obj = "<http://example.org/resource/%d>" % rnd.randrange(500_000)
    elif kind == 4:
        obj = "_:o%d" % rnd.randrange(20_000)
    elif kind == 5:
        obj = '"x\\u00E9\\U0001F600 %d"^^<%sstring>' % (i, XSD)
    elif kind == 6:
        obj = '"%d.%02d"^^<%sdecimal>' % (rnd.randrange(10**4), rnd.randrange(100), XSD)
    elif kind == 7:
        obj = '"%s"^^<%sboolean>' % (rnd.choice(["true", "false"]), XSD)
    elif kind == 8:
        obj = '"2026-%02d-%02dT12:00:00Z"^^<%sdateTime>' % (rnd.randrange(1, 13), rnd.randrange(1, 29), XSD)
    elif kind == 9:
        obj = '"%.6e"^^<%sdouble>' % (rnd.random() * 1e6, XSD)
    elif kind == 10:
        obj = '"日本語のテキスト %d"@ja' % i
    else:
        obj = '"custom %d"^^<http://example.org/dt#custom>' % i
    return "%s %s %s .\n" % (subject, predicate, obj)


def generate(path: Path, n: int, seed: int = 42) -> None:
    rnd = random.Random(seed)
    recent: list[str] = []
    with open(path, "w", encoding="utf-8") as f:
        written = 0
        batch = []
        while written < n:
            if recent and rnd.random() < 0.05:
                line = rnd.choice(recent)
            else:
                line = statement(written, rnd)
                if len(recent) < 10_000:
                    recent.append(line)
                else:
                    recent[rnd.randrange(10_000)] = line
            batch.append(line)
            written += 1
            if len(batch) >= 100_000:
                f.write("".join(batch))
                batch = []
        f.write("".join(batch))


def children_cpu() -> float:
    """CPU seconds (user and system) of the children this process has waited for, theirs included:
    a run's share of the machine, less disturbed than its time when others load it."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _tree_rss_kb(pid: int) -> int:
    """Summed RSS of ``pid`` and all its descendants (Linux /proc)."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            with open("/proc/%d/status" % current) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
            for task in Path("/proc/%d/task" % current).iterdir():
                with open(task / "children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return total


def crawl(path: Path, work: Path, gzip_level: int) -> dict[str, Any]:
    """``scrapy crawl laundromat -a url=file:///…`` in a subprocess, as a user runs it (a fresh
    embedded store), timed from start to exit; the peak of the summed RSS of its process tree
    (the crawl, its cleaning workers, ``sort``), sampled every 50 ms."""
    from votersdaily.store import open_store

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    store_uri = "sqlite:///%s" % (work / "store.db")
    env = dict(
        os.environ,
        VOTERSDAILY_STORE=store_uri,
        SCRAPY_SETTINGS_MODULE="votersdaily.settings",
        PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    command = [sys.executable, "-m", "scrapy", "crawl", "laundromat", "-a", "url=" + path.resolve().as_uri()]
    command += [
        "-s",
        "LAUNDROMAT_OUTPUT_DIR=%s" % (work / "out"),
        "-s",
        "LAUNDROMAT_GZIP_LEVEL=%d" % gzip_level,
    ]
    command += ["-s", "LOG_LEVEL=WARNING"]
    started, cpu = time.perf_counter(), children_cpu()
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak, done = [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss_kb(proc.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, stderr = proc.communicate()
    elapsed, cpu = time.perf_counter() - started, children_cpu() - cpu
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit("the crawl failed: %s" % stderr.decode("utf-8", "replace")[-2000:])
    store = open_store(store_uri)
    try:
        docs = list(store.iter_docs("ll_seeds"))
    finally:
        store.close()
    (parsed,) = [d for d in docs if d.get("status") == "parsed"]
    (cleaned,) = [d for d in docs if d.get("status") == "cleaned"]
    shutil.rmtree(work, ignore_errors=True)
    return {
        "elapsed": elapsed,
        "cpu": cpu,
        "format": parsed["format"],
        # A document's counts live on its own record; the cleaned record describes the output only.
        "clean": dict(cleaned["content"], **{k: v for k, v in parsed.items() if k.startswith("number_of_")}),
        "rss_tree_mb": peak[0] / 1024,
    }


def reference(command: list[str]) -> dict[str, Any]:
    """A reference parser's run (output discarded): seconds and its peak RSS."""
    started, cpu = time.perf_counter(), children_cpu()
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%M", *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    elapsed, cpu = time.perf_counter() - started, children_cpu() - cpu
    if proc.returncode != 0:
        raise SystemExit("%s failed: %s" % (command[0], proc.stderr[-500:]))
    return {"elapsed": elapsed, "cpu": cpu, "rss_mb": int(proc.stderr.strip().splitlines()[-1]) / 1024}


def to_turtle(nt: Path, ttl: Path) -> None:
    import pyoxigraph as ox

    with open(ttl, "wb") as out:
        ox.serialize(
            ox.parse(path=str(nt), format=ox.RdfFormat.N_TRIPLES),
            out,
            ox.RdfFormat.TURTLE,
            prefixes={"r": "http://example.org/resource/", "v": "http://example.org/vocab#", "xsd": XSD},
        )


def tool(name: str) -> str:
    """The absolute path of a reference tool."""
    found = shutil.which(name)
    if found is None:
        raise SystemExit("%s is not installed (scripts/setup.sh installs it)" % name)
    return found


def to_rdfxml(nt: Path, rdf: Path) -> str:
    with open(rdf, "wb") as out:
        subprocess.run(
            [tool("rapper"), "-q", "-i", "ntriples", "-o", "rdfxml", str(nt)], stdout=out, check=True
        )
    return "rapper"


def to_turtle_file(nt: Path, ttl: Path) -> str:
    """The statements as Turtle, written by serdi (as a user's tools would) when it is installed."""
    if shutil.which("serdi") is None:
        to_turtle(nt, ttl)
        return "pyoxigraph"
    with open(ttl, "wb") as out:
        subprocess.run([tool("serdi"), "-i", "ntriples", "-o", "turtle", str(nt)], stdout=out, check=True)
    return "serdi"


def _rdf_json_value(term: Any) -> dict[str, str]:
    import pyoxigraph as ox

    if isinstance(term, ox.NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, ox.BlankNode):
        return {"type": "bnode", "value": "_:" + term.value}
    value = {"type": "literal", "value": term.value}
    if term.language:
        value["lang"] = term.language
    elif term.datatype.value != XSD + "string":
        value["datatype"] = term.datatype.value
    return value


def to_jsonld(nt: Path, jsonld: Path, rdf_json: Path, count: int) -> int:
    """The first ``count`` statements as JSON-LD (pyoxigraph) and, for rapper, as RDF/JSON; how many
    statements they hold (a JSON-LD document, like RDF/JSON, holds each once)."""
    import itertools

    import pyoxigraph as ox

    with open(nt, "rb") as f:
        head = b"".join(itertools.islice(f, count))
    quads = list(dict.fromkeys(ox.parse(head, ox.RdfFormat.N_TRIPLES)))
    jsonld.write_bytes(ox.serialize(quads, format=ox.RdfFormat.JSON_LD) or b"")
    graph: dict[str, dict[str, list[dict[str, str]]]] = {}
    for q in quads:
        subject = q.subject.value if isinstance(q.subject, ox.NamedNode) else "_:" + q.subject.value
        graph.setdefault(subject, {}).setdefault(q.predicate.value, []).append(_rdf_json_value(q.object))
    rdf_json.write_text(json.dumps(graph, ensure_ascii=False), encoding="utf-8")
    return len(quads)


#: The benchmark's formats: the file suffix, rapper's and serdi's name for it (None: serdi reads none).
FORMATS = {
    "nt": ("N-Triples", ".nt", "ntriples", "ntriples"),
    "ttl": ("Turtle", ".ttl", "turtle", "turtle"),
    "rdf": ("RDF/XML", ".rdf", "rdfxml", None),
    "jsonld": ("JSON-LD", ".jsonld", "json", None),
}


def compile_package() -> str:
    """The package's bytecode, compiled beside its modules as pip compiles an installed package's.
    With ``PYTHONDONTWRITEBYTECODE`` set (this machine's shells set it) and no bytecode there, every
    crawl and every cleaning worker would compile the package's modules from source as it starts,
    0.1-0.15 s of CPU a crawl that no installed package pays. What is said in the header."""
    import compileall

    package = REPO / "votersdaily"
    compileall.compile_dir(str(package), quiet=1)
    return "compiled (as pip compiles an installed package)"


def _seconds(runs: list[dict[str, Any]], key: str = "elapsed") -> tuple[float, float]:
    times = [r[key] for r in runs]
    return min(times), statistics.median(times)


def measure(
    label: str,
    path: Path,
    reference_path: Path,
    formats: tuple[str, str, str, str | None],
    n: int,
    args: Any,
    work: Path,
) -> None:
    name, _, rapper_name, serdi_name = formats
    references: dict[str, list[str]] = {
        "rapper -i %s -o ntriples" % rapper_name: [
            tool("rapper"),
            "-q",
            "-i",
            rapper_name,
            "-o",
            "ntriples",
            str(reference_path),
        ]
    }
    if serdi_name and shutil.which("serdi"):
        references["serdi -i %s -o ntriples" % serdi_name] = [
            tool("serdi"),
            "-i",
            serdi_name,
            "-o",
            "ntriples",
            str(path),
        ]
    print("\n%s; load average %s" % (label, " ".join("%.2f" % x for x in os.getloadavg())))
    runs: list[dict[str, Any]] = []
    theirs: dict[str, list[dict[str, Any]]] = {k: [] for k in references}
    for _ in range(args.repeat):
        for key, command in references.items():
            theirs[key].append(reference(command))
        runs.append(crawl(path, work, args.gzip_level))
    first = runs[0]
    c = first["clean"]
    assert first["format"] == name, (first["format"], name)
    assert c["number_of_statements"] == n and c["number_of_errors"] == 0, c
    assert len({r["clean"]["number_of_unique_statements"] for r in runs}) == 1
    best, median = _seconds(runs)
    cpu = _seconds(runs, "cpu")[0]
    print(
        "  scrapy crawl laundromat (subprocess, end to end): best %.2f s, median %.2f s (CPU of the tree, best: "
        "%.2f s); %9.0f statements/s (best); %d unique, %d duplicates"
        % (best, median, cpu, n / best, c["number_of_unique_statements"], c["number_of_duplicates"])
    )
    print(
        "    peak RSS of the whole process tree (crawl + cleaning workers): %.0f MB"
        % max(r["rss_tree_mb"] for r in runs)
    )
    for key, results in theirs.items():
        their_best, their_median = _seconds(results)
        their_cpu = _seconds(results, "cpu")[0]
        print(
            "  %s: best %.2f s, median %.2f s (CPU %.2f s); peak RSS %.0f MB; ratio (its time / the crawl's) "
            "best/best %.2fx, median/median %.2fx (CPU %.2fx)"
            % (
                key,
                their_best,
                their_median,
                their_cpu,
                max(r["rss_mb"] for r in results),
                their_best / best,
                their_median / median,
                their_cpu / cpu,
            )
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="2000000", help="comma-separated statement counts")
    parser.add_argument("--gzip-level", type=int, default=None, help="default: LAUNDROMAT_GZIP_LEVEL")
    parser.add_argument("--formats", default="nt,ttl,rdf,jsonld", help="of %s" % ",".join(FORMATS))
    parser.add_argument("--jsonld-size", type=int, default=50_000, help="statements of the JSON-LD document")
    parser.add_argument(
        "--repeat", type=int, default=3, help="alternating runs of each (best and median shown)"
    )
    args = parser.parse_args(argv)
    if args.gzip_level is None:
        from votersdaily import settings

        args.gzip_level = settings.LAUNDROMAT_GZIP_LEVEL
    if shutil.which("rapper") is None:
        raise SystemExit("rapper is not installed (Debian raptor2-utils; scripts/setup.sh)")
    formats = [f for f in args.formats.split(",") if f]
    unknown = set(formats) - set(FORMATS)
    if unknown:
        raise SystemExit("unknown formats %s (of %s)" % (", ".join(sorted(unknown)), ", ".join(FORMATS)))
    sizes = [int(s) for s in args.sizes.split(",") if s]
    print(
        "laundromat cleaning benchmark (gzip level %d, %d CPU, load average %s, compiled path %s, serdi %s, "
        "bytecode %s)"
        % (
            args.gzip_level,
            os.cpu_count() or 0,
            " ".join("%.2f" % x for x in os.getloadavg()),
            "built" if native.available() else "NOT built (pure Python; run scripts/setup.sh)",
            "installed" if shutil.which("serdi") else "NOT installed (Debian serdi; scripts/setup.sh)",
            compile_package(),
        )
    )
    with tempfile.TemporaryDirectory(prefix="ll-bench-") as tmp_name:
        tmp = Path(tmp_name)
        for n in sizes:
            nt = tmp / ("data-%d.nt" % n)
            generate(nt, n)
            for key in formats:
                spec = FORMATS[key]
                path, reference_path, count = tmp / ("data-%d%s" % (n, spec[1])), None, n
                if key == "nt":
                    path, writer = nt, "this script"
                elif key == "ttl":
                    writer = to_turtle_file(nt, path)
                elif key == "rdf":
                    writer = to_rdfxml(nt, path)
                else:
                    reference_path = tmp / ("data-%d.rj" % n)
                    count, writer = (
                        to_jsonld(nt, path, reference_path, min(n, args.jsonld_size)),
                        "pyoxigraph",
                    )
                label = "%s, %d statements (%.0f MB, written by %s), %d runs each" % (
                    spec[0],
                    count,
                    path.stat().st_size / 1e6,
                    writer,
                    args.repeat,
                )
                if reference_path is not None:
                    label += "; rapper's reference: RDF/JSON of the same statements (%.0f MB)" % (
                        reference_path.stat().st_size / 1e6
                    )
                measure(label, path, reference_path or path, spec, count, args, tmp / "crawl")
                if path != nt:
                    path.unlink()
                if reference_path is not None:
                    reference_path.unlink()
            nt.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
