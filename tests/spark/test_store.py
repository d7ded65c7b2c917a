"""The output directory rules (``pubsift.adapters.spark.store``; no Spark needed)."""

import os

import pytest
from pubsift.adapters.spark import store


def test_out_overlapping_an_input_is_refused(tmp_path):
    src = tmp_path / "archive"
    (src / "sub").mkdir(parents=True)
    for out, inputs in (
        (src / "out", [str(src)]),
        (src, [str(src / "sub")]),
        (tmp_path / "store", [str(tmp_path / "store")]),
        (src / "o", [str(src / "*.csv")]),
    ):
        with pytest.raises(store.OutputError, match="overlaps the input"):
            store.prepare(str(out), "parquet", True, "route", inputs)
    store.apart(str(tmp_path / "elsewhere"), [str(src), str(src / "*.csv")])


def test_staging_of_a_killed_run_is_swept_and_a_live_one_kept(tmp_path):
    out = tmp_path / "out"
    dead = tmp_path / ".out.partial-999999999-0123abcd"  # no such pid
    live = tmp_path / f".out.partial-{os.getpid()}-0123abcd"
    foreign = tmp_path / ".out.partial-999999999-fedcba98"  # no marker: not ours
    for d in (dead, live, foreign):
        d.mkdir()
    for d in (dead, live):
        (d / store.MARKER).write_text("{}")
    output = store.prepare(str(out), "jsonl", False, "route")
    assert not dead.exists() and live.exists() and foreign.exists()
    store.discard(output)
    assert not os.path.exists(output.staging)


def test_a_master_that_is_not_a_spark_url_is_refused_before_spark_starts():
    from pubsift.adapters.spark.session import SparkSetupError, check_master

    for ok in (
        "local",
        "local[2]",
        "local[*]",
        "spark://127.0.0.1:7077",
        "yarn",
        "k8s://https://api:6443",
        "sc://127.0.0.1:15002",
    ):
        check_master(ok)
    for bad in ("bogus://x", "locl", "local[x]", "spark:/x", "", "yarn-cluster"):
        with pytest.raises(SparkSetupError, match="not a Spark master URL"):
            check_master(bad)
