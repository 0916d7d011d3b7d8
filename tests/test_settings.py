"""Every default is written once, in votersdaily/settings.py, and reaches crawlers built without it."""

from __future__ import annotations

import ast
import contextlib
import inspect
import operator
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from scrapy.settings import Settings, default_settings
from scrapy.utils.test import get_crawler

from votersdaily import settings as project_settings
from votersdaily.defaults import DEFAULTS, ProjectDefaults
from votersdaily.ingest.config import IngestConfig
from votersdaily.ingest.spider import IngestSpider
from votersdaily.laundromat.contexts import ContextOptions
from votersdaily.laundromat.spider import LaundromatSpider
from votersdaily.plumbing.environment import ENVIRONMENT_NAMES
from votersdaily.setting_marks import OWN_PREFIXES
from votersdaily.spiders.house_votes import HouseVotesSpider
from votersdaily.store.writer import BatchWriter

PACKAGE = Path(project_settings.__file__).resolve().parent
GETTERS = {"get", "getint", "getfloat", "getbool", "getlist", "getdict", "getdictorlist", "getwithbase"}
#: Settings read by the code that neither Scrapy nor the project defines (third-party add-ons' own).
#: Settings of scrapy-playwright, read (votersdaily/rendering/confinement.py) with its own defaults.
THIRD_PARTY: set[str] = {
    "PLAYWRIGHT_BROWSER_PROVIDER",
    "PLAYWRIGHT_BROWSER_TYPE",
    "PLAYWRIGHT_CONTEXTS",
    "PLAYWRIGHT_LAUNCH_OPTIONS",
    "PLAYWRIGHT_CDP_URL",
    "PLAYWRIGHT_CONNECT_URL",
}


def setting_reads() -> list[tuple[str, int, str, bool]]:
    """(file, line, setting name, has a fallback) for every ``x.get*("NAME", ...)`` in the package."""
    reads = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "recordings" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in GETTERS or not node.args:
                continue
            first = node.args[0]
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                continue
            name = first.value
            if not name.isupper() or not name.replace("_", "").isalnum():
                continue
            fallback = len(node.args) > 1 or any(k.arg == "default" for k in node.keywords)
            reads.append((str(path.relative_to(PACKAGE)), node.lineno, name, fallback))
    return reads


def test_no_component_reads_a_default_of_its_own():
    own = [(f, line, name) for f, line, name, fallback in setting_reads() if fallback]
    assert setting_reads(), "the scan found no setting reads at all: it is broken"
    assert own == [], "literal fallbacks outside votersdaily/settings.py: %s" % own


def test_every_setting_read_is_defined_somewhere():
    known = set(dir(project_settings)) | set(dir(default_settings)) | THIRD_PARTY
    unknown = sorted({(name, f) for f, _line, name, _fb in setting_reads() if name not in known})
    assert unknown == [], "settings read but never given a default: %s" % unknown


def test_defaults_cover_every_project_setting():
    own = {name for name in dir(project_settings) if name.startswith(OWN_PREFIXES)}
    assert own and set(DEFAULTS) == own
    assert DEFAULTS["VOTERSDAILY_STORE_RETRY_TIMES"] == project_settings.VOTERSDAILY_STORE_RETRY_TIMES


@pytest.mark.parametrize("spider", [HouseVotesSpider, IngestSpider, LaundromatSpider])
def test_a_crawler_without_the_project_settings_gets_the_project_defaults(spider):
    crawler = get_crawler(spider, {"VOTERSDAILY_BATCH_SIZE": 7})
    settings = crawler.settings
    assert settings.getint("VOTERSDAILY_BATCH_SIZE") == 7  # what the caller set wins
    assert settings.getint("VOTERSDAILY_STORE_RETRY_TIMES") == project_settings.VOTERSDAILY_STORE_RETRY_TIMES
    assert settings.getint("INGEST_MAX_HOPS") == project_settings.INGEST_MAX_HOPS
    assert settings.get("LAUNDROMAT_OUTPUT_DIR") == project_settings.LAUNDROMAT_OUTPUT_DIR


def test_the_add_on_fills_in_defaults_for_other_spiders():
    settings = Settings({"INGEST_MAX_HOPS": 3})
    ProjectDefaults().update_settings(settings)
    assert settings.getint("INGEST_MAX_HOPS") == 3
    assert IngestConfig.from_settings(settings).max_redirects == project_settings.INGEST_MAX_REDIRECTS
    assert (
        settings.getfloat("VOTERSDAILY_STORE_RETRY_MAX_DELAY")
        == project_settings.VOTERSDAILY_STORE_RETRY_MAX_DELAY
    )


# -- defaults written in code ---------------------------------------------------------------------
# A keyword or field default that stands for a setting is a second written default: whatever is
# built without the settings (tests, tools) runs under it, crawls under the setting's. Such a default
# is written ``DEFAULTS["NAME"]`` (votersdaily/defaults.py, importable without Scrapy) or not at all.

#: Settings of one product, compared by name and value only with the defaults of that product's
#: package (and of the shared plumbing): the laundromat's redirect bound is not INGEST_MAX_REDIRECTS,
#: scrapyd's HTTP timeout is not SPLASH_TIMEOUT. Every other setting is compared with every module.
PRODUCT_OF_PREFIX = {
    "INGEST_": "ingest",
    "GROBID_": "ingest",
    "LAUNDROMAT_": "laundromat",
    "SPLASH_": "rendering",
    "FEDERAL_REGISTER_": "spiders",
}
SHARED_PACKAGE = "plumbing"
#: A bound and the count it bounds are two things (``unpacked_bytes`` so far, ``MAX_UNPACKED_BYTES``).
BOUND_WORDS = {"max", "min"}
#: Defaults the rules flag that do not stand for the setting they resemble, each with its reason.
#: Keyed by (file under votersdaily/, name); an entry that no longer matches anything fails the test.
NOT_SETTINGS = {
    ("plumbing/address_policy.py", "allow_private"): (
        "the address policy of both products, built from INGEST_* or LAUNDROMAT_* settings by "
        "from_settings; built without settings it refuses private addresses, whatever either "
        "setting's default becomes"
    ),
    ("plumbing/ssrf.py", "allow_private"): "the same safe default, for the middleware built in code",
    ("plumbing/pinned_fetch.py", "max_redirects"): (
        "the blocking fetch's own bound, not the ingest's INGEST_MAX_REDIRECTS (the ingest never "
        "uses it); its one caller, the laundromat's JSON-LD contexts, passes its MAX_REDIRECTS"
    ),
    ("plumbing/warc_writer.py", "max_size"): (
        "0: one file, never rotated (the event archive: one file per run); the ingest passes "
        "INGEST_WARC_MAX_SIZE"
    ),
    ("laundromat/processor.py", "workers"): (
        "LAUNDROMAT_WORKERS' None means one per CPU, which the spider resolves and passes; the "
        "number a Processor built in code starts with"
    ),
    ("crawlcontext.py", "SOURCE_TIMEZONE"): (
        "the zone a source writes its times in (most federal sources: Eastern), not the zone the "
        "site shows them in (VOTERSDAILY_SITE_TIMEZONE), though both are New York's"
    ),
    ("crawlcontext.py", "source_timezone"): "the crawl context's copy of the spider's zone, as above",
    ("spiders/white_house.py", "source_timezone"): "the zone of the White House's times, as above",
    ("ingest/config.py", "extract_processes"): (
        "INGEST_EXTRACT_PROCESSES' None means one per CPU, which from_settings resolves; a config "
        "built in code extracts in reactor threads (0), starting no processes"
    ),
}
_FOLD = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
}


#: What a default written in the code may be: a figure, a switch or a text.
Literal = bool | int | float | str


class NotLiteral(Exception):
    """The expression is not a figure or text written in the code."""


@dataclass(frozen=True)
class CodeDefault:
    file: str
    line: int
    #: The class (fields, ``__init__``) or function the default belongs to; "" for a module constant.
    owner: str
    name: str
    value: Literal

    def __str__(self) -> str:
        where = "%s.%s" % (self.owner, self.name) if self.owner else self.name
        return "%s:%d %s = %r" % (self.file, self.line, where, self.value)


def literal(node: ast.expr, constants: dict[str, Literal]) -> Literal:
    """The value of a literal default: a constant, arithmetic on constants (``4 * 1024**2``), or a
    constant of the same module; None (nothing given) and anything computed are not literals."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float, str)):
        return node.value
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = literal(node.operand, constants)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value
    if isinstance(node, ast.BinOp) and type(node.op) in _FOLD:
        left, right = literal(node.left, constants), literal(node.right, constants)
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right)):
            return _FOLD[type(node.op)](left, right)
    raise NotLiteral(ast.dump(node))


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[tuple[str, ast.expr]]:
    args = function.args
    positional = args.posonlyargs + args.args
    yield from (
        (a.arg, d)
        for a, d in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
    )
    yield from ((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None)


def _single_target(statement: ast.stmt) -> str | None:
    """The name ``statement`` assigns (``NAME = …``, ``name: type = …``), if it assigns one name."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target: ast.expr | None = statement.targets[0]
    else:
        target = statement.target if isinstance(statement, ast.AnnAssign) else None
    return target.id if isinstance(target, ast.Name) else None


def package_modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if "recordings" not in path.parts and path.name != "settings.py":
            yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text("utf-8"))


def code_defaults() -> list[CodeDefault]:
    """Every literal default in the package: module constants, class fields, parameters."""
    found = []
    for file, tree in package_modules():
        constants: dict[str, Literal] = {}
        for statement in tree.body:
            target = _single_target(statement)
            value = getattr(statement, "value", None)
            if target is not None and isinstance(value, ast.expr):
                with contextlib.suppress(NotLiteral):
                    constants[target] = literal(value, constants)
                    if target.isupper():
                        found.append(CodeDefault(file, statement.lineno, "", target, constants[target]))
        for node in ast.walk(tree):
            pairs: list[tuple[str, str, ast.expr, int]] = []
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    target = _single_target(item)
                    if target is not None and isinstance(item, (ast.Assign, ast.AnnAssign)) and item.value:
                        pairs.append((node.name, target, item.value, item.lineno))
                    if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                        pairs += [(node.name, n, d, item.lineno) for n, d in _parameters(item)]
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name != "__init__":
                pairs += [(node.name, n, d, node.lineno) for n, d in _parameters(node)]
            for owner, name, expr, line in pairs:
                with contextlib.suppress(NotLiteral):
                    found.append(CodeDefault(file, line, owner, name, literal(expr, constants)))
    return found


def _read_setting(expr: ast.expr) -> str | None:
    """The setting an argument is read from (``settings.getint("NAME")``, also in ``… or 1`` or
    ``… if … else …``), not looking into the arguments of another construction."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Call):
            name = _getter_setting(node)
            if name is not None:
                return name
            if node is not expr and node.keywords:
                return None
    return None


def _getter_setting(call: ast.Call) -> str | None:
    if not (isinstance(call.func, ast.Attribute) and call.func.attr in GETTERS and call.args):
        return None
    first = call.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value in DEFAULTS:
        return first.value
    return None


def wired_settings() -> dict[tuple[str, str], str]:
    """(class or function, keyword) → the setting the package passes to it (``BatchWriter(…,
    batch_size=settings.getint("VOTERSDAILY_BATCH_SIZE"))``, ``cls(…)`` in a class method)."""
    wired = {}
    for _file, tree in package_modules():
        classes: dict[ast.AST, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                classes.update((child, node.name) for child in ast.walk(node))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            callee = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if callee == "cls":
                callee = classes.get(node)
            for keyword in node.keywords:
                setting = _read_setting(keyword.value) if keyword.arg else None
                if callee and keyword.arg and setting:
                    wired[(callee, keyword.arg)] = setting
    return wired


def words(name: str) -> list[str]:
    return [w for w in name.lower().strip("_").split("_") if w and w != "default"]


def _in_order(part: list[str], whole: list[str]) -> bool:
    rest = iter(whole)
    return all(word in rest for word in part)


def _kind(value: object) -> type | None:
    if isinstance(value, bool):
        return bool
    return float if isinstance(value, (int, float)) else str if isinstance(value, str) else None


def _compared(file: str, setting: str) -> bool:
    product = next((p for prefix, p in PRODUCT_OF_PREFIX.items() if setting.startswith(prefix)), None)
    return product is None or file.split("/", maxsplit=1)[0] in (product, SHARED_PACKAGE)


def settings_resembled(default: CodeDefault, wired: dict[tuple[str, str], str]) -> list[str]:
    """The settings ``default`` stands for, and why:

    * *passed*: the package passes the setting to that very parameter or field;
    * *named*: its name (two words or more) is the setting's, words in order (``max_bytes`` ~
      ``LAUNDROMAT_CONTEXT_MAX_BYTES``, ``DEFAULT_SPOOL_DIR`` ~ ``VOTERSDAILY_SPOOL_DIR``), and its
      value is of the setting's kind, whatever the figure (two figures for one thing are the bug);
    * *valued*: the setting's value under a one-word name of it (``lease`` ~
      ``VOTERSDAILY_REDIS_LEASE``), or the setting's text under a name sharing a word with it
      (``DEFAULT_STORE_URI = "sqlite:///votersdaily.db"`` ~ ``VOTERSDAILY_STORE``); 0, "" and
      booleans are every ``off``'s values and say nothing on their own.

    A name and a setting are compared only when both are bounds or neither (:data:`BOUND_WORDS`), and
    a product's setting only with its own package's defaults (:data:`PRODUCT_OF_PREFIX`).
    """
    found = []
    if (default.owner, default.name) in wired:
        found.append("passed %s" % wired[(default.owner, default.name)])
    mine = words(default.name)
    kind = _kind(default.value)
    for setting, value in DEFAULTS.items():
        theirs = words(setting)
        if not mine or not _compared(default.file, setting):
            continue
        if bool(BOUND_WORDS & set(mine)) != bool(BOUND_WORDS & set(theirs)):
            continue
        in_order = _in_order(mine, theirs)
        if in_order and len(mine) >= 2 and kind is _kind(value):
            found.append("named %s" % setting)
        elif (
            kind is _kind(value) is not bool
            and default.value
            and default.value == value
            and (in_order or (kind is str and set(mine) & set(theirs)))
        ):
            found.append("valued %s" % setting)
    return found


def flagged_defaults() -> dict[CodeDefault, list[str]]:
    wired = wired_settings()
    flagged = {}
    for default in code_defaults():
        resembled = settings_resembled(default, wired)
        if resembled:
            flagged[default] = resembled
    return flagged


def test_no_keyword_or_field_default_writes_a_setting_again():
    """The defaults once written twice (``ContextOptions.max_bytes`` 1 MiB against 4 MiB,
    ``BatchWriter(batch_size=500, retry_times=0)`` against 1000 and 5, a spool folder written twice)
    come from DEFAULTS now; this is what keeps the next one out."""
    flagged = flagged_defaults()
    again = {str(d): why for d, why in flagged.items() if (d.file, d.name) not in NOT_SETTINGS}
    assert again == {}, "write these defaults as DEFAULTS[...] (votersdaily/defaults.py): %s" % again


def test_what_is_built_in_code_has_the_settings_defaults():
    """Tests and tools that build these without settings run under the bounds crawls run under."""
    assert ContextOptions().max_bytes == project_settings.LAUNDROMAT_CONTEXT_MAX_BYTES
    writer = inspect.signature(BatchWriter).parameters
    assert writer["batch_size"].default == project_settings.VOTERSDAILY_BATCH_SIZE
    assert writer["retry_times"].default == project_settings.VOTERSDAILY_STORE_RETRY_TIMES


def test_every_default_that_is_not_a_setting_says_why_and_is_still_there():
    flagged = {(d.file, d.name) for d in flagged_defaults()}
    stale = sorted(set(NOT_SETTINGS) - flagged)
    assert stale == [], "NOT_SETTINGS entries that no longer match a default: %s" % stale
    assert all(len(reason) > 20 for reason in NOT_SETTINGS.values())


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "@dataclass\nclass ContextOptions:\n    max_bytes: int = 1 << 20\n",
            "named LAUNDROMAT_CONTEXT_MAX_BYTES",
        ),
        (
            "class BatchWriter:\n    def __init__(self, *, batch_size: int = 500): ...\n",
            "named VOTERSDAILY_BATCH_SIZE",
        ),
        ("def write(retry_times=0): ...\n", "named VOTERSDAILY_STORE_RETRY_TIMES"),
        ('DEFAULT_SPOOL_DIR = ".votersdaily-spool"\n', "named VOTERSDAILY_SPOOL_DIR"),
        ('DEFAULT_STORE_URI = "sqlite:///votersdaily.db"\n', "valued VOTERSDAILY_STORE"),
        ("def queue(lease: float = 60.0): ...\n", "valued VOTERSDAILY_REDIS_LEASE"),
        (
            "def rows(keep: int = 1000): ...\nrows(keep=settings.getint('VOTERSDAILY_SCHEDULER_DECISIONS'))\n",
            "passed VOTERSDAILY_SCHEDULER_DECISIONS",
        ),
    ],
)
def test_the_guard_sees_defaults_written_again(tmp_path, monkeypatch, source, expected):
    """Each kind of default once written twice (above), written again in a module of the package's layout
    (store/ for the shared settings, laundromat/ for the laundromat's), is flagged."""
    folder = tmp_path / ("laundromat" if "Context" in source else "store")
    folder.mkdir()
    (folder / "module.py").write_text(source)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path)
    (why,) = flagged_defaults().values()
    assert expected in why


@pytest.mark.parametrize(
    "source",
    [
        "def run(timeout: float = 30.0): ...\n",  # scrapyd's HTTP timeout is not SPLASH_TIMEOUT
        "class TreeUsage:\n    unpacked_bytes: int = 0\n",  # a count, not its bound
        "def fetch(max_redirects: int = 5): ...\n",  # the laundromat's, not INGEST_MAX_REDIRECTS
        'class Store:\n    def __init__(self, prefix: str = ""): ...\n',  # empty: no prefix
        "def spider_health(runs: int = DEFAULTS['VOTERSDAILY_HEALTH_RUNS']): ...\n",
    ],
)
def test_the_guard_leaves_what_is_not_a_setting(tmp_path, monkeypatch, source):
    folder = tmp_path / "laundromat"
    folder.mkdir()
    (folder / "module.py").write_text(source)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path)
    assert flagged_defaults() == {}


def environment_reads() -> list[str]:
    """``file:line NAME`` for every read of a setting's environment variable outside
    votersdaily/plumbing/environment.py, by its name or by a module constant holding it."""
    names = set(DEFAULTS) | set(ENVIRONMENT_NAMES.values())
    constants: dict[str, set[object]] = {}
    for _file, tree in package_modules():
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            value = getattr(node, "value", None)
            if isinstance(value, ast.Constant):
                for target in targets:
                    if isinstance(target, ast.Name):
                        constants.setdefault(target.id, set()).add(value.value)
    reads = []
    for file, tree in package_modules():
        if file == "plumbing/environment.py":
            continue
        for node in ast.walk(tree):
            key = _environment_key(node)
            if isinstance(key, ast.Constant):
                held = {key.value}
            else:
                held = constants.get(key.id, set()) if isinstance(key, ast.Name) else set()
            reads += ["%s:%d %s" % (file, node.lineno, name) for name in sorted(held & names)]
    return reads


def _environment_key(node: ast.AST) -> ast.expr | None:
    """The key of ``os.environ.get(KEY)``, ``os.getenv(KEY)`` or ``os.environ[KEY]`` (read)."""
    if isinstance(node, ast.Call) and node.args:
        if ast.unparse(node.func) in ("os.environ.get", "os.getenv", "environ.get", "getenv"):
            return node.args[0]
    elif (
        isinstance(node, ast.Subscript)
        and isinstance(node.ctx, ast.Load)
        and ast.unparse(node.value) in ("os.environ", "environ")
    ):
        return node.slice
    return None


def test_only_the_one_resolver_reads_a_setting_from_the_environment():
    """Environment over setting is one rule (votersdaily/plumbing/environment.py): no other module
    reads a setting's variable itself (the four ways it was written before)."""
    assert environment_reads() == [], "read through votersdaily.plumbing.environment instead"


def test_the_environment_guard_sees_each_way_of_reading(tmp_path, monkeypatch):
    (tmp_path / "module.py").write_text(
        "import os\nfrom os import environ, getenv\nSTORE_ENV = 'VOTERSDAILY_STORE'\n"
        "a = os.environ.get('VOTERSDAILY_SPOOL_DIR')\nb = os.getenv(STORE_ENV)\n"
        "c = environ['VOTERSDAILY_REDIS_URL']\nd = getenv('LAUNDROMAT_WORKERS')\n"
        "os.environ['VOTERSDAILY_STORE'] = 'x'\ne = os.environ.get('HOME')\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path)
    assert [read.split(":", 1)[1] for read in environment_reads()] == [
        "4 VOTERSDAILY_SPOOL_DIR",
        "5 VOTERSDAILY_STORE",
        "6 VOTERSDAILY_REDIS_URL",
        "7 LAUNDROMAT_WORKERS",
    ]
