"""A third-party model contributes its own reader (docs/adapters.md §7): a toy
package written into tmp_path with a dist-info that registers a model under
``pubsift.models`` and its reader under ``pubsift.readers``; a fresh interpreter with
PYTHONPATH=tmp_path reads, converts and matches the toy files without touching
``adapters/``. A broken reader entry point is reported, not a crash."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PUBSIFT = Path(sys.executable).with_name("pubsift")

TOY = '''
"""A toy model: events are words, a filter is a minimum length; its files (.toy) hold
one word per line."""
from pubsift.adapters import Quarantined, Reader
from pubsift.adapters.readers.outcomes import excerpt
from pubsift.adapters.readers.converting import converter
from pubsift.core.errors import EventError, FilterSyntaxError
from pubsift.core.model import FilterModel


class ToyModel(FilterModel):
    name = "toy"

    def parse_filter(self, spec):
        if isinstance(spec, str) and spec.strip().isdigit():
            return int(spec)
        raise FilterSyntaxError("a toy filter is a minimum length (digits)")

    def parse_event(self, raw):
        if isinstance(raw, dict) and isinstance(raw.get("word"), str):
            return raw["word"]
        raise EventError("a toy event is {\\"word\\": text}")

    def matches(self, f, e):
        return len(e) >= f

    def covers(self, f, g):
        return f <= g

    def dump_filter(self, f):
        return f

    def load_filter(self, obj):
        return int(obj)

    def dump_event(self, e):
        return {"word": e}

    def load_event(self, obj):
        return obj["word"]


class ToyReader(Reader):
    name = "toy"
    extensions = (".toy",)
    default_model = "toy"

    def read(self, inp, model, limits):
        convert = converter(model, inp.source)
        with inp.open() as fh:
            for n, raw in enumerate(fh, 1):
                word = raw.decode("utf-8", "replace").strip()
                if word.isalpha():
                    yield convert({"word": word}, inp.name, n)
                else:
                    yield Quarantined(inp.name, n, "toy-not-a-word", "not a word",
                                      excerpt(raw), model.name)


TOY_READER = ToyReader()
'''


def dist(tmp_path: Path, name: str, entry_points: str) -> None:
    info = tmp_path / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)


@pytest.fixture
def toy(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "toyfmt.py").write_text(TOY)
    dist(
        site,
        "toy",
        "[pubsift.models]\ntoy = toyfmt:ToyModel\n\n[pubsift.readers]\ntoy = toyfmt:TOY_READER\n",
    )
    data = tmp_path / "data"
    data.mkdir()
    (data / "words.toy").write_bytes(b"apple\nfig\n42\nbanana\n")
    env = dict(os.environ, PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1")
    return site, data, env


def run(args, env, cwd=None):
    done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def test_a_plugin_reader_is_found_by_read_without_touching_adapters(toy):
    _site, data, env = toy
    script = (
        "import json, sys\nfrom pubsift.adapters import read, Event\n"
        "for x in read(sys.argv[1]):\n"
        "    print(json.dumps([type(x).__name__, x.model, x.id,"
        " x.event if isinstance(x, Event) else x.reason]))\n"
    )
    code, out, err = run([sys.executable, "-c", script, str(data)], env)
    assert code == 0, err
    assert [json.loads(line) for line in out.splitlines()] == [
        ["Event", "toy", f"{data}/words.toy#1", "apple"],
        ["Event", "toy", f"{data}/words.toy#2", "fig"],
        ["Quarantined", "toy", f"{data}/words.toy#3", "toy-not-a-word"],
        ["Event", "toy", f"{data}/words.toy#4", "banana"],
    ]


def test_pubsift_convert_and_match_read_the_plugin_format(toy, tmp_path):
    _site, data, env = toy
    out_file = tmp_path / "out.jsonl"
    code, out, err = run([str(PUBSIFT), "convert", str(data), "--out", str(out_file)], env)
    assert code == 1, err  # one line quarantined
    lines = [json.loads(x) for x in out_file.read_text().splitlines()]
    assert lines == [
        {"model": "toy", "source": f"{data}/words.toy", "position": p, "event": {"word": w}}
        for p, w in ((1, "apple"), (2, "fig"), (4, "banana"))
    ]
    (q,) = [json.loads(x) for x in (tmp_path / "out.quarantine.jsonl").read_text().splitlines()]
    assert (q["position"], q["reason"], q["model"]) == (3, "toy-not-a-word", "toy")
    assert f"{data}/words.toy: 4 read, 3 events, 1 quarantined" in out
    code, out, err = run(
        [str(PUBSIFT), "match", "-m", "toy", "-f", "5", str(data / "words.toy")], env
    )
    assert code == 1
    assert [json.loads(x) for x in out.splitlines()] == [
        {"event": f"{data}/words.toy#1", "matches": ["5"]},
        {"event": f"{data}/words.toy#4", "matches": ["5"]},
    ]
    assert "2 events" not in err and "3 events, 1 filter, 2 matches, 1 quarantined" in err


def test_pubsift_readers_lists_builtin_and_plugin_readers(toy):
    _site, _data, env = toy
    _code, out, _err = run([str(PUBSIFT), "readers", "--json"], env)
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["toy"] == {"name": "toy", "extensions": [".toy"], "model": "toy", "status": "ok"}
    _code, out, _ = run([str(PUBSIFT), "readers"], env)
    assert "toy: .toy -> toy (ok)" in out.splitlines()


def test_a_broken_reader_entry_point_is_reported_not_a_crash(toy, tmp_path):
    site, data, env = toy
    dist(
        site,
        "broken",
        "[pubsift.readers]\nmissing = no_such_module:READER\n"
        "misnamed = toyfmt:TOY_READER\nnotareader = toyfmt:ToyModel\n",
    )
    code, out, err = run([str(PUBSIFT), "readers"], env)
    assert code == 1
    got = dict(line.split(": ", 1) for line in out.splitlines())
    assert got["toy"] == ".toy -> toy (ok)"
    assert got["missing"].startswith("- -> - (BROKEN: cannot be loaded: ModuleNotFoundError")
    assert "calls itself 'toy', registered as 'misnamed'" in got["misnamed"]
    assert "not a pubsift.adapters.Reader" in got["notareader"]
    # reading still works, and convert says which plug-ins are broken
    out_file = tmp_path / "out.jsonl"
    code, out, err = run(
        [str(PUBSIFT), "convert", str(data / "words.toy"), "--out", str(out_file)], env
    )
    assert code == 1 and len(out_file.read_text().splitlines()) == 3
    warnings = err.splitlines()
    assert all(w.startswith("pubsift convert: warning: reader plug-in ") for w in warnings)
    named = sorted(w.split("'")[1] for w in warnings)
    assert {"missing", "misnamed", "notareader"} <= set(named)
    assert len(named) == len(set(named))
    assert any("'missing' (no_such_module:READER) is broken" in w for w in warnings)
