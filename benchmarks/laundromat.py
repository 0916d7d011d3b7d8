"""Laundromat cleaning throughput against rapper, in one run.

    python benchmarks/laundromat.py [--sizes 1000000,10000000] [--repeat 3] [--gzip-level N] [--no-turtle]

For each size: generates N-Triples statements (about 5% duplicate lines; IRIs, blank nodes, plain,
escaped, language-tagged and typed literals of many datatypes), cleans the file end to end (recode →
guess → parse → skolemise → external sort/dedup → gzip, :func:`launder_file`) in a fresh process,
and times ``rapper -i ntriples -o ntriples`` (raptor2-utils) on the same file, alternating the two
``--repeat`` times (best and median of each are printed; the machine is shared). Prints statements/s,
the ratio to rapper and peak RSS: the cleaning process alone, and the peak of the summed RSS of its
whole process tree (parsing workers and ``sort`` included), sampled every 50 ms. Large line-based
documents are parsed by two forked workers (the second core) while ``sort`` runs: rapper is
single-threaded, so the ratio compares one core against the whole machine. Then Turtle: the same
statements serialised as Turtle and cleaned. Only local files; no network.
"""

from __future__ import annotations

import argparse
import multiprocessing
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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


def _clean_worker(path: str, out: str, fmt: str | None, gzip_level: int, queue) -> None:
    from votersdaily.laundromat.cleaning import CleanOptions
    from votersdaily.laundromat.steps import launder_file

    started = time.perf_counter()
    record = launder_file(path, "0" * 32, out, name=path, options=CleanOptions(gzip_level=gzip_level))
    elapsed = time.perf_counter() - started
    queue.put(
        {
            "elapsed": elapsed,
            "format": record["format"],
            "clean": {k: v for k, v in record["clean"].items() if k != "messages"},
            "rss_self_mb": _peak_rss_kb() / 1024,
        }
    )


def _peak_rss_kb() -> int:
    """This process's own peak RSS: VmHWM is per address space, whereas ``ru_maxrss`` of a spawned
    (fork + exec) process starts from its parent's peak on Linux and would report the benchmark's."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


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
            for task in os.listdir("/proc/%d/task" % current):
                with open("/proc/%d/task/%s/children" % (current, task)) as f:
                    todo.extend(int(c) for c in f.read().split())
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return total


def clean(path: Path, out: Path, gzip_level: int) -> dict:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_clean_worker, args=(str(path), str(out), None, gzip_level, queue))
    proc.start()
    peak, done = [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss_kb(proc.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    result = queue.get()
    done.set()
    sampler.join()
    proc.join()
    shutil.rmtree(out, ignore_errors=True)
    result["rss_tree_mb"] = peak[0] / 1024
    return result


def rapper(path: Path) -> dict:
    started = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%M", "rapper", "-q", "-i", "ntriples", "-o", "ntriples", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
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
    parser.add_argument("--sizes", default="1000000", help="comma-separated statement counts")
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
        "laundromat cleaning benchmark (gzip level %d, %d CPU, load average %s)"
        % (args.gzip_level, os.cpu_count() or 0, " ".join("%.2f" % x for x in os.getloadavg()))
    )
    with tempfile.TemporaryDirectory(prefix="ll-bench-") as tmp:
        tmp = Path(tmp)
        for n in sizes:
            nt = tmp / ("data-%d.nt" % n)
            generate(nt, n)
            size_mb = nt.stat().st_size / 1e6
            runs, bases = [], []
            for _ in range(args.repeat):
                bases.append(rapper(nt))
                runs.append(clean(nt, tmp / ("out-%d" % n), args.gzip_level))
            c = runs[0]["clean"]
            assert c["number_of_statements"] == n and c["number_of_errors"] == 0, c
            assert len({r["clean"]["key"] for r in runs}) == 1  # the same cleaned bytes every time
            ours = [n / r["elapsed"] for r in runs]
            theirs = [n / b["elapsed"] for b in bases]
            print(
                "\nN-Triples, %d statements (%.0f MB; %d unique, %d duplicates), %d runs each"
                % (n, size_mb, c["number_of_unique_statements"], c["number_of_duplicates"], args.repeat)
            )
            print(
                "  laundromat clean end to end: best %.2f s, median %.2f s; %9.0f statements/s (best)"
                % (n / max(ours), n / statistics.median(ours), max(ours))
            )
            print(
                "    peak RSS: cleaning process %.0f MB; whole process tree (workers + sort) %.0f MB"
                % (max(r["rss_self_mb"] for r in runs), max(r["rss_tree_mb"] for r in runs))
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
                t = clean(ttl, tmp / ("out-ttl-%d" % n), args.gzip_level)
                tc = t["clean"]
                assert t["format"] == "Turtle" and tc["number_of_errors"] == 0, (t["format"], tc)
                print(
                    "  Turtle (%.0f MB): %.2f s  %9.0f statements/s  peak RSS %.0f MB (tree %.0f MB)"
                    % (
                        ttl.stat().st_size / 1e6,
                        t["elapsed"],
                        tc["number_of_statements"] / t["elapsed"],
                        t["rss_self_mb"],
                        t["rss_tree_mb"],
                    )
                )
                ttl.unlink()
            else:
                nt.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
