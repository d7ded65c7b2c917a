"""``make docs``: the API reference pdoc generates from the docstrings of the public
modules (the Makefile's DOC_MODULES), one page each, into a folder that is not committed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def doc_modules() -> list[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    m = re.search(r"^DOC_MODULES\s*:=\s*(.*)$", text, re.M)
    assert m, "the Makefile has no DOC_MODULES"
    return m.group(1).split()


def test_the_reference_covers_the_public_modules():
    modules = doc_modules()
    models = ["pubsift.models.records", "pubsift.models.xml", "pubsift.models.concepts"]
    for name in ["pubsift.core", *models, "pubsift.adapters", "pubsift.adapters.broker.client"]:
        assert name in modules


def test_the_reference_is_written_outside_the_committed_tree():
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "build/docs/api/index.html"], cwd=ROOT, timeout=30
    )
    assert ignored.returncode == 0


@pytest.mark.slow
def test_pdoc_writes_a_page_per_public_module(tmp_path):
    pytest.importorskip("pdoc", reason="pdoc is in the dev extra")
    done = subprocess.run(
        [sys.executable, "-m", "pdoc", "--docformat", "restructuredtext", "-o", str(tmp_path)]
        + doc_modules(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for name in doc_modules():
        page = tmp_path.joinpath(*name.split(".")).with_suffix(".html")
        assert page.is_file(), name
    core = (tmp_path / "pubsift" / "core.html").read_text(encoding="utf-8")
    assert "FilterModel" in core and "parse_filter" in core
    index = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert "pubsift" in index
