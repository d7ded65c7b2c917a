"""The two commands of the Spark job end to end (docs/spark.md): ``pubsift ingest`` (files ->
event store) and ``pubsift route`` (files or an event store -> deliveries per subscriber).

Everything that can be wrong with the command line, the job file, the subscriptions or the
output directory is found before Spark starts (exit status 2, every problem listed). Then
Spark starts, the driver lists the files, Spark converts them (:mod:`.ingest`), writes the
event store and the quarantine, routes each model's events against its subscribers
(:mod:`.route`) and writes the deliveries; ``summary.json`` holds the counts and the wall
time of each stage, and the console ends with the summary as a table.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pubsift.adapters.readers.limits import DEFAULT_READ_LIMITS, ReadLimits
from pubsift.adapters.readers.source import Source
from pubsift.adapters.spark import store
from pubsift.adapters.spark.interrupt import Interrupts, stop_tasks
from pubsift.adapters.spark.layout import DEFAULT_LAYOUT, check
from pubsift.adapters.spark.mismatch import model_warnings
from pubsift.adapters.spark.progress import Stages
from pubsift.adapters.spark.tables import show
from pubsift.adapters.summary import SourceCounts, Summary
from rich.console import Console

if TYPE_CHECKING:
    from pubsift.adapters.spark.route import Routed
    from pubsift.adapters.spark.subscriptions import JobSubscriber
    from pyspark.sql import DataFrame, SparkSession

#: the event store's columns as read back (model is the partition column)
EVENTS_SCHEMA = "source string, position long, event string, model string"


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
    #: CSV files Spark can convert exactly as the CSV reader does are read by Spark's text
    #: source and SQL (:mod:`.native`); False: by the Python reader in tasks (docs/spark.md)
    native_csv: bool = True
    #: JSON-lines files likewise (:mod:`.native_jsonl`); False: by the Python reader in tasks
    native_jsonl: bool = True


def ingest(
    sources: Sequence[Source],
    out: str,
    settings: Settings,
    console: Console | None = None,
    results: Console | None = None,
) -> dict[str, Any]:
    """``pubsift ingest``: convert ``sources`` once into an event store at ``out``.
    Progress goes to ``console``, the summary to ``results`` (default: ``console``)."""
    console = console or Console(stderr=True)
    output = store.prepare(out, "parquet", settings.overwrite, "store", [s.path for s in sources])
    return _run(output, settings, console, results or console, sources, None, None)


def route(
    subscribers: Sequence[JobSubscriber],
    out: str,
    settings: Settings,
    sources: Sequence[Source] = (),
    event_store: str | None = None,
    console: Console | None = None,
    results: Console | None = None,
) -> dict[str, Any]:
    """``pubsift route``: route ``sources`` (converted on the way, the store kept in
    ``out/events``) or an existing ``event_store`` against ``subscribers``. Progress goes
    to ``console``, the summary to ``results`` (default: ``console``)."""
    console = console or Console(stderr=True)
    check(settings.layout)
    inputs = [s.path for s in sources] + ([event_store] if event_store else [])
    output = store.prepare(out, settings.format, settings.overwrite, "route", inputs)
    return _run(output, settings, console, results or console, sources, event_store, subscribers)


def _run(
    output: store.Output,
    settings: Settings,
    console: Console,
    results: Console,
    sources: Sequence[Source],
    event_store: str | None,
    subscribers: Sequence[JobSubscriber] | None,
) -> dict[str, Any]:
    from pubsift.adapters.spark.session import start, under_spark_submit

    began = time.perf_counter()
    stages = Stages(console)
    spark = None
    _warm_report()
    # the indexes are built on the driver while Spark starts and the files are converted
    indexes = _Building(subscribers) if subscribers is not None else None
    with Interrupts() as interrupts:
        stages.check = interrupts.check
        try:
            where = settings.master or (
                "spark-submit's master" if under_spark_submit() else "local[*]"
            )
            with stages.stage("start", f"Spark started ({where})"):
                spark = start(settings.master, settings.app_name, settings.conf)
            interrupts.started(spark)
            stages.spark = spark
            summary: dict[str, Any] = {"format": output.format}
            if event_store is None:
                summary.update(_ingest(spark, sources, output, settings, stages))
                events_path = output.path("events")
            else:
                events_path = os.path.join(os.path.abspath(event_store), "events")
                summary.update(_store_summary(event_store))
            if subscribers is not None:
                summary.update(
                    _route(
                        spark,
                        events_path,
                        subscribers,
                        output,
                        stages,
                        settings.layout,
                        summary.get("models"),
                        indexes.get if indexes is not None else None,
                    )
                )
                wanted = Counter(s.model for s in subscribers)
                summary["warnings"] = model_warnings(wanted, summary.get("models", {}))
            summary["seconds"] = {
                **{k: round(v, 3) for k, v in stages.seconds.items()},
                "total": round(time.perf_counter() - began, 3),
            }
            store.write_json(output.path("summary.json"), summary)
            shown = {**summary, **_report(output, summary, settings, event_store, sources, console)}
            interrupts.check()
            store.commit(output)
        except BaseException as exc:
            # a signal: whatever the job's calls raised after it (a cancelled Spark job),
            # the run was interrupted; the tasks are stopped before the staging goes
            interrupted = interrupts.disarm() or isinstance(exc, KeyboardInterrupt)
            if interrupted and spark is not None:
                stop_tasks(spark)
            store.discard(output)
            if interrupted:
                raise KeyboardInterrupt("interrupted") from None
            raise
    show(shown, results)
    return summary


def _warm_report() -> None:
    import threading

    from pubsift.adapters.spark import report

    threading.Thread(target=report.warm, daemon=True, name="report-warm").start()


def _report(
    output: store.Output,
    summary: Mapping[str, Any],
    settings: Settings,
    event_store: str | None,
    sources: Sequence[Source],
    console: Console,
) -> dict[str, str]:
    """Write ``report.html`` (:mod:`.report`) beside summary.json; ``{"report": path}``,
    or nothing when it could not be written (said on ``console``: the run's outputs stand)."""
    from pubsift.adapters.spark import report

    given = {
        "master": settings.master or "local[*]",
        "app name": settings.app_name,
        "output format": settings.format,
        "layout": settings.layout,
        "sources": [s.path for s in sources] or None,
        "event store": event_store,
        "Spark settings": dict(settings.conf),
        "read limits": dict(vars(settings.limits)),
    }
    quarantine = (
        os.path.join(event_store, "quarantine") if event_store else output.path("quarantine")
    )
    fmt = (store.store_format(event_store) or "parquet") if event_store else output.format
    try:
        report.write(output.path("report.html"), summary, given, quarantine, fmt)
    except Exception as exc:
        console.print(f"[yellow]warning:[/] report.html not written: {type(exc).__name__}: {exc}")
        return {}
    return {"report": os.path.join(output.final, "report.html")}


def _ingest(
    spark: SparkSession,
    sources: Sequence[Source],
    output: store.Output,
    settings: Settings,
    stages: Stages,
) -> dict[str, Any]:
    from pubsift.adapters.spark.ingest import convert, list_files
    from pubsift.adapters.spark.store import CONVERTED_SCHEMA

    with stages.stage("list", "files listed"):
        listing = list_files(sources, settings.limits)
    with stages.stage("convert", f"{len(listing.files)} files converted into events"):
        scratch = output.path("_csv")
        written = None
        plans: Mapping[str, Any] = {}
        try:
            if settings.native_csv or settings.native_jsonl:
                from pubsift.adapters.spark.native import probe_listing, write_native

                plans = probe_listing(
                    listing,
                    settings.limits,
                    settings.native_csv,
                    settings.native_jsonl,
                    os.path.join(scratch, "plain"),
                )
                if plans:
                    written = write_native(
                        spark, plans, settings.limits, output.path("events"), scratch
                    )
            taken = set(plans) - written.left if written else set()
            if (
                written
                and written.rest is None
                and not listing.problems
                and taken >= set(listing.files)
            ):
                counts = _write_rows(spark, written.rows, output, settings.format)
            else:
                extra = []
                if written and written.rest is not None:
                    extra.append(written.rest)
                elif written and written.rows:
                    extra.append(spark.createDataFrame(written.rows, CONVERTED_SCHEMA))
                converted = convert(spark, listing, settings.limits, skip=taken, extra=extra)
                counts = _write_converted(converted, output)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if written is not None:
            counts = list(counts) + written.counts
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


def _write_converted(converted: DataFrame, output: store.Output) -> list[Any]:
    """The events (beside those the CSV files read by Spark put there) and the quarantine
    of ``converted`` written; the counts of its rows."""
    from pyspark import StorageLevel

    converted = converted.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        (
            converted.where("kind = 'event'")
            .select(*store.EVENT_COLUMNS)
            .write.mode("append")
            .partitionBy("model")
            .parquet(_uri(output.path("events")))
        )
        _write(
            converted.where("kind = 'quarantine'").select(*store.QUARANTINE_COLUMNS).coalesce(1),
            output.path("quarantine"),
            output.format,
        )
        return list(converted.groupBy("kind", "source", "model", "reason").count().collect())
    finally:
        converted.unpersist()


def _write_rows(
    spark: SparkSession, rows: Sequence[tuple[Any, ...]], output: store.Output, fmt: str
) -> list[Any]:
    """:func:`_write_converted` of converted rows held on the driver (the few rows of CSV
    and JSON-lines files read by Spark that the Python reader read): their counts made
    here. As Parquet they are written by pyarrow on the driver (one file each, the columns
    Spark writes: no Spark job for a few rows)."""
    from pubsift.adapters.spark.store import CONVERTED_SCHEMA

    events = [r for r in rows if r[0] == "event"]
    quarantined = [r for r in rows if r[0] == "quarantine"]
    n = Counter((r[0], r[2], r[1], r[5]) for r in rows)
    counts = [(kind, source, model, reason, c) for (kind, source, model, reason), c in n.items()]
    if fmt == "parquet" and all(r[1] == "records" for r in events):
        _arrow_rows(events, quarantined, output)
        return counts
    if events:
        (
            spark.createDataFrame(events, CONVERTED_SCHEMA)
            .select(*store.EVENT_COLUMNS)
            .write.mode("append")
            .partitionBy("model")
            .parquet(_uri(output.path("events")))
        )
    _write(
        spark.createDataFrame(quarantined, CONVERTED_SCHEMA)
        .select(*store.QUARANTINE_COLUMNS)
        .coalesce(1),
        output.path("quarantine"),
        fmt,
    )
    return counts


#: the converted rows' columns (``CONVERTED_SCHEMA``'s order)
_CONVERTED = ("kind", "model", "source", "position", "event", "reason", "message", "excerpt")


def _arrow_rows(
    events: Sequence[tuple[Any, ...]], quarantined: Sequence[tuple[Any, ...]], output: Any
) -> None:
    """Records events into ``events/model=records/`` and the quarantine, as Parquet files
    pyarrow writes (the types Spark writes and reads back: strings, ``position`` int64)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def table(rows: Sequence[tuple[Any, ...]], columns: Sequence[str]) -> Any:
        at = [_CONVERTED.index(c) for c in columns]
        fields = [(c, pa.int64() if c == "position" else pa.string()) for c in columns]
        return pa.Table.from_pylist(
            [{c: r[i] for c, i in zip(columns, at)} for r in rows], schema=pa.schema(fields)
        )

    if events:
        where = os.path.join(output.path("events"), "model=records")
        os.makedirs(where, exist_ok=True)
        pq.write_table(
            table(events, [c for c in store.EVENT_COLUMNS if c != "model"]),
            os.path.join(where, "part-00000-driver.snappy.parquet"),
        )
    where = output.path("quarantine")
    os.makedirs(where, exist_ok=True)
    pq.write_table(
        table(quarantined, store.QUARANTINE_COLUMNS),
        os.path.join(where, "part-00000-driver.snappy.parquet"),
    )
    open(os.path.join(where, "_SUCCESS"), "w").close()  # as Spark's writer leaves it


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
    per source read = events + quarantined, per model, per reason (docs/spark.md)."""
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
    subscribers: Sequence[JobSubscriber],
    output: store.Output,
    stages: Stages,
    layout: str,
    models: Mapping[str, int] | None = None,
    prepare: Callable[[Mapping[str, Sequence[JobSubscriber]]], list[Routed]] | None = None,
) -> dict[str, Any]:
    """Route and write the deliveries in ``layout``, one pass: each routing task sorts
    its deliveries by subscriber (:func:`pubsift.adapters.spark.route.sorted_route`), and
    the counts per subscriber come from an observation of the plan that is written (never
    by reading the output back). ``models``: the events per model of the store, when
    known (else one scan finds which models it holds); ``prepare``: the models' indexes
    (:func:`pubsift.adapters.spark.route.sorted_route`)."""
    from pubsift.adapters.spark import route as routing
    from pubsift.adapters.spark.layout import arrange
    from pubsift.adapters.spark.subscriptions import by_model

    groups = by_model(subscribers)
    with stages.stage("route", f"{len(subscribers)} subscribers of {len(groups)} model(s) routed"):
        # the schema given: a store with no event holds no Parquet file to infer it from
        events = spark.read.schema(EVENTS_SCHEMA).parquet(_uri(events_path, read=True))
        if models is None:
            present = {r[0] for r in events.select("model").distinct().collect()}
        else:
            present = {m for m, n in models.items() if n}
        wanted = {m: subs for m, subs in groups.items() if m in present}
        per: dict[str, int] = {}
        if wanted:
            stored = sum(_bytes(os.path.join(events_path, f"model={m}")) for m in wanted)
            stored = stored or _bytes(events_path)  # a model's directory named otherwise
            parts = routing.partitions_for(stored, _parallelism(spark))
            deliveries, counts = routing.sorted_route(events, wanted, parts, prepare)
            arranged, partition, options = arrange(deliveries, layout)
            _write(
                arranged,
                output.path("deliveries"),
                output.format,
                partition=partition,
                options=options,
            )
            per = counts()
    counted = {s.id: per.get(s.id, 0) for s in subscribers}
    return {"layout": layout, "deliveries": sum(counted.values()), "subscribers": counted}


class _Building:
    """The routing indexes of ``subscribers`` (:func:`pubsift.adapters.spark.route.
    prepared`) built in a daemon thread; :meth:`get` waits for them (and raises what the
    build raised)."""

    def __init__(self, subscribers: Sequence[JobSubscriber]) -> None:
        import threading

        self._subscribers = subscribers
        self._done: list[Routed] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._build, daemon=True, name="pubsift-index")
        self._thread.start()

    def _build(self) -> None:
        from pubsift.adapters.spark.route import prepared
        from pubsift.adapters.spark.subscriptions import by_model

        try:
            self._done = prepared(by_model(self._subscribers))
        except BaseException as exc:
            self._error = exc

    def get(self, groups: Mapping[str, Sequence[JobSubscriber]]) -> list[Routed]:
        """The built indexes of the models in ``groups``."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return [r for r in self._done or () if r.model in groups]


def _bytes(path: str) -> int:
    """Bytes of the files under ``path`` (0 when there is none)."""
    total = 0
    for root, _, names in os.walk(path):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.path.getsize(os.path.join(root, name))
    return total


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
