"""``--csv-reader spark|python`` and a job file's ``csv_reader`` choose who converts CSV
files (docs/spark.md, "CSV read by Spark"), ``--jsonl-reader``/``jsonl_reader`` who converts
JSON-lines files: the settings that reach the job, the command
line over the job file, Spark by default (no Spark started: the job is replaced)."""

from __future__ import annotations

import argparse
import io

import pytest
from pubsift.adapters.spark import cli
from rich.console import Console


@pytest.fixture
def calls(monkeypatch):
    from pubsift.adapters.spark import job

    got: list = []
    monkeypatch.setattr(job, "ingest", lambda sources, out, settings, *a, **k: got.append(settings))
    monkeypatch.setattr(job, "route", lambda *a, **k: got.append(a[2]))
    return got


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    cli.add_ingest_arguments(sub.add_parser("ingest"))
    cli.add_route_arguments(sub.add_parser("route"))
    args = parser.parse_args(argv)
    return args.func(args, Console(file=io.StringIO()))


def test_ingest_reads_csv_by_spark_unless_told(calls, tmp_path):
    (tmp_path / "q.csv").write_text("a\n1\n")
    base = ["ingest", str(tmp_path / "q.csv"), "--out", str(tmp_path / "store")]
    assert run(base) == 0
    assert run([*base, "--csv-reader", "python"]) == 0
    assert run([*base, "--csv-reader", "spark"]) == 0
    assert [s.native_csv for s in calls] == [True, False, True]
    with pytest.raises(SystemExit):
        run([*base, "--csv-reader", "pandas"])


def test_route_takes_the_job_file_key_and_the_command_line_over_it(calls, tmp_path):
    (tmp_path / "q.csv").write_text("a\n1\n")
    (tmp_path / "subs.jsonl").write_text('{"id": "x", "model": "records", "filter": "a = 1"}\n')
    job = tmp_path / "job.toml"
    job.write_text(
        'out = "out"\nsubscriptions = "subs.jsonl"\ncsv_reader = "python"\n'
        '[[source]]\npath = "q.csv"\n'
    )
    assert run(["route", str(job)]) == 0
    assert run(["route", str(job), "--csv-reader", "spark"]) == 0
    direct = ["route", str(tmp_path / "q.csv"), "--subscriptions", str(tmp_path / "subs.jsonl")]
    assert run([*direct, "--out", str(tmp_path / "o")]) == 0
    assert [s.native_csv for s in calls] == [False, True, True]


def test_ingest_reads_json_lines_by_spark_unless_told(calls, tmp_path):
    (tmp_path / "q.jsonl").write_text('{"a": 1}\n')
    base = ["ingest", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "store")]
    assert run(base) == 0
    assert run([*base, "--jsonl-reader", "python"]) == 0
    assert run([*base, "--jsonl-reader", "spark", "--csv-reader", "python"]) == 0
    assert [(s.native_csv, s.native_jsonl) for s in calls] == [
        (True, True),
        (True, False),
        (False, True),
    ]
    with pytest.raises(SystemExit):
        run([*base, "--jsonl-reader", "orjson"])


def test_route_takes_the_job_file_jsonl_reader_and_the_command_line_over_it(calls, tmp_path):
    (tmp_path / "q.jsonl").write_text('{"a": 1}\n')
    (tmp_path / "subs.jsonl").write_text('{"id": "x", "model": "records", "filter": "a = 1"}\n')
    job = tmp_path / "job.toml"
    job.write_text(
        'out = "out"\nsubscriptions = "subs.jsonl"\njsonl_reader = "python"\n'
        '[[source]]\npath = "q.jsonl"\n'
    )
    assert run(["route", str(job)]) == 0
    assert run(["route", str(job), "--jsonl-reader", "spark"]) == 0
    direct = ["route", str(tmp_path / "q.jsonl"), "--subscriptions", str(tmp_path / "subs.jsonl")]
    assert run([*direct, "--out", str(tmp_path / "o"), "--jsonl-reader", "python"]) == 0
    assert [s.native_jsonl for s in calls] == [False, True, False]
    assert [s.native_csv for s in calls] == [True, True, True]
