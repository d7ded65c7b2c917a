"""What the core and the command line import (docs/packages.md, "Layers"): the routing core reaches models
only through the registry, and ``pubsift --help`` finds the subcommands without importing
them. Each check runs in a fresh interpreter, so nothing imported by other tests counts."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("pandas", "rdflib", "pyspark", "matplotlib")


def _loaded(code: str) -> list[str]:
    """The names in sys.modules after ``code`` ran in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_core_and_every_module_under_it_import_no_model():
    walk = """
import importlib, pkgutil
import pubsift.core
names = [m.name for m in pkgutil.walk_packages(pubsift.core.__path__, "pubsift.core.")]
assert "pubsift.core.conformance.plugin" in names and "pubsift.core.strict_json" in names, names
for name in names:
    importlib.import_module(name)
"""
    loaded = _loaded(walk)
    assert "pubsift.core.conformance.kit" in loaded
    above = ("pubsift.models", "pubsift.adapters", "pubsift.cli", "pubsift.experiments")
    assert [m for m in loaded if m in above or m.startswith(tuple(a + "." for a in above))] == []


CORE = Path(__file__).resolve().parents[2] / "core"


def test_no_core_module_imports_a_layer_above_it_anywhere():
    """Not even inside a function or under TYPE_CHECKING: the core keeps no command and
    reaches models only through the registry (the import statements of every file)."""
    above = ("pubsift.models", "pubsift.adapters", "pubsift.cli", "pubsift.experiments")
    found = []
    files = sorted(CORE.rglob("*.py"))
    assert len(files) > 20, files
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            bad = [n for n in names if n in above or n.startswith(tuple(a + "." for a in above))]
            if bad:
                found.append(f"{path.relative_to(CORE)}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def test_help_imports_no_heavy_module_no_model_and_no_experiment():
    loaded = _loaded("""
from pubsift.cli import main
try:
    main(["--help"])
except SystemExit:
    pass
""")
    assert "pubsift.cli" in loaded
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY]
    ours = [m for m in loaded if m.startswith(("pubsift.models", "pubsift.experiments"))]
    assert heavy == [] and ours == []


def test_a_subcommand_help_imports_only_its_own_module():
    loaded = _loaded("""
from pubsift.cli import main
try:
    main(["experiment", "rebeca", "--help"])
except SystemExit:
    pass
""")
    assert "pubsift.experiments.rebeca_cli" in loaded
    assert "pubsift.adapters.spark.cli" not in loaded and "matplotlib" not in loaded


#: the models' hypothesis strategies (the conformance kit's fixtures; the ``kit`` extra)
TESTING = (
    "pubsift.models.records.testing",
    "pubsift.models.xml.testing",
    "pubsift.models.concepts.testing",
)


def test_pubsift_and_every_model_module_but_testing_import_no_hypothesis():
    """hypothesis is the ``kit`` extra: ``import pubsift``, the models' packages and every
    model module except the ``testing`` ones load without it; those do load it."""
    walk = f"""
import importlib, pkgutil
import pubsift, pubsift.models
names = [m.name for m in pkgutil.walk_packages(pubsift.models.__path__, "pubsift.models.")]
testing = {TESTING!r}
assert set(testing) <= set(names), names
for name in names:
    if name not in testing:
        importlib.import_module(name)
"""
    loaded = _loaded(walk)
    assert "pubsift.models.concepts.covering" in loaded
    assert [m for m in loaded if m.split(".")[0] in ("hypothesis", "pytest", "_pytest")] == []
    for name in TESTING:
        assert "hypothesis" in _loaded(f"import {name}"), name


def test_the_broker_client_and_daemon_import_no_model_and_no_reader():
    """``pubsift.adapters`` imports its public names on first use, so a broker or client
    start does not pay for the readers and models it does not route."""
    loaded = _loaded("""
import pubsift.adapters.broker.client
import pubsift.adapters.broker.daemon
import pubsift.adapters.broker.cli
""")
    assert "pubsift.adapters.broker.client" in loaded
    assert [m for m in loaded if m == "pubsift.models" or m.startswith("pubsift.models.")] == []
    assert (
        "pubsift.adapters.readers.dispatch" not in loaded
        and "pubsift.adapters.readers.archives" not in loaded
    )


def test_the_adapters_public_names_are_unchanged_by_lazy_loading():
    loaded = _loaded("""
import pubsift.adapters as a
from pubsift.adapters import *
from pubsift.adapters.readers.dispatch import read as r0
assert a.read is r0 and read is r0, (a.read, r0)
assert set(a.__all__) <= set(dir(a))
for name in a.__all__:
    assert getattr(a, name) is not None, name
try:
    a.nonexistent
except AttributeError:
    pass
else:
    raise AssertionError("a.nonexistent")
""")
    assert "pubsift.adapters.readers.dispatch" in loaded
