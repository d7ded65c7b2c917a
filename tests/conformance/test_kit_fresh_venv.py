"""pubsift as users install it, in fresh virtual environments (docs/conformance.md, "Running it against your model").

* With base pubsift only (and pytest, for the user's own unrelated tests; no hypothesis),
  the pytest11 plugin loads and a trivial test passes; ``import pubsift``, the built-in
  models and the CLI import neither hypothesis nor pytest.
* With ``pubsift[kit]``, a third-party model in its own distribution (tests/conformance/
  toy_dist: its own pyproject and ``pubsift.models`` entry point) passes the kit from a
  five-line test subclass.

pubsift is installed from a wheel built from a copy of this checkout's sources (nothing is
written into the checkout), by this run's pip (``pip --python``: the environment itself is
made without pip, which saves ensurepip's time); pip reads the machine's configuration and
cache. About 80 s on 2 busy cores, most of it the kit's own run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TOY = Path(__file__).resolve().parent / "toy_dist"
#: what a build of pubsift reads: pyproject, the README and every folder package-dir maps
SOURCES = (
    "pyproject.toml",
    "setup.py",  # the compiled records walk (models/records/_walk.pyx)
    "MANIFEST.in",
    "README.md",
    "pubsift",  # the top-level package (its version, from the package metadata)
    *sorted(
        folder
        for folder in set(
            tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
                "package-dir"
            ].values()
        )
        if not folder.startswith("pubsift/")  # copied with pubsift/ (the command line)
    ),
)

TRIVIAL = """
def test_unrelated(request):
    assert request.config.pluginmanager.hasplugin("pubsift_conformance")
"""

RUNTIME = """
import sys
import pubsift, pubsift.core, pubsift.adapters
from pubsift.core import load_model
from pubsift.cli import main
for name in ("records", "xml", "concepts"):
    load_model(name)
try:
    main(["--help"])
except SystemExit as exit:
    assert not exit.code, exit.code
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("hypothesis", "pytest", "_pytest"))
assert not heavy, heavy
import pubsift.core.conformance as kit
try:
    kit.ModelConformance
except ImportError as exc:
    print("KIT:", exc)
"""


def _run(
    cmd: list, cwd: Path, extra_env: dict[str, str] | None = None, timeout: int = 600
) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "PUBSIFT_", "VIRTUAL_ENV", "PYTEST_"))
    }
    env["PIP_QUIET"] = "2"
    env.update(extra_env or {})
    return subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def _ok(done: subprocess.CompletedProcess) -> str:
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"{done.args}\n{out[-6000:]}"
    return out


def test_fresh_venv_base_pubsift_then_third_party_model_with_kit(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name,
                src / name,
                # what the build makes in place is made afresh
                ignore=shutil.ignore_patterns("__pycache__", "*.so", "_walk.c"),
            )
        else:
            shutil.copy(ROOT / name, src / name)
    _ok(
        _run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", tmp_path / "dist", src],
            tmp_path,
            # the compiled walk unoptimized: built in 15 s instead of 25 (only its being
            # built and used is checked here)
            {"CFLAGS": "-O0"},
        )
    )
    (wheel,) = (tmp_path / "dist").glob("pubsift-*.whl")

    env_dir = tmp_path / "venv"
    venv.create(env_dir)  # without pip: this run's pip installs into it (pip --python)
    bin_ = env_dir / "bin"
    work = tmp_path / "work"
    work.mkdir()

    # 1. base pubsift, pytest for the user's own tests, no hypothesis
    pip = [sys.executable, "-m", "pip", "--python", bin_ / "python", "install"]
    _ok(_run([*pip, wheel, "pytest"], work))
    absent = _run([bin_ / "python", "-c", "import hypothesis"], work)
    assert absent.returncode != 0, "hypothesis is installed with base pubsift"
    (work / "test_unrelated.py").write_text(TRIVIAL)
    out = _ok(_run([bin_ / "pytest", "-q", "-p", "no:cacheprovider", "test_unrelated.py"], work))
    assert "1 passed" in out, out
    out = _ok(_run([bin_ / "python", "-c", RUNTIME], work))
    assert "KIT: pubsift's conformance kit needs hypothesis" in out, out
    # the wheel carries the compiled records walk, and the index uses it
    walk = "from pubsift.models.records import plans; print('ENGINE', plans.ENGINE is not None)"
    out = _ok(_run([bin_ / "python", "-c", walk], work))
    assert "ENGINE True" in out, out

    # 2. pubsift[kit] and a third-party model in its own distribution
    toy = tmp_path / "toy"
    shutil.copytree(TOY, toy)
    _ok(_run([*pip, f"{wheel}[kit]", toy], work))
    shutil.copytree(toy / "tests", work / "tests")
    out = _ok(
        _run(
            [bin_ / "pytest", "-rA", "-p", "no:cacheprovider", "--hypothesis-seed=0", "tests"], work
        )
    )
    passed = re.findall(r"^PASSED \S*TestRangeModel::(\w+)", out, re.M)
    assert len(passed) >= 19, out
    assert {
        "test_covers_sound",
        "test_perfect_merge",
        "test_imperfect_merge",
        "test_filter_roundtrip",
        "test_hostile_filter_texts",
    } <= set(passed), out
    assert not re.search(r"\b(failed|error)", out.splitlines()[-1]), out
