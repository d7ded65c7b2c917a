"""Where the route stage of the Spark job spends its time, and the records index against
a Spark join compiled from the same subscriptions (docs/spark.md, "Records routing through a
Spark join: measured, not used").

    .venv/bin/python bench/spark_route_join.py [--quick] [--repeats N] [--json PATH]

**Workload**: the one of ``bench/spark_job.py`` (:func:`spark_job.workload`: the quotes,
10,000 records subscribers, ``--quick``: the 1-year file and 2,000), converted once into
an event store (untimed). Then, on that store, in one Spark session (``local[2]``), each
timed ``--repeats`` times in rounds that alternate them (medians; the first round of each
after an untimed warm run):

* **the route stage in parts**: ``match`` (the ``mapInArrow`` index path, one row per
  matched event, written to Spark's ``noop`` sink), ``explode`` (the deliveries, one row
  per (subscriber, event), ``noop``), ``job`` (what :func:`pubsift.adapters.spark.job.
  _route` does: :func:`pubsift.adapters.spark.route.sorted_route`, each task's
  deliveries sorted by subscriber in Python, the counts observed, the sorted layout
  written);
* **the compiled join**: the subscriptions as a table of conditions (``spark_job.Sub.
  conditions``: symbol, close range, volume minimum), joined with the events parsed by
  ``from_json`` in the JVM (an equi-join on the symbol broadcast, a broadcast
  nested-loop join for the conditions on every symbol), deduplicated only for the
  subscribers with more than one filter (a subscriber with one conjunctive filter gets
  each event at most once from the join), written to ``noop``; its (subscriber, source,
  position) pairs checked equal to the index path's by count and hash sum.

The join reads ``Name`` as a string and ``close``/``volume`` as doubles with no type
guard: it is the upper bound of what a compiled plan can gain here, not a plan with the
records semantics (a number where a string is expected, a string holding a number, an
array, an integer beyond 2**53 would be answered differently; exactly these guards are
what a compiled path would add). Times are wall-clock seconds on a shared machine: read
the ratios within a run and the load average printed beside them.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spark_job
from harness import Bench


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def joined(spark: Any, events: Any, subs: Sequence[spark_job.Sub]) -> Any:
    """The deliveries (subscriber, source, position, event) of ``events`` by the compiled
    join (module docstring)."""
    from pyspark.sql import functions as F

    rows = [(s.id, *c) for s in subs for c in s.conditions]
    conds = spark.createDataFrame(rows, spark_job.CONDITIONS_SCHEMA)
    multi = sorted(s.id for s in subs if len(s.conditions) > 1) or [""]
    several = spark.createDataFrame([(x,) for x in multi], "subscriber string")
    ev = events.where(events.model == "records")
    q = ev.select(
        "source",
        "position",
        "event",
        F.from_json("event", "Name string, close double, volume double").alias("v"),
    ).select("source", "position", "event", "v.Name", "v.close", "v.volume")

    def holds(c: Any) -> Any:
        return (
            (c.lo.isNull() | (q.close >= c.lo))
            & (c.hi.isNull() | (q.close <= c.hi))
            & (c.vmin.isNull() | (q.volume >= c.vmin))
        )

    named = conds.where(conds.symbol.isNotNull()).alias("c")
    anyone = conds.where(conds.symbol.isNull()).alias("c")
    cols = ["subscriber", "source", "position", "event"]
    m = (
        q.join(F.broadcast(named), (q.Name == named.symbol) & holds(named))
        .select(*cols)
        .unionByName(q.join(F.broadcast(anyone), holds(anyone)).select(*cols))
    )
    once = m.join(F.broadcast(several), "subscriber", "left_anti")
    twice = m.join(F.broadcast(several), "subscriber", "left_semi").dropDuplicates(
        ["subscriber", "source", "position"]
    )
    return once.unionByName(twice)


def digest(df: Any) -> tuple[int, int]:
    from pyspark.sql import functions as F

    row = df.agg(
        F.count(F.lit(1)),
        F.sum(F.hash("subscriber", "source", "position").cast("long")),
    ).collect()[0]
    return int(row[0]), int(row[1] or 0)


def main(argv: list[str] | None = None) -> int:
    bench = Bench("spark_route_join", __doc__, argv)
    args = bench.parse()
    quotes = spark_job.QUOTES_1YR if args.quick else spark_job.QUOTES_5YR
    if not quotes.is_file():
        return bench.skip(f"shared data absent ({quotes})")
    from pubsift.adapters.readers.source import Source
    from pubsift.adapters.spark import route as routing
    from pubsift.adapters.spark.job import Settings, ingest
    from pubsift.adapters.spark.layout import arrange
    from pubsift.adapters.spark.session import start
    from pubsift.adapters.spark.subscriptions import load_subscriptions
    from pubsift.core.registry import load_model
    from rich.console import Console

    subs = spark_job.workload(quotes, 2_000 if args.quick else 10_000)
    spark = start("local[2]", "pubsift-bench", {"spark.sql.shuffle.partitions": "4"})
    with tempfile.TemporaryDirectory() as tmp:
        subs_file = os.path.join(tmp, "subs.jsonl")
        spark_job.write_subscriptions(subs_file, subs)
        subscribers = load_subscriptions(subs_file)
        store = os.path.join(tmp, "store")
        ingest(
            [Source(str(quotes))],
            store,
            Settings(master="local[2]", overwrite=True),
            Console(quiet=True),
        )
        events = spark.read.parquet("file://" + os.path.join(store, "events"))
        records = events.where(events.model == "records").select("source", "position", "event")

        def noop(df: Any) -> None:
            df.write.format("noop").mode("overwrite").save()

        def match() -> None:
            index = routing.build_index(load_model("records"), subscribers)
            shipped = routing.Shipped(index)
            noop(
                records.repartition(4).mapInArrow(
                    routing.matcher("records", subscribers, shipped), routing.MATCHED_SCHEMA
                )
            )

        def explode() -> None:
            noop(routing.route(events, "records", subscribers, 4))

        def job() -> None:
            df, counts = routing.sorted_route(events, {"records": subscribers}, 4)
            arranged, _, options = arrange(df, "sorted")
            arranged.write.mode("overwrite").options(**options).parquet(
                "file://" + os.path.join(tmp, "deliveries")
            )
            counts()

        def join() -> None:
            noop(joined(spark, events, subs))

        parts: dict[str, Callable[[], None]] = {
            "match": match,
            "explode": explode,
            "job": job,
            "join": join,
        }
        for fn in parts.values():  # warm: Python workers, the index unpickled, codegen
            fn()
        before = os.getloadavg()[0]
        times: dict[str, list[float]] = {k: [] for k in parts}
        for _ in range(args.repeats):
            for name, fn in parts.items():
                times[name].append(_timed(fn))
        after = os.getloadavg()[0]
        ours = digest(routing.route(events, "records", subscribers, 4))
        theirs = digest(joined(spark, events, subs))
    spark.stop()
    med = {k: statistics.median(v) for k, v in times.items()}
    same = ours == theirs
    print(
        f"route stage, {len(subs):,} subscribers, {ours[0]:,} deliveries, medians of "
        f"{args.repeats} (load {before:.1f} -> {after:.1f}): "
        + ", ".join(f"{k} {med[k]:.1f} s {[round(x, 1) for x in v]}" for k, v in times.items())
    )
    print(
        f"index path (match + explode) {med['explode']:.1f} s vs compiled join "
        f"{med['join']:.1f} s: join/index {med['join'] / med['explode']:.2f}; answers "
        f"{'equal' if same else f'DIFFER: index {ours}, join {theirs}'}"
    )
    bench.row(
        subscribers=len(subs),
        deliveries=ours[0],
        seconds={k: [round(x, 3) for x in v] for k, v in times.items()},
        medians={k: round(v, 3) for k, v in med.items()},
        join_over_index=round(med["join"] / med["explode"], 3),
        equal=same,
        load_before=before,
        load_after=after,
    )
    bench.headline(
        f"Spark route stage, {len(subs) // 1000}k subs: records index (mapInArrow) vs a "
        "Spark join compiled from the subscriptions (noop sink, local[2], medians)",
        f"{med['explode']:.1f} s vs {med['join']:.1f} s: "
        f"join/index {med['join'] / med['explode']:.2f}",
    )
    return bench.finish(0 if same else 1)


if __name__ == "__main__":
    sys.exit(main())
