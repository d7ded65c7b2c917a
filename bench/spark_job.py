"""The Spark job at scale against the plain-Spark job a data engineer would write.

    .venv/bin/python bench/spark_job.py [--quick] [--parts job,convert,layouts]
        [--python-readers] [--json PATH]

**Workload**: the 5-year S&P 500 quotes (``../shared/data/quotes/*5yr*.csv.gz``,
619,040 rows; ``--quick``: the 1-year CSV, 126,663 rows) against 10,000 records
subscribers (``--quick``: 2,000) drawn with ``random.Random(34)`` from the quotes
(:func:`workload`): symbol equality (40%), symbol and a close range (40%), volume
thresholds (18%: on one symbol at twice its median volume, or over all symbols at a
0.99-0.999 quantile), and EventBridge patterns (2%: ``$or`` of a symbol's close range and
its volume threshold, two filters that may match the same quote).

**Parts** (``--parts``, comma-separated; all by default):

* ``job``: pubsift end to end (:func:`pubsift.adapters.spark.job.route` on the CSV file,
  the subscribers read from a JSON-lines file as ``pubsift route --subscriptions`` reads
  them, the default layout; its stage times from ``summary.json``) against
  :func:`plain_job`, the job written with Spark alone: ``spark.read.csv`` with a schema, an
  equi-join on the symbol with the range conditions (and a broadcast nested-loop join for
  the conditions without symbol), deduplicated per (subscriber, quote), written as Parquet
  partitioned by subscriber. Both outputs are then read back (untimed) into a digest of
  their (subscriber, symbol, date) pairs, count and hash sum, which must be equal (exit
  status 1 otherwise). Then the time to read the deliveries of the subscriber with the most
  deliveries back, with the documented calls: Spark
  (``spark.read.parquet(deliveries).where(subscriber = ...)``, a fresh read: listing
  included) and pyarrow (``pq.read_table(deliveries, filters=...)``). **Goals**: end to
  end at least 2x faster than the plain job; reading one subscriber under 2 s.
* ``convert``: pubsift's convert stage (``pubsift ingest`` of the CSV: reading, typing,
  writing the event store; the CSV read by Spark's text source and SQL, the default,
  :mod:`pubsift.adapters.spark.native`) against Spark's own CSV reader typing the same
  file and writing it as Parquet: one untimed run of each (a warm JVM, pubsift's
  expressions compiled and its Python workers started), then 5 rounds alternating them,
  medians compared; ``--python-readers``: also the CSV read by the Python reader in tasks
  (``--csv-reader python``) in each round, its counts checked equal. **Goal**: within
  1.5x. Then the same for the quotes written as JSON lines (:func:`run_convert_jsonl`):
  pubsift (JSON lines read by Spark, :mod:`pubsift.adapters.spark.native_jsonl`) against
  ``spark.read.json`` with the schema writing Parquet, and the Python reader in tasks.
* ``layouts``: the deliveries routed once by pubsift's path and kept, written in each
  candidate layout (``sorted``: one dataset range-partitioned and sorted by
  subscriber, small row groups; ``buckets``: 16 hash buckets of subscribers, sorted
  inside; ``per-subscriber``: a directory per subscriber), each timed with reading one
  subscriber back.

Times are wall-clock seconds (the work runs in Spark's JVM and Python workers), one run
each (a run of the full workload takes minutes): compare within a run, and read the load
average printed beside the figures. Spark runs on ``local[2]``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Bench

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
QUOTES_5YR = DATA / "quotes" / "all_stocks_5yr_2013-02-08_2018-02-07.csv.gz"
QUOTES_1YR = DATA / "quotes" / "all_stocks_1yr_2017-02-08_2018-02-07.csv"
SEED = 34
#: the quotes files' columns, typed as a data engineer declares them for spark.read.csv
QUOTES_SCHEMA = (
    "date string, open double, high double, low double, close double, volume long, Name string"
)
#: a condition of the plain job: symbol (None: any), closed close range, volume minimum
CONDITIONS_SCHEMA = "subscriber string, symbol string, lo double, hi double, vmin long"


@dataclass(frozen=True)
class Sub:
    """One generated subscriber: its JSON line for pubsift and its conditions for the
    plain job (one per filter; a quote matching any of them is delivered once)."""

    id: str
    filter: Any
    conditions: tuple[tuple[str | None, float | None, float | None, int | None], ...]


def workload(path: Path, n: int, seed: int = SEED) -> list[Sub]:
    """``n`` subscribers drawn from the quotes at ``path`` with ``random.Random(seed)``
    (the same arguments give the same list): the mix of subscriptions docs/spark.md describes."""
    import csv
    import gzip

    closes: dict[str, list[float]] = {}
    volumes: dict[str, list[int]] = {}
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["close"]:
                closes.setdefault(row["Name"], []).append(float(row["close"]))
            if row["volume"]:
                volumes.setdefault(row["Name"], []).append(int(row["volume"]))
    symbols = sorted(closes)
    medians = {s: int(statistics.median(v)) for s, v in volumes.items()}
    everything = sorted(v for vs in volumes.values() for v in vs)
    rng = random.Random(seed)

    def close_range(s: str) -> tuple[float, float]:
        p = rng.choice(closes[s])
        return round(p * (1 - rng.uniform(0, 0.1)), 2), round(p * (1 + rng.uniform(0, 0.1)), 2)

    subs = []
    for i, kind in enumerate(rng.choices(range(4), weights=[40, 40, 18, 2], k=n)):
        s = rng.choice(symbols)
        sid = f"s{i}"
        if kind == 0:
            subs.append(Sub(sid, f"Name = {json.dumps(s)}", ((s, None, None, None),)))
        elif kind == 1:
            lo, hi = close_range(s)
            text = f"Name = {json.dumps(s)} and close in [{lo!r}, {hi!r}]"
            subs.append(Sub(sid, text, ((s, lo, hi, None),)))
        elif kind == 2 and rng.random() < 0.75:
            v = 2 * medians[s]
            subs.append(
                Sub(sid, f"Name = {json.dumps(s)} and volume >= {v}", ((s, None, None, v),))
            )
        elif kind == 2:
            q = rng.uniform(0.99, 0.999)
            v = everything[min(len(everything) - 1, int(q * len(everything)))]
            subs.append(Sub(sid, f"volume >= {v}", ((None, None, None, v),)))
        else:
            lo, hi = close_range(s)
            v = 2 * medians[s]
            pattern = {
                "$or": [
                    {"Name": [s], "close": [{"numeric": [">=", lo, "<=", hi]}]},
                    {"Name": [s], "volume": [{"numeric": [">=", v]}]},
                ]
            }
            subs.append(Sub(sid, pattern, ((s, lo, hi, None), (s, None, None, v))))
    return subs


def write_subscriptions(path: str, subs: Sequence[Sub]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for s in subs:
            fh.write(json.dumps({"id": s.id, "model": "records", "filter": s.filter}) + "\n")


def plain_job(spark: Any, quotes: str, subs: Sequence[Sub], out: str) -> None:
    """The job as a data engineer writes it with Spark alone: Spark's CSV reader with a
    schema, the subscriptions as a table of conditions joined with the quotes (an
    equi-join on the symbol, a broadcast nested-loop join for conditions on all symbols),
    each (subscriber, quote) once, written partitioned by subscriber."""
    from pyspark.sql import functions as F

    q = spark.read.option("header", True).schema(QUOTES_SCHEMA).csv(quotes)
    rows = [(s.id, *c) for s in subs for c in s.conditions]
    conds = spark.createDataFrame(rows, CONDITIONS_SCHEMA)

    def holds(c: Any) -> Any:
        return (
            (c.lo.isNull() | (q.close >= c.lo))
            & (c.hi.isNull() | (q.close <= c.hi))
            & (c.vmin.isNull() | (q.volume >= c.vmin))
        )

    named = conds.where(conds.symbol.isNotNull()).alias("c")
    anyone = conds.where(conds.symbol.isNull()).alias("c")
    by_symbol = q.join(F.broadcast(named), (q.Name == named.symbol) & holds(named))
    on_all = q.join(F.broadcast(anyone), holds(anyone))
    cols = ["subscriber", "date", "open", "high", "low", "close", "volume", "Name"]
    matched = by_symbol.select(*cols).unionByName(on_all.select(*cols))
    (
        matched.repartition("subscriber")  # the dedup then needs no second shuffle
        .dropDuplicates(["subscriber", "Name", "date"])
        .write.partitionBy("subscriber")
        .parquet("file://" + out)
    )


def digest(df: Any, symbol: Any, date: Any) -> tuple[int, int]:
    """Count and hash sum of the (subscriber, symbol, date) pairs of ``df``."""
    from pyspark.sql import functions as F

    row = df.agg(
        F.count(F.lit(1)), F.sum(F.hash(F.col("subscriber"), symbol, date).cast("long"))
    ).collect()[0]
    return int(row[0]), int(row[1] or 0)


def read_back(spark: Any, path: str, format_columns: bool) -> Any:
    """A written deliveries dataset as Spark reads it back, for the digests (untimed; the
    driver lists the directories itself, not in a Spark job)."""
    from pyspark.sql import functions as F

    df = spark.read.parquet("file://" + path)
    if format_columns:
        return df, F.get_json_object("event", "$.Name"), F.get_json_object("event", "$.date")
    return df, F.col("Name"), F.col("date")


def read_one(spark: Any, path: str, sid: str) -> dict[str, float]:
    """Seconds to read subscriber ``sid``'s deliveries with the documented calls (docs/
    spark.md "Reading deliveries"), each a fresh read of ``path``; and their count."""
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    got = spark.read.parquet("file://" + path).where(F.col("subscriber") == sid).toPandas()
    t1 = time.perf_counter()
    table = pq.read_table(path, filters=[("subscriber", "==", sid)]).to_pandas()
    t2 = time.perf_counter()
    assert len(got) == len(table), (len(got), len(table))
    return {"spark_s": round(t1 - t0, 3), "pyarrow_s": round(t2 - t1, 3), "rows": len(table)}


def load() -> str:
    return os.getloadavg().__repr__()


def run_job(bench: Bench, spark: Any, quotes: Path, subs: Sequence[Sub], tmp: str) -> bool:
    from pubsift.adapters.readers.source import Source
    from pubsift.adapters.spark.job import Settings, route
    from pubsift.adapters.spark.subscriptions import load_subscriptions
    from rich.console import Console

    subs_file = os.path.join(tmp, "subs.jsonl")
    write_subscriptions(subs_file, subs)
    subscribers = load_subscriptions(subs_file)
    ours = os.path.join(tmp, "pubsift")
    settings = Settings(master="local[2]", overwrite=True)
    before = load()
    t0 = time.perf_counter()
    summary = route(
        subscribers, ours, settings, sources=[Source(str(quotes))], console=Console(quiet=True)
    )
    t_ours = time.perf_counter() - t0
    theirs = os.path.join(tmp, "plain")
    t0 = time.perf_counter()
    plain_job(spark, str(quotes), subs, theirs)
    t_plain = time.perf_counter() - t0
    after = load()
    spark.conf.set("spark.sql.sources.parallelPartitionDiscovery.threshold", "1000000")
    try:
        got = digest(*read_back(spark, os.path.join(ours, "deliveries"), True))
        want = digest(*read_back(spark, theirs, False))
    finally:
        spark.conf.unset("spark.sql.sources.parallelPartitionDiscovery.threshold")
    same = got == want
    busiest = max(summary["subscribers"].items(), key=lambda kv: kv[1])[0]
    reading = read_one(spark, os.path.join(ours, "deliveries"), busiest)
    r = t_plain / t_ours
    print(
        f"end to end ({summary['events']:,} quotes, {len(subs):,} subscribers, "
        f"{got[0]:,} deliveries): pubsift {t_ours:.1f} s (stages {summary['seconds']}, "
        f"layout {summary.get('layout', 'per-subscriber')}), plain Spark job {t_plain:.1f} s: "
        f"{r:.2f}x; digests {'equal' if same else f'DIFFER: pubsift {got}, plain {want}'}; "
        f"load average before {before}, after {after}"
    )
    print(
        f"reading subscriber {busiest} back ({reading['rows']:,} deliveries): Spark "
        f"{reading['spark_s']:.2f} s, pyarrow {reading['pyarrow_s']:.2f} s"
    )
    bench.row(
        part="job",
        events=summary["events"],
        subscribers=len(subs),
        deliveries=got[0],
        pubsift_s=round(t_ours, 3),
        plain_s=round(t_plain, 3),
        ratio=round(r, 3),
        stages=summary["seconds"],
        layout=summary.get("layout", "per-subscriber"),
        equal=same,
        read_one=reading,
        load_before=before,
        load_after=after,
    )
    bench.headline(
        f"Spark job end to end, {summary['events'] // 1000}k quotes x "
        f"{len(subs) // 1000}k subs, {got[0] / 1e6:.1f}M deliveries (pubsift route vs "
        "the plain-Spark join with dedup, local[2], wall time)",
        f"{t_ours:.0f} s vs {t_plain:.0f} s: {r:.2f}x; one subscriber read back in "
        f"{reading['spark_s']:.1f} s (Spark), {reading['pyarrow_s']:.1f} s (pyarrow)",
    )
    return same


#: rounds of the convert part: pubsift and Spark's reader alternate, each timed once a round
CONVERT_ROUNDS = 5


def run_convert(bench: Bench, spark: Any, quotes: Path, tmp: str, with_python: bool) -> None:
    from pubsift.adapters.readers.source import Source
    from pubsift.adapters.spark.job import Settings, ingest
    from rich.console import Console

    def spark_reader(out: str) -> float:
        t0 = time.perf_counter()
        (
            spark.read.option("header", True)
            .schema(QUOTES_SCHEMA)
            .csv(str(quotes))
            .write.mode("overwrite")
            .parquet("file://" + out)
        )
        return time.perf_counter() - t0

    def pubsift(native: bool) -> tuple[float, dict[str, Any]]:
        summary = ingest(
            [Source(str(quotes))],
            os.path.join(tmp, "store-native" if native else "store-python"),
            Settings(master="local[2]", overwrite=True, native_csv=native),
            Console(quiet=True),
        )
        return summary["seconds"]["convert"] + summary["seconds"].get("list", 0), summary

    # untimed: a warm JVM (and for pubsift its compiled expressions, its Python workers)
    spark_reader(os.path.join(tmp, "spark-csv"))
    first, summary = pubsift(True)
    if with_python:
        pubsift(False)
    before = load()
    ours, theirs, python = [], [], []
    for _ in range(CONVERT_ROUNDS):
        ours.append(pubsift(True)[0])
        theirs.append(spark_reader(os.path.join(tmp, "spark-csv")))
        if with_python:
            t, other = pubsift(False)
            python.append(t)
            if (other["events"], other["sources"]) != (summary["events"], summary["sources"]):
                raise SystemExit("the CSV read by Spark and by the Python reader differ")
    after = load()
    o, t = statistics.median(ours), statistics.median(theirs)
    r = o / t
    print(
        f"conversion of {summary['events']:,} quotes ({CONVERT_ROUNDS} rounds, alternating; "
        f"medians): pubsift (list + convert, the event store written, the CSV read by Spark) "
        f"{o:.1f} s {[round(x, 1) for x in ours]} (its first run {first:.1f} s), Spark's CSV "
        f"reader (schema given, Parquet written) {t:.1f} s {[round(x, 1) for x in theirs]}: "
        f"{r:.2f}x Spark's time; load average before {before}, after {after}"
    )
    py = statistics.median(python) if python else None
    if py is not None:
        print(
            f"  the CSV read by the Python reader in tasks (--csv-reader python): {py:.1f} s "
            f"{[round(x, 1) for x in python]}: {py / t:.2f}x Spark's time"
        )
    bench.row(
        part="convert",
        events=summary["events"],
        pubsift_s=round(o, 3),
        pubsift_runs_s=[round(x, 3) for x in ours],
        pubsift_first_run_s=round(first, 3),
        python_readers_s=None if py is None else round(py, 3),
        spark_reader_s=round(t, 3),
        spark_reader_runs_s=[round(x, 3) for x in theirs],
        ratio=round(r, 3),
        load_before=before,
        load_after=after,
    )
    bench.headline(
        f"Spark job conversion, {summary['events'] // 1000}k quotes CSV (pubsift's convert "
        "stage vs spark.read.csv to Parquet, local[2], wall time, medians)",
        f"{o:.1f} s vs {t:.1f} s: {r:.2f}x Spark's own reader's time",
    )


def quotes_jsonl(quotes: Path, out: str) -> None:
    """The quotes as JSON lines, one object per row as ``json.dumps`` writes it (numbers
    typed as the CSV reader types them, empty cells left out)."""
    import csv
    import gzip

    opener = gzip.open if quotes.name.endswith(".gz") else open
    with opener(quotes, "rt", newline="") as fh, open(out, "w") as dst:
        for row in csv.DictReader(fh):
            obj: dict[str, Any] = {}
            for k, v in row.items():
                if v == "":
                    continue
                obj[k] = v if k in ("date", "Name") else (int(v) if k == "volume" else float(v))
            dst.write(json.dumps(obj) + "\n")


def run_convert_jsonl(bench: Bench, spark: Any, quotes: Path, tmp: str, with_python: bool) -> None:
    """The convert part for the quotes as JSON lines (:func:`quotes_jsonl`, a plain file):
    pubsift (JSON lines read by Spark) against ``spark.read.json`` with the schema writing
    Parquet and (``--python-readers``) the Python reader in tasks, rounds alternating."""
    from pubsift.adapters.readers.source import Source
    from pubsift.adapters.spark.job import Settings, ingest
    from rich.console import Console

    path = os.path.join(tmp, "quotes.jsonl")
    quotes_jsonl(quotes, path)

    def spark_reader(out: str) -> float:
        t0 = time.perf_counter()
        spark.read.schema(QUOTES_SCHEMA).json("file://" + path).write.mode("overwrite").parquet(
            "file://" + out
        )
        return time.perf_counter() - t0

    def pubsift(native: bool) -> tuple[float, dict[str, Any]]:
        summary = ingest(
            [Source(path)],
            os.path.join(tmp, "jstore-native" if native else "jstore-python"),
            Settings(master="local[2]", overwrite=True, native_jsonl=native),
            Console(quiet=True),
        )
        return summary["seconds"]["convert"] + summary["seconds"].get("list", 0), summary

    spark_reader(os.path.join(tmp, "spark-json"))
    first, summary = pubsift(True)
    if with_python:
        pubsift(False)
    before = load()
    ours, theirs, python = [], [], []
    for _ in range(CONVERT_ROUNDS):
        ours.append(pubsift(True)[0])
        theirs.append(spark_reader(os.path.join(tmp, "spark-json")))
        if with_python:
            t, other = pubsift(False)
            python.append(t)
            if (other["events"], other["sources"]) != (summary["events"], summary["sources"]):
                raise SystemExit("the JSON lines read by Spark and by the Python reader differ")
    after = load()
    o, t = statistics.median(ours), statistics.median(theirs)
    py = statistics.median(python) if python else None
    print(
        f"conversion of {summary['events']:,} quotes as JSON lines ({os.path.getsize(path):,} "
        f"bytes; {CONVERT_ROUNDS} rounds, alternating; medians): pubsift (JSON lines read by "
        f"Spark) {o:.1f} s {[round(x, 1) for x in ours]} (first run {first:.1f} s), "
        f"spark.read.json (schema given, Parquet written) {t:.1f} s "
        f"{[round(x, 1) for x in theirs]}: {o / t:.2f}x"
        + (
            ""
            if py is None
            else f"; the Python reader in tasks {py:.1f} s {[round(x, 1) for x in python]}: "
            f"{py / t:.2f}x"
        )
        + f"; load average before {before}, after {after}"
    )
    bench.row(
        part="convert-jsonl",
        events=summary["events"],
        pubsift_s=round(o, 3),
        pubsift_runs_s=[round(x, 3) for x in ours],
        python_readers_s=None if py is None else round(py, 3),
        python_readers_runs_s=[round(x, 3) for x in python],
        spark_reader_s=round(t, 3),
        spark_reader_runs_s=[round(x, 3) for x in theirs],
        ratio=round(o / t, 3),
        load_before=before,
        load_after=after,
    )


#: the layouts the ``layouts`` part measures (docs/spark.md, "What is written")
LAYOUTS = ("sorted", "buckets", "per-subscriber")
BUCKETS = 16


def write_layout(df: Any, layout: str, path: str, parts: int) -> None:
    """The deliveries ``df`` written in a candidate layout."""
    from pyspark.sql import functions as F

    uri = "file://" + path
    if layout == "sorted":
        (
            df.repartitionByRange(parts, "subscriber")
            .sortWithinPartitions("subscriber", "source", "position")
            .write.option("parquet.block.size", 8 << 20)
            .parquet(uri)
        )
    elif layout == "buckets":
        (
            df.withColumn("bucket", F.pmod(F.xxhash64("subscriber"), F.lit(BUCKETS)))
            .repartition(BUCKETS, "bucket")
            .sortWithinPartitions("subscriber", "source", "position")
            .write.option("parquet.block.size", 8 << 20)
            .partitionBy("bucket")
            .parquet(uri)
        )
    else:
        df.repartition("subscriber").write.partitionBy("subscriber").parquet(uri)


def run_layouts(bench: Bench, spark: Any, quotes: Path, subs: Sequence[Sub], tmp: str) -> None:
    from pubsift.adapters.readers.source import Source
    from pubsift.adapters.spark import route as routing
    from pubsift.adapters.spark.job import Settings, ingest
    from pubsift.adapters.spark.subscriptions import load_subscriptions
    from pyspark import StorageLevel
    from rich.console import Console

    store = os.path.join(tmp, "store")
    if not os.path.isdir(store):
        ingest(
            [Source(str(quotes))],
            store,
            Settings(master="local[2]", overwrite=True),
            Console(quiet=True),
        )
    subs_file = os.path.join(tmp, "subs.jsonl")
    write_subscriptions(subs_file, subs)
    subscribers = load_subscriptions(subs_file)
    events = spark.read.parquet("file://" + os.path.join(store, "events"))
    df = routing.route(events, "records", subscribers, 4).persist(StorageLevel.DISK_ONLY)
    n = df.count()
    counts = {r[0]: r[1] for r in df.groupBy("subscriber").count().collect()}
    busiest = max(counts.items(), key=lambda kv: kv[1])[0]
    for layout in LAYOUTS:
        path = os.path.join(tmp, f"layout-{layout}")
        before = load()
        t0 = time.perf_counter()
        write_layout(df, layout, path, 4)
        written = time.perf_counter() - t0
        reading = read_one(spark, path, busiest)
        files = sum(1 for _, _, fs in os.walk(path) for f in fs if f.endswith(".parquet"))
        print(
            f"layout {layout:>14}: {n:,} deliveries of {len(counts):,} subscribers written in "
            f"{written:.1f} s ({files:,} files); subscriber {busiest} "
            f"({reading['rows']:,} rows) read back: Spark {reading['spark_s']:.2f} s, pyarrow "
            f"{reading['pyarrow_s']:.2f} s; load average {before} -> {load()}"
        )
        bench.row(
            part="layouts",
            layout=layout,
            deliveries=n,
            subscribers=len(counts),
            write_s=round(written, 3),
            files=files,
            read_one=reading,
            load_before=before,
        )
        shutil.rmtree(path, ignore_errors=True)
    df.unpersist()


def main(argv: list[str] | None = None) -> int:
    bench = Bench("spark_job", __doc__, argv)
    bench.parser.add_argument(
        "--parts", default="job,convert,layouts", help="job, convert, layouts (comma-separated)"
    )
    bench.parser.add_argument("--subscribers", type=int, default=None)
    bench.parser.add_argument(
        "--python-readers",
        action="store_true",
        help="convert: also time the CSV read by the Python reader in tasks",
    )
    args = bench.parse()
    quotes = QUOTES_1YR if args.quick else QUOTES_5YR
    if not quotes.is_file():
        return bench.skip(f"shared data absent ({quotes})")
    from pubsift.adapters.spark.session import start

    n = args.subscribers or (2_000 if args.quick else 10_000)
    subs = workload(quotes, n)
    parts = set(args.parts.split(","))
    spark = start("local[2]", "pubsift-bench", {"spark.sql.shuffle.partitions": "4"})
    spark.range(1).count()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        if "job" in parts:
            ok &= run_job(bench, spark, quotes, subs, tmp)
        if "convert" in parts:
            run_convert(bench, spark, quotes, tmp, args.python_readers)
            run_convert_jsonl(bench, spark, quotes, tmp, args.python_readers)
        if "layouts" in parts:
            run_layouts(bench, spark, quotes, subs, tmp)
    spark.stop()
    return bench.finish(0 if ok else 1)


if __name__ == "__main__":
    sys.exit(main())
