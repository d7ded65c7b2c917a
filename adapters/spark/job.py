"""The two commands of the Spark job end to end (issue 12 §2): ``pubsift ingest`` (files ->
event store) and ``pubsift route`` (files or an event store -> deliveries per subscriber).

Everything that can be wrong with the command line, the job file, the subscriptions or the
output directory is found before Spark starts (exit status 2, every problem listed). Then
Spark starts, the driver lists the files, Spark converts them (:mod:`.ingest`), writes the
event store and the quarantine, routes each model's events against its subscribers
(:mod:`.route`) and writes the deliveries; ``summary.json`` holds the counts and the wall
time of each stage, and the console ends with the summary as a table.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pubsift.adapters.limits import DEFAULT_READ_LIMITS, ReadLimits
from pubsift.adapters.source import Source
from pubsift.adapters.spark import store
from pubsift.adapters.spark.layout import DEFAULT_LAYOUT, check
from pubsift.adapters.spark.progress import Stages
from pubsift.adapters.summary import SourceCounts, Summary
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from pubsift.adapters.spark.subscriptions import Subscriber
    from pyspark.sql import DataFrame, SparkSession

#: the event store's columns as read back (model is the partition column)
EVENTS_SCHEMA = "source string, position long, event string, model string"

#: rows of the console's summary table per section (summary.json has them all)
SHOWN = 20


@dataclass
class Settings:
    """How the job runs: the master (None: ``local[*]``, or spark-submit's), Spark
    settings, the output format and whether an earlier run's output may be replaced."""

    master: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict)
    app_name: str = "pubsift"
    format: str = "parquet"
    overwrite: bool = False
    limits: ReadLimits = DEFAULT_READ_LIMITS
    #: how the deliveries are laid out (:mod:`.layout`: ``sorted`` or ``per-subscriber``)
    layout: str = DEFAULT_LAYOUT


def ingest(
    sources: Sequence[Source], out: str, settings: Settings, console: Console | None = None
) -> dict[str, Any]:
    """``pubsift ingest``: convert ``sources`` once into an event store at ``out``."""
    console = console or Console(stderr=True)
    output = store.prepare(out, "parquet", settings.overwrite, "store", [s.path for s in sources])
    return _run(output, settings, console, sources, None, None)


def route(
    subscribers: Sequence[Subscriber],
    out: str,
    settings: Settings,
    sources: Sequence[Source] = (),
    event_store: str | None = None,
    console: Console | None = None,
) -> dict[str, Any]:
    """``pubsift route``: route ``sources`` (converted on the way, the store kept in
    ``out/events``) or an existing ``event_store`` against ``subscribers``."""
    console = console or Console(stderr=True)
    check(settings.layout)
    inputs = [s.path for s in sources] + ([event_store] if event_store else [])
    output = store.prepare(out, settings.format, settings.overwrite, "route", inputs)
    return _run(output, settings, console, sources, event_store, subscribers)


def _run(
    output: store.Output,
    settings: Settings,
    console: Console,
    sources: Sequence[Source],
    event_store: str | None,
    subscribers: Sequence[Subscriber] | None,
) -> dict[str, Any]:
    from pubsift.adapters.spark.session import start, under_spark_submit

    began = time.perf_counter()
    stages = Stages(console)
    restore = _terminate_as_interrupt()
    try:
        where = settings.master or ("spark-submit's master" if under_spark_submit() else "local[*]")
        with stages.stage("start", f"Spark started ({where})"):
            spark = start(settings.master, settings.app_name, settings.conf)
        stages.spark = spark
        summary: dict[str, Any] = {"format": output.format}
        if event_store is None:
            summary.update(_ingest(spark, sources, output, settings, stages))
            events_path = output.path("events")
        else:
            events_path = os.path.join(os.path.abspath(event_store), "events")
            summary.update(_store_summary(event_store))
        if subscribers is not None:
            summary.update(_route(spark, events_path, subscribers, output, stages, settings.layout))
        summary["seconds"] = {
            **{k: round(v, 3) for k, v in stages.seconds.items()},
            "total": round(time.perf_counter() - began, 3),
        }
        store.write_json(output.path("summary.json"), summary)
        store.commit(output)
    except BaseException:
        store.discard(output)
        raise
    finally:
        restore()
    show(summary, console)
    return summary


def _terminate_as_interrupt() -> Any:
    """SIGTERM (``kill``, a scheduler stopping the job) interrupts the job like Ctrl-C, so
    that its staging directory is removed; returns what restores the previous handler."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt("terminated (SIGTERM)")

    previous = signal.signal(signal.SIGTERM, interrupt)
    return lambda: signal.signal(signal.SIGTERM, previous)


def _ingest(
    spark: SparkSession,
    sources: Sequence[Source],
    output: store.Output,
    settings: Settings,
    stages: Stages,
) -> dict[str, Any]:
    from pubsift.adapters.spark.ingest import convert, list_files
    from pyspark import StorageLevel

    with stages.stage("list", "files listed"):
        listing = list_files(sources, settings.limits)
    with stages.stage("convert", f"{len(listing.files)} files converted into events"):
        kept: list[DataFrame] = []
        converted = convert(spark, listing, settings.limits, kept)
        converted = converted.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            (
                converted.where("kind = 'event'")
                .select(*store.EVENT_COLUMNS)
                .write.partitionBy("model")
                .parquet(_uri(output.path("events")))
            )
            quarantined = converted.where("kind = 'quarantine'")
            _write(
                quarantined.select(*store.QUARANTINE_COLUMNS).coalesce(1),
                output.path("quarantine"),
                output.format,
            )
            counts: list[Any] = (
                converted.groupBy("kind", "source", "model", "reason").count().collect()
            )
        finally:
            converted.unpersist()
            for df in kept:
                df.unpersist()
        lost = unread(listing, counts)
        if lost:  # never silent: what Spark did not hand to a task is quarantined
            rows = [
                {
                    "source": label,
                    "position": 0,
                    "reason": "unreadable",
                    "message": "not read: Spark's file source returned nothing for this "
                    "file (please report it as a pubsift bug)",
                    "excerpt": "",
                    "model": None,
                }
                for label in lost
            ]
            frame = spark.createDataFrame(
                rows,
                ", ".join(
                    f"{c} {'long' if c == 'position' else 'string'}"
                    for c in store.QUARANTINE_COLUMNS
                ),
            )
            _write(frame, output.path("quarantine"), output.format, mode="append")
            counts = list(counts) + [("quarantine", label, None, "unreadable", 1) for label in lost]
    return read_counts(counts)


def unread(listing: Any, counts: Sequence[Any]) -> list[str]:
    """The labels of listed files that gave no row at all (neither ``seen`` nor a record:
    the file never reached a task)."""
    reached: set[str] = set()
    for _, source, _, _, _ in counts:
        parts = source.split("!")  # an archive member names its archive: a.zip!m.csv
        reached.update("!".join(parts[:i]) for i in range(1, len(parts) + 1))
    return [label for pairs in listing.files.values() for label, _ in pairs if label not in reached]


def read_counts(counts: Sequence[Any]) -> dict[str, Any]:
    """The read part of the summary from ``(kind, source, model, reason, count)`` rows:
    per source read = events + quarantined, per model, per reason (issue 12 §2)."""
    summary = Summary()
    models: dict[str, int] = {}
    for kind, source, model, reason, n in counts:
        summary.saw(source)
        c: SourceCounts = summary.sources[source]
        if kind == "event":
            c.events += n
            models[model] = models.get(model, 0) + n
        elif kind == "quarantine":
            c.quarantined += n
            summary.reasons[reason] += n
    out = summary.to_json()
    out["sources"] = dict(sorted(out["sources"].items()))
    out["models"] = dict(sorted(models.items()))
    return out


def _store_summary(path: str) -> dict[str, Any]:
    """What the event store at ``path`` holds, from its summary.json."""
    try:
        with open(os.path.join(path, "summary.json"), encoding="utf-8") as fh:
            old = json.load(fh)
    except (OSError, ValueError):
        old = {}
    keep = ("read", "events", "quarantined", "sources", "models", "reasons")
    return {"store": os.path.abspath(path), **{k: old[k] for k in keep if k in old}}


def _route(
    spark: SparkSession,
    events_path: str,
    subscribers: Sequence[Subscriber],
    output: store.Output,
    stages: Stages,
    layout: str,
) -> dict[str, Any]:
    """Route and write the deliveries in ``layout``; the counts per subscriber come from
    the plan that is written, aggregated before the write (issue 34: never by reading the
    output back): what the Python tasks return is persisted, so both share one routing."""
    from pubsift.adapters.spark import route as routing
    from pubsift.adapters.spark.layout import arrange
    from pubsift.adapters.spark.subscriptions import by_model
    from pyspark import StorageLevel

    groups = by_model(subscribers)
    kept: list[DataFrame] = []

    def keep(df: DataFrame) -> DataFrame:
        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        kept.append(df)
        return df

    with stages.stage("route", f"{len(subscribers)} subscribers of {len(groups)} model(s) routed"):
        # the schema given: a store with no event holds no Parquet file to infer it from
        events = spark.read.schema(EVENTS_SCHEMA).parquet(_uri(events_path, read=True))
        present = {r[0] for r in events.select("model").distinct().collect()}
        parts = max(2, 2 * _parallelism(spark))
        try:
            frames = [
                routing.route(events, m, subs, parts, keep)
                for m, subs in groups.items()
                if m in present
            ]
            per: dict[str, int] = {}
            if frames:
                deliveries = frames[0]
                for f in frames[1:]:
                    deliveries = deliveries.unionByName(f)
                per = {r[0]: r[1] for r in deliveries.groupBy("subscriber").count().collect()}
                arranged, partition, options = arrange(
                    deliveries, layout, sum(per.values()), _parallelism(spark)
                )
                _write(
                    arranged,
                    output.path("deliveries"),
                    output.format,
                    partition=partition,
                    options=options,
                )
        finally:
            for df in kept:
                df.unpersist()
    counted = {s.id: per.get(s.id, 0) for s in subscribers}
    return {"layout": layout, "deliveries": sum(counted.values()), "subscribers": counted}


def _uri(path: str, read: bool = False) -> str:
    """A local path as Spark's writers (and, ``read``, readers, which expand glob
    characters: escaped) must take it: a ``file:`` URI, never resolved against a
    cluster's default file system."""
    from pubsift.adapters.spark.ingest import hadoop_path

    path = os.path.abspath(path)
    return hadoop_path(path) if read else "file://" + path


def _parallelism(spark: SparkSession) -> int:
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:
        return 2


def _write(
    df: DataFrame,
    path: str,
    fmt: str,
    partition: str | None = None,
    mode: str | None = None,
    options: Mapping[str, str] | None = None,
) -> None:
    """Write ``df`` as Parquet (with the writer ``options``), or as JSON lines (``event``
    embedded as JSON, not as a string holding JSON), optionally partitioned by a column."""
    if fmt == "parquet":
        writer = df.write if mode is None else df.write.mode(mode)
        writer = writer.options(**(options or {}))
        if partition:
            writer = writer.partitionBy(partition)
        writer.parquet(_uri(path))
        return
    from pyspark.sql import functions as F

    parts = []
    for i, name in enumerate(df.columns):
        key = F.lit(("{" if i == 0 else ",") + json.dumps(name) + ":")
        if name == "event":
            value = F.coalesce(F.col(name), F.lit("null"))
        else:
            value = F.coalesce(_json_value(F.col(name)), F.lit("null"))
        parts += [key, value]
    line = F.concat(*parts, F.lit("}")).alias("value")
    cols = [line] + ([F.col(partition)] if partition else [])
    writer = df.select(*cols).write.option("compression", "none")
    if mode is not None:
        writer = writer.mode(mode)
    if partition:
        writer = writer.partitionBy(partition)
    writer.text(_uri(path))


def _json_value(col: Any) -> Any:
    """A column as a JSON value, computed by Spark: ``to_json`` of a one-field struct
    without its ``{"v":`` and ``}``."""
    from pyspark.sql import functions as F

    text = F.to_json(F.struct(col.alias("v")), {"ignoreNullFields": "false"})
    # (?s): a value may hold U+2028, U+2029 or U+0085, which Java's "." does not match
    return F.regexp_extract(text, r'(?s)^\{"v":(.*)\}$', 1)


def show(summary: Mapping[str, Any], console: Console) -> None:
    """The summary as tables: per source, per reason, per subscriber, per stage."""
    console.print()
    if "sources" in summary:
        t = Table(
            title=f"read: {summary.get('read', 0)} records, "
            f"{summary.get('events', 0)} events, "
            f"{summary.get('quarantined', 0)} quarantined"
            + (f" (store {summary['store']})" if "store" in summary else "")
        )
        t.add_column("source", overflow="fold")
        for col in ("read", "events", "quarantined"):
            t.add_column(col, justify="right")
        rows = list(summary["sources"].items())
        for src, c in rows[:SHOWN]:
            t.add_row(src, str(c["read"]), str(c["events"]), str(c["quarantined"]))
        if len(rows) > SHOWN:
            t.add_row(f"... {len(rows) - SHOWN} more (summary.json)", "", "", "")
        console.print(t)
    for key, title in (("models", "events per model"), ("reasons", "quarantined per reason")):
        if summary.get(key):
            t = Table(title=title)
            t.add_column(key[:-1])
            t.add_column("count", justify="right")
            for k, v in summary[key].items():
                t.add_row(k, str(v))
            console.print(t)
    if "subscribers" in summary:
        t = Table(title=f"deliveries: {summary['deliveries']}")
        t.add_column("subscriber")
        t.add_column("deliveries", justify="right")
        rows = list(summary["subscribers"].items())
        for sid, n in rows[:SHOWN]:
            t.add_row(sid, str(n))
        if len(rows) > SHOWN:
            t.add_row(f"... {len(rows) - SHOWN} more (summary.json)", "")
        console.print(t)
    secs = summary.get("seconds", {})
    if secs:
        console.print("wall time: " + ", ".join(f"{k} {v:.1f} s" for k, v in secs.items()))
