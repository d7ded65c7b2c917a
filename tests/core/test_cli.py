"""The pubsift command line: models, match, run, and the README's library example; hostile
input through the installed console script."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pubsift import cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_shared_data_from_the_environment(monkeypatch):
    """``pubsift demo`` reads PUBSIFT_DATA; these tests say what they read."""
    monkeypatch.delenv("PUBSIFT_DATA", raising=False)


def run(argv, stdin: str = ""):
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        pytest.MonkeyPatch.context() as mp,
    ):
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


EVENTS = (
    "\n".join(
        [
            json.dumps({"symbol": "IBM", "price": 50}),
            json.dumps({"symbol": "IBM", "price": 40}),
            "{not json",
            json.dumps({"symbol": "INTC", "price": "cheap"}),
            json.dumps([1, 2]),
            json.dumps({"symbol": "MSFT", "price": 300}),
        ]
    )
    + "\n"
)


def test_match_reports_matches_and_skips_bad_lines_without_losing_the_rest():
    code, out, err = run(
        ["match", "-f", 'symbol = "IBM" and price > 45', "-f", "price >= 100", "--all"], EVENTS
    )
    lines = [json.loads(x) for x in out.splitlines()]
    assert [x["matches"] for x in lines] == [
        ['symbol = "IBM" and price > 45'],
        [],
        [],
        ["price >= 100"],
    ]
    assert [x["event"] for x in lines] == ["stdin:1", "stdin:2", "stdin:4", "stdin:6"]
    assert "stdin:3: invalid JSON" in err and "stdin:5:" in err and "JSON object" in err
    assert "4 events, 2 filters, 2 matches, 2 bad lines skipped" in err
    assert code == 1


def test_match_reads_filter_files_and_eventbridge_or_patterns(tmp_path):
    subs = tmp_path / "subs.txt"
    subs.write_text(
        '# quotes\nsymbol prefix "I"\n'
        '{"$or": [{"price": [{"numeric": [">", 250]}]}, {"symbol": ["IBM"]}]}\n'
    )
    events = tmp_path / "events.jsonl"
    events.write_text(EVENTS)
    _code, out, _err = run(["match", "--filters", str(subs), str(events)])
    got = {
        json.loads(x)["event"].rsplit(":", 1)[1]: json.loads(x)["matches"] for x in out.splitlines()
    }
    assert got == {
        "1": [f"{subs}:2", f"{subs}:3#2"],
        "2": [f"{subs}:2", f"{subs}:3#2"],
        "4": [f"{subs}:2"],
        "6": [f"{subs}:3#1"],
    }


def test_match_rejects_a_bad_filter_with_its_position():
    code, _, err = run(["match", "-f", "price >> 3"], "")
    assert code == 2
    assert err.startswith("pubsift match: price >> 3: ") and "column 8" in err
    assert len(err.strip().splitlines()) == 1, err


def test_match_labels_filters_by_their_text_or_their_name():
    code, out, err = run(
        [
            "match",
            "-f",
            'symbol = "IBM"',
            "--name",
            "ibm",
            "-f",
            "price > 45",
            "-f",
            "price > 10",
            "--name",
            "cheap",
        ],
        json.dumps({"symbol": "IBM", "price": 50}) + "\n",
    )
    assert code == 0, err
    assert json.loads(out)["matches"] == ["ibm", "price > 45", "cheap"]


def test_match_refuses_two_filters_with_one_label_and_a_name_without_filter(capsys):
    code, _, err = run(["match", "-f", "price > 1", "-f", "a = 1", "--name", "price > 1"], "")
    assert code == 2 and "price > 1: two filters have this label" in err
    with pytest.raises(SystemExit):
        cli.main(["match", "--name", "x", "-f", "a = 1"])
    assert "--name NAME labels the -f FILTER given just before it" in capsys.readouterr().err


RATES = "currency,rate,valid_from,valid_to\nEUR,0.90,,2017-07-01\nEUR,0.85,2017-07-01,\n"


def test_match_concepts_with_rates_converts_eur_events_for_a_usd_filter(tmp_path):
    rates = tmp_path / "rates.csv"
    rates.write_text(RATES)
    events = (
        "\n".join(
            json.dumps(
                {
                    "concept": "StockQuote",
                    "time": t,
                    "context": {"currency": "EUR"},
                    "value": {"FinalPrice": v},
                }
            )
            for t, v in (("2017-06-01", 89.0), ("2017-06-01", 91.0), ("2017-08-01", 84.0))
        )
        + "\n"
    )
    usd = "StockQuote where FinalPrice < 100 USD"
    code, out, err = run(
        ["match", "-m", "concepts", "--rates", str(rates), "-f", usd, "--all"], events
    )
    assert code == 0, err
    # 89 EUR at 0.90 is 98.9 USD; 91 EUR is 101.1 USD; 84 EUR at 0.85 is 98.8 USD
    assert [json.loads(x)["matches"] for x in out.splitlines()] == [[usd], [], [usd]]
    code, out, err = run(["match", "-m", "concepts", "-f", usd], events)  # no rates: none
    assert out == ""


def test_match_rates_that_cannot_be_used_are_a_usage_error(tmp_path):
    code, _, err = run(["match", "--rates", str(tmp_path / "rates.csv"), "-f", "a = 1"], "")
    assert code == 2 and "--rates: model 'records' converts no currencies" in err
    code, _, err = run(
        [
            "match",
            "-m",
            "concepts",
            "--rates",
            str(tmp_path / "absent.csv"),
            "-f",
            "StockQuote where FinalPrice < 1 USD",
        ],
        "",
    )
    assert code == 2 and "absent.csv: no such file" in err
    bad = tmp_path / "bad.csv"
    bad.write_text("currency,rate\nEUR,lots\n")
    code, _, err = run(
        [
            "match",
            "-m",
            "concepts",
            "--rates",
            str(bad),
            "-f",
            "StockQuote where FinalPrice < 1 USD",
        ],
        "",
    )
    assert code == 2 and err.startswith(f"pubsift match: --rates {bad}: rate table line 2")


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


def test_demo_on_a_small_quotes_file(tmp_path):
    quotes = tmp_path / "quotes"
    quotes.mkdir()
    rows = ["date,open,high,low,close,volume,Name"]
    for day in range(1, 21):
        for sym, base in (("AAA", 10.0), ("ABC", 50.0), ("XYZ", 90.0)):
            p = base + day / 4
            rows.append(f"2017-02-{day:02d},{p},{p + 1},{p - 1},{p},{1000 * day},{sym}")
    (quotes / "all_stocks_1yr_2017-02-08_2018-02-07.csv").write_text("\n".join(rows) + "\n")
    code, out, _ = run(["demo", "--data", str(tmp_path)])
    assert code == 0
    assert re.search(r"events \(daily quotes\)\s*│\s*60\b", out)
    assert re.search(r"subscriptions\s*│\s*300\b", out)
    assert "busiest subscriptions" in out


def test_demo_says_so_when_the_data_folder_has_no_quotes(tmp_path, monkeypatch):
    monkeypatch.delenv("PUBSIFT_DATA", raising=False)
    code, out, err = run(["demo", "--data", str(tmp_path / "nowhere")])
    assert code == 2 and out == ""
    assert err.startswith("pubsift demo: S&P 500 quotes not found at ")
    assert str(tmp_path / "nowhere" / "quotes") in err
    assert "given by --data" in err and "PUBSIFT_DATA" in err
    assert len(err.strip().splitlines()) == 1, err


def test_demo_reads_the_data_folder_named_by_pubsift_data(tmp_path, monkeypatch):
    monkeypatch.setenv("PUBSIFT_DATA", str(tmp_path / "nowhere"))
    code, out, err = run(["demo"])
    assert code == 2 and out == "" and err.count("\n") == 1
    assert str(tmp_path / "nowhere" / "quotes") in err and "given by PUBSIFT_DATA" in err
    quotes = tmp_path / "quotes"
    quotes.mkdir()
    rows = ["date,open,high,low,close,volume,Name"] + [
        f"2017-02-{d:02d},1.0,2.0,0.5,{1.5 + d},{1000 * d},AAA" for d in range(1, 11)
    ]
    (quotes / "all_stocks_1yr_2017-02-08_2018-02-07.csv").write_text("\n".join(rows) + "\n")
    monkeypatch.setenv("PUBSIFT_DATA", str(tmp_path))
    code, out, err = run(["demo"])
    assert code == 0, err
    assert re.search(r"events \(daily quotes\)\s*│\s*10\b", out)


SAMPLE_QUOTES = ROOT / "examples" / "sample" / "quotes" / "quotes-2017-02-to-07.csv.gz"


def test_demo_reads_the_bundled_sample_by_default():
    """A fresh clone has no shared data: the demo routes the sample's quotes (README.md, "Two commands")."""
    import gzip

    from pubsift.experiments import demo

    assert demo.SAMPLE_QUOTES == SAMPLE_QUOTES
    with gzip.open(SAMPLE_QUOTES, "rt", encoding="utf-8") as fh:
        n = sum(1 for _ in fh) - 1
    code, out, err = run(["demo"])
    assert code == 0, err
    assert "reading quotes from" in out
    assert re.search(rf"events \(daily quotes\)\s*│\s*{n:,}\s", out)
    assert "busiest subscriptions" in out


def _wire_sample(tmp_path: Path, monkeypatch, body: bytes, compress: bool = True) -> Path:
    import gzip

    from pubsift.experiments import demo

    path = tmp_path / "quotes.csv.gz"
    path.write_bytes(gzip.compress(body, mtime=0) if compress else body)
    monkeypatch.setattr(demo, "SAMPLE_QUOTES", path)
    return path


def test_demo_reads_wire_form_gzip_quotes_as_the_kaggle_form(tmp_path, monkeypatch):
    """The sample's header symbol,price,... gives the same events as Kaggle's columns."""
    from pubsift.experiments import demo
    from pubsift.models.records import workload

    wire = b"symbol,price,open,high,low,volume,date\n" + b"".join(
        f"AAA,{1.5 + d},1.0,{2.0 + d},0.5,{1000 * d},2017-02-{d:02d}\n".encode()
        for d in range(1, 11)
    )
    kaggle = b"date,open,high,low,close,volume,Name\n" + b"".join(
        f"2017-02-{d:02d},1.0,{2.0 + d},0.5,{1.5 + d},{1000 * d},AAA\n".encode()
        for d in range(1, 11)
    )
    path = _wire_sample(tmp_path, monkeypatch, wire)
    plain = tmp_path / "kaggle.csv"
    plain.write_bytes(kaggle)
    err = io.StringIO()
    got, skipped = demo.read_quotes(path, err)
    assert skipped == 0 and err.getvalue() == ""
    assert [dict(q) for q in got] == [dict(q) for q in workload.load_quotes(plain)]
    assert got[0]["price"] == 2.5 and got[0]["volume"] == 1000


def test_demo_skips_bad_wire_form_rows_naming_them(tmp_path, monkeypatch):
    body = (
        b"symbol,price,open,high,low,volume,date\n"
        b"AAA,1.5,1.0,2.0,0.5,1000,2017-02-01\n"
        b"AAA,cheap,1.0,2.0,0.5,1000,2017-02-02\n"
        b"AAA,1.5\n"
        b"AAA,1.6,1.0,2.0,0.5,1000,2017-02-04\n"
    )
    path = _wire_sample(tmp_path, monkeypatch, body)
    code, out, err = run(["demo"])
    assert code == 1
    assert re.search(r"events \(daily quotes\)\s*│\s*2\b", out)
    assert err.splitlines() == [
        f"{path}:3: not a number: could not convert string to float: 'cheap'; skipped",
        f"{path}:4: expected 7 fields, got 2; skipped",
        "pubsift demo: 2 bad quote lines skipped",
    ]


@pytest.mark.parametrize("cut", ["truncated", "not gzip"])
def test_demo_refuses_a_corrupt_gzip_with_one_line(tmp_path, monkeypatch, cut):
    import gzip

    body = (
        b"symbol,price,open,high,low,volume,date\n"
        + b"AAA,1.5,1.0,2.0,0.5,1000,2017-02-01\n" * 2000
    )
    data = gzip.compress(body, mtime=0)
    path = _wire_sample(
        tmp_path,
        monkeypatch,
        data[: len(data) // 2] if cut == "truncated" else b"PK\x03\x04junk",
        compress=False,
    )
    code, _out, err = run(["demo"])
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"pubsift demo: {path}: corrupt or truncated gzip stream")


def test_demo_without_the_bundled_sample_names_it_and_the_option(tmp_path, monkeypatch):
    from pubsift.experiments import demo

    monkeypatch.setattr(demo, "SAMPLE_QUOTES", tmp_path / "absent.csv.gz")
    code, out, err = run(["demo"])
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"bundled sample quotes {tmp_path / 'absent.csv.gz'} are absent" in err
    assert "--data DIR" in err


def test_readme_routing_example_delivers_only_the_matching_quote(capsys):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(
        r"## Routing through a network of brokers.*?```python\n(.*?)```", readme, re.S
    ).group(1)
    exec(compile(block, "README.md", "exec"), {})
    assert capsys.readouterr().out.split() == ["1"]


# -- hostile input through the installed console script (README.md, "Bad input") -----------
# Real subprocesses of the venv's `pubsift`: what a user sees, tracebacks included.

PUBSIFT = Path(sys.executable).with_name("pubsift")

BROKEN_MODEL = '''
from pubsift.core.errors import EventError
from pubsift.models.records import RecordsModel


class BrokenModel(RecordsModel):
    """records, with hooks that break the contract on chosen events."""

    name = "broken"

    def parse_event(self, raw):
        if isinstance(raw, dict) and "boom" in raw:
            raise RuntimeError("parse_event exploded")
        return super().parse_event(raw)

    def matches(self, f, e):
        if "crash" in e:
            raise ZeroDivisionError("matches divided by zero")
        return super().matches(f, e)

    def new_index(self):
        from pubsift.core.index import LinearIndex

        return LinearIndex(self)
'''


def pubsift(
    *args: str, stdin: bytes = b"", cwd: Path | None = None, env: dict | None = None
) -> tuple[int, str, str]:
    done = subprocess.run(
        [str(PUBSIFT), *args], input=stdin, capture_output=True, timeout=120, cwd=cwd, env=env
    )
    out, err = done.stdout.decode(), done.stderr.decode()
    assert "Traceback" not in err, err
    return done.returncode, out, err


def test_console_script_is_the_installed_one():
    assert PUBSIFT.is_file(), f"{PUBSIFT} missing: run `make install-dev`"


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_match_events_file_missing_or_a_directory_is_a_one_line_usage_error(tmp_path, kind):
    events = tmp_path / "events.jsonl"
    if kind == "directory":
        events.mkdir()
    code, out, err = pubsift("match", "-f", "a = 1", str(events))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and f"{events}: cannot read the events file" in err
    assert ("No such file" if kind == "missing" else "Is a directory") in err


def test_match_skips_an_event_line_that_is_not_utf8_and_processes_the_rest(tmp_path):
    events = tmp_path / "events.jsonl"
    events.write_bytes(b'{"a": 1}\n{"a": "\xff\xfe"}\n{"a": 1}\n')
    code, out, err = pubsift("match", "-f", "a = 1", str(events))
    assert code == 1
    assert [json.loads(x)["event"] for x in out.splitlines()] == [f"{events}:1", f"{events}:3"]
    assert f"{events}:2: not UTF-8 text (invalid byte 0xff at column 8); skipped" in err
    assert "2 events, 1 filter, 2 matches, 1 bad line skipped" in err


def test_match_skips_an_event_line_over_the_record_limit_and_reads_on(tmp_path):
    """A line longer than ``max_record_bytes`` (default 10 MiB) is one skipped line, read
    past without being held; a line of exactly the limit (with or without \\r\\n) is read."""
    events = tmp_path / "events.jsonl"
    big = b'{"a": 1, "pad": "' + b"x" * (10 << 20) + b'"}'
    events.write_bytes(b'{"a": 1}\n' + big + b'\n{"a": 1}\n')
    code, out, err = pubsift("match", "-f", "a = 1", str(events))
    assert code == 1
    assert [json.loads(x)["event"] for x in out.splitlines()] == [f"{events}:1", f"{events}:3"]
    assert f"{events}:2: a line longer than {10 << 20} bytes; skipped" in err
    exact = b'{"a": 1, "p": "' + b"y" * 83 + b'"}'
    assert len(exact) == 100
    lines = exact + b"\r\n" + exact[:-2] + b'yy"}\n' + exact + b"\n" + exact
    code, out, err = pubsift("match", "-f", "a = 1", "--limit", "max_record_bytes=100", stdin=lines)
    assert code == 1, err
    assert [json.loads(x)["event"] for x in out.splitlines()] == [
        "stdin:1",
        "stdin:3",
        "stdin:4",
    ]
    assert "stdin:2: a line longer than 100 bytes; skipped" in err


def test_match_refuses_a_binary_filters_file_naming_file_and_line(tmp_path):
    filters = tmp_path / "filters.bin"
    filters.write_bytes(b"a = 1\n\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\n")
    code, out, err = pubsift("match", "--filters", str(filters), stdin=b'{"a": 1}\n')
    assert code == 2 and out == ""
    assert err == f"pubsift match: {filters}:2: not UTF-8 text (invalid byte 0x89 at column 1)\n"


def test_match_refuses_a_filters_file_with_a_nul_byte(tmp_path):
    filters = tmp_path / "filters.txt"
    filters.write_bytes(b"a = 1\nb = \x00\n")
    code, _, err = pubsift("match", "--filters", str(filters), stdin=b"")
    assert (
        code == 2 and err == f"pubsift match: {filters}:2: binary data (a NUL byte at column 5)\n"
    )


def test_match_refuses_a_json_pattern_with_a_duplicate_key(tmp_path):
    filters = tmp_path / "filters.txt"
    filters.write_text('a = 1\n{"a": [1], "a": [2]}\n')
    code, _, err = pubsift("match", "--filters", str(filters), stdin=b'{"a": 1}\n')
    assert code == 2
    assert err == (
        f'pubsift match: {filters}:2: invalid JSON: duplicate key "a" in a JSON object\n'
    )
    code, _, err = pubsift("match", "-f", '{"a": {"b": [1], "b": [2]}}', stdin=b"")
    assert code == 2 and '{"a": {"b": [1], "b": [2]}}: invalid JSON: duplicate key "b"' in err


def test_match_skips_event_lines_the_library_would_refuse(tmp_path):
    lines = [
        b'{"a": 1, "a": 2}',
        b'{"a": NaN}',
        b'{"a": ' + b"9" * 5000 + b"}",
        b"[" * 100_000,
        b'{"a": 1}',
    ]
    code, out, err = pubsift("match", "-f", "a = 1", stdin=b"\n".join(lines) + b"\n")
    assert code == 1
    assert [json.loads(x)["event"] for x in out.splitlines()] == ["stdin:5"]
    got = err.splitlines()
    assert got[0] == 'stdin:1: invalid JSON: duplicate key "a" in a JSON object; skipped'
    assert got[1] == "stdin:2: invalid JSON: NaN is not JSON; skipped"
    assert got[2].startswith("stdin:3: invalid JSON: an integer of more than 4,300 digits")
    assert got[3] == "stdin:4: invalid JSON: nested too deeply; skipped"
    assert got[4] == "1 event, 1 filter, 1 match, 4 bad lines skipped"


def test_match_reports_a_model_hook_that_breaks_the_contract_and_carries_on(tmp_path):
    """A third-party model (registered through a dist-info on PYTHONPATH) whose hooks raise
    RuntimeError / ZeroDivisionError: each line is an internal error naming the line."""
    (tmp_path / "brokenmodel.py").write_text(BROKEN_MODEL)
    info = tmp_path / "brokenmodel-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenmodel\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[pubsift.models]\nbroken = brokenmodel:BrokenModel\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    events = b'{"a": 1}\n{"boom": 1}\n{"a": 1, "crash": 1}\n{"a": 1}\n'
    code, out, err = pubsift("match", "-m", "broken", "-f", "a = 1", stdin=events, env=env)
    assert code == 1
    assert [json.loads(x)["event"] for x in out.splitlines()] == ["stdin:1", "stdin:4"]
    got = err.splitlines()
    assert got[0] == (
        "stdin:2: internal error in model 'broken' (parse_event raised "
        "RuntimeError: parse_event exploded); this is a bug in the model; skipped"
    )
    assert got[1] == (
        "stdin:3: internal error in model 'broken' (index.match raised "
        "ZeroDivisionError: matches divided by zero); this is a bug in the model;"
        " skipped"
    )
    assert got[2] == "2 events, 1 filter, 2 matches, 2 bad lines skipped"


def _quotes_dir(tmp_path: Path, body: bytes | None) -> Path:
    quotes = tmp_path / "quotes"
    quotes.mkdir()
    if body is not None:
        (quotes / "all_stocks_1yr_2017-02-08_2018-02-07.csv").write_bytes(body)
    return quotes / "all_stocks_1yr_2017-02-08_2018-02-07.csv"


HEADER = b"date,open,high,low,close,volume,Name\n"


def test_demo_refuses_a_header_only_csv_with_one_line(tmp_path):
    csv_path = _quotes_dir(tmp_path, HEADER)
    code, _, err = pubsift("demo", "--data", str(tmp_path))
    assert code == 2
    assert err == (
        f"pubsift demo: {csv_path}: no quotes to route (the file holds no rows after the header)\n"
    )


@pytest.mark.parametrize(
    "body, problem",
    [
        (b"", "the file is empty"),
        (b"Date;Price\n", "expected the header date,open,high,low,close,volume,Name"),
        (b"\xff\xfe\x00d\x00a\n", "expected the header"),
    ],
)
def test_demo_refuses_an_empty_or_foreign_csv(tmp_path, body, problem):
    csv_path = _quotes_dir(tmp_path, body)
    code, _, err = pubsift("demo", "--data", str(tmp_path))
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"pubsift demo: {csv_path}") and problem in err


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_demo_quotes_file_missing_or_a_directory_is_a_one_line_error(tmp_path, kind):
    csv_path = _quotes_dir(tmp_path, None)
    if kind == "directory":
        csv_path.mkdir()
    code, _, err = pubsift("demo", "--data", str(tmp_path))
    assert code == 2 and err.count("\n") == 1 and str(csv_path) in err


def test_demo_skips_bad_quote_lines_naming_them_and_routes_the_rest(tmp_path):
    rows = [f"2017-02-{d:02d},1.0,2.0,0.5,1.5,{1000 * d},AAA".encode() for d in range(1, 11)]
    rows[2] = b"2017-02-03,1.0,2.0,0.5,\xff,3000,AAA"
    rows[4] = b"2017-02-05,1.0,2.0,0.5,cheap,5000,AAA"
    rows[6] = b"2017-02-07,1.0"
    csv_path = _quotes_dir(tmp_path, HEADER + b"\n".join(rows) + b"\n")
    code, out, err = pubsift("demo", "--data", str(tmp_path))
    assert code == 1
    assert re.search(r"events \(daily quotes\)\s*│\s*7\b", out)
    assert err.splitlines() == [
        f"{csv_path}:4: not UTF-8 text (invalid byte 0xff); skipped",
        f"{csv_path}:6: not a number: could not convert string to float: 'cheap'; skipped",
        f"{csv_path}:8: expected 7 fields, got 2; skipped",
        "pubsift demo: 3 bad quote lines skipped",
    ]
