"""CSV files converted by Spark's text source and SQL (``pubsift.adapters.spark.native``)
give exactly what the Python CSV reader gives: the same events (JSON text, source,
position) and the same quarantine records (reason, message, excerpt, position), on the
bundled sample, on hostile files and on mutations of a good file; the files it cannot
number exactly are left to the Python reader, and the others are really read by Spark."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest
from pubsift.adapters import Event, Source, read
from pubsift.adapters.readers.limits import ReadLimits
from pubsift.models.constraints import MAX_INT_DIGITS

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
LIMITS = ReadLimits(max_record_bytes=2000)

HEADER = b"a,b,c\n"
TYPED = (
    b"1,1.5,x\n"
    b"-.5,5.,1e5\n"
    b"2.5E-3,0.00001,0.0001\n"
    b"1234567890123456.5,123456789012345.0,0.1234567890123456\n"
    b"007,+3,-0\n"
    b"1_000,nan,inf\n"
    b"true,True,TRUE\n"
    b"tRUE,false,FALSE\n"
    b",,\n"
    b"1.50,-0.0,+.0\n"
    b"\n"
    b"  \n"
    b' x ,"q,""r""",a"b\n'
    b'"tab\there","back\\slash","ctl\x01x"\n'
    b'"\x08\x0c",\xc3\xa9t\xc3\xa9,\xe2\x80\xa8\n'
    b'"",x,""\n'
    b"1e999,-1E400,5\n" + b"9" * (MAX_INT_DIGITS + 1) + b",2,3\n"
    b"9" * MAX_INT_DIGITS + b",-" + b"8" * 4001 + b",3\n"
)
HOSTILE = {
    "typed.csv": HEADER + TYPED,
    "ragged.csv": HEADER + b"1,2\n1,2,3,4\n1,2,3\n,\n",
    "utf8.csv": HEADER + b"1,\xff\xfe,3\n4,5,6\n7,a\x00b,9\n\xc3(,2,3\n",
    "bom.csv": b"\xef\xbb\xbf" + HEADER + b"1,2,3\n",
    "crlf.csv": b"a,b,c\r\n1,2,3\r\n\r\n4,5,6\r7,8,9",
    "huge.csv": HEADER + b"1," + b"x" * 3000 + b",3\n4,5,6\n" + b'"' + b"y" * 2500 + b'",1,2\n',
    "semi.csv": b"a;b;c\n1;2,5;x\n3;4;5\n",
    "tabs.tsv": b"a\tb\n1\t2\n",
    "unnamed.csv": b",a,b,\n0,1,2,\n1,x,,\n",
    "quotes.csv.gz": gzip.compress(HEADER + b"1,2,3\n" * 50),
    "twice.csv.gz": gzip.compress(HEADER + b"1,2,3\n") + gzip.compress(b"4,5,6\n"),
    # rows of one shape (typed by one regular expression), then others (read by Python)
    "regular.csv": b"s,x,n\n"
    + b"AAL,45.26,4330414\n" * 600
    + b"AAL,45.260,1\nAAL,1e5,2\nAAL,2\nAAL,\xff,3\n,,\nAAL,-0.0,-0\n",
    # keys that are not themselves in a Java replacement ($, backslash) or in JSON (")
    "keys.csv": b'$1,b\\c,"q""k",$\n' + b"x,1,2.5,y\n" * 600 + b"y,2,3.5,\n",
    # cells sometimes empty, integers and decimals in one column: one shape for all rows
    # (optional cells), the pairs of the empty ones left out of the event
    "optional.csv": b"s,x,n,b\n"
    + b"AAL,45.26,4330414,true\nAAL,,4330414,\n,45.5,,false\nBB,1,2.5,true\n,,,\n" * 120
    + b"AAL,45.260,1,true\nAAL,1e5,,\nAAL,True,1,\n,,1\nAAL,x,1,true\nAAL,-0,,\n",
    # keys a replacement or a mark could take for something else
    "optkeys.csv": b'$1,b\\c,"q""k",k:,"k:""""",$\n'
    + b"x,1,2.5,y,z,3\n,,,,,\nx,,2.5,,z,\n,1,,y,,3\n" * 150,
    # one shape for most rows only: typed cell by cell, the rows of the shape by it
    "mixed.csv": b"s,x,n\n"
    + b"AAL,45.26,4330414\n,1,\nAAL,,3\n" * 30
    + b"AAL,abc,1\nAAL,2,xyz\n" * 10,
    # left to the Python reader, each for one reason
    "multiline.csv": HEADER + b'1,"two\nlines",3\n4,5,6\n',
    "badquote.csv": HEADER + b'1,"ab"c,3\n4,5,6\n',
    "truncated.csv.gz": gzip.compress(HEADER + b"1,2,3\n" * 200)[:-30],
    "dup.csv": b"a,a\n1,2\n",
    "blankfirst.csv": b"\na,b\n1,2\n",
    "empty.csv": b"",
    "latin.csv": HEADER + "é,2,3\n".encode("latin-1"),
    "utf16.csv": (HEADER + b"1,2,3\n").decode().encode("utf-16"),
}
#: what the probe leaves to Python, and what Spark finds it cannot number
NOT_PROBED = {"truncated.csv.gz", "dup.csv", "blankfirst.csv", "empty.csv", "utf16.csv"}
FOUND_INCOMPLETE = {"multiline.csv", "badquote.csv"}

GOOD = (
    b"date,open,high,low,close,volume,Name\n"
    b"2017-02-08,45.26,45.26,44.51,45.06,4330414,AAL\n"
    b'2017-02-09,45.07,"46,6",44.94,46.3,7089902,"A ""B"""\n'
    b"2017-02-10,,46.7,46.17,46.45,4040567,AAL\n"
    b'2017-02-13,46.56,47.78,46.5,47.41,6158580,"one, ""line"""\n'
    b"2017-02-14,1e3,-.5,007,true,,x\n"
    b"2017-02-15,45.5,46,45.1,45.9,4100000,AAL\n"
)


def mutate(rng: random.Random, good: bytes) -> bytes:
    """A few random byte edits (the hostile tests of the CSV reader, seeded)."""
    data = bytearray(good)
    for _ in range(rng.randint(1, 4)):
        op = rng.choice(["flip", "insert", "delete", "truncate"])
        i = rng.randrange(max(len(data), 1))
        if op == "flip" and data:
            data[i] = rng.randrange(256)
        elif op == "insert":
            data[i:i] = rng.choice([b'"', b",", b"\n", b"\r", b"\xff", b"\x00", b"\xef\xbb\xbf"])
        elif op == "delete" and data:
            del data[i : i + rng.randint(1, 5)]
        else:
            del data[i:]
    return bytes(data)


def python_rows(
    root: Path, limits: ReadLimits, delimiter: str | None = None
) -> dict[str, list[tuple]]:
    """The Python readers' outcomes per source, as the converted rows hold them."""
    from pubsift.adapters.spark.ingest import event_dumper

    dump = event_dumper()
    out: dict[str, list[tuple]] = {}
    for o in read(Source(str(root), delimiter=delimiter), limits=limits):
        if isinstance(o, Event):
            row = ("event", o.model, o.source, o.position, dump(o), None, None, None)
        else:
            row = (
                "quarantine",
                o.model,
                o.source,
                o.position,
                None,
                o.reason,
                o.message,
                o.excerpt,
            )
        out.setdefault(o.source, []).append(row)
    return out


def spark_rows(rows) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = {}
    for r in rows:
        if r[0] != "seen":
            out.setdefault(r[2], []).append(tuple(r))
    return {k: sorted(v, key=repr) for k, v in out.items()}


#: the events Spark SQL wrote itself per source, of every run of :func:`native`
BY_SPARK: dict[str, int] = {}


def native(spark, root: Path, limits: ReadLimits, scratch: Path, delimiter: str | None = None):
    """(the plans, the rows of the files Spark read: the events it wrote and the rows of
    the delegated rows, the paths it left to Python); the counts it made are checked
    against the events it wrote."""
    import pyarrow.parquet as pq
    from pubsift.adapters.spark.ingest import list_files
    from pubsift.adapters.spark.native import probe_listing, write_native

    listing = list_files([Source(str(root), delimiter=delimiter)], limits)
    spill = scratch / "csv" / "plain"
    plans = probe_listing(listing, limits, spill=str(spill))
    # the .gz copies kept are exactly the plans' (none left of a file the probe refused)
    copies = {plan.copy for plan in plans.values() if plan.copy}
    assert {str(p) for p in spill.iterdir()} == copies if spill.exists() else not copies
    events = scratch / "events"
    written = write_native(spark, plans, limits, str(events), str(scratch / "csv"))
    rows = [tuple(r) for r in written.rows]
    if written.rest is not None:
        assert not rows
        rows = [tuple(r) for r in written.rest.collect()]
    stored = pq.read_table(events).to_pylist() if events.exists() else []
    assert all(e["model"] == "records" for e in stored)
    rows += [
        ("event", "records", e["source"], e["position"], e["event"], None, None, None)
        for e in stored
    ]
    counted: dict[str, int] = {}
    for kind, source, _, _, n in written.counts:
        if kind == "event":
            counted[source] = counted.get(source, 0) + n
    per: dict[str, int] = {}
    for e in stored:
        per[e["source"]] = per.get(e["source"], 0) + 1
    assert counted == per
    seen = {source for kind, source, _, _, _ in written.counts if kind == "seen"}
    assert seen == {plans[p].label for p in plans if p not in written.left}
    BY_SPARK.update(per)  # the events Spark SQL wrote itself, per source
    return plans, spark_rows(rows), written.left


def big_file() -> bytes:
    """A plain file of several of the blocks the run below reads it in (blank lines and
    short rows among them)."""
    rng = random.Random(7)
    lines = [HEADER]
    for i in range(6000):
        lines.append(f"{i},{rng.uniform(0, 100):.2f},s{rng.randrange(99)}\n".encode())
        if i % 997 == 0:
            lines.append(b"\n")
        if i % 1999 == 0:
            lines.append(b"1,2\n")
    return b"".join(lines)


@pytest.fixture(scope="module")
def run(spark, tmp_path_factory):
    from pyspark.sql import functions as F

    """(root, plans, Spark's rows, paths left, the Python readers' rows, blocks of the big
    file) of the hostile files, 12 mutations of a good file (its body: the header stays, so that
    Spark reads them) and a file split into blocks (read in 40 kB blocks), read once by
    Spark and once by the Python readers."""
    root = tmp_path_factory.mktemp("native")
    for name, data in HOSTILE.items():
        (root / name).write_bytes(data)
    rng = random.Random(34)
    head, body = GOOD.split(b"\n", 1)
    for i in range(12):
        (root / f"m{i:02d}.csv").write_bytes(head + b"\n" + mutate(rng, body))
    (root / "big.csv").write_bytes(big_file())
    (root / "big.csv.gz").write_bytes(gzip.compress(big_file()))  # kept decompressed
    conf = {"spark.sql.files.maxPartitionBytes": "40000", "spark.sql.files.openCostInBytes": "1000"}
    before = {k: spark.conf.get(k) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    from pubsift.adapters.spark import native as module
    from pubsift.adapters.spark import native_jsonl

    on_driver, module.ON_DRIVER = module.ON_DRIVER, 0  # the delegated rows in Python tasks
    steps = native_jsonl.COUNT_STEP, native_jsonl.MIN_BLOCK
    native_jsonl.COUNT_STEP, native_jsonl.MIN_BLOCK = 4096, 8192  # big.csv: in many blocks
    try:
        plans, rows, left = native(spark, root, LIMITS, tmp_path_factory.mktemp("out"))
        blocks = (
            spark.read.text(str(root / "big.csv"))
            .select(F.input_file_block_start())
            .distinct()
            .count()
        )
    finally:
        module.ON_DRIVER = on_driver
        native_jsonl.COUNT_STEP, native_jsonl.MIN_BLOCK = steps
        for k, v in before.items():
            spark.conf.set(k, v)
    return root, plans, rows, left, python_rows(root, LIMITS), blocks


def test_the_probe_and_the_lines_leave_exactly_the_files_they_cannot_read(run):
    _, plans, rows, left, _ = run[:5]
    names = {Path(p).name for p in plans}
    assert names >= set(HOSTILE) - NOT_PROBED and not names & NOT_PROBED
    assert {Path(p).name for p in left} >= FOUND_INCOMPLETE
    assert {Path(p).name for p in left} <= FOUND_INCOMPLETE | {f"m{i:02d}.csv" for i in range(12)}
    taken = {plans[p].label for p in plans if p not in left}
    assert set(rows) <= taken
    assert len([t for t in taken if Path(t).name.startswith("m")]) >= 6  # not vacuous
    regular = {Path(p).name for p, plan in plans.items() if plan.regular}
    assert {"regular.csv", "keys.csv"} <= regular and "typed.csv" not in regular  # both ways
    shapes = {Path(p).name: plan.shape for p, plan in plans.items()}
    assert {"optional.csv", "optkeys.csv"} <= regular and "mixed.csv" not in regular
    assert shapes["optional.csv"] == ("str?", "bare?", "bare?", "bool?")
    assert shapes["optkeys.csv"] == ("str?", "int?", "float?", "str?", "str?", "int?")
    assert shapes["mixed.csv"] == ("str?", "bare?", "int?")


def test_hostile_csv_files_give_what_the_python_reader_gives(run):
    root, plans, rows, left, expected = run[:5]
    for p, plan in sorted(plans.items()):
        if p not in left and Path(p).name in HOSTILE:
            assert rows[plan.label] == sorted(expected[plan.label], key=repr), plan.label
    # the files of one shape with optional cells are typed by Spark (not all by Python)
    assert BY_SPARK[str(root / "optional.csv")] == 600
    assert BY_SPARK[str(root / "optkeys.csv")] == 600
    assert BY_SPARK[str(root / "mixed.csv")] >= 90
    # the typed file's rows cover each way of typing, and some crossed into Python
    reasons = {r[5] for r in rows[str(root / "typed.csv")]}
    assert {None, "csv-type", "csv-field-count", "too-large"} <= reasons


def test_mutated_files_give_what_the_python_reader_gives(run):
    _, plans, rows, left, expected = run[:5]
    for p, plan in sorted(plans.items()):
        if p not in left and Path(p).name.startswith("m"):
            want = sorted(expected.get(plan.label, []), key=repr)
            assert rows.get(plan.label, []) == want, plan.label


def test_a_file_split_into_blocks_is_numbered_in_order(run):
    root, plans, rows, _, expected, blocks = run
    label = str(root / "big.csv")
    assert blocks >= 2
    plan = plans[label]
    assert plan.counts is not None and plan.size > 10 * 8192  # read in blocks by the job
    assert plans[str(root / "crlf.csv")].counts is None  # a \r: one partition
    assert rows[label] == sorted(expected[label], key=repr)


def test_a_large_gz_is_read_from_its_decompressed_copy_in_blocks(run):
    """(:mod:`pubsift.adapters.spark.spill`) and a small one as it is, in one task"""
    root, plans, rows, _, expected, _ = run
    label = str(root / "big.csv.gz")
    plan = plans[label]
    assert plan.copy is not None and Path(plan.copy).read_bytes() == big_file()
    assert plan.counts is not None and not plan.gz and plan.size > 10 * 8192
    assert rows[label] == sorted(expected[label], key=repr)
    assert rows[label] == [
        (*r[:2], label, *r[3:]) for r in rows[str(root / "big.csv")]
    ]  # the plain file's rows
    small = plans[str(root / "quotes.csv.gz")]
    assert small.copy is None and small.gz


def test_a_few_delegated_rows_are_read_on_the_driver_alike(spark, tmp_path, monkeypatch):
    """(and files in several jobs, files with quotes checked in several)"""
    from pubsift.adapters.spark import native as module

    monkeypatch.setattr(module, "FILES_PER_JOB", 2)
    (tmp_path / "in").mkdir()
    for name in ("typed.csv", "regular.csv", "utf8.csv", "keys.csv", "multiline.csv"):
        (tmp_path / "in" / name).write_bytes(HOSTILE[name])
    _, rows, left = native(spark, tmp_path / "in", LIMITS, tmp_path)
    expected = python_rows(tmp_path / "in", LIMITS)
    assert {Path(p).name for p in left} == {"multiline.csv"}
    expected.pop(str(tmp_path / "in" / "multiline.csv"))
    assert set(rows) == set(expected)
    for label in expected:
        assert rows[label] == sorted(expected[label], key=repr), label


@pytest.mark.parametrize("d", [".", "E", "5", "+"])
def test_a_delimiter_a_number_can_hold_splits_the_rows_as_the_python_reader(spark, tmp_path, d):
    """(a line's pattern must not match across a cell's end: "1.a" split by "." is 1, a)"""
    root = tmp_path / "in"
    root.mkdir()
    rows = ["x{d}y", "1{d}a", "1{d}5x", "15{d}5x", "-{d}5", "{d}1", "true{d}x", "1e5{d}x"]
    text = f"a{d}b\n" + f"x{d}y\n" * 600 + "".join(r.format(d=d) + "\n" for r in rows)
    (root / "f.csv").write_bytes(text.encode())
    plans, got, left = native(spark, root, LIMITS, tmp_path / "out", delimiter=d)
    assert not left and len(plans) == 1
    want = python_rows(root, LIMITS, delimiter=d)
    assert got == {k: sorted(v, key=repr) for k, v in want.items()}


@pytest.mark.slow
def test_the_bundled_sample_through_the_job_gives_the_python_readers_events(spark, tmp_path):
    """``ingest`` of examples/sample (Spark reads its CSV, Python the rest): the event
    store and the quarantine hold exactly what the Python readers give."""
    import io

    import pyarrow.parquet as pq
    from pubsift.adapters.spark.ingest import event_dumper
    from pubsift.adapters.spark.job import Settings, ingest
    from rich.console import Console

    sample = ROOT / "examples" / "sample"
    source = Source(str(sample), exclude=("*.md",))
    summary = ingest(
        [source], str(tmp_path / "store"), Settings(native_csv=True), Console(file=io.StringIO())
    )
    events = pq.read_table(tmp_path / "store" / "events").to_pylist()
    quarantine = pq.read_table(tmp_path / "store" / "quarantine").to_pylist()
    got = sorted((e["source"], e["position"], e["event"]) for e in events)
    got_q = sorted(
        (q["source"], q["position"], q["reason"], q["message"], q["excerpt"]) for q in quarantine
    )
    dump = event_dumper()
    want, want_q = [], []
    for o in read(source):
        if isinstance(o, Event):
            want.append((o.source, o.position, dump(o)))
        else:
            want_q.append((o.source, o.position, o.reason, o.message, o.excerpt))
    assert got == sorted(want)
    assert got_q == sorted(want_q)
    assert summary["events"] == len(want)
    assert any(".csv" in s for s, _, _ in got)


def test_a_job_of_csv_files_only_writes_the_python_readers_events_and_counts(
    spark, tmp_path, monkeypatch
):
    """``ingest`` (the CSV read by Spark by default) of CSV files only, a few rows
    delegated and read on the driver, one file left to Python, a ``.gz`` read from its
    decompressed copy (removed when the stage ends): the event store, the quarantine and
    the summary's counts are the Python readers'."""
    import io
    import os

    import pyarrow.parquet as pq
    from pubsift.adapters.spark import native_jsonl, spill
    from pubsift.adapters.spark.job import Settings, ingest
    from rich.console import Console

    monkeypatch.setattr(native_jsonl, "COUNT_STEP", 4096)
    monkeypatch.setattr(native_jsonl, "MIN_BLOCK", 8192)
    kept: list[str] = []
    keep = spill.Spill.keep

    def recorded(self):
        path = keep(self)
        kept.extend([path] if path else [])
        return path

    monkeypatch.setattr(spill.Spill, "keep", recorded)
    root = tmp_path / "in"
    root.mkdir()
    for name in ("regular.csv", "keys.csv", "typed.csv", "utf8.csv", "multiline.csv"):
        (root / name).write_bytes(HOSTILE[name])
    (root / "big.csv.gz").write_bytes(gzip.compress(big_file()))
    summary = ingest(
        [Source(str(root))],
        str(tmp_path / "store"),
        Settings(limits=LIMITS),
        Console(file=io.StringIO()),
    )
    events = pq.read_table(tmp_path / "store" / "events").to_pylist()
    quarantine = pq.read_table(tmp_path / "store" / "quarantine").to_pylist()
    got = [
        ("event", "records", e["source"], e["position"], e["event"], None, None, None)
        for e in events
    ]
    got += [
        (
            "quarantine",
            q["model"],
            q["source"],
            q["position"],
            None,
            q["reason"],
            q["message"],
            q["excerpt"],
        )
        for q in quarantine
    ]
    want = python_rows(root, LIMITS)
    assert spark_rows(got) == {k: sorted(v, key=repr) for k, v in want.items()}
    assert not (tmp_path / "store" / "_csv").exists()
    assert len(kept) == 1 and not os.path.exists(kept[0])  # the copy was read, then removed
    for label, rows in want.items():
        c = summary["sources"][label]
        assert c["events"] == sum(r[0] == "event" for r in rows), label
        assert c["quarantined"] == sum(r[0] == "quarantine" for r in rows), label
    assert summary["events"] == sum(r[0] == "event" for v in want.values() for r in v)
