"""Every ```sh block of the README and of docs/ runs here, so a command that drifts fails CI.

Commands run for real in a scratch folder beside a view of the checkout, on loopback only: the
embedded store, a PouchDB Server (the pages' ``127.0.0.1:5984``) and a Redis (``127.0.0.1:6379``)
started by the test. A command that cannot run in a test (a live crawl, a long-running server) is
marked in the README, on its line (``# not run in CI: why``) or for a whole block
(``<!-- readme: not run — why -->`` before it); it must still be a valid invocation: the
``python -m votersdaily`` parser accepts it, ``scrapy crawl`` names a spider, the program exists.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.services import REPO

README = REPO / "README.md"
#: The README first (its main job stores what the pages' feed and reparse examples read), then every
#: page of docs/ that shows shell commands: each contract's commands live on its page, checked alike.
DOCUMENTS = (
    README,
    *sorted(p for p in (REPO / "docs").glob("*.md") if "```sh" in p.read_text(encoding="utf-8")),
)
BLOCK_RE = re.compile(r"(?:<!-- readme: not run — (?P<why>[^>]+?) -->\n)?```sh\n(?P<body>.*?)```", re.S)
LINE_MARK = re.compile(r"#\s*not run in CI:\s*(?P<why>.+)$")
OPERATORS = {"&&", "||", "|", ";", "&", ">", ">>", "<", "(", ")"}
SCRAPY_CRAWL_OPTIONS = {"-a", "-s", "-o", "-O", "-L", "--logfile"}


@dataclass
class Command:
    line: str
    skipped_because: str | None  # None: runs in the test


def documents_text() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in DOCUMENTS)


def readme_blocks(text: str) -> list[list[Command]]:
    blocks = []
    for match in BLOCK_RE.finditer(text):
        block_why = match.group("why")
        commands = []
        for line in match.group("body").splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            mark = LINE_MARK.search(line)
            commands.append(Command(line, block_why or (mark.group("why") if mark else None)))
        blocks.append(commands)
    return blocks


def test_no_benchmark_is_run_by_the_readme_test():
    """A benchmark takes minutes: a docs block that runs one must say it is not run (the block's
    mark or the line's), or the command test runs out of time instead of naming the line."""
    unmarked = [
        command.line
        for block in readme_blocks(documents_text())
        for command in block
        if command.skipped_because is None and re.search(r"\bbenchmarks[./]", command.line)
    ]
    assert unmarked == [], "mark these benchmark lines `# not run in CI: why`: %s" % unmarked


def segments(line: str) -> list[list[str]]:
    """The simple commands of a shell line: split at && | ; & and redirections (their targets dropped)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    out, current, redirect = [], [], False
    for token in lexer:
        if token in OPERATORS:
            if current:
                out.append(current)
            current, redirect = [], token in (">", ">>", "<")
            continue
        if redirect:
            redirect = False
            continue
        current.append(token)
    if current:
        out.append(current)
    return out


def invalid(argv: list[str]) -> str | None:  # noqa: PLR0911 - one answer a rule
    """Why ``argv`` is not a valid invocation of what the README means, or None."""
    while argv and re.match(r"^[A-Z_][A-Z0-9_]*=", argv[0]):  # VAR=value prefix
        argv = argv[1:]
    if not argv:
        return None
    program, args = argv[0], argv[1:]
    if program == "flock":
        return invalid(args[1:]) if shutil.which("flock") else "flock is not installed"
    if program in ("export", "echo", "head", "cd"):
        return None
    if program == "votersdaily":  # the installed command (scripts/setup.sh installs it)
        return votersdaily_invalid(args)
    if program in ("python3", "python"):
        if args[:1] == ["-c"]:
            return None
        if args[:2] == ["-m", "votersdaily"]:
            return votersdaily_invalid(args[2:])
        if args[:1] == ["-m"]:
            return None if importlib.util.find_spec(args[1]) else "no module %s" % args[1]
        return None if (REPO / args[0]).is_file() else "no script %s" % args[0]
    if program == "scrapy":
        return scrapy_invalid(args)
    if program == "bash":
        return None if (REPO / args[0]).is_file() else "no script %s" % args[0]
    if (REPO / program).exists() or shutil.which(program):
        return None
    return "%s is neither a file of the checkout nor a program on PATH" % program


def votersdaily_invalid(args: list[str]) -> str | None:
    from votersdaily.cli import build_parser

    try:
        build_parser().parse_args(args)
    except SystemExit as exc:
        return "python -m votersdaily %s: rejected (exit %s)" % (" ".join(args), exc.code)
    return None


def scrapy_invalid(args: list[str]) -> str | None:
    from scrapy.spiderloader import SpiderLoader
    from scrapy.utils.project import get_project_settings

    if args[:1] == ["list"]:
        return None
    if args[:1] != ["crawl"] or len(args) < 2:
        return "scrapy %s: not a command the README test knows" % " ".join(args)
    os.environ.setdefault("SCRAPY_SETTINGS_MODULE", "votersdaily.settings")
    if args[1] not in SpiderLoader.from_settings(get_project_settings()).list():
        return "scrapy crawl: no spider %r" % args[1]
    options = args[2:]
    if len(options) % 2 or any(o not in SCRAPY_CRAWL_OPTIONS for o in options[::2]):
        return "scrapy crawl %s: options other than %s" % (" ".join(options), sorted(SCRAPY_CRAWL_OPTIONS))
    return None


def test_every_readme_command_is_a_valid_invocation():
    blocks = readme_blocks(documents_text())
    assert len(blocks) >= 8
    problems = [
        "%s: %s" % (command.line, why)
        for block in blocks
        for command in block
        for argv in segments(command.line)
        if (why := invalid(argv))
    ]
    assert problems == []


def test_the_checker_catches_drift():
    assert invalid(shlex.split("python3 -m votersdaily export ics --branchh Judicial"))
    assert invalid(shlex.split("python3 -m votersdaily crawl --al"))
    assert invalid(shlex.split("scrapy crawl house_vote"))
    assert invalid(shlex.split("scrapy crawl house_votes --url x"))
    assert invalid(shlex.split("node_modules/.bin/no-such-server"))
    assert invalid(shlex.split("python3 benchmarks/no_such_benchmark.py"))
    assert segments("echo '{\"a\": 1}' > f.jsonl && python3 -m votersdaily dump x | head  # c") == [
        ["echo", '{"a": 1}'],
        ["python3", "-m", "votersdaily", "dump", "x"],
        ["head"],
    ]


def scratch_checkout(tmp_path: Path) -> Path:
    """A folder that looks like the checkout (links to its files) where commands may write."""
    work = tmp_path / "checkout"
    work.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in (".git", "test-artifacts") and not entry.name.startswith(".scrapy"):
            (work / entry.name).symlink_to(entry)
    return work


@pytest.mark.slow  # every README command, with PouchDB and Redis
def test_readme_commands_run(tmp_path, pouchdb, redis_server):
    pouchdb.reset()
    work = scratch_checkout(tmp_path)
    env = dict(os.environ)
    env.update(
        VOTERSDAILY_STORE="sqlite:///%s" % (tmp_path / "votersdaily.db"),
        VOTERSDAILY_SPOOL_DIR=str(tmp_path / "spool"),
        PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
        SCRAPY_SETTINGS_MODULE="votersdaily.settings",
    )
    env.pop("VOTERSDAILY_REDIS_URL", None)
    ports = {
        "127.0.0.1:5984": "127.0.0.1:%d" % pouchdb.port,
        "127.0.0.1:6379": "127.0.0.1:%d" % redis_server.port,
    }
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    ran, producers = 0, []
    for block in readme_blocks(documents_text()):
        lines = [c.line for c in block if c.skipped_because is None]
        if not lines:
            continue
        script = "set -e\n"
        for line in lines:
            kind = producer(line)
            if kind:  # its output is kept to check that it produced something
                number = len(producers)
                producers.append((line, kind, number))
                script += '{ %s\n} >"%s/%d.out" 2>"%s/%d.err"\n' % (line, outputs, number, outputs, number)
            else:
                script += line + "\n"
        for readme_port, test_port in ports.items():
            script = script.replace(readme_port, test_port)
        proc = subprocess.run(
            ["bash", "-c", script],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        kept = "".join(path.read_text()[-1500:] for path in sorted(outputs.glob("*.err")))
        assert proc.returncode == 0, "README block failed:\n%s\n%s%s" % (script, proc.stderr[-3000:], kept)
        ran += len(lines)
    assert ran >= 15
    # Every example that shows data shows some with the shipped recordings.
    empty = [
        line
        for line, kind, number in producers
        if not produced(kind, line, work, outputs / ("%d.out" % number), outputs / ("%d.err" % number))
    ]
    assert len(producers) >= 6 and empty == []
    assert (work / "site" / "index.html").is_file() and (work / "judicial.ics").read_text().startswith(
        "BEGIN:VCALENDAR"
    )
    # What the commands wrote into the checkout is git-ignored: a `git status` after them is clean.
    written = sorted(p.name + ("/" if p.is_dir() else "") for p in work.iterdir() if not p.is_symlink())
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"],
        input="\n".join(written),
        cwd=REPO,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert {"site/", "judicial.ics"} <= set(written) and sorted(ignored) == written


#: ``scrapy crawl``'s last log line at INFO: what the run did with the events it scraped.
RUN_LOG_LINE = re.compile(r"result=success inserted=(\d+) updated=(\d+) unchanged=(\d+)")


def producer(line: str) -> str | None:
    """``"export"`` or ``"crawl"`` for a README line that shows data (a feed, a crawl of recordings)."""
    for argv in segments(line):
        if argv[:4] == ["python3", "-m", "votersdaily", "export"]:
            return "export"
        if argv[:2] == ["scrapy", "crawl"] and any(a.startswith("url=") for a in argv):
            return "crawl"
        if argv[:4] == ["python3", "-m", "votersdaily", "crawl"] and any(a.startswith("url=") for a in argv):
            return "crawl"
    return None


def produced(kind: str, line: str, work: Path, out: Path, err: Path) -> bool:
    """Whether the README line's command showed some data: events in its feed (written to standard
    output or to the file it redirects to), or events stored by its crawl."""
    if kind == "crawl":
        counts = [sum(map(int, m)) for m in RUN_LOG_LINE.findall(err.read_text())]
        table = [row.split() for row in out.read_text().splitlines()[2:]]
        return any(counts) or any(len(row) > 7 and row[1] == "success" and row[7] != "0" for row in table)
    target = re.search(r">\s*(\S+)", line.split("#", maxsplit=1)[0])
    text = (work / target.group(1)).read_text() if target else out.read_text()
    if text.startswith("BEGIN:VCALENDAR"):
        return "BEGIN:VEVENT" in text
    return json.loads(text)["count"] > 0


def test_readme_has_the_operator_sections():
    text = documents_text()
    for heading in (
        "## Exit codes",
        "## Troubleshooting",
        "### Starting scrapyd, the scheduler, Redis and the workers",
    ):
        assert heading in text
    for needle in (
        "VOTERSDAILY_REDIS_IDLE_CLOSE",
        "--redis-url",
        "scripts/pouchdb_server.py",
        "scrapy crawl",
    ):
        assert needle in text
    # The Troubleshooting messages are the ones the code prints.
    from votersdaily.store.check import USE

    assert USE in text


def operator_block() -> list[Command]:
    """docs/operations.md's block that starts scrapyd, the scheduler, Redis and the workers."""
    text = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    section = text.split("### Starting scrapyd, the scheduler, Redis and the workers", 1)[1]
    (block,) = readme_blocks(section.split("\n### ", 1)[0])[1:]
    return block


def test_the_operator_block_finds_the_project_outside_a_checkout(tmp_path):
    """An operator who installed the wheel has no clone and no ``scrapy.cfg``: the environment the
    block exports must name the project, or its ``scrapy crawl ingest_worker`` answers ``no active
    project`` (exit 2; before, the block relied on a checkout's ``scrapy.cfg``)."""
    exports = [c.line for c in operator_block() if c.line.startswith("export ") and c.skipped_because is None]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SCRAPY_", "VOTERSDAILY_"))}
    env.update(PYTHONPATH=str(REPO), HOME=str(tmp_path))
    proc = subprocess.run(
        ["bash", "-c", "set -e\n%s\nscrapy list" % "\n".join(exports)],
        cwd=tmp_path,  # an empty folder: no scrapy.cfg here or above
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {"ingest_worker", "laundromat_worker"} <= set(proc.stdout.split())
