"""What the documentation points at exists, so a rename that leaves a page behind fails here.

README.md, CONTRIBUTING.md and docs/*.md name repository paths (``votersdaily/store/couch.py``,
``tests/...``, ``benchmarks/...``), paths inside the package the way docs/write-path.md writes them
(``store/writer.py:BatchWriter.add``), bare file names (``native.py``), modules and their names
(``votersdaily.cli.views.project_databases``), tests (``file::test``, ``test_name``) and links to
other pages with their anchors. Each must exist: a path as a file or folder, a module as something
that imports, a name as an attribute (a function, class, method or constant), a test as a ``def``, an
anchor as a heading. docs/README.md indexes every page of docs/. Each test lists every broken
reference it finds at once.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from functools import cache
from pathlib import Path

from tests.support.services import REPO

DOCS = REPO / "docs"
#: Folders at the checkout's root that the pages name as ``folder/...``.
ROOTS = ("votersdaily", "tests", "scripts", "benchmarks", "docs", "couchdb_views", "deploy")
#: Files of these kinds are named bare (``native.py``) or from inside the package (``store/upsert.py``).
SOURCE_EXTENSIONS = ("py", "c", "js", "md", "toml", "cfg", "sh")
#: Not preceded by what continues a path, a URL, an address or a shell variable.
NOT_INSIDE = r"(?<![\w./:@~$-])"
ROOTED = re.compile(NOT_INSIDE + r"((?:%s)/[\w./-]*)((?:::?[A-Za-z_]\w*(?:\.\w+)*)*)" % "|".join(ROOTS))
SOURCE_FILE = re.compile(
    NOT_INSIDE
    + r"((?:[\w-]+/)*[\w-]+\.(?:%s))\b((?:::?[A-Za-z_]\w*(?:\.\w+)*)*)" % "|".join(SOURCE_EXTENSIONS)
)
DOTTED = re.compile(NOT_INSIDE + r"(votersdaily(?:\.[A-Za-z_]\w*)+)(?::([A-Za-z_]\w*(?:\.\w+)*))?")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")
#: Mentions that look like references and are not, each with the reason.
NOT_REFERENCES = {
    "votersdaily.db": "the embedded store's file name",
    "votersdaily/spiders/my_source.py": "the file a reader creates in docs/spiders.md, 'Adding a spider'",
    "my_source.py": "the same",
    "votersdaily/recordings/gov/my_source/": "where that reader puts the new spider's recordings",
}
#: Folders whose files are the checkout's own, not build output or installed packages.
SKIPPED_FOLDERS = {".git", "node_modules", "build", "w3c-suites", "dist", "test-artifacts"}


def documents() -> list[Path]:
    return [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted(DOCS.glob("*.md"))]


def shown(path: Path) -> str:
    return str(path.relative_to(REPO))


@cache
def file_names() -> frozenset[str]:
    """The names of every file of the checkout (a bare ``native.py`` must be one of them)."""
    names = set()
    for path in REPO.rglob("*"):
        parts = path.relative_to(REPO).parts
        if path.is_file() and not (SKIPPED_FOLDERS & set(parts)) and not parts[0].startswith("."):
            names.add(path.name)
    return frozenset(names)


def python_name_defined(path: Path, dotted: str) -> bool:
    """Whether each part of ``dotted`` is defined in ``path`` (a test file: read, not imported)."""
    text = path.read_text(encoding="utf-8")
    return all(
        re.search(r"^\s*(?:async def|def|class)\s+%s\b|^\s*%s\s*[:=]" % (part, part), text, re.M)
        for part in re.split(r"\.|::", dotted)
    )


def module_of(path: Path) -> str | None:
    """The module a package file imports as (``votersdaily/store/couch.py`` → ``votersdaily.store.couch``)."""
    relative = path.relative_to(REPO)
    if relative.parts[0] not in ("votersdaily", "benchmarks") or path.suffix != ".py":
        return None
    parts = list(relative.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def attribute_problem(module: str, dotted: str) -> str | None:
    try:
        value: object = importlib.import_module(module)
    except Exception as exc:
        return "module %s does not import (%s: %s)" % (module, type(exc).__name__, exc)
    for part in dotted.split("."):
        if not hasattr(value, part):
            return "%s has no %s" % (module, dotted)
        value = getattr(value, part)
    return None


def name_problem(path: Path, name: str) -> str | None:
    """Why ``name`` (after ``:`` or ``::``) is not defined by the file ``path``, or None."""
    name = name.lstrip(":")
    module = module_of(path)
    if module and "::" not in name:
        return attribute_problem(module, name)
    return None if python_name_defined(path, name) else "%s defines no %s" % (shown(path), name)


def resolve_path(token: str) -> list[Path]:
    """Where a path the pages name may be: from the checkout's root, or from inside the package."""
    if "/" not in token:
        return []
    return [p for p in (REPO / token, REPO / "votersdaily" / token) if p.exists()]


def path_problems(text: str) -> list[str]:
    problems = []
    seen = set()
    for regex in (ROOTED, SOURCE_FILE):
        for match in regex.finditer(text):
            token, names = match.group(1).rstrip("."), match.group(2)
            if token in NOT_REFERENCES or (token, names) in seen:
                continue
            seen.add((token, names))
            if "/" not in token:  # a bare file name: some file of the checkout has it
                if token not in file_names():
                    problems.append("%s: no file of that name" % token)
                elif names:
                    candidates = [p for p in REPO.rglob(token) if not SKIPPED_FOLDERS & set(p.parts)]
                    if all(name_problem(p, names) for p in candidates):
                        problems.append("%s%s: %s" % (token, names, name_problem(candidates[0], names)))
                continue
            found = resolve_path(token)
            if not found:
                problems.append("%s: no such file or folder" % token)
            elif names and found[0].is_file():
                why = name_problem(found[0], names)
                if why:
                    problems.append("%s%s: %s" % (token, names, why))
    return problems


def is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a part before the last is a module, not a package
        return False


def module_problems(text: str) -> list[str]:
    problems = []
    for match in DOTTED.finditer(text):
        dotted, attribute = match.group(1).rstrip("."), match.group(2)
        if dotted in NOT_REFERENCES:
            continue
        parts = dotted.split(".")
        # The longest importable prefix is the module; the rest are its attributes.
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            if is_module(module):
                rest = ".".join(parts[cut:] + ([attribute] if attribute else []))
                why = attribute_problem(module, rest) if rest else attribute_problem(module, "__name__")
                if why:
                    problems.append("%s: %s" % (match.group(0), why))
                break
        else:
            problems.append("%s: no such module" % dotted)
    return problems


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces become hyphens."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    found: set[str] = set()
    counts: dict[str, int] = {}
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and (heading := re.match(r"#{1,6}\s+(.*)", line)):
            base = slug(heading.group(1))
            counts[base] = counts.get(base, -1) + 1
            found.add(base if counts[base] == 0 else "%s-%d" % (base, counts[base]))
    return frozenset(found)


def link_problems(page: Path, text: str) -> list[str]:
    problems = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        if not linked.exists():
            problems.append("(%s): no such file" % target)
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            problems.append("(%s): %s has no heading with that anchor" % (target, linked.name))
    return problems


def test_every_path_module_and_name_the_documents_mention_exists():
    problems = []
    for page in documents():
        text = page.read_text(encoding="utf-8")
        for why in path_problems(text) + module_problems(text) + link_problems(page, text):
            problems.append("%s: %s" % (shown(page), why))
    assert problems == [], "broken references:\n" + "\n".join(problems)


def test_every_test_the_documents_name_exists():
    """The pages point at tests (``tests/…py``, ``file::test``, or a test by its name alone): each must
    exist, or the pointer sends a reader nowhere."""
    texts = "\n".join(p.read_text(encoding="utf-8") for p in documents())
    tests = {p.stem for p in (REPO / "tests").rglob("test_*.py")}
    names = set()
    for path in (REPO / "tests").rglob("*.py"):
        names |= set(re.findall(r"^(?:async )?def (test_\w+)", path.read_text(encoding="utf-8"), re.M))
    missing = []
    for path, name in re.findall(r"(tests/[\w/]+\.py)(?:::(\w+))?", texts):
        if not (REPO / path).is_file():
            missing.append(path)
        elif name and not re.search(r"^(?:async )?def %s\b" % name, (REPO / path).read_text(), re.M):
            missing.append("%s::%s" % (path, name))
    for name in set(re.findall(r"\b(test_[a-z0-9_]+)\b", texts)):
        if name not in tests and name not in names:
            missing.append(name)
    assert sorted(missing) == []


def test_the_docs_index_lists_every_page():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    listed = {target.partition("#")[0] for target in LINK.findall(index)}
    unlisted = sorted(p.name for p in DOCS.glob("*.md") if p.name != "README.md" and p.name not in listed)
    assert unlisted == [], "pages docs/README.md does not list: %s" % ", ".join(unlisted)


def test_the_checker_finds_what_drifted():
    """Each kind of reference, broken on purpose, is reported."""
    text = (
        "`spiders/ingest.py` `votersdaily/nothing_here.py` `store/upsert.py:upsert_all` "
        "`votersdaily.store.names.no_such_name` `votersdaily.no_module` `no_file_anywhere.py` "
        "`tests/test_schema.py::test_nothing_like_this`"
    )
    problems = path_problems(text) + module_problems(text)
    for needle in (
        "spiders/ingest.py: no such file",
        "votersdaily/nothing_here.py: no such file",
        "store/upsert.py:upsert_all: votersdaily.store.upsert has no upsert_all",
        "votersdaily.store.names has no no_such_name",
        "votersdaily.no_module: votersdaily has no no_module",
        "no_file_anywhere.py: no file of that name",
        "defines no test_nothing_like_this",
    ):
        assert any(needle in p for p in problems), (needle, problems)
    fine = "`store/upsert.py:upsert` `votersdaily.cli.views.project_databases` `native.py` `docs/events.md`"
    assert path_problems(fine) + module_problems(fine) == []
    page = REPO / "README.md"
    assert link_problems(page, "[a](docs/events.md#no-such-heading) [b](docs/nothing.md)") == [
        "(docs/events.md#no-such-heading): events.md has no heading with that anchor",
        "(docs/nothing.md): no such file",
    ]
    assert slug("CouchDB: users and roles, and several deployments on one cluster") == (
        "couchdb-users-and-roles-and-several-deployments-on-one-cluster"
    )
    assert slug("2. Event documents (`vd_events`)") == "2-event-documents-vd_events"


#: "issue 15", "Issue 24, point 10", "part-B": labels of a tracker a reader of the checkout cannot open.
ISSUE_CITATION = re.compile(r"\b[Ii]ssues? ?#?\d+|\b[Pp]art[- ]B\b")


def test_no_page_test_or_benchmark_cites_an_issue_number():
    """A comment, docstring or page says what it means; an issue number sends the reader elsewhere."""
    files = [*documents(), *(REPO / "scripts").glob("*.py"), *(REPO / "benchmarks").glob("*.py")]
    files += [p for p in (REPO / "tests").rglob("*.py") if "fixtures" not in p.parts and p != Path(__file__)]
    citations = [
        "%s:%d: %s" % (shown(path), number, line.strip())
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ISSUE_CITATION.search(line)
    ]
    assert citations == [], "issue numbers cited:\n" + "\n".join(citations)
