"""The benchmarks' shared timing helper (bench/harness.py) and table (bench/table.py):
ratios only over the same inputs, medians and spreads of the repeats, the JSON form and
the README block. No timing assertions: only the bookkeeping."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


harness = _load("harness")
table = _load("table")


def test_timing_median_spread_and_rate():
    t = harness.Timing(10, "ten things", [2.0, 1.0, 4.0])
    assert t.median == 2.0 and t.rate == 5.0 and t.spread == 1.5 and t.per_item == 0.2
    assert t.as_json()["repeats"] == 3


def test_time_it_warms_up_repeats_and_sets_up_each_run():
    calls = {"work": 0, "setup": 0}
    t = harness.time_it(
        lambda: calls.__setitem__("work", calls["work"] + 1),
        1,
        "x",
        repeats=4,
        warmup=2,
        setup=lambda: calls.__setitem__("setup", calls["setup"] + 1),
    )
    assert len(t.seconds) == 4 and calls["work"] == 6 and calls["setup"] == 6


def test_ratio_refuses_different_inputs():
    a = harness.Timing(10, "first 10 events", [1.0])
    b = harness.Timing(10, "first 10 events", [3.0])
    assert harness.ratio(a, b) == 3.0
    assert "3.0×" in harness.ratio_line("x", a, b)
    with pytest.raises(ValueError, match="like with like"):
        harness.ratio(a, harness.Timing(20, "first 20 events", [3.0]))
    with pytest.raises(ValueError):
        harness.ratio(a, harness.Timing(10, "other 10 events", [3.0]))


def test_json_output_and_readme_block(tmp_path):
    out = tmp_path / "r.json"
    bench = harness.Bench("demo", "demo bench", ["--quick", "--json", str(out)])
    args = bench.parse()
    assert args.quick and args.repeats == 3
    bench.row(n=1, t=harness.Timing(1, "one", [1.0]))
    bench.headline("demo thing", "42 things/s")
    assert bench.finish(0) == 0
    doc = json.loads(out.read_text())
    assert doc["headlines"] == [{"what": "demo thing", "figure": "42 things/s"}]
    assert doc["rows"][0]["t"]["rate"] == 1.0 and doc["machine"]["cpus"] >= 1
    assert doc["command"] == "python bench/demo.py --quick"
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{table.BEGIN}\nold\n{table.END}\nrest\n")
    md = tmp_path / "results.md"
    assert (
        table.main([str(out), "--out", str(md), "--readme", str(readme), "--before", str(out)]) == 0
    )
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith(f"{table.END}\nrest\n")
    assert (
        "old" not in text
        and "| `python bench/demo.py --quick` | demo thing | 42 things/s |" in text
    )
    assert "Before and after" in md.read_text()


def test_skip_says_why(tmp_path, capsys):
    out = tmp_path / "s.json"
    bench = harness.Bench("demo", "demo", ["--json", str(out)])
    bench.parse()
    assert bench.skip("data absent at /nowhere") == 0
    assert "skipped: data absent" in capsys.readouterr().err
    assert json.loads(out.read_text())["skipped"] == "data absent at /nowhere"
