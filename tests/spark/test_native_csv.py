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
from pubsift.adapters.limits import ReadLimits
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
    b'2017-02-13,46.56,47.78,46.5,47.41,6158580,"multi\nline"\n'
    b"2017-02-14,1e3,-.5,007,true,,x\n"
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


def python_rows(root: Path, limits: ReadLimits) -> dict[str, list[tuple]]:
    """The Python readers' outcomes per source, as the converted rows hold them."""
    from pubsift.adapters.spark.ingest import event_dumper

    dump = event_dumper()
    out: dict[str, list[tuple]] = {}
    for o in read(Source(str(root)), limits=limits):
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


def spark_rows(df) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = {}
    for r in df.collect():
        if r["kind"] != "seen":
            out.setdefault(r["source"], []).append(tuple(r))
    return {k: sorted(v, key=repr) for k, v in out.items()}


def native(spark, root: Path, limits: ReadLimits):
    """(the plans, the rows of the files Spark read, the paths it left to Python)."""
    from pubsift.adapters.spark.ingest import list_files
    from pubsift.adapters.spark.native import probe_listing, read_csv

    listing = list_files([Source(str(root))], limits)
    plans = probe_listing(listing, limits)
    kept: list = []
    df, left = read_csv(spark, plans, limits, kept)
    try:
        rows = spark_rows(df) if df is not None else {}
    finally:
        for k in kept:
            k.unpersist()
    return plans, rows, left


def test_hostile_csv_files_give_what_the_python_reader_gives(spark, tmp_path):
    for name, data in HOSTILE.items():
        (tmp_path / name).write_bytes(data)
    plans, rows, left = native(spark, tmp_path, LIMITS)
    assert {Path(p).name for p in plans} == set(HOSTILE) - NOT_PROBED
    assert {Path(p).name for p in left} == FOUND_INCOMPLETE
    expected = python_rows(tmp_path, LIMITS)
    taken = {plans[p].label for p in plans if p not in left}
    assert set(rows) == taken
    for label in sorted(taken):
        assert rows[label] == sorted(expected[label], key=repr), label
    # the typed file's rows cover each way of typing, and some crossed into Python
    reasons = {r[5] for r in rows[str(tmp_path / "typed.csv")]}
    assert {None, "csv-type", "csv-field-count", "too-large"} <= reasons


def test_mutated_files_give_what_the_python_reader_gives(spark, tmp_path):
    rng = random.Random(34)
    for i in range(60):
        (tmp_path / f"m{i:02d}.csv").write_bytes(mutate(rng, GOOD))
    limits = ReadLimits(max_record_bytes=rng.choice([40, 10_000]))
    plans, rows, left = native(spark, tmp_path, limits)
    expected = python_rows(tmp_path, limits)
    taken = {plans[p].label for p in plans if p not in left}
    assert len(taken) >= 10  # not vacuous: many mutations stay files Spark reads
    for label in sorted(taken):
        assert rows.get(label, []) == sorted(expected.get(label, []), key=repr), label


def test_a_file_split_into_blocks_is_numbered_in_order(spark, tmp_path):
    """A plain file larger than a partition's share is read in blocks by several tasks."""
    rng = random.Random(7)
    lines = [HEADER]
    for i in range(40_000):
        lines.append(f"{i},{rng.uniform(0, 100):.2f},s{rng.randrange(99)}\n".encode())
        if i % 997 == 0:
            lines.append(b"\n")
        if i % 1999 == 0:
            lines.append(b"1,2\n")
    (tmp_path / "big.csv").write_bytes(b"".join(lines))
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(200_000))
    try:
        plans, rows, left = native(spark, tmp_path, LIMITS)
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    (label,) = {p.label for p in plans.values()}
    assert not left
    assert rows[label] == sorted(python_rows(tmp_path, LIMITS)[label], key=repr)


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
    summary = ingest([source], str(tmp_path / "store"), Settings(), Console(file=io.StringIO()))
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
