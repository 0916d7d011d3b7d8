"""Laundromat throughput against rapper, in one run, measured as a user runs it.

    python3 -m benchmarks.laundromat [--sizes 2000000,10000000] [--repeat 3] [--gzip-level N] [--no-turtle]

For each size: generates N-Triples statements (about 5% duplicate lines; IRIs, blank nodes, plain,
escaped, language-tagged and typed literals of many datatypes), runs ``scrapy crawl laundromat -a
url=file:///…`` on it in a subprocess (download streamed to disk → recode → guess → parse → skolemise
→ external sort/dedup → gzip, records in a fresh embedded store), and times ``rapper -i ntriples -o
ntriples`` (raptor2-utils) on the same file, alternating the two ``--repeat`` times (best and median
of each are printed; the machine is shared). Prints statements/s, the ratio to rapper and the peak
of the summed RSS of the crawl's whole process tree (cleaning workers included), sampled every 50 ms.
A large line-based document is cleaned by the cleaning worker and one process it forks (the second
core): each scans its ranges with the compiled scanner (``laundromat/_ntscan.c``; built by
scripts/setup.sh, else the pure-Python path runs) and writes them as sorted runs, which a k-way merge
feeds into the gzip. rapper is single-threaded, so the ratio compares one core against the whole
machine. Then Turtle: the same statements serialised as Turtle and cleaned. Only local files; no network.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

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


def crawl(path: Path, work: Path, gzip_level: int) -> dict:
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
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak, done = [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss_kb(proc.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, stderr = proc.communicate()
    elapsed = time.perf_counter() - started
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
        "format": parsed["format"],
        # A document's counts live on its own record; the cleaned record describes the output only.
        "clean": dict(cleaned["content"], **{k: v for k, v in parsed.items() if k.startswith("number_of_")}),
        "rss_tree_mb": peak[0] / 1024,
    }


def rapper(path: Path) -> dict:
    started = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%M", "rapper", "-q", "-i", "ntriples", "-o", "ntriples", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit("rapper failed: %s" % proc.stderr[-500:])
    return {"elapsed": elapsed, "rss_mb": int(proc.stderr.strip().splitlines()[-1]) / 1024}


def to_turtle(nt: Path, ttl: Path) -> None:
    import pyoxigraph as ox

    with open(ttl, "wb") as out:
        ox.serialize(
            ox.parse(path=str(nt), format=ox.RdfFormat.N_TRIPLES),
            out,
            ox.RdfFormat.TURTLE,
            prefixes={"r": "http://example.org/resource/", "v": "http://example.org/vocab#", "xsd": XSD},
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="2000000", help="comma-separated statement counts")
    parser.add_argument("--gzip-level", type=int, default=None, help="default: LAUNDROMAT_GZIP_LEVEL")
    parser.add_argument("--no-turtle", action="store_true")
    parser.add_argument(
        "--repeat", type=int, default=3, help="alternating runs of each (best and median shown)"
    )
    args = parser.parse_args(argv)
    if args.gzip_level is None:
        from votersdaily import settings

        args.gzip_level = settings.LAUNDROMAT_GZIP_LEVEL
    if shutil.which("rapper") is None:
        raise SystemExit("rapper is not installed (Debian raptor2-utils; scripts/setup.sh)")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    print(
        "laundromat cleaning benchmark (gzip level %d, %d CPU, load average %s, compiled path %s)"
        % (
            args.gzip_level,
            os.cpu_count() or 0,
            " ".join("%.2f" % x for x in os.getloadavg()),
            "built" if native.available() else "NOT built (pure Python; run scripts/setup.sh)",
        )
    )
    with tempfile.TemporaryDirectory(prefix="ll-bench-") as tmp_name:
        tmp = Path(tmp_name)
        for n in sizes:
            nt = tmp / ("data-%d.nt" % n)
            generate(nt, n)
            size_mb = nt.stat().st_size / 1e6
            runs, bases = [], []
            for _ in range(args.repeat):
                bases.append(rapper(nt))
                runs.append(crawl(nt, tmp / ("crawl-%d" % n), args.gzip_level))
            c = runs[0]["clean"]
            assert c["number_of_statements"] == n and c["number_of_errors"] == 0, c
            # the same statements every time (blank nodes are skolemised per download: keys differ)
            assert len({r["clean"]["number_of_unique_statements"] for r in runs}) == 1
            ours = [n / r["elapsed"] for r in runs]
            theirs = [n / b["elapsed"] for b in bases]
            print(
                "\nN-Triples, %d statements (%.0f MB; %d unique, %d duplicates), %d runs each"
                % (n, size_mb, c["number_of_unique_statements"], c["number_of_duplicates"], args.repeat)
            )
            print(
                "  scrapy crawl laundromat (subprocess, end to end): best %.2f s, median %.2f s; %9.0f statements/s (best)"
                % (n / max(ours), n / statistics.median(ours), max(ours))
            )
            print(
                "    peak RSS of the whole process tree (crawl + cleaning workers + sort): %.0f MB"
                % max(r["rss_tree_mb"] for r in runs)
            )
            print(
                "  rapper -i ntriples -o ntriples: best %.2f s, median %.2f s; %9.0f statements/s (best); peak RSS %.0f MB"
                % (
                    n / max(theirs),
                    n / statistics.median(theirs),
                    max(theirs),
                    max(b["rss_mb"] for b in bases),
                )
            )
            print(
                "  ratio (laundromat / rapper statements/s): best/best %.2fx, median/median %.2fx"
                % (max(ours) / max(theirs), statistics.median(ours) / statistics.median(theirs))
            )
            if not args.no_turtle:
                ttl = tmp / ("data-%d.ttl" % n)
                to_turtle(nt, ttl)
                nt.unlink()
                t = crawl(ttl, tmp / ("crawl-ttl-%d" % n), args.gzip_level)
                tc = t["clean"]
                assert t["format"] == "Turtle" and tc["number_of_errors"] == 0, (t["format"], tc)
                print(
                    "  Turtle (%.0f MB): %.2f s  %9.0f statements/s  peak RSS of the tree %.0f MB"
                    % (
                        ttl.stat().st_size / 1e6,
                        t["elapsed"],
                        tc["number_of_statements"] / t["elapsed"],
                        t["rss_tree_mb"],
                    )
                )
                ttl.unlink()
            else:
                nt.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
