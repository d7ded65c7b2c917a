"""The module import graph of the installed packages (docs/packages.md, "Layers"; DESIGN.md
§2.6): no module cycles, and the readers (``pubsift.adapters.readers``) never import the
layers that use them (the Spark job, the broker, the command line, the adapters' own
top-level modules). Read from the source with ``ast``: every import statement counts,
inside functions too, but not those under ``if TYPE_CHECKING:`` (never run). An import
names the module it loads: ``from p import m`` is an edge to ``p.m`` when that is a
module, else to ``p``; the parent packages a dotted import loads are not edges (their
``__init__`` runs first, but nothing imports back into a half-built parent)."""

from __future__ import annotations

import ast
import re
from itertools import pairwise
from pathlib import Path

from source_tree import FOLDERS, ROOT

READERS = "pubsift.adapters.readers"
#: what the readers may import from: their own package, the core, the models
READERS_MAY_IMPORT = (READERS, "pubsift.core", "pubsift.models")

#: the strongly connected components of more than one module allowed in the graph, each
#: the exact set of its modules (with the edges that close it, for the reader): any other
#: cycle, a module joining one of these, or one of these gone fails the test (remove it
#: from here then). None is left: a new entry needs its reason.
KNOWN_CYCLES: dict[frozenset[str], str] = {}


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the packages under ``root``, by dotted name: the Python sources and
    the compiled (Cython ``.pyx``) ones."""
    found: dict[str, Path] = {}
    for folder, package in FOLDERS.items():
        paths = [*(root / folder).rglob("*.py"), *(root / folder).rglob("*.pyx")]
        for path in sorted(paths):
            rel = path.relative_to(root / folder).with_suffix("").parts
            parts = [*package.split("."), *rel]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run: anywhere in the module but the body of an
    ``if TYPE_CHECKING:`` (its ``else`` runs, so it counts)."""
    out: list[ast.Import | ast.ImportFrom] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


#: a Python import statement of a Cython source (``cimport`` lines are not: compile time)
_PYX_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]+(?:\([^)]*\)|[^\n]+)|import[ \t]+[^\n]+)", re.M
)


_PYX_INCLUDE = re.compile(r"""^include[ \t]+["']([^"']+)["']""", re.M)


def _parsed(path: Path) -> ast.AST:
    r"""The module's syntax tree; of a ``.pyx``, a module of its Python import statements
    and those of the files it ``include``\ s (each at the line where it, or the include,
    stands)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        return ast.parse(text, str(path))
    tree = ast.Module(body=[], type_ignores=[])
    parts = [(1, text)] + [
        (text.count("\n", 0, m.start()) + 1, (path.parent / m.group(1)).read_text("utf-8"))
        for m in _PYX_INCLUDE.finditer(text)
    ]
    for at, part in parts:
        for m in _PYX_IMPORT.finditer(part):
            line = at if part is not text else part.count("\n", 0, m.start()) + 1
            node = ast.parse(m.group(0).strip()).body[0]
            ast.increment_lineno(node, line - 1)
            tree.body.append(node)
    return tree


def graph(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """module -> {imported module of these packages: line of the first such import}."""
    mods = modules(root)
    edges: dict[str, dict[str, int]] = {}
    for name, path in mods.items():
        is_package = path.name == "__init__.py"
        mine: dict[str, int] = {}
        for node in _import_nodes(_parsed(path)):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = name.split(".")
                    base = base[: len(base) - node.level + (1 if is_package else 0)]
                    src = ".".join([*base, node.module] if node.module else base)
                else:
                    src = node.module or ""
                subs = [f"{src}.{a.name}" for a in node.names if f"{src}.{a.name}" in mods]
                targets = subs if len(subs) == len(node.names) else [src, *subs]
            for target in targets:
                if target in mods and target != name:
                    mine.setdefault(target, node.lineno)
        edges[name] = mine
    return edges


def components(edges: dict[str, dict[str, int]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm,
    iterative), sorted by their sorted modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    found: list[frozenset[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return sorted(found, key=sorted)


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """One cycle (``[a, b, ..., a]``) through each strongly connected component of more
    than one module, sorted."""
    return sorted(_one_cycle(sorted(c), edges) for c in components(edges))


def _one_cycle(component: list[str], edges: dict[str, dict[str, int]]) -> list[str]:
    """A shortest cycle through the component's first module (breadth first)."""
    inside = set(component)
    first = component[0]
    came: dict[str, str] = {}
    frontier = [first]
    while frontier:
        nxt = []
        for node in frontier:
            for child in sorted(edges[node]):
                if child not in inside:
                    continue
                if child == first:
                    path = [node]
                    while path[-1] != first:
                        path.append(came[path[-1]])
                    return [first, *reversed(path[:-1]), first]
                if child not in came:
                    came[child] = node
                    nxt.append(child)
        frontier = nxt
    raise AssertionError(component)  # a strongly connected component has a cycle


def _shown(cycle: list[str], edges: dict[str, dict[str, int]]) -> str:
    return " -> ".join(f"{a} (line {edges[a][b]})" for a, b in pairwise(cycle)) + f" -> {cycle[-1]}"


def upward_from_readers(edges: dict[str, dict[str, int]]) -> list[str]:
    """The imports of a reader module outside the readers, the core and the models."""
    return sorted(
        f"{module}:{line}: {target}"
        for module, targets in edges.items()
        if module == READERS or module.startswith(READERS + ".")
        for target, line in targets.items()
        if not any(target == p or target.startswith(p + ".") for p in READERS_MAY_IMPORT)
    )


def test_the_packages_have_no_import_cycle():
    edges = graph()
    assert len(edges) > 150 and READERS in edges, len(edges)
    assert sum(len(t) for t in edges.values()) > 500
    found = components(edges)
    new = [_shown(_one_cycle(sorted(c), edges), edges) for c in found if c not in KNOWN_CYCLES]
    assert new == []
    gone = [KNOWN_CYCLES[c] for c in KNOWN_CYCLES if c not in found]
    assert gone == [], "this cycle is gone (or changed): remove it from KNOWN_CYCLES"


def test_the_readers_import_nothing_of_the_layers_that_use_them():
    edges = graph()
    readers = [m for m in edges if m.startswith(READERS + ".")]
    assert len(readers) > 15, readers
    assert upward_from_readers(edges) == []


def test_the_checks_find_a_planted_cycle_and_an_upward_import(tmp_path):
    """On a small tree: a cycle through a function's import is found, one under
    TYPE_CHECKING is not an edge, and a reader importing the Spark job is reported."""
    for folder in FOLDERS:
        (tmp_path / folder).mkdir()
    readers = tmp_path / "adapters" / "readers"
    readers.mkdir()
    (tmp_path / "adapters" / "spark").mkdir()
    for init in (readers, tmp_path / "adapters", tmp_path / "adapters" / "spark"):
        (init / "__init__.py").write_text("")
    (readers / "a.py").write_text("from pubsift.adapters.readers import b\n")
    (readers / "b.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pubsift.adapters.readers.a import x\n"
        "def f():\n"
        "    from . import c\n"
    )
    (readers / "c.py").write_text(
        "import pubsift.adapters.readers.a\nfrom pubsift.adapters.spark import job\n"
    )
    (tmp_path / "adapters" / "spark" / "job.py").write_text("from pubsift.core import x\n")
    edges = graph(tmp_path)
    assert [_shown(c, edges) for c in cycles(edges)] == [
        "pubsift.adapters.readers.a (line 1) -> pubsift.adapters.readers.b (line 5) -> "
        "pubsift.adapters.readers.c (line 1) -> pubsift.adapters.readers.a"
    ]
    assert components(edges) == [
        frozenset({f"pubsift.adapters.readers.{m}" for m in "abc"}),
    ]
    assert upward_from_readers(edges) == [
        "pubsift.adapters.readers.c:2: pubsift.adapters.spark.job"
    ]
    (readers / "b.py").write_text("from pubsift.adapters.readers.a import x\n")
    (readers / "c.py").write_text("")
    assert cycles(graph(tmp_path)) == [
        ["pubsift.adapters.readers.a", "pubsift.adapters.readers.b", "pubsift.adapters.readers.a"]
    ]
