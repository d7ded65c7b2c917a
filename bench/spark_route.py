"""Routing in the Spark job against a per-row path, in the same run (docs/spark.md, "What happens, stage by stage").

    .venv/bin/python bench/spark_route.py [--quick] [--repeats N] [--json PATH]

On ``local[2]``:

* **records**: the 5-year S&P 500 quotes (``../shared/data/quotes/*5yr*.csv.gz``, 619,040
  rows) ingested by the job into an event store, routed against 1k and 10k subscriptions
  of Mühl's quote and quote-interval kinds (``models.records.workload.subscriptions`` with
  ``Mix(quote=0.5, interval=0.5)``, drawn over the whole file, seed 12), as in
  ``bench/records_match.py``;
* **xml**: the 500 YFilter NITF documents (``../shared/data/yfilter/xmldocs-500``) against
  the first 10k distinct YFilter path queries.

For each, the **routing stage** is timed three ways over the same cached events (the store
read once, in 2 partitions, materialized before timing): *the job's path*
(:func:`pubsift.adapters.spark.route.deliveries`: ``mapInArrow`` through the index's
``match_wire_batch`` when it has one, else ``match_batch``, one row per matched event with
its subscribers, exploded by Spark into the delivery rows) and two *per-row paths*, each a
``mapInPandas`` function calling ``FilterIndex.match(model.load_event(json.loads(wire)))``
for each event: one building a pandas row per delivery, the other handing back the job's
output shape (each matched event once with its subscribers, exploded by Spark), so that
only the matching differs from the job's path; the headline ratio is against the faster
of the two. All are driven by the same action (count and a hash sum of every column of
the deliveries, the event included), whose results must be equal; a difference is exit
status 1. The figure is
events per second per core (events / wall seconds / 2); **bar: records at 10k
subscriptions, the job's path ≥ 3× the per-row path**. Also printed: the wall time of the
whole job (``pubsift route`` on the quotes archive against the 10k subscriptions:
listing, conversion, event store, routing, writing the deliveries) and the time Spark's
start takes (a cold session).

Times are wall-clock (``time.perf_counter``), not CPU time as in the other scripts: the
work runs in Spark's JVM and Python worker processes, not in this one; run it on a quiet
machine. Each figure is the median of ``--repeats`` runs after one warm-up run, with the
spread. ``--quick`` routes the first 200,000 quotes in the stage timings (3 repeats by
default) and runs the whole job once.
"""

from __future__ import annotations

import gzip
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Bench, Timing, ratio, time_it

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
QUOTES = DATA / "quotes" / "all_stocks_5yr_2013-02-08_2018-02-07.csv.gz"
NITF = DATA / "yfilter" / "xmldocs-500"
QUERIES = DATA / "yfilter" / "queries" / "queries-153928-d.txt.gz"
CORES = 2


def wall(work: Callable[[], Any], count: int, inputs: str, repeats: int) -> tuple[Timing, Any]:
    """``work`` once untimed (warm-up; its result is returned, to be compared), then
    ``repeats`` timed runs in wall seconds (the harness's :func:`time_it`)."""
    result = work()
    return time_it(work, count, inputs, repeats, warmup=0, clock=time.perf_counter), result


def per_row(
    model_name: str, ids: Sequence[str], shipped: Any
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The per-row path: ``index.match`` for each event, inside ``mapInPandas``; its
    output frames are bounded in bytes as the job's are (``route.OUTPUT_BYTES``)."""
    from pubsift.adapters.spark.route import OUTPUT_BYTES

    def route(frames: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd
        from pubsift.core.registry import load_model

        model = load_model(model_name)
        index = shipped.load()
        subs: list[str] = []
        srcs: list[str] = []
        poss: list[int] = []
        evs: list[str] = []
        size = 0

        def frame() -> Any:
            return pd.DataFrame(
                {
                    "subscriber": subs,
                    "source": srcs,
                    "position": poss,
                    "model": model_name,
                    "event": evs,
                }
            )

        for pdf in frames:
            for src, pos, wire in zip(pdf["source"], pdf["position"], pdf["event"]):
                for k in index.match(model.load_event(json.loads(wire))):
                    subs.append(ids[k])
                    srcs.append(src)
                    poss.append(pos)
                    evs.append(wire)
                    size += len(wire)
                if size >= OUTPUT_BYTES:
                    yield frame()
                    subs, srcs, poss, evs, size = [], [], [], [], 0
        if subs:
            yield frame()

    return route


def per_row_explode(
    model_name: str, ids: Sequence[str], shipped: Any
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The per-row path with the job's output shape: ``index.match`` for each event inside
    ``mapInPandas``, each matched event handed back once with its subscribers' ids, the
    delivery rows made by Spark's ``explode`` as the job makes them
    (:func:`pubsift.adapters.spark.route.deliveries`): only the matching differs from
    the job's path."""

    def match(frames: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd
        from pubsift.core.registry import load_model

        model = load_model(model_name)
        index = shipped.load()
        for pdf in frames:
            keep, subs = [], []
            for i, wire in enumerate(pdf["event"]):
                ks = index.match(model.load_event(json.loads(wire)))
                if ks:
                    keep.append(i)
                    subs.append([ids[k] for k in ks])
            if keep:
                out = pdf.iloc[keep].reset_index(drop=True)
                out["subscribers"] = pd.Series(subs, dtype=object)
                yield out

    return match


def digest(df: Any) -> tuple[int, int]:
    """The action all paths are driven by: count and hash sum of the deliveries."""
    from pyspark.sql import functions as F

    # the event too: what the job writes, so neither path is spared making it
    row = df.agg(
        F.count(F.lit(1)), F.sum(F.hash("subscriber", "source", "position", "model", "event"))
    ).collect()[0]
    return int(row[0]), int(row[1] or 0)


def compare(
    bench: Bench,
    spark: Any,
    events: Any,
    n_events: int,
    model_name: str,
    subscribers: Sequence[Any],
    label: str,
    repeats: int,
) -> bool:
    import pickle

    from pubsift.adapters.spark.route import MATCHED_SCHEMA, Shipped, build_index, deliveries
    from pubsift.adapters.spark.store import DELIVERY_SCHEMA
    from pubsift.core.registry import load_model
    from pyspark.sql import functions as F

    model = load_model(model_name)
    index = build_index(model, subscribers)
    ids = [s.id for s in subscribers]
    inputs = f"{n_events} {label} events, {len(subscribers)} subscriptions"
    start = time.perf_counter()
    shipped = Shipped(index)
    packed = time.perf_counter() - start
    start = time.perf_counter()
    pickle.loads(shipped.blob)
    unpacked = time.perf_counter() - start
    # each path's plan made once, as the job makes it once: the warm-up run ships the index
    # to the workers, the timed runs route (the shipping's cost is printed beside)
    paths = {
        "job": deliveries(events, model_name, subscribers, index),
        "per_row": events.mapInPandas(per_row(model_name, ids, shipped), DELIVERY_SCHEMA),
        "explode": events.mapInPandas(
            per_row_explode(model_name, ids, shipped), MATCHED_SCHEMA
        ).select(
            F.explode("subscribers").alias("subscriber"),
            "source",
            "position",
            F.lit(model_name).alias("model"),
            "event",
        ),
    }
    ours, got = wall(lambda: digest(paths["job"]), n_events, inputs, repeats)
    base, want = wall(lambda: digest(paths["per_row"]), n_events, inputs, repeats)
    fair, also = wall(lambda: digest(paths["explode"]), n_events, inputs, repeats)
    same = got == want == also
    r = ratio(ours, base)
    r_fair = ratio(ours, fair)
    per_core = lambda t: n_events / t.median / CORES  # noqa: E731
    print(
        f"{label} {len(subscribers):>6} subs: job path {per_core(ours):>10,.0f} ev/s/core "
        f"±{ours.spread / 2:.0%}; per-row {per_core(base):>9,.0f} ±{base.spread / 2:.0%} "
        f"({r:.1f}×); per-row with the job's output (explode) {per_core(fair):>9,.0f} "
        f"±{fair.spread / 2:.0%} ({r_fair:.1f}×); deliveries {got[0]:,} "
        f"{'(equal)' if same else f'DIFFER: per-row {want[0]:,}, {also[0]:,}'}; "
        f"shipping the index (once per job): pickled in {packed:.2f} s on the driver, "
        f"{len(shipped.blob) / 1e6:.1f} MB, loaded in {unpacked:.2f} s per Python worker"
    )
    bench.row(
        model=model_name,
        subscriptions=len(subscribers),
        events=n_events,
        job_path=ours,
        per_row=base,
        per_row_explode=fair,
        ratio=r,
        ratio_fair=r_fair,
        deliveries=got[0],
        equal=same,
        job_events_per_s_core=per_core(ours),
        per_row_events_per_s_core=per_core(base),
        per_row_explode_events_per_s_core=per_core(fair),
        index_pickled_s=packed,
        index_bytes=len(shipped.blob),
        index_loaded_s=unpacked,
    )
    if len(subscribers) >= 10_000:
        bench.headline(
            f"Spark routing stage, {label}, {len(subscribers) // 1000}k subs "
            f"(job path vs per-row index.match in mapInPandas, local[2], wall "
            f"time)",
            f"{per_core(ours):,.0f} ev/s/core: {min(r, r_fair):.1f}× "
            f"the faster per-row path ({r_fair:.1f}× the per-row path with the "
            f"job's output shape, exploded by Spark; {r:.1f}× the one building "
            f"a pandas row per delivery); shipping the index once per job: "
            f"{packed:.1f} s + {unpacked:.1f} s per worker",
        )
    return same


def cached_events(
    spark: Any, store_dir: str, model_name: str, limit: int | None
) -> tuple[Any, int]:
    from pyspark import StorageLevel

    df = (
        spark.read.parquet(os.path.join(store_dir, "events"))
        .where(f"model = '{model_name}'")
        .select("source", "position", "event")
    )
    if limit:
        df = df.orderBy("source", "position").limit(limit)
    df = df.repartition(CORES).persist(StorageLevel.MEMORY_ONLY)
    return df, df.count()


#: the workload's attribute names -> the quotes file's column names
CSV_NAMES = {"symbol": "Name", "price": "close"}


def quote_subscribers(n: int, quotes: Sequence[Any]) -> list[Any]:
    from pubsift.adapters.spark.subscriptions import JobSubscriber
    from pubsift.core.registry import load_model
    from pubsift.models.records.workload import Mix, subscriptions

    records = load_model("records")
    fs = subscriptions(
        quotes, n, seed=12, mix=Mix(quote=0.5, interval=0.5, prefix=0, portfolio=0, volume=0)
    )
    # the workload names the attributes symbol/price; the CSV file's columns are Name/close
    renamed = [
        records.load_filter({CSV_NAMES.get(a, a): c for a, c in records.dump_filter(f).items()})
        for f in fs
    ]
    return [
        JobSubscriber(id=f"s{i}", model="records", filters=(f,), where="bench", spec={}, view=None)
        for i, f in enumerate(renamed)
    ]


def xpath_subscribers(n: int) -> list[Any]:
    from pubsift.adapters.spark.subscriptions import JobSubscriber
    from pubsift.core.registry import load_model

    xml = load_model("xml")
    with gzip.open(QUERIES, "rt", encoding="utf-8") as fh:
        queries = list(dict.fromkeys(q.strip() for q in fh if q.strip()))[:n]
    return [
        JobSubscriber(
            id=f"x{i}",
            model="xml",
            filters=(xml.parse_filter(q),),
            where="bench",
            spec={},
            view=None,
        )
        for i, q in enumerate(queries)
    ]


def main(argv: list[str] | None = None) -> int:
    bench = Bench("spark_route", __doc__, argv)
    bench.parser.add_argument(
        "--parts",
        default="records,xml,job",
        help="what to run (comma-separated): records, xml, job",
    )
    args = bench.parse()
    parts = set(args.parts.split(","))
    if not QUOTES.is_file() or not NITF.is_dir() or not QUERIES.is_file():
        return bench.skip(f"shared data absent ({QUOTES.parent}, {NITF})")
    from pubsift.adapters.readers.source import Source
    from pubsift.adapters.spark.job import Settings, ingest, route
    from pubsift.adapters.spark.session import start
    from pubsift.models.records.workload import load_quotes
    from rich.console import Console

    t0 = time.perf_counter()
    spark = start("local[2]", "pubsift-bench", {"spark.sql.shuffle.partitions": "4"})
    spark.range(1).count()
    started = time.perf_counter() - t0
    print(f"Spark start (cold session and first action): {started:.1f} s")
    quiet = Console(quiet=True)
    settings = Settings(master="local[2]", overwrite=True)
    quotes = load_quotes(QUOTES)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        qstore, xstore = os.path.join(tmp, "quotes"), os.path.join(tmp, "nitf")
        ingest([Source(str(QUOTES))], qstore, settings, quiet)
        ingest([Source(str(NITF))], xstore, settings, quiet)
        if "records" in parts:
            events, n = cached_events(spark, qstore, "records", 200_000 if args.quick else None)
            for size in (1_000, 10_000):
                ok &= compare(
                    bench,
                    spark,
                    events,
                    n,
                    "records",
                    quote_subscribers(size, quotes),
                    "quotes",
                    args.repeats,
                )
            events.unpersist()
        if "xml" in parts:
            events, n = cached_events(spark, xstore, "xml", None)
            ok &= compare(
                bench, spark, events, n, "xml", xpath_subscribers(10_000), "NITF", args.repeats
            )
            events.unpersist()
        if "job" not in parts:
            spark.stop()
            return bench.finish(0 if ok else 1)
        subs = quote_subscribers(10_000, quotes)
        jobs = []
        for _ in range(1 if args.quick else max(1, args.repeats)):
            summary = route(
                subs,
                os.path.join(tmp, "job"),
                settings,
                sources=[Source(str(QUOTES))],
                console=quiet,
            )
            jobs.append(summary["seconds"]["total"])
        total = statistics.median(jobs)
        print(
            f"whole job (pubsift route, {summary['events']:,} quotes, 10k subscriptions, "
            f"{summary['deliveries']:,} deliveries written): {total:.1f} s wall "
            f"(median of {len(jobs)}; stages {summary['seconds']}), Spark start "
            f"{started:.1f} s"
        )
        bench.row(
            whole_job_s=total,
            stages=summary["seconds"],
            events=summary["events"],
            deliveries=summary["deliveries"],
            spark_start_s=started,
        )
        bench.headline(
            f"Spark job, {summary['events'] // 1000}k quotes x 10k subs, "
            f"{summary['deliveries'] / 1e6:.1f}M deliveries written, local[2] "
            "(wall time)",
            f"{total:.0f} s, and {started:.0f} s for Spark's start",
        )
    spark.stop()
    return bench.finish(0 if ok else 1)


if __name__ == "__main__":
    sys.exit(main())
