"""Each model's edge API (DESIGN.md §2.6: "adapters and other models use only a package's
public names, never its inner modules"), checked on the import statements of every module
of the installed packages (adapters/, pubsift/, experiments/, core/ and each model under
models/), including imports inside functions and under TYPE_CHECKING:

* no module outside a model ``pubsift.models.X`` imports one of its inner modules
  (``pubsift.models.X.Y``, unless the package publishes ``Y`` in its ``__all__``, as
  records does its ``workload``): each model's ``__init__`` says in its docstring that its
  other modules are private, and its ``__all__`` is its edge API;
* what a module imports from ``pubsift.models.X`` is in ``X.__all__``;
* nothing of another package that is private is used (a package is a folder; a model
  with its subfolders is one package; a package's own modules may use its private parts):
  no ``_name`` imported from it (``from pubsift.core.cli_input import _strict``), no
  private module of it imported (``import pubsift.adapters.broker._split``, ``from
  pubsift.adapters.broker._split import cut``: a public name does not make its module
  public; a compiled ``.pyx`` module counts), and no ``_name`` read as an attribute of
  what an import bound (``frames._private_helper()`` after ``from
  pubsift.adapters.broker import frames``, ``pubsift.core.cli_input._strict``).

bench/ keeps the same rules, but for the imports listed in :data:`BENCH_INNER` with the
reason: those benchmarks time the inner parts of the models (columnar matching, the plans,
the attribute index, the factorization tree against the pairwise test) as the models' own
tests do, and a public name would exist only for them."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import tomllib
from pathlib import Path

import pytest
from source_tree import FOLDERS, ROOT

MODELS = ("concepts", "constraints", "records", "xml")

#: imports that break the rules in files other work has open; each leaves this list when
#: its file is changed to use the public name (the test fails while a fixed one is listed)
KNOWN: set[str] = set()

#: the inner modules bench/ times, each with the reason it cannot use a public name
BENCH_INNER: dict[str, str] = {
    "bench/records_batch.py: pubsift.models.records ['plans', 'ways'] (not in __all__)": (
        "times each way of columnar matching (ways.FORCE) and the compiled plans against the "
        "per-event loop"
    ),
    "bench/records_match.py: pubsift.models.records ['merging', 'plans', 'ways'] "
    "(not in __all__)": (
        "times each way of columnar matching (ways.FORCE) and the plans; starts merging cold "
        "(merging.cache_clear)"
    ),
    "bench/records_match.py: pubsift.models.records.attrindex "
    "(inner module of pubsift.models.records)": (
        "times the attribute index (Mühl Fig. 4.7) alone, without the counting index"
    ),
    "bench/xml_covering.py: pubsift.models.xml.covering (inner module of pubsift.models.xml)": (
        "the pairwise homomorphism test is the baseline of XSEARCH (Chand & Felber, Table 1)"
    ),
    "bench/xml_covering.py: pubsift.models.xml.factorization "
    "(inner module of pubsift.models.xml)": (
        "times the factorization tree itself (Chand & Felber, Tables 1-2)"
    ),
    "bench/xml_covering.py: pubsift.models.xml.generator (inner module of pubsift.models.xml)": (
        "Chand & Felber's pattern generator over the NITF DTD, test-side code of the index"
    ),
    "bench/xml_covering.py: pubsift.models.xml.index (inner module of pubsift.models.xml)": (
        "the tree's space figures (bits per pattern, Table 2)"
    ),
    "bench/xml_match.py: pubsift.models.xml.path_arrays (inner module of pubsift.models.xml)": (
        "times the path automaton on arrays against the tree walk"
    ),
}


def _module(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = [{**FOLDERS, "bench": "bench"}[rel.parts[0]], *rel.parts[1:]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _owner(module: str, root: Path) -> str:
    """The package that owns ``module``: its model, or the folder it is in."""
    parts = module.split(".")
    if parts[:2] == ["pubsift", "models"] and len(parts) >= 3:
        return ".".join(parts[:3])
    if _is_package(module, root):
        return module
    return ".".join(parts[:-1])


def _is_package(module: str, root: Path) -> bool:
    parts = module.split(".")
    for folder, package in FOLDERS.items():
        top = package.split(".")
        if parts[: len(top)] == top:
            return (root / folder / Path(*parts[len(top) :]) / "__init__.py").is_file()
    return False


def _public(model: str, root: Path) -> set[str]:
    """The ``__all__`` of ``pubsift.models.<model>`` (a literal list, read from the file)."""
    tree = ast.parse((root / "models" / model / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    return set()


def _imports(node: ast.AST, module: str, is_package: bool) -> list[tuple[str, list[str]]]:
    """(imported module, names imported from it) of one import statement."""
    if isinstance(node, ast.Import):
        return [(a.name, []) for a in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".")
            base = base[: len(base) - node.level + (1 if is_package else 0)]
            target = ".".join([*base, node.module] if node.module else base)
        else:
            target = node.module or ""
        return [(target, [a.name for a in node.names])]
    return []


def _is_module(dotted: str, root: Path) -> bool:
    """``dotted`` is a module of the packages under ``root`` (``.py``, ``.pyx``, a package)."""
    parts = dotted.split(".")
    for folder, package in FOLDERS.items():
        top = package.split(".")
        if parts[: len(top)] == top:
            base = root / folder / Path(*parts[len(top) :]) if parts[len(top) :] else root / folder
            if (base / "__init__.py").is_file():
                return True
            return any(base.with_suffix(s).is_file() for s in (".py", ".pyx")) and (
                len(parts) > len(top)
            )
    return False


def _holder(dotted: str, root: Path) -> str:
    """The package owning the longest module that ``dotted`` begins with (``dotted`` may
    go on into the module's attributes: ``pubsift.adapters.broker.frames.Frame``)."""
    parts = dotted.split(".")
    while len(parts) > 1 and not _is_module(".".join(parts), root):
        parts.pop()
    return _owner(".".join(parts), root)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_module(target: str, root: Path) -> str | None:
    """The package holding the first private module of the dotted ``target``, if it has
    one (``pubsift.adapters.broker._split.cut`` -> ``pubsift.adapters.broker``)."""
    parts = target.split(".")
    for i, part in enumerate(parts):
        if _is_private(part):
            return _owner(".".join(parts[: i + 1]), root)
    return None


def _bindings(tree: ast.AST, module: str, is_package: bool) -> dict[str, str]:
    """Local name -> the dotted ``pubsift`` name an import statement bound it to (anywhere
    in the module; ``import a.b`` binds ``a``)."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    bound[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    bound[top] = top
        elif isinstance(node, ast.ImportFrom):
            ((target, _),) = _imports(node, module, is_package)
            for a in node.names:
                if a.name != "*":
                    bound[a.asname or a.name] = f"{target}.{a.name}"
    return {k: v for k, v in bound.items() if v == "pubsift" or v.startswith("pubsift.")}


def _dotted(node: ast.expr, bound: dict[str, str]) -> str | None:
    """The dotted name an expression ``a.b.c`` stands for, from the import bindings."""
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, bound)
        return None if base is None else f"{base}.{node.attr}"
    return None


def violations(
    root: Path = ROOT, folders: tuple[str, ...] = tuple(FOLDERS)
) -> tuple[set[str], int]:
    """The imports of the modules in ``folders`` under ``root`` that break the rules, and
    how many files were read."""
    found: set[str] = set()
    files = 0
    public = {m: _public(m, root) for m in MODELS}
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            files += 1
            module = _module(path, root)
            mine = _owner(module, root)
            where = str(path.relative_to(root))
            is_package = path.name == "__init__.py"
            tree = ast.parse(path.read_text(encoding="utf-8"), where)
            bound = _bindings(tree, module, is_package)
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and _is_private(node.attr):
                    base = _dotted(node.value, bound)
                    if base is not None and _holder(base, root) != mine:
                        found.add(f"{where}: {base}.{node.attr} (private attribute)")
                for target, names in _imports(node, module, is_package):
                    if not target.startswith("pubsift."):
                        continue
                    parts = target.split(".")
                    model = ".".join(parts[:3])
                    if parts[:2] == ["pubsift", "models"] and len(parts) >= 3 and model != mine:
                        if len(parts) >= 4:
                            if parts[3] not in public.get(parts[2], set()):
                                found.add(f"{where}: {target} (inner module of {model})")
                        else:
                            hidden = [n for n in names if n not in public.get(parts[2], set())]
                            if hidden:
                                found.add(f"{where}: {target} {hidden} (not in __all__)")
                    holder = _private_module(target, root)
                    if holder is not None and holder != mine:
                        shown = f"{target} {names}" if names else target
                        found.add(f"{where}: {shown} (private module of {holder})")
                    theirs = _owner(target, root)
                    for name in names:
                        if _is_private(name) and theirs != mine:
                            found.add(f"{where}: {target}.{name} (private name)")
    return found, files


def test_no_module_imports_a_models_inside_or_another_packages_private_name():
    found, files = violations()
    assert files > 150, files
    assert sorted(found - KNOWN) == []
    assert sorted(KNOWN - found) == [], "fixed: remove from KNOWN"


def test_bench_uses_public_names_but_for_the_inner_parts_it_times():
    found, files = violations(folders=("bench",))
    assert files > 20, files
    assert sorted(found - set(BENCH_INNER)) == []
    assert sorted(set(BENCH_INNER) - found) == [], "fixed: remove from BENCH_INNER"


def test_the_check_finds_each_kind_of_breach(tmp_path):
    """The three rules, on a copy of a small tree: each breach is reported once; a
    package's own modules may use its private modules and names."""
    for folder in FOLDERS:
        (tmp_path / folder).mkdir()
    (tmp_path / "adapters" / "__init__.py").write_text("")
    broker = tmp_path / "adapters" / "broker"
    broker.mkdir()
    (broker / "__init__.py").write_text("")
    (broker / "_split.pyx").write_text("")
    (broker / "frames.py").write_text("def _private_helper(): pass\n")
    (broker / "own.py").write_text(
        "import pubsift.adapters.broker._split\n"
        "from pubsift.adapters.broker._split import cut\n"
        "from . import frames, _split\n"
        "frames._private_helper()\n"
    )
    for model in MODELS:
        (tmp_path / "models" / model).mkdir()
        (tmp_path / "models" / model / "__init__.py").write_text(
            "__all__ = ['Public']\nfrom pubsift.models.constraints.values import skey\n"
        )
    (tmp_path / "adapters" / "a.py").write_text(
        "from pubsift.models.xml import Public\n"  # fine
        "from pubsift.models.xml.Public import anything\n"  # a published module: fine
        "def f():\n"
        "    from pubsift.models.xml.parsing import hardened_parser\n"
        "    import pubsift.models.records.index\n"
        "    from pubsift.models.concepts import units\n"
        "    from pubsift.core.cli_input import _strict\n"
        "    from pubsift.adapters.b import _ours\n"  # same package: fine
        "    from .b import _also_ours\n"
        "    import pubsift.adapters.broker._split\n"
        "    from pubsift.adapters.broker._split import cut\n"
        "    from pubsift.adapters.broker import frames\n"
        "    import pubsift.adapters.broker.frames as fr\n"
        "    frames._private_helper()\n"
        "    fr.__name__, frames.public, pubsift.core.cli_input._strict\n"
    )
    found, _ = violations(tmp_path)
    assert sorted(found) == sorted(
        [
            "adapters/a.py: pubsift.models.xml.parsing (inner module of pubsift.models.xml)",
            "adapters/a.py: pubsift.models.records.index (inner module of pubsift.models.records)",
            "adapters/a.py: pubsift.models.concepts ['units'] (not in __all__)",
            "adapters/a.py: pubsift.core.cli_input._strict (private name)",
            "adapters/a.py: pubsift.adapters.broker._split (private module of "
            "pubsift.adapters.broker)",
            "adapters/a.py: pubsift.adapters.broker._split ['cut'] (private module of "
            "pubsift.adapters.broker)",
            "adapters/a.py: pubsift.adapters.broker.frames._private_helper (private attribute)",
            "adapters/a.py: pubsift.core.cli_input._strict (private attribute)",
            *(
                f"models/{m}/__init__.py: pubsift.models.constraints.values "
                "(inner module of pubsift.models.constraints)"
                for m in ("concepts", "records", "xml")
            ),
        ]
    )


@pytest.mark.parametrize("model", MODELS)
def test_every_public_name_of_a_model_is_there(model):
    """``__all__`` names what the package gives (the lazily imported ones included)."""
    package = importlib.import_module(f"pubsift.models.{model}")
    missing = [n for n in package.__all__ if not hasattr(package, n)]
    assert missing == []


# -- docs/packages.md: the map of the packages, kept true -----------------------------------
MAP = ROOT / "docs" / "packages.md"
#: the one import that goes up a layer, as the map says (the spark-submit script's entry)
UPWARD = {("adapters/spark/cli.py", "pubsift.cli")}


def _layers(text: str) -> dict[str, int]:
    """package -> layer, from the map's table between ``<!-- layers -->`` markers."""
    table = text.split("<!-- layers -->")[1].split("<!-- /layers -->")[0]
    out: dict[str, int] = {}
    for row in table.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].isdigit():
            for name in re.findall(r"`([\w.]+)`", cells[1]):
                out[name] = int(cells[0])
    return out


def _layer(module: str, layers: dict[str, int]) -> int:
    """The layer of the longest package of ``layers`` that holds ``module``."""
    best = max((p for p in layers if module == p or module.startswith(p + ".")), key=len)
    return layers[best]


def _exists(name: str) -> bool:
    """``name`` is a module, or an attribute of one (``pubsift.adapters.read``)."""
    try:
        if importlib.util.find_spec(name) is not None:
            return True
    except ImportError:
        pass
    parent, _, attr = name.rpartition(".")
    try:
        return hasattr(importlib.import_module(parent), attr)
    except ImportError:
        return False


def test_every_name_the_package_map_writes_exists():
    text = MAP.read_text(encoding="utf-8")
    names = sorted(set(re.findall(r"\bpubsift(?:\.\w+)+", text)))
    assert len(names) > 25, names
    assert [n for n in names if not _exists(n)] == []


def test_the_package_map_names_every_installed_package_and_its_layer():
    text = MAP.read_text(encoding="utf-8")
    layers = _layers(text)
    assert layers["pubsift.core"] < layers["pubsift.models.records"] < layers["pubsift.cli"]
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"
    ]
    tables = set(re.findall(r"^\| `(pubsift[\w.]*)` \|", text, re.M))
    inside = [p for p in packages if not any(p == t or p.startswith(t + ".") for t in tables)]
    assert inside == []
    assert sorted(set(layers) - tables - {"pubsift.__main__"}) == []


def test_no_module_imports_a_layer_above_its_own():
    """The layer order of docs/packages.md on every import statement of every module."""
    layers = _layers(MAP.read_text(encoding="utf-8"))
    found, seen = [], set()
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            module = _module(path, ROOT)
            where = str(path.relative_to(ROOT))
            mine = _layer(module, layers)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), where)):
                for target, _ in _imports(node, module, path.name == "__init__.py"):
                    if target != "pubsift" and not target.startswith("pubsift."):
                        continue
                    if _layer(target, layers) > mine:
                        pair = (where, ".".join(target.split(".")[:2]))
                        seen.add(pair)
                        if pair not in UPWARD:
                            found.append(
                                f"{where}:{node.lineno}: {target} (layer {mine} imports up)"
                            )
    assert found == []
    assert seen >= UPWARD, "no longer imported: remove from UPWARD (and the map)"


@pytest.mark.parametrize("model", MODELS)
def test_each_model_says_its_other_modules_are_private(model):
    """How "private" is marked: the package's docstring says it, its ``__all__`` lists the
    edge API, and the checks above enforce it."""
    package = importlib.import_module(f"pubsift.models.{model}")
    assert "private" in (package.__doc__ or ""), model
