"""The pubsift command line: models, match, and the README's library example."""
from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from pubsift.core import cli

ROOT = Path(__file__).resolve().parents[2]


def run(argv, stdin: str = ""):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            pytest.MonkeyPatch.context() as mp:
        mp.setattr("sys.stdin", io.StringIO(stdin))
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def test_models_lists_builtin_models_with_hooks_and_index():
    code, out, _ = run(["models", "--json"])
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    assert {"records", "xml", "concepts"} <= set(rows)
    rec = rows["records"]
    assert rec["distribution"] == "pubsift" and rec["index"] == "RecordsIndex"
    assert "merge" in rec["hooks"] and "covers" in rec["capabilities"]
    code, out, _ = run(["models"])
    assert code == 0 and "records" in out and "RecordsIndex" in out


EVENTS = "\n".join([
    json.dumps({"symbol": "IBM", "price": 50}),
    json.dumps({"symbol": "IBM", "price": 40}),
    "{not json",
    json.dumps({"symbol": "INTC", "price": "cheap"}),
    json.dumps([1, 2]),
    json.dumps({"symbol": "MSFT", "price": 300}),
]) + "\n"


def test_match_reports_matches_and_skips_bad_lines_without_losing_the_rest():
    code, out, err = run(["match", "-f", 'symbol = "IBM" and price > 45',
                          "-f", "price >= 100", "--all"], EVENTS)
    lines = [json.loads(x) for x in out.splitlines()]
    assert [x["matches"] for x in lines] == [["arg1"], [], [], ["arg2"]]
    assert [x["event"] for x in lines] == ["stdin:1", "stdin:2", "stdin:4", "stdin:6"]
    assert "stdin:3: invalid JSON" in err and "stdin:5:" in err and "JSON object" in err
    assert "4 events, 2 filters, 2 matches, 2 bad lines skipped" in err
    assert code == 1


def test_match_reads_filter_files_and_eventbridge_or_patterns(tmp_path):
    subs = tmp_path / "subs.txt"
    subs.write_text('# quotes\nsymbol prefix "I"\n'
                    '{"$or": [{"price": [{"numeric": [">", 250]}]}, {"symbol": ["IBM"]}]}\n')
    events = tmp_path / "events.jsonl"
    events.write_text(EVENTS)
    code, out, err = run(["match", "--filters", str(subs), str(events)])
    got = {json.loads(x)["event"].rsplit(":", 1)[1]: json.loads(x)["matches"]
           for x in out.splitlines()}
    assert got == {"1": [f"{subs}:2", f"{subs}:3#2"], "2": [f"{subs}:2", f"{subs}:3#2"],
                   "4": [f"{subs}:2"], "6": [f"{subs}:3#1"]}


def test_match_rejects_a_bad_filter_with_its_position():
    code, _, err = run(["match", "-f", "price >> 3"], "")
    assert code == 2
    assert "arg1:" in err and "column" in err and "^" in err


def test_match_needs_filters():
    code, _, err = run(["match"], "")
    assert code == 2 and "no filters given" in err


def test_readme_library_example_runs_and_prints_what_it_says(capsys):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Ten lines of library\s+```python\n(.*?)```", readme, re.S).group(1)
    exec(compile(block, "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    expected = [m.group(1).strip() for m in re.finditer(r"print\(.*\)\s+#\s*(.*)", block)]
    assert len(printed) == len(expected) == 2
    assert eval(printed[0]) == eval(expected[0])
    assert printed[1] == expected[1]


def test_run_demo_on_a_small_quotes_file(tmp_path):
    quotes = tmp_path / "quotes"
    quotes.mkdir()
    rows = ["date,open,high,low,close,volume,Name"]
    for day in range(1, 21):
        for sym, base in (("AAA", 10.0), ("ABC", 50.0), ("XYZ", 90.0)):
            p = base + day / 4
            rows.append(f"2017-02-{day:02d},{p},{p + 1},{p - 1},{p},{1000 * day},{sym}")
    (quotes / "all_stocks_1yr_2017-02-08_2018-02-07.csv").write_text("\n".join(rows) + "\n")
    code, out, _ = run(["run", "--data", str(tmp_path)])
    assert code == 0
    assert re.search(r"events \(daily quotes\)\s*│\s*60\b", out)
    assert re.search(r"subscriptions\s*│\s*300\b", out)
    assert "busiest subscriptions" in out


def test_run_says_so_when_the_shared_data_is_absent(tmp_path):
    code, out, _ = run(["run", "--data", str(tmp_path / "nowhere")])
    assert code == 1 and "absent" in out


def test_readme_routing_example_delivers_only_the_matching_quote(capsys):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Routing through a network of brokers.*?```python\n(.*?)```", readme,
                      re.S).group(1)
    exec(compile(block, "README.md", "exec"), {})
    assert capsys.readouterr().out.split() == ["1"]
