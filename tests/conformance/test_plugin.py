"""The conformance kit's pytest plugin: cheap to load, examples configurable."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pubsift.core.conformance.plugin import DEFAULT_EXAMPLES, ENV_EXAMPLES


def test_plugin_and_package_import_nothing_heavy():
    code = (
        "import sys, pubsift.core.conformance.plugin, pubsift.core.conformance as c; "
        "assert 'hypothesis' not in sys.modules, 'hypothesis imported'; "
        "c.ModelConformance; assert 'hypothesis' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_examples_default(monkeypatch, request):
    monkeypatch.delenv(ENV_EXAMPLES, raising=False)
    assert request.getfixturevalue("max_examples") == DEFAULT_EXAMPLES


def test_examples_from_environment(monkeypatch, request):
    monkeypatch.setenv(ENV_EXAMPLES, "7")
    assert request.getfixturevalue("conformance_settings").max_examples == 7


@pytest.mark.parametrize("bad", ["0", "many"])
def test_bad_examples_setting_is_reported(monkeypatch, request, bad):
    monkeypatch.setenv(ENV_EXAMPLES, bad)
    with pytest.raises(pytest.fail.Exception, match=f"{ENV_EXAMPLES}={bad!r} is not a positive"):
        request.getfixturevalue("max_examples")


def test_runtime_and_plugin_work_without_hypothesis():
    """What `import pubsift`, the built-in models, the CLI and the pytest plugin load runs
    where hypothesis is not installed (base pubsift; the kit is the `kit` extra); the kit
    itself then says what to install. (test_kit_fresh_venv.py checks it in a real
    environment without hypothesis.)"""
    code = (
        "import sys; sys.modules['hypothesis'] = None\n"
        "import pubsift, pubsift.core, pubsift.adapters, pubsift.cli\n"
        "import pubsift.core.conformance.plugin, pubsift.core.conformance as kit\n"
        "from pubsift.core import load_model\n"
        "for name in ('records', 'xml', 'concepts'): load_model(name)\n"
        "try:\n"
        "    kit.ModelConformance\n"
        "except ImportError as exc:\n"
        "    assert \"pip install 'pubsift[kit]'\" in str(exc), exc\n"
        "else:\n"
        "    raise AssertionError('the kit imported without hypothesis')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
