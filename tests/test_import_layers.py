"""The import picture of the package: no circle, the three products side by side, few floors.

The graph is read statically (``ast``) from every module of ``votersdaily/``: imports at module level
and inside functions alike (a function-local import that hides a circle is still a circle). Imports
under ``if TYPE_CHECKING:`` never run and are left out of the circles and floors; the products may not
name each other even there. A *part* is a top-level package or module of ``votersdaily``, except that
the event spiders (``spiders/``, ``pipelines.py``, ``reparse.py``, ``archive.py``) are one product and
the command line (``cli/``, ``commands/``, ``__main__.py``) one part. A part's floor is 1 plus the
highest floor of what it imports (circles condensed). ``python3 -m tests.test_import_layers`` prints
the floors.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path

import votersdaily

PACKAGE = Path(votersdaily.__file__).resolve().parent
ROOT = PACKAGE.name

#: Parts made of several top-level packages or modules; every other one is a part by itself.
PARTS = {
    "spiders": "event spiders",
    "pipelines": "event spiders",
    "reparse": "event spiders",
    "archive": "event spiders",
    "cli": "command line",
    "commands": "command line",
    "__main__": "command line",
}
#: The three products, which never import one another.
PRODUCTS = ("event spiders", "ingest", "laundromat")
#: What the products share; it imports none of them.
NEUTRAL = "plumbing"
MAX_FLOORS = 7
#: Circles between modules the package still has, each with its reason. An entry that no longer
#: matches a circle fails the test (take it out); a circle not listed here fails it too.
KNOWN_CIRCLES: dict[frozenset[str], str] = {}


@cache
def module_names() -> dict[str, Path]:
    """``votersdaily.x.y`` → its file, for every module of the package."""
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def _type_checking_only(tree: ast.Module) -> set[int]:
    """Line numbers of the statements under ``if TYPE_CHECKING:``."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            lines.update(
                n.lineno for statement in node.body for n in ast.walk(statement) if hasattr(n, "lineno")
            )
    return lines


def _imported(module: str, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> Iterator[str]:
    """The package's modules an import statement of ``module`` loads (a name imported from a
    module counts as that module)."""

    def owner(name: str) -> str:
        while name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    if isinstance(node, ast.Import):
        yield from (owner(alias.name) for alias in node.names if alias.name.split(".")[0] == ROOT)
        return
    if node.level:
        base = module if modules[module].name == "__init__.py" else module.rsplit(".", 1)[0]
        for _ in range(node.level - 1):
            base = base.rsplit(".", 1)[0]
        target = base + ("." + node.module if node.module else "")
    else:
        target = node.module or ""
    if target.split(".")[0] != ROOT:
        return
    for alias in node.names:
        submodule = target + "." + alias.name
        yield submodule if submodule in modules else owner(target)


@cache
def import_graph(with_type_checking: bool = False) -> dict[str, set[str]]:
    """Module → the package's modules it imports (module level and in functions)."""
    modules = module_names()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text("utf-8"))
        skipped = set() if with_type_checking else _type_checking_only(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno not in skipped:
                graph[name].update(m for m in _imported(name, node, modules) if m != name)
    return graph


def short(module: str) -> str:
    return module.removeprefix(ROOT + ".")


def part_of(module: str) -> str:
    top = short(module).split(".")[0]
    return PARTS.get(top, top)


def part_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    parts: dict[str, set[str]] = {part_of(m): set() for m in graph}
    for module, imported in graph.items():
        parts[part_of(module)].update(part_of(m) for m in imported if part_of(m) != part_of(module))
    return parts


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of ``graph`` (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    found.append(component)
    return found


def floors(graph: dict[str, set[str]]) -> dict[frozenset[str], int]:
    """Each component (a circle condensed, or one node) → its floor: 1 for what imports nothing
    of the package, else 1 + the highest floor below it. Components come out of :func:`circles`
    with everything they import already numbered."""
    numbered: dict[frozenset[str], int] = {}
    component_of: dict[str, frozenset[str]] = {}
    for component in map(frozenset, circles(graph)):
        below = {component_of[m] for node in component for m in graph[node] if m not in component}
        numbered[component] = 1 + max((numbered[c] for c in below), default=0)
        component_of.update(dict.fromkeys(component, component))
    return numbered


def floor_lines(numbered: dict[frozenset[str], int]) -> Iterable[str]:
    by_floor: dict[int, list[str]] = defaultdict(list)
    for component, floor in numbered.items():
        by_floor[floor].append(" ⇄ ".join(sorted(component)))
    for floor in sorted(by_floor, reverse=True):
        yield "%d: %s" % (floor, ", ".join(sorted(by_floor[floor])))


def test_modules_import_one_another_in_no_circle_but_the_known_ones():
    graph = import_graph()
    assert len(graph) > 150 and sum(map(len, graph.values())) > 500  # the whole package was read
    found = {frozenset(map(short, c)) for c in circles(graph) if len(c) > 1}
    assert found == set(KNOWN_CIRCLES), "circles not in KNOWN_CIRCLES: %s; listed but gone: %s" % (
        [sorted(c) for c in found - set(KNOWN_CIRCLES)],
        [sorted(c) for c in set(KNOWN_CIRCLES) - found],
    )


def test_the_products_import_none_of_one_another_and_the_plumbing_none_of_them():
    """Not even for annotations: what two products share lives in the plumbing (or below)."""
    parts = part_graph(import_graph(with_type_checking=True))
    assert set(PRODUCTS) | {NEUTRAL} <= set(parts)
    crossing = {p: sorted(parts[p] & set(PRODUCTS)) for p in (*PRODUCTS, NEUTRAL) if parts[p] & set(PRODUCTS)}
    assert crossing == {}


def test_no_module_imports_a_private_name_of_another_part():
    """``from votersdaily.ingest.warc import _reason`` in the archive was a private name crossing
    parts: what two parts share is public, in the part below both."""
    modules = module_names()
    crossing = []
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom):
                targets = set(_imported(name, node, modules))
                private = [
                    a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")
                ]
                if private and any(part_of(t) != part_of(name) for t in targets):
                    crossing.append("%s: %s" % (short(name), ", ".join(private)))
    assert crossing == []


def test_the_parts_stand_on_at_most_seven_floors_with_the_products_on_one():
    """Circles between parts are only those the known module circles make (condensed, one floor)."""
    parts = part_graph(import_graph())
    allowed = {frozenset(map(part_of, (ROOT + "." + m for m in circle))) for circle in KNOWN_CIRCLES}
    numbered = floors(parts)
    shown = "\n".join(floor_lines(numbered))
    assert [c for c in numbered if len(c) > 1 and c not in allowed] == [], shown
    floor_of = {part: floor for component, floor in numbered.items() for part in component}
    assert len({floor_of[p] for p in PRODUCTS}) == 1, shown
    assert max(numbered.values()) <= MAX_FLOORS, shown
    print("\n" + shown)


def test_contributings_layout_table_gives_each_home_its_floor():
    """CONTRIBUTING.md's Layout table says each home's floor; it drifts from the code no further."""
    numbered = floors(part_graph(import_graph()))
    floor_of = {part: floor for component, floor in numbered.items() for part in component}
    text = (PACKAGE.parent / "CONTRIBUTING.md").read_text("utf-8")
    rows = re.findall(r"^\| (\d+) \|[^\n]*\| ([^|\n]*) \|$", text, re.MULTILINE)
    said = {}
    for floor, home in rows:
        for path in re.findall(r"`(votersdaily/[^`]+)`", home):
            said[path] = (int(floor), floor_of[part_of(ROOT + "." + path.split("/")[1].removesuffix(".py"))])
    assert len(said) > 30  # the table was found
    assert {path: floors for path, floors in said.items() if floors[0] != floors[1]} == {}
    homes = {p.split("/")[1].removesuffix(".py") for p in said}
    every_part = {short(m).split(".")[0] for m in module_names()} - {ROOT}
    assert sorted(every_part - homes) == []  # every top-level package and module has a row


if __name__ == "__main__":
    print("\n".join(floor_lines(floors(part_graph(import_graph())))))
