"""The TOML job file of ``pubsift route JOB.toml`` (docs/spark.md, "Job files (TOML)"): sources, subscribers,
Spark settings, relative paths, and every problem at once, before Spark starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pubsift.adapters import Source
from pubsift.adapters.spark.jobfile import Job, load_job
from pubsift.adapters.spark.subscriptions import JobError
from pubsift.core.registry import load_model

SUB = {"id": "alice", "model": "records", "filter": 'symbol = "IBM" and price > 45'}


def job(tmp_path, text, name="job.toml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def problems_of(path):
    with pytest.raises(JobError) as info:
        load_job(path)
    return info.value.problems


@pytest.fixture
def tree(tmp_path):
    """A job directory: data/quotes.csv, feeds/a.rss, subs.jsonl."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "quotes.csv").write_text("symbol,price\nIBM,50\n")
    (tmp_path / "feeds").mkdir()
    (tmp_path / "feeds" / "a.rss").write_text("<rss/>")
    (tmp_path / "subs.jsonl").write_text(json.dumps(SUB) + "\n")
    return tmp_path


def test_a_complete_job_with_paths_relative_to_the_job_file(tree, monkeypatch):
    path = job(
        tree,
        """
out = "out"
format = "jsonl"
layout = "per-subscriber"
csv_reader = "python"
subscriptions = "subs.jsonl"

[spark]
master = "local[2]"
app_name = "quotes"
[spark.conf]
"spark.sql.shuffle.partitions" = 8
spark.sql.adaptive.enabled = true
"spark.memory.fraction" = 0.5
"spark.driver.memory" = "2g"

[[source]]
path = "data/quotes.csv"
model = "records"
columns = { price = "float" }

[[source]]
path = "feeds/*.rss"
model = "xml"
exclude = ["*.md"]
""",
    )
    monkeypatch.chdir("/")  # the working directory does not matter
    got = load_job(os.path.relpath(path, "/"))
    assert isinstance(got, Job)
    # paths under the working directory are kept relative to it (short, stable labels)
    assert [os.path.abspath(s.path) for s in got.sources] == [
        str(tree / "data" / "quotes.csv"),
        str(tree / "feeds" / "*.rss"),
    ]
    assert got.sources == (
        Source(
            os.path.relpath(tree / "data" / "quotes.csv"),
            model="records",
            columns={"price": "float"},
        ),
        Source(os.path.relpath(tree / "feeds" / "*.rss"), model="xml", exclude=("*.md",)),
    )
    assert [s.id for s in got.subscribers] == ["alice"]
    assert got.subscribers[0].where == f"{os.path.relpath(tree / 'subs.jsonl')}:1"
    assert got.spark == {
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.adaptive.enabled": "true",
        "spark.memory.fraction": "0.5",
        "spark.driver.memory": "2g",
    }
    assert (got.master, got.app_name, got.out, got.format, got.layout, got.csv_reader) == (
        "local[2]",
        "quotes",
        os.path.relpath(tree / "out"),
        "jsonl",
        "per-subscriber",
        "python",
    )
    assert got.where == os.path.relpath(path, "/")


def test_subscriber_tables_and_defaults(tree):
    path = job(
        tree,
        f"""
[[source]]
path = "{tree / "data"}"

[[subscriber]]
id = "alice"
model = "records"
filter = 'symbol = "IBM" and price > 45'

[[subscriber]]
id = "bob"
model = "records"
filter = {{ "$or" = [{{ symbol = ["IBM"] }}, {{ price = [{{ numeric = [">", 100] }}] }}] }}
""",
    )
    got = load_job(path)
    alice, bob = got.subscribers
    records = load_model("records")
    assert alice.filters == (records.parse_filter('symbol = "IBM" and price > 45'),)
    assert len(bob.filters) == 2 and bob.where == f'{path}: [[subscriber]] 2 (id "bob")'
    assert got.sources == (Source(str(tree / "data")),)
    assert (got.master, got.app_name, got.out, got.format, dict(got.spark)) == (
        None,
        "pubsift",
        None,
        None,
        {},
    )


def test_every_problem_of_a_job_file_in_one_error_in_file_order(tree):
    (tree / "bad.jsonl").write_text(
        '{"id": "a", "model": "records", "filter": "x = = 1"}\n'
        '{"id": "a", "model": "nope", "filter": "x"}\n'
    )
    path = job(
        tree,
        """
out = 3
format = "csv"
subscriptions = "bad.jsonl"
bogus = 1
[spark]
master = ""
foo = 1
[spark.conf]
"a.b" = 1
a.b = 2
when = 1979-05-27
[[source]]
path = "data/quotes.csv"
model = "records"
[[source]]
path = "missing.csv"
[[source]]
path = "data/*.xml"
[[source]]
path = "data"
colums = 1
[[source]]
path = "data"
model = "nope"
[[source]]
path = "data"
format = "docx"
[[source]]
path = "data"
split = "not an element"
[[source]]
path = "data"
model = "records"
publisher = { concept = "StockQuote" }
""",
    )
    got = problems_of(path)
    bad = str(tree / "bad.jsonl")
    expected = [
        f"{path}: out is a directory path (a string), not 3",
        f"{path}: format is 'parquet' or 'jsonl', not 'csv'",
        f"{bad}:1: filter: ",
        f'{bad}:2: unknown model "nope"',
        f'{bad}:2: duplicate id "a" (first at {bad}:1)',
        f"{path}: unknown key 'bogus'; the keys are spark, source, subscriptions, subscriber, "
        "out, format, layout, csv_reader",
        f"{path}: [spark] master is a non-empty string, not ''",
        f"{path}: [spark] unknown key 'foo'",
        f"{path}: [spark.conf] 'a.b' is given twice",
        f"{path}: [spark.conf] 'when' is a string, number or boolean, not datetime.date",
        f"{path}: [[source]] 2: {tree / 'missing.csv'} does not exist",
        f"{path}: [[source]] 3: the pattern {tree / 'data' / '*.xml'} matches no file",
        f"{path}: [[source]] 4: source {tree / 'data'}: unknown setting(s) colums",
        f"{path}: [[source]] 5: source {tree / 'data'}: model 'nope' cannot be used",
        f"{path}: [[source]] 6: source {tree / 'data'}: no reader for format 'docx'",
        f"{path}: [[source]] 7: source {tree / 'data'}: ",
        f"{path}: [[source]] 8: source {tree / 'data'}: publisher: a publisher side makes "
        "semantic objects of the concepts model",
    ]
    assert len(got) == len(expected), "\n".join(got)
    for g, e in zip(got, expected):
        assert g.startswith(e), (g, e)
    assert "at line 1, column" in got[2]


@pytest.mark.parametrize(
    "text, problem",
    [
        ("[[source]]\npath = 'x'\n", "no subscribers: give subscriptions"),
        ("subscriptions = 's.jsonl'\n[[subscriber]]\nid = 'a'\n", "not both"),
        ("subscriptions = 's.jsonl'\n", "no [[source]] table"),
        ("subscriptions = 7\n", "subscriptions is the path of a JSON-lines file"),
        (
            "[source]\npath = 'x'\n",
            "source is an array of tables (write [[source]] before each), not a single table",
        ),
        ("subscriber = 3\n", "subscriber is an array of tables"),
        ("spark = 1\n", "spark is a table"),
        ("[spark]\nconf = 1\n", "conf is a table"),
        ("[spark.conf]\nx = nan\n", "'x' is a string, number or boolean, not nan"),
        ("[spark.conf]\nx = [1]\n", "'x' is a string, number or boolean, not [1]"),
        ("layout = 'buckets'\n", "layout is 'sorted' or 'per-subscriber', not 'buckets'"),
        ("csv_reader = 'pandas'\n", "csv_reader is 'spark' or 'python', not 'pandas'"),
    ],
)
def test_structural_problems(tree, text, problem):
    got = problems_of(job(tree, text))
    assert any(problem in p for p in got), got


def test_a_subscriptions_file_that_is_missing_or_empty(tree):
    (tree / "empty.jsonl").write_text("\n# none\n")
    got = problems_of(job(tree, "subscriptions = 'empty.jsonl'\n[[source]]\npath = 'data'\n"))
    assert got == [f"{tree / 'empty.jsonl'}: no subscriber (the file holds no JSON line)"]
    got = problems_of(job(tree, "subscriptions = 'gone.jsonl'\n[[source]]\npath = 'data'\n"))
    assert got == [
        f"{tree / 'gone.jsonl'}: cannot read the subscriptions file: No such file or directory"
    ]


def test_subscriber_table_problems_name_the_table_and_its_id(tree):
    got = problems_of(
        job(
            tree,
            """
[[source]]
path = "data"
[[subscriber]]
id = "a"
model = "records"
filter = "x > 1"
[[subscriber]]
id = "bob"
model = "records"
filter = "x > > 1"
[[subscriber]]
model = "records"
filter = { x = [1979-05-27] }
[[subscriber]]
id = "a"
model = "records"
filter = "x = 1"
""",
        )
    )
    assert got[0].startswith(f'{tree / "job.toml"}: [[subscriber]] 2 (id "bob"): filter: ')
    assert "column 5" in got[0]
    assert got[1].startswith(f"{tree / 'job.toml'}: [[subscriber]] 3: the subscriber has no id")
    assert "filter is not JSON" in got[2] and "write dates as strings" in got[2]
    assert got[3] == (
        f'{tree / "job.toml"}: [[subscriber]] 4 (id "a"): duplicate id "a" '
        f'(first at {tree / "job.toml"}: [[subscriber]] 1 (id "a"))'
    )


def test_toml_syntax_errors_name_line_and_column(tree):
    path = job(tree, "out = 'o'\nformat = = 'jsonl'\n")
    assert problems_of(path) == [f"{path}:2:10: invalid TOML: Invalid value"]


@pytest.mark.parametrize(
    "raw, problem",
    [
        (b"out = 'o'\nformat = '\xff'\n", ":2:11: not UTF-8 text (invalid byte 0xff)"),
        (b"a = " + b"[" * 100_000 + b"]" * 100_000, "invalid TOML: nested too deeply"),
        (b"\x00\x01\x02binary", "invalid TOML"),
    ],
)
def test_hostile_job_files_give_a_job_error(tree, raw, problem):
    p = tree / "job.toml"
    p.write_bytes(raw)
    got = problems_of(str(p))
    assert len(got) == 1 and problem in got[0], got


def test_a_missing_or_huge_job_file(tree):
    missing = str(tree / "none.toml")
    assert problems_of(missing) == [
        f"{missing}: cannot read the job file: No such file or directory"
    ]
    big = tree / "big.toml"
    with open(big, "wb") as fh:
        fh.truncate((16 << 20) + 1)
    assert problems_of(str(big)) == [f"{big}: a job file is at most 16,777,216 bytes"]


@settings(max_examples=60, deadline=None)
@given(
    st.binary(max_size=300)
    | st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass"))
)
def test_garbage_job_files_give_a_job_error_nothing_else(tmp_path_factory, raw):
    p = tmp_path_factory.mktemp("j") / "job.toml"
    p.write_bytes(raw)
    with pytest.raises(JobError) as info:  # no source, no subscriber: never a Job
        load_job(str(p))
    assert info.value.problems and all(x.startswith(str(p)) for x in info.value.problems)


def test_loading_a_job_does_not_import_pyspark(tree):
    path = job(tree, "subscriptions = 'subs.jsonl'\n[[source]]\npath = 'data'\n")
    code = (
        "import sys; from pubsift.adapters.spark.jobfile import load_job; "
        f"load_job({path!r}); assert 'pyspark' not in sys.modules, 'pyspark imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
