"""JSON-lines files converted by Spark's text source and SQL
(``pubsift.adapters.spark.native_jsonl``) give exactly what the Python JSON-lines reader
gives: the same events (JSON text, source, position) and the same quarantine records
(reason, message, excerpt, position), on hostile lines, on random objects, on mutations of
a good file, on a file read in several blocks and on the bundled sample; most lines of a
plain file are converted by Spark itself (not all handed to Python)."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
from pubsift.adapters import Source
from pubsift.adapters.readers.limits import ReadLimits

from .test_native_csv import mutate, python_rows, spark_rows

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
LIMITS = ReadLimits(max_record_bytes=2000)

HOSTILE_LINES = [
    b'{"a": 1, "b": [1, 2.5, "x"], "c": {"d": null, "e": true}}',
    b"",
    b"  \t",
    b"\x0b\x0c",
    b'{"a":1,"a":2}',
    b'{"a": {"x": 1}, "b": {"x": 2}}',  # equal keys in two objects: not a duplicate
    b'{"x": NaN}',
    b'{"x": -Infinity}',
    b'{"d":' + b"[" * 600 + b"]" * 600 + b"}",
    b'{"d":' + b"[" * 100 + b"]" * 100 + b"}",
    b'{"big": 123456789012345678901234567890}',
    b'{"big": ' + b"9" * 4400 + b"}",
    b'{"f": 1e999}',
    # each number form on a line of its own (one rule each)
    *(
        b'{"n": %s}' % x
        for x in b"1.50 1e5 -0 0.00001 1.0 -0.0 0.0001 0.10 1E2 100.0 123456789012345.5 "
        b"12345678901234.5 0.1234567890123456 0.123456789012345 1.05 0.05 -12.0 5 -7 "
        b"1.0000000000000001 9007199254740993.0 1234567890123456.7 0.30000000000000004".split()
    ),
    b'{"bom": "\xef\xbb\xbf"}',
    b'\xef\xbb\xbf{"bom": 1}',
    b'{"bad": "\xff"}',
    b'{"bad": "\xc3("}',
    b'{"nul": "\x00"}',
    b'{"ctl": "a\x01b"}',
    b'{"tab": "a\tb"}',
    b"[1,2]",
    b'"str"',
    b"12",
    b"null",
    b'{"t": 1} x',
    b'{"t": 1}{"u": 2}',
    b'{"t": 1},',
    b'{"u": "\\u0041"}',
    b'{"u": "\\/"}',
    b'{"v": "\\ud800"}',
    b'{"w": "\\u00e9"}',
    b'{"": 1}',
    b'{"a": {"b": 1}, "a.b": 2}',
    b'{"a.b": 1, "a": 2}',
    b'{"k": "' + b"y" * 3000 + b'"}',
    b" " * 2500,
    b'{"esc": "a\\"b\\\\c\\n\\t\\r\\b\\f"}',
    b'{"e":{}, "f": [], "g": [[], {}], "h": [{"i": [1, {"j": 2}]}]}',
    b'{"deep":[[[[[[[[1]]]]]]]]}',
    b'{"s": 1 2}',
    b'{"s": 01}',
    b'{"s": 1.}',
    b'{"s": .5}',
    b'{"s": +1}',
    b'{"q": "a" "b"}',
    b'{"z": tru}',
    b'{"z": true false}',
    b"{ }",
    b"{",
    b'{"a" 1}',
    b'{"a": 1,}',
    b"{'a': 1}",
    b"{a: 1}",
    b'{"a": [1, 2,]}',
    b'{"a": [1 2]}',
    b'{"a": ["x": 1]}',
    b'{"a":[{"x":1},{"x":2}]}',
    b'{"caf\xc3\xa9": "\xe2\x80\xa8 \xf0\x9f\x98\x80 \x7f"}',
    b'{"k\\"ey": 1, "k\\\\ey": 2}',
    b'{"x": "\\"a\\": 1", "a": 2}',
    b'{"r": 1}\r',
    b'{"r": "a\rb"}',
    b'{"sp" : 1 , "t"\t:\t[ 1 , 2 ] }   ',
]
SHAPED_LINE = b'{"s": "AAL", "x": 45.26, "n": 4330414, "b": true, "z": null}'
#: values put in place of each value of the shaped line: each read by Spark's rewrite, by
#: its general steps or by Python, as the Python reader reads them
VALUES = [
    b"1.50",
    b"-0",
    b"1e5",
    b"NaN",
    b"0.10",
    b"-0.0",
    b"1.0000000000000001",
    b"01",
    b"1.",
    b'"\\u0041"',
    b'"a\\/b"',
    b'"a\\"b"',
    b'"\x01"',
    b'"\xff"',
    b'"\x00"',
    b"[1]",
    b"{}",
    b'{"s": 1}',
    b"tru",
    b"true false",
    b'"a" "b"',
    b"1 2",
    b'"\xc3\xa9\xe2\x80\xa8"',
    b"",
    b" 7 ",
    b"\t-12\r",
    b"9" * 4401,
    b'"' + b"y" * 2100 + b'"',
    b'"\\t\\n"',
]


def shaped_file() -> bytes:
    """A file of one usual flat shape (its rewrite applies), then each value of
    :data:`VALUES` in each place, the keys swapped, given twice, spaced, ended."""
    good = SHAPED_LINE
    lines = [good] * 300
    for k in (b'"AAL"', b"45.26", b"4330414", b"true", b"null"):
        for v in VALUES:
            lines.append(good.replace(k, v, 1))
    lines += [
        b'{"x": 45.26, "s": "AAL", "n": 4330414, "b": true, "z": null}',
        b'{"s": "AAL", "s": "AAL", "x": 45.26, "n": 4330414, "b": true, "z": null}',
        b'{"s": "AAL", "x": 45.26, "n": 4330414, "b": true}',
        b'{"s": "AAL", "x": 45.26, "n": 4330414, "b": true, "z": null, "w": 1}',
        b'  {"s":"AAL","x":45.26,"n":4330414,"b":true,"z":null}  \r',
        b'{"s": "AAL", "x": 45.26, "n": 4330414, "b": true, "z": null} x',
        b'{"s": "AAL", "x": 45.26, "n": 4330414, "b": true, "z": null}}',
        b'\x01{"s": "AAL", "x": 45.26, "n": 4330414, "b": true, "z": null}',
        b'{"\\u0073": "AAL", "x": 45.26, "n": 4330414, "b": true, "z": null}',
    ]
    return b"\n".join(lines) + b"\n"


HOSTILE = {
    "shaped.jsonl": shaped_file(),
    "hostile.jsonl": b"\n".join(HOSTILE_LINES) + b"\n",
    "crlf.jsonl": b'{"a": 1}\r\n\r\n{"b": [2, 3]}\r\n{"c": 1}',
    "bom.jsonl": b'\xef\xbb\xbf{"x": 1}\n\xef\xbb\xbf{"y": 2}\n',
    "nolineend.ndjson": b'{"x": 1}\n{"y": 2}',
    "lines.json": b'{"x": 1}\n{"y": [1, 2]}\n',
    "hostile.jsonl.gz": gzip.compress(b"\n".join(HOSTILE_LINES)),
    # left to the Python reader
    "endcr.jsonl": b'{"x": 1}\n{"y": 2}\r',
    "truncated.jsonl.gz": gzip.compress(b'{"x": 1}\n' * 300)[:-30],
    "utf16.jsonl": '{"x": 1}\n'.encode("utf-16"),
    "pretty.json": b'{\n  "x": 1\n}\n',
}
NOT_PROBED = {"endcr.jsonl", "truncated.jsonl.gz", "utf16.jsonl", "pretty.json"}

GOOD = (
    b'{"date": "2017-02-08", "open": 45.26, "volume": 4330414, "Name": "AAL", "ok": true}\n'
    b'{"date": "2017-02-09", "tags": ["a", "b"], "q": {"bid": 45.07, "ask": null}}\n'
    b'{"date": "2017-02-10", "s": "one, \\"line\\"", "n": -12}\n'
    b"\n"
    b'{"a": [{"x": 1}, {"x": 2.5}], "b": {}}\n'
    b'{"date": "2017-02-14", "open": 1e3, "x": 0.5}\n'
)


def random_value(rng: random.Random, depth: int = 0):
    """A JSON value of the kinds events hold (the float as repr gives it or not)."""
    kind = rng.choice(
        ["int", "float", "str", "bool", "null", "list", "obj"]
        if depth < 4
        else ["int", "float", "str"]
    )
    if kind == "int":
        return rng.choice([0, rng.randint(-1000, 1000), rng.randint(-(10**20), 10**20)])
    if kind == "float":
        return rng.choice(
            [rng.uniform(-1e6, 1e6), round(rng.uniform(0, 100), 2), rng.random() * 1e-6, 1e16]
        )
    if kind == "str":
        return "".join(rng.choice('ab "\\/\n\té€😀\x01.:,{}[]') for _ in range(rng.randint(0, 8)))
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "list":
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {f"k{rng.randint(0, 5)}": random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def random_lines(rng: random.Random, n: int) -> bytes:
    """``n`` random objects written by json.dumps in several styles."""
    out = []
    for _ in range(n):
        obj = {f"f{i}": random_value(rng) for i in range(rng.randint(0, 5))}
        style = rng.choice(
            [{}, {"separators": (",", ":")}, {"ensure_ascii": False}, {"indent": None}]
        )
        out.append(json.dumps(obj, **style).encode())
    return b"\n".join(out) + b"\n"


def native(spark, root: Path, limits: ReadLimits, scratch: Path):
    """(the plans, Spark's rows, the events Spark SQL wrote itself per source); the counts
    it made are checked against the events it wrote."""
    import pyarrow.parquet as pq
    from pubsift.adapters.spark.ingest import list_files
    from pubsift.adapters.spark.native import probe_listing, write_native

    listing = list_files([Source(str(root))], limits)
    plans = probe_listing(listing, limits, csv=False, jsonl=True, spill=str(scratch / "plain"))
    events = scratch / "events"
    written = write_native(spark, plans, limits, str(events), str(scratch / "jsonl"))
    rows = [tuple(r) for r in written.rows]
    if written.rest is not None:
        assert not rows
        rows = [tuple(r) for r in written.rest.collect()]
    stored = pq.read_table(events).to_pylist() if events.exists() else []
    by_spark: dict[str, int] = {}
    for e in stored:
        by_spark[e["source"]] = by_spark.get(e["source"], 0) + 1
    rows += [
        ("event", "records", e["source"], e["position"], e["event"], None, None, None)
        for e in stored
    ]
    counted = {s: n for kind, s, _, _, n in written.counts if kind == "event"}
    assert counted == by_spark
    seen = {source for kind, source, _, _, _ in written.counts if kind == "seen"}
    assert seen == {plan.label for plan in plans.values()}
    return plans, spark_rows(rows), by_spark


@pytest.fixture(scope="module")
def run(spark, tmp_path_factory):
    """(root, plans, Spark's rows, events by Spark, the Python readers' rows) of the
    hostile files, 16 mutations of a good file, random objects, and a plain file read in
    several blocks (small blocks set for the run), delegated lines read in Python tasks."""
    root = tmp_path_factory.mktemp("native_jsonl")
    for name, data in HOSTILE.items():
        (root / name).write_bytes(data)
    rng = random.Random(34)
    for i in range(16):
        (root / f"m{i:02d}.jsonl").write_bytes(mutate(rng, GOOD))
    shaped = b"\n".join([SHAPED_LINE] * 200) + b"\n"
    for i in range(16, 28):
        (root / f"m{i:02d}.jsonl").write_bytes(mutate(rng, shaped))
    (root / "random.jsonl").write_bytes(random_lines(rng, 400))
    big = b"".join(
        random_lines(rng, 50) + (b"\n" if i % 3 else b"") + HOSTILE_LINES[i % 40] + b"\n"
        for i in range(120)
    )
    (root / "big.jsonl").write_bytes(big)
    (root / "big.jsonl.gz").write_bytes(gzip.compress(big))  # kept decompressed: in blocks
    (root / "small.jsonl.gz").write_bytes(gzip.compress(b'{"x": 1}\n' * 10 + b"[1]\n"))
    from pubsift.adapters.spark import native as module
    from pubsift.adapters.spark import native_jsonl

    saved = (module.ON_DRIVER, native_jsonl.COUNT_STEP, native_jsonl.MIN_BLOCK)
    module.ON_DRIVER = 0  # the delegated lines in Python tasks
    native_jsonl.COUNT_STEP, native_jsonl.MIN_BLOCK = 4096, 8192  # big.jsonl: many blocks
    try:
        plans, rows, by_spark = native(spark, root, LIMITS, tmp_path_factory.mktemp("out"))
    finally:
        module.ON_DRIVER, native_jsonl.COUNT_STEP, native_jsonl.MIN_BLOCK = saved
    assert len(big) > 20 * 8192
    return root, plans, rows, by_spark, python_rows(root, LIMITS)


def test_the_probe_takes_exactly_the_files_spark_reads_as_python_does(run):
    _, plans, *_ = run
    names = {Path(p).name for p in plans}
    assert names >= set(HOSTILE) - NOT_PROBED and not names & NOT_PROBED
    assert {"random.jsonl", "big.jsonl"} <= names
    keys = {Path(p).name: plan.keys for p, plan in plans.items()}
    assert keys["shaped.jsonl"] == ("s", "x", "n", "b", "z") and keys["hostile.jsonl"] is None
    assert sum(keys[f"m{i:02d}.jsonl"] is not None for i in range(16, 28)) >= 10


def test_hostile_lines_give_what_the_python_reader_gives(run):
    root, plans, rows, by_spark, expected = run
    for p, plan in sorted(plans.items()):
        if Path(p).name in HOSTILE:
            assert rows[plan.label] == sorted(expected[plan.label], key=repr), plan.label
    reasons = {r[5] for r in rows[str(root / "hostile.jsonl")]}
    assert {None, "json-syntax", "not-an-object", "encoding", "too-large", "invalid-event"} <= (
        reasons
    )
    assert by_spark[str(root / "hostile.jsonl")] >= 10  # not all handed to Python


def test_random_objects_and_mutations_give_what_the_python_reader_gives(run):
    root, plans, rows, by_spark, expected = run
    for p, plan in sorted(plans.items()):
        name = Path(p).name
        if name.startswith("m") or name == "random.jsonl":
            want = sorted(expected.get(plan.label, []), key=repr)
            assert rows.get(plan.label, []) == want, plan.label
    label = str(root / "random.jsonl")
    assert by_spark[label] >= len(expected[label]) // 3


def test_a_file_read_in_blocks_is_numbered_as_its_lines(run):
    root, _, rows, by_spark, expected = run
    label = str(root / "big.jsonl")
    assert rows[label] == sorted(expected[label], key=repr)
    assert by_spark[label] > len(expected[label]) // 3


def test_a_large_gz_is_read_from_its_decompressed_copy_in_blocks(run):
    """(:mod:`pubsift.adapters.spark.spill`) and a small one as it is"""
    root, plans, rows, by_spark, expected = run
    label = str(root / "big.jsonl.gz")
    plan = plans[label]
    assert plan.copy is not None and not plan.gz and plan.size > 20 * 8192
    assert rows[label] == sorted(expected[label], key=repr)
    assert by_spark[label] == by_spark[str(root / "big.jsonl")]
    assert plans[str(root / "hostile.jsonl.gz")].copy  # (its lines checked above)
    small = plans[str(root / "small.jsonl.gz")]  # below a block: read as it is
    assert small.gz and small.copy is None
    assert rows[small.label] == sorted(expected[small.label], key=repr)


def test_a_few_delegated_lines_are_read_on_the_driver_alike(spark, tmp_path):
    (tmp_path / "in").mkdir()
    for name in ("hostile.jsonl", "bom.jsonl", "crlf.jsonl"):
        (tmp_path / "in" / name).write_bytes(HOSTILE[name])
    _, rows, _ = native(spark, tmp_path / "in", LIMITS, tmp_path)
    expected = python_rows(tmp_path / "in", LIMITS)
    assert set(rows) == set(expected)
    for label in expected:
        assert rows[label] == sorted(expected[label], key=repr), label


def test_the_bundled_sample_s_json_lines_are_read_by_spark_as_by_python(spark, tmp_path):
    sample = ROOT / "examples" / "sample" / "quotes"
    (tmp_path / "in").mkdir()
    for f in sample.glob("*.jsonl"):
        (tmp_path / "in" / f.name).write_bytes(f.read_bytes())
    plans, rows, by_spark = native(spark, tmp_path / "in", ReadLimits(), tmp_path)
    expected = python_rows(tmp_path / "in", ReadLimits())
    assert plans and set(rows) == set(expected)
    for label in expected:
        assert rows[label] == sorted(expected[label], key=repr), label
        assert by_spark[label] == len(expected[label])  # every line by Spark SQL


def test_a_job_of_json_lines_only_writes_the_python_readers_events_and_counts(spark, tmp_path):
    """``ingest`` (JSON lines read by Spark by default) of JSON-lines files only, a few
    lines read by Python on the driver (their events and the quarantine written by
    pyarrow): the event store and the quarantine, read back by Spark, and the summary's
    counts are the Python readers'."""
    import io

    from pubsift.adapters.spark.job import Settings, ingest
    from rich.console import Console

    root = tmp_path / "in"
    root.mkdir()
    for name in ("shaped.jsonl", "hostile.jsonl", "crlf.jsonl"):
        (root / name).write_bytes(HOSTILE[name])
    store = tmp_path / "store"
    summary = ingest(
        [Source(str(root))], str(store), Settings(limits=LIMITS), Console(file=io.StringIO())
    )
    events = spark.read.parquet(str(store / "events")).collect()
    quarantine = spark.read.parquet(str(store / "quarantine")).collect()
    got = [("event", e.model, e.source, e.position, e.event, None, None, None) for e in events]
    got += [
        ("quarantine", q.model, q.source, q.position, None, q.reason, q.message, q.excerpt)
        for q in quarantine
    ]
    want = python_rows(root, LIMITS)
    assert spark_rows(got) == {k: sorted(v, key=repr) for k, v in want.items()}
    for label, rows in want.items():
        c = summary["sources"][label]
        assert c["events"] == sum(r[0] == "event" for r in rows), label
        assert c["quarantined"] == sum(r[0] == "quarantine" for r in rows), label
