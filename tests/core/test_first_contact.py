"""What a new user meets first: the version (single-sourced from the package metadata),
the changelog, a typo'd path refused as a usage error, help texts without markup, counts
in words that agree in number."""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import io
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import pubsift
from pubsift import cli

ROOT = Path(__file__).resolve().parents[2]


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def test_version_comes_from_the_package_metadata():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert pubsift.__version__ == importlib.metadata.version("pubsift") == declared
    done = subprocess.run(
        [sys.executable, "-m", "pubsift.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == f"pubsift {declared}\n", done


def test_the_changelog_has_an_entry_for_this_version():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## {pubsift.__version__}" in text


@pytest.mark.parametrize(
    "argv",
    [
        ["convert", "{missing}", "--out", "{out}"],
        ["convert", "{pattern}", "--out", "{out}"],
        ["match", "-f", "a = 1", "{missing}"],
    ],
    ids=["convert-path", "convert-pattern", "match-csv"],
)
def test_a_path_that_names_nothing_is_a_usage_error_of_one_line(tmp_path, argv):
    names = {
        "missing": str(tmp_path / "quotes.csv"),
        "pattern": str(tmp_path / "*.csv"),
        "out": str(tmp_path / "events.jsonl"),
    }
    code, out, err = run([a.format(**names) for a in argv])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"pubsift {argv[0]}: "), err
    assert "does not exist" in err or "matches no file" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written


def _parsers(parser: argparse.ArgumentParser, name: str = "pubsift"):
    """Every parser of the command line, each subcommand's arguments added."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, cli.LazySubcommands):
            for sub in list(action.choices):
                target = action._pending.pop(sub, None)
                if target is not None:
                    import importlib

                    module, _, function = target.partition(":")
                    getattr(importlib.import_module(module), function)(action.choices[sub])
                yield from _parsers(action.choices[sub], f"{name} {sub}")


def test_help_texts_hold_no_markup():
    """Docstring markup (``pubsift``) stays in docstrings: --help shows plain text."""
    seen = []
    for name, parser in _parsers(cli.build_parser()):
        text = parser.format_help()
        seen.append(name)
        assert "``" not in text, f"{name} --help:\n{text}"
    assert {"pubsift", "pubsift route", "pubsift experiment rebeca", "pubsift broker"} <= set(seen)


def test_counts_agree_in_number(tmp_path):
    events = tmp_path / "events.jsonl"
    events.write_text('{"a": 1}\n')
    code, _, err = run(["match", "-f", "a = 1", str(events)])
    assert code == 0 and err.splitlines()[-1] == "1 event, 1 filter, 1 match"


def test_publish_feed_counts_what_it_was_given(tmp_path):
    from pubsift.adapters.broker.feedpub import described

    (tmp_path / "feeds").mkdir()
    given = [str(tmp_path / "feeds"), "https://example.org/a.rss", "b.rss", "c.rss", "d.zip"]
    assert described(given) == "1 directory, 1 URL, 2 files, 1 archive"


def test_publish_feed_once_documents_its_exit_status():
    code, out, _ = run(["publish-feed", "--help"])
    assert code == 0 and "status 0, or 1 when an item was quarantined" in " ".join(out.split())
