"""The Spark job end to end (docs/spark.md, "What is written"; DESIGN.md §2.4): counts against the
plain-Python reading, the output layout (deliveries partitioned and repartitioned by
subscriber, Parquet and JSON-lines fields, quarantine, summary.json), routing an event store
again and again, re-runs into the same --out, a failed job leaving nothing behind, and the
command line's checks before Spark starts."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from pubsift.adapters import Event, Quarantined
from pubsift.adapters.summary import Summary

from . import kit
from .conftest import SEED, run_route

pytestmark = pytest.mark.spark


def plain_summary(sources, limits=None) -> dict:
    """The counts of the plain-Python reading, inputs with no record included."""
    from pubsift.adapters import ReadLimits, read

    s = Summary()
    for o in read(*sources, limits=limits or ReadLimits(), seen=s.saw):
        s.add(o)
    return s.to_json()


def siblings(out: Path) -> list[str]:
    """Staging directories of ``out`` left beside it."""
    return [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.partial")]


# -- counts ---------------------------------------------------------------------------------
def test_counts_per_source_model_and_reason_equal_the_plain_reading(routed, sample):
    got, want = routed.summary, plain_summary(sample.sources)
    assert kit.summary(routed.out) == json.loads(json.dumps(got))
    assert got["sources"] == dict(sorted(want["sources"].items()))
    for c in got["sources"].values():
        assert c["read"] == c["events"] + c["quarantined"]
    assert (got["read"], got["events"], got["quarantined"]) == (
        want["read"],
        want["events"],
        want["quarantined"],
    )
    assert got["reasons"] == want["reasons"]
    models: dict[str, int] = {}
    for o in sample.outcomes:
        if isinstance(o, Event):
            models[o.model] = models.get(o.model, 0) + 1
    assert got["models"] == models
    assert set(want["reasons"]) >= {
        "csv-field-count",
        "json-syntax",
        "xml-syntax",
        "unknown-format",
        "csv-header",
        "concept-enrichment",
    }


def test_the_event_store_holds_the_plain_readings_events(routed, sample):
    from pubsift.core.registry import load_model

    rows = kit.read_rows(routed.out / "events", "parquet", "model")
    got = sorted(
        (r["model"], r["source"], r["position"], json.dumps(json.loads(r["event"]), sort_keys=True))
        for r in rows
    )
    want = sorted(
        (
            o.model,
            o.source,
            o.position,
            json.dumps(
                json.loads(json.dumps(load_model(o.model).dump_event(o.event))), sort_keys=True
            ),
        )
        for o in sample.outcomes
        if isinstance(o, Event)
    )
    assert got == want
    assert {d.name for d in (routed.out / "events").iterdir() if d.is_dir()} == {
        "model=records",
        "model=xml",
        "model=concepts",
    }


def test_the_quarantine_holds_the_plain_readings_quarantined_records(routed, sample):
    rows = kit.read_rows(routed.out / "quarantine", "parquet")
    assert rows and set(rows[0]) >= {"source", "position", "reason", "message", "excerpt"}
    got = sorted(
        (r["source"], r["position"], r["reason"], r["message"], r["excerpt"], r["model"])
        for r in rows
    )
    want = sorted(
        (q.source, q.position, q.reason, q.message, q.excerpt, q.model)
        for q in sample.outcomes
        if isinstance(q, Quarantined)
    )
    assert got == want


# -- outputs ----------------------------------------------------------------------------------
def test_deliveries_are_one_dataset_sorted_by_subscriber(routed, sample):
    """The default layout (docs/spark.md, "What is written"): the files straight under deliveries/, the subscriber
    a column, rows sorted by (subscriber, source, position); the summary's counts (made
    from the plan before writing) equal what was written."""
    import pyarrow.parquet as pq

    assert len(sample.subscribers) >= 20
    pairs = kit.delivered_pairs(routed.out)
    deliveries = routed.out / "deliveries"
    assert not [p for p in deliveries.iterdir() if p.is_dir()]
    files = kit.data_files(deliveries)
    assert len(files) == 1  # route.partitions_for: a store of a few KiB, one task, one file
    table = pq.read_table(files[0])
    assert table.schema.names == ["subscriber", "source", "position", "model", "event"]
    keys = list(zip(*(table.column(c).to_pylist() for c in ("subscriber", "source", "position"))))
    assert keys == sorted(keys) and len(keys) == len(set(keys))
    summary = routed.summary
    assert summary["layout"] == "sorted"
    assert summary["subscribers"] == {s.id: len(pairs.get(s.id, ())) for s in sample.subscribers}
    assert summary["subscribers"]["xml-none"] == 0
    assert summary["deliveries"] == sum(len(v) for v in pairs.values()) == len(keys)
    assert set(summary["seconds"]) == {"start", "list", "convert", "route", "total"}
    assert all(v >= 0 for v in summary["seconds"].values())
    marker = json.loads((routed.out / "_pubsift.json").read_text())
    assert marker == {"written_by": "pubsift", "kind": "route", "format": "parquet"}
    assert f"deliveries: {summary['deliveries']}" in routed.console
    assert not siblings(routed.out)


def test_one_subscribers_deliveries_are_read_from_its_row_groups_only(
    spark, stored, sample, tmp_path, monkeypatch
):
    """Small row groups (the size lowered for the sample): each holds a range of
    subscribers, and the documented reads (pyarrow's filters=, Spark's where) give one
    subscriber's deliveries, equal to the linear scan's, from its row groups only."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq
    from pubsift.adapters.spark import layout
    from pyspark.sql import functions as F

    monkeypatch.setattr(layout, "ROW_GROUP_BYTES", 4096)
    store, _ = stored
    records = [s for s in sample.subscribers if s.model == "records"]  # one model: shorter
    run = run_route(records, tmp_path / "out", event_store=str(store))
    path = run.out / "deliveries"
    want = kit.brute_force(records, sample.outcomes)
    meta = pq.ParquetFile(kit.data_files(path)[0]).metadata
    ranges = [
        (meta.row_group(i).column(0).statistics.min, meta.row_group(i).column(0).statistics.max)
        for i in range(meta.num_row_groups)
    ]
    assert len(ranges) >= 4 and all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))
    busiest = max(want, key=lambda s: len(want[s]))
    got = pq.read_table(path, filters=[("subscriber", "==", busiest)]).to_pylist()
    assert (
        {(r["source"], r["position"]) for r in got}
        == want[busiest]
        == kit.delivered_pairs(run.out)[busiest]
    )
    dataset = ds.dataset(path, format="parquet")
    predicate = ds.field("subscriber") == busiest
    read = [g for f in dataset.get_fragments() for g in f.split_by_row_group(predicate)]
    assert 0 < len(read) < len(ranges)
    rows = spark.read.parquet(str(path)).where(F.col("subscriber") == busiest).collect()
    assert {(r.source, r.position) for r in rows} == want[busiest]


def test_a_second_run_into_the_same_out_is_refused(routed, sample):
    from pubsift.adapters.spark.store import OutputError

    before = sorted(str(p) for p in routed.out.rglob("*"))
    with pytest.raises(OutputError, match=r"exists and is not empty.*--overwrite"):
        run_route(sample.subscribers, routed.out, sources=sample.sources)
    assert sorted(str(p) for p in routed.out.rglob("*")) == before
    assert not siblings(routed.out)


def test_overwrite_refuses_a_directory_pubsift_did_not_write(sample, tmp_path):
    from pubsift.adapters.spark.store import OutputError

    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("years of work")
    with pytest.raises(OutputError, match="only a directory a pubsift job wrote"):
        run_route(sample.subscribers, home, sources=sample.sources, overwrite=True)
    assert [p.name for p in home.iterdir()] == ["thesis.tex"] and not siblings(home)


# -- an event store routed again and again -----------------------------------------------------
@pytest.fixture(scope="module")
def stored(spark, sample, tmp_path_factory):
    from io import StringIO

    from pubsift.adapters.spark.job import Settings, ingest
    from rich.console import Console

    out = tmp_path_factory.mktemp("store") / "store"
    summary = ingest(sample.sources, str(out), Settings(), Console(file=StringIO()))
    return out, summary


def other_subscribers(root: Path):
    from pubsift.adapters.spark.subscriptions import load_subscriptions

    entries = [
        {**e, "id": "b-" + e["id"]}
        for e in kit.subscriptions(SEED + 1, records=12)
        if e["model"] != "concepts"
    ]
    return load_subscriptions(str(kit.write_subscriptions(root / "subs-b.jsonl", entries)))


def test_an_event_store_routes_twice_as_the_files_do(stored, routed, sample, tmp_path):
    import pyarrow.parquet as pq

    store, ingested = stored
    assert ingested["sources"] == routed.summary["sources"]
    assert not (store / "deliveries").exists()
    assert json.loads((store / "_pubsift.json").read_text())["kind"] == "store"
    out = tmp_path / "out"
    subs_b = other_subscribers(tmp_path)
    # the directory per subscriber, kept as an option (docs/spark.md): one file in each
    first = run_route(subs_b, out, event_store=str(store), layout="per-subscriber")
    want_b = kit.brute_force(subs_b, sample.outcomes)
    assert kit.delivered_pairs(out) == want_b and len(want_b) >= 8
    dirs = sorted(p for p in (out / "deliveries").iterdir() if p.is_dir())
    assert sorted(kit.partition_value(d.name, "subscriber") for d in dirs) == sorted(want_b)
    for d in dirs:
        files = kit.data_files(d)
        assert len(files) == 1, (d.name, files)  # repartitioned by subscriber
        assert pq.read_schema(files[0]).names == ["source", "position", "model", "event"]
    assert first.summary["layout"] == "per-subscriber"
    assert first.summary["subscribers"] == {s.id: len(want_b.get(s.id, ())) for s in subs_b}
    assert first.summary["sources"] == ingested["sources"]
    assert first.summary["store"] == str(store)
    # the same store, the first subscribers, JSON lines, replacing the first run's output
    second = run_route(
        sample.subscribers, out, event_store=str(store), format="jsonl", overwrite=True
    )
    assert kit.delivered_pairs(out, "jsonl") == kit.delivered_pairs(routed.out)
    assert second.summary["subscribers"] == routed.summary["subscribers"]
    assert not [d for d in (out / "deliveries").iterdir() if d.is_dir()]  # sorted, replaced
    assert kit.summary(out)["format"] == "jsonl" and not siblings(out)
    rows = kit.read_rows(out / "deliveries", "jsonl", "subscriber")
    assert all(set(r) == {"subscriber", "source", "position", "model", "event"} for r in rows)
    assert all(isinstance(r["event"], (dict, list, int)) for r in rows)  # JSON, not a string
    direct = kit.read_rows(routed.out / "deliveries", "parquet", "subscriber")
    assert {(r["subscriber"], r["source"], r["position"]): r["event"] for r in rows} == {
        (r["subscriber"], r["source"], r["position"]): json.loads(r["event"]) for r in direct
    }


@pytest.mark.parametrize("damage", ["cut-file", "bad-event"])
def test_a_failing_job_leaves_no_output_and_no_staging(stored, sample, tmp_path, damage):
    """A damaged event store makes the Spark job fail: a Parquet file cut short (as by a
    full disk or an interrupted copy: the driver cannot read its footer), or a row whose
    event is not the model's wire form (written by another tool: a task fails while the
    deliveries are being written). --out is not created, the staging directory removed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    store, _ = stored
    broken = tmp_path / "broken-store"
    shutil.copytree(store, broken)
    if damage == "cut-file":
        part = next(p for p in kit.data_files(broken / "events") if p.suffix == ".parquet")
        part.write_bytes(part.read_bytes()[:100])
        words = "broken-store"
    else:
        pq.write_table(
            pa.table(
                {
                    "source": ["elsewhere.xml"],
                    "position": pa.array([1], pa.int64()),
                    "event": ["<not the xml model's wire form"],
                }
            ),
            broken / "events" / "model=xml" / "part-99999-damaged.parquet",
        )
        words = "JSONDecodeError"
    out = tmp_path / "out"
    with pytest.raises(Exception) as failure:
        run_route(sample.subscribers, out, event_store=str(broken))
    assert words in str(failure.value), str(failure.value)[:2000]
    assert not out.exists() and not siblings(out)


# -- the command line, before Spark starts (real processes) ------------------------------------
def run(args, env=None, timeout=300):
    return subprocess.run(
        args, capture_output=True, text=True, timeout=timeout, env=env or kit.spark_env()
    )


SPARK_NOISE = ("log4j", "WARN", "SparkContext", "Using Spark", "py4j")


@pytest.mark.slow
def test_bad_subscriptions_are_all_reported_with_their_lines_before_spark(sample, tmp_path):
    subs = tmp_path / "subs.jsonl"
    subs.write_text(
        "\n".join(
            [
                json.dumps(sample.entries[0]),
                json.dumps({"id": "a", "model": "nosuchmodel", "filter": "x"}),
                json.dumps({"id": "b", "model": "records", "filter": "price >"}),
                "{not json",
                json.dumps({"id": "c", "model": "xml", "filter": "//a[", "vocabulary": {}}),
                json.dumps(sample.entries[0]),  # duplicate id
                json.dumps({"id": "d", "model": "concepts", "filter": "NoSuchConcept where X > 1"}),
            ]
        )
        + "\n"
    )
    out = tmp_path / "out"
    done = run(
        kit.pubsift_cmd()
        + ["route", str(sample.root / "files"), "--subscriptions", str(subs), "--out", str(out)]
    )
    assert done.returncode == 2, done.stderr
    err = done.stderr
    for line in (2, 3, 4, 5, 6, 7):
        assert f"subs.jsonl:{line}:" in err, (line, err)
    assert "subs.jsonl:1:" not in err
    assert "nosuchmodel" in err and "duplicate id" in err and "NoSuchConcept" in err
    assert "nothing was run" in err and "Traceback" not in err
    assert not any(w in err for w in SPARK_NOISE), err
    assert not out.exists() and not siblings(out)


@pytest.mark.slow
def test_a_second_run_into_the_same_out_exits_2_and_says_why(routed, sample):
    done = run(
        kit.pubsift_cmd()
        + [
            "route",
            str(sample.root / "files"),
            "--subscriptions",
            str(sample.subs_file),
            "--out",
            str(routed.out),
        ]
    )
    assert done.returncode == 2, done.stderr
    assert "exists and is not empty" in done.stderr and "--overwrite" in done.stderr
    assert not any(w in done.stderr for w in SPARK_NOISE), done.stderr
    assert not siblings(routed.out)


@pytest.mark.slow
@pytest.mark.parametrize("java_home", ["/nonexistent", None])
def test_missing_java_exits_2_with_a_clear_message(sample, tmp_path, java_home):
    env = kit.spark_env(PATH=str(tmp_path / "no-bin"))
    env.pop("JAVA_HOME", None)
    if java_home:
        env["JAVA_HOME"] = java_home
    out = tmp_path / "out"
    done = run(
        kit.pubsift_cmd()
        + [
            "route",
            str(sample.root / "files"),
            "--subscriptions",
            str(sample.subs_file),
            "--out",
            str(out),
        ],
        env=env,
    )
    assert done.returncode == 2, done.stderr
    where = f"JAVA_HOME={java_home}" if java_home else "the PATH"
    assert f"Spark needs Java 17 or later and there is no java in {where}" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not out.exists() and not siblings(out)


def test_the_spark_tests_share_one_worker(request):
    """Under ``make test`` (xdist, ``--dist loadgroup``) every test marked ``spark`` is in
    the group ``spark`` (``tests/conftest.py``), so that one worker starts the run's one
    Spark session and runs each shared job once; xdist names the group in the test's id
    (``@spark``), which some pytest releases drop (pyproject pins them out)."""
    if not hasattr(request.config, "workerinput"):
        pytest.skip("not run by an xdist worker")
    if request.config.getvalue("loadgroup"):
        assert request.node.nodeid.endswith("@spark"), request.node.nodeid
