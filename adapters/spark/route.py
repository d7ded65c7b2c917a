"""Routing the event store against subscriptions (docs/spark.md, "What happens, stage by stage").

The subscriptions of each model are parsed on the driver (:mod:`.subscriptions`) and put
into one index of the model (``model.new_index()``, keys: the subscriber's number), which is
shipped to the tasks inside the ``mapInArrow`` function's closure: no broadcast variable or
other SparkContext-only feature, so the job also runs on Spark Connect. Each task matches
whole Arrow batches of events: through the index's ``match_wire_batch`` when it has one
(records: the batch parsed by Arrow into columns, its rows matched by the compiled walk
or column-wise, whichever the index measures faster), else its ``match_batch``, else ``match`` per event
(the default of :class:`pubsift.core.model.FilterIndex`). A task hands back each matched
event once with the ids of its subscribers, and Spark's ``explode`` makes the delivery
rows in the JVM; only deliveries converted per subscriber (concepts) are made in Python.
A delivery is one row per (subscriber, event), each pair once however many of the
subscriber's filters match.

This is the same matching the brokers do online (Mühl, ch. 2-3: a subscriber is notified of
exactly the publications matching one of its filters), so batch and online routing deliver
the same (tests/spark/test_batch_online.py).
"""

from __future__ import annotations

import json
import math
import pickle
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pubsift.adapters.spark.interrupt import ignore_interrupts
from pubsift.adapters.spark.store import DELIVERY_SCHEMA

#: one row per matched event and the subscribers it matches (:func:`matcher`)
MATCHED_SCHEMA = "source string, position long, event string, subscribers array<string>"

#: bytes of events in one Arrow batch of deliveries a task returns
OUTPUT_BYTES = 32 << 20

if TYPE_CHECKING:
    from pubsift.adapters.spark.subscriptions import JobSubscriber
    from pubsift.core.model import FilterIndex, FilterModel
    from pyspark.sql import DataFrame


def build_index(model: FilterModel, subscribers: Sequence[JobSubscriber]) -> FilterIndex[int]:
    """One index of ``model`` holding every filter of ``subscribers``, keyed by the
    subscriber's number in ``subscribers``."""
    index = model.new_index()
    index.bulk_add((f, i) for i, s in enumerate(subscribers) for f in s.filters)
    return index


#: how many shipped indexes a Python worker keeps loaded (:class:`Shipped`), least
#: recently used out first
KEPT = 4
_loaded: OrderedDict[str, Any] = OrderedDict()


class Shipped:
    """An index on its way to the tasks, inside the closure of the task function: its
    pickled bytes (cloudpickle: an index may hold compiled tests) and a token naming it.
    Unpickling ten thousand filters takes a good part of a second, so a Python worker
    (Spark reuses them across tasks) loads each shipped index once and keeps the last
    :data:`KEPT` it loaded; the bytes themselves unpickle with the closure in no time."""

    def __init__(self, index: Any) -> None:
        from pyspark import cloudpickle

        self.token = uuid.uuid4().hex
        self.blob = cloudpickle.dumps(index)

    def load(self) -> Any:
        """The index (in a task: this worker's copy)."""
        index = _loaded.get(self.token)
        if index is None:
            index = pickle.loads(self.blob)
            _loaded[self.token] = index
            while len(_loaded) > KEPT:
                _loaded.popitem(last=False)
        else:
            _loaded.move_to_end(self.token)
        return index


def _load(model: FilterModel, wire: str) -> Any:
    return model.load_event(json.loads(wire))


def matched(index: Any, model: FilterModel, wires: Any) -> tuple[Any, Any]:
    """(rows, keys) of a batch of wire texts (a pyarrow string array): row ``rows[i]``
    matches subscriber ``keys[i]``; each pair once, rows ascending."""
    import numpy as np

    by_wire = getattr(index, "match_wire_batch", None)
    if by_wire is not None:
        return by_wire(wires)
    events = [_load(model, w) for w in wires.to_pylist()]
    sets = index.match_batch(events)
    rows = np.fromiter((i for i, ks in enumerate(sets) for _ in ks), dtype=np.int64)
    keys = np.fromiter((k for ks in sets for k in ks), dtype=np.int64)
    return rows, keys


def _matches(
    model_name: str, shipped: Shipped, batches: Iterator[Any]
) -> Iterator[tuple[Any, Any, Any, Any, Any]]:
    """(model, batch, wires, rows, keys) of each batch of events that matched a subscriber
    (:func:`matched`), in a task: the model from the registry, the index from ``shipped``."""
    from pubsift.core.registry import load_model

    model = load_model(model_name)
    index = shipped.load()
    for batch in batches:
        if batch.num_rows == 0:
            continue
        wires = batch.column("event")
        rows, keys = matched(index, model, wires)
        if len(rows):
            yield model, batch, wires, rows, keys


def router(
    model_name: str, subscribers: Sequence[JobSubscriber], shipped: Shipped, converts: bool
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function routing batches of one model's events (``source``,
    ``position``, ``event``) to deliveries (:data:`DELIVERY_SCHEMA`), one row per
    (subscriber, event). ``converts``: the delivered event is made per subscriber
    (:meth:`JobSubscriber.delivered`: concepts converts into the subscriber's vocabulary and
    context); otherwise it is the stored wire form as it is, and :func:`matcher` (one row
    per matched event, the rows per subscriber made by Spark) is the faster way. The index
    is built on the driver (:func:`build_index`) and travels in this function's closure
    as ``shipped``."""
    ids = [s.id for s in subscribers]
    kept = list(subscribers) if converts else None

    def route(batches: Iterator[Any]) -> Iterator[Any]:
        ignore_interrupts()
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        id_array = pa.array(ids, pa.string())
        model_value = pa.scalar(model_name, pa.string())
        for model, batch, wires, rows, keys in _matches(model_name, shipped, batches):
            if kept is None:
                sizes = pc.binary_length(wires).to_numpy(zero_copy_only=False)[rows]
            else:
                sizes = np.full(len(rows), 1024)
            for lo, hi in _chunks(sizes, OUTPUT_BYTES):
                r = pa.array(rows[lo:hi], pa.int64())
                if kept is None:
                    events = wires.take(r)
                else:
                    events = pa.array(
                        _delivered(model, kept, wires, rows[lo:hi], keys[lo:hi]), pa.string()
                    )
                yield pa.RecordBatch.from_arrays(
                    [
                        id_array.take(pa.array(keys[lo:hi], pa.int64())),
                        batch.column("source").take(r),
                        batch.column("position").take(r),
                        pa.repeat(model_value, hi - lo),
                        events,
                    ],
                    names=["subscriber", "source", "position", "model", "event"],
                )

    return route


def matcher(
    model_name: str, subscribers: Sequence[JobSubscriber], shipped: Shipped
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function matching batches of one model's events (``source``,
    ``position``, ``event``) to one row per matched event (:data:`MATCHED_SCHEMA`): the
    event once, with the ids of the subscribers it matches. Spark's ``explode`` then makes
    the row per (subscriber, event) in the JVM (:func:`route`), so an event matching
    twelve subscribers crosses from Python to the JVM once, not twelve times."""
    ids = [s.id for s in subscribers]

    def match(batches: Iterator[Any]) -> Iterator[Any]:
        ignore_interrupts()
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        id_array = pa.array(ids, pa.string())
        for _, batch, wires, rows, keys in _matches(model_name, shipped, batches):
            hit, starts = np.unique(rows, return_index=True)  # rows ascending
            offsets = np.append(starts, len(rows)).astype(np.int64)
            sizes = pc.binary_length(wires).to_numpy(zero_copy_only=False)[hit] + 8 * np.diff(
                offsets
            )
            names = id_array.take(pa.array(keys, pa.int64()))
            for lo, hi in _chunks(sizes, OUTPUT_BYTES):
                r = pa.array(hit[lo:hi], pa.int64())
                first, last = int(offsets[lo]), int(offsets[hi])
                subs = pa.ListArray.from_arrays(
                    pa.array(offsets[lo : hi + 1] - first, pa.int32()),
                    names.slice(first, last - first),
                )
                yield pa.RecordBatch.from_arrays(
                    [
                        batch.column("source").take(r),
                        batch.column("position").take(r),
                        wires.take(r),
                        subs,
                    ],
                    names=["source", "position", "event", "subscribers"],
                )

    return match


#: a row of :func:`sorted_router`'s output: a delivery (``counted`` null) or, after a
#: task's deliveries, a subscriber's number of them in that task (``counted``)
COUNTED_SCHEMA = DELIVERY_SCHEMA + ", counted long"


@dataclass(frozen=True)
class Routed:
    """One model's part of a :func:`sorted_router` job: its subscribers, its index on the
    way to the tasks, and whether deliveries are made per subscriber (concepts)."""

    model: str
    subscribers: Sequence[JobSubscriber]
    shipped: Shipped
    converts: bool


def sorted_router(groups: Sequence[Routed]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function routing a whole partition of events (``model``,
    ``source``, ``position``, ``event``), each through its model's index, to its
    deliveries sorted by (subscriber, source, position) (:data:`COUNTED_SCHEMA`), the
    order Spark sorts strings and numbers in: the task keeps the events that matched and
    the (event, subscriber) pairs, sorts the pairs by numbers (numpy) and hands the rows
    back in that order, each event taken once per subscriber by Arrow; then one row per
    subscriber of the partition with its number of deliveries (``counted``; the other
    columns but ``subscriber`` and ``model`` null). No sort or shuffle in the JVM: each
    task writes one file sorted by subscriber. A model that ``converts`` has its
    delivered events made per subscriber (:func:`_delivered`)."""
    ids = [s.id for g in groups for s in g.subscribers]
    starts = [0]
    for g in groups:
        starts.append(starts[-1] + len(g.subscribers))

    def route(batches: Iterator[Any]) -> Iterator[Any]:
        ignore_interrupts()
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc
        from pubsift.core.registry import load_model

        id_array = pa.array(ids, pa.string())
        rank = np.empty(len(ids), np.int64)
        rank[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
        group_of = np.repeat(np.arange(len(groups)), np.diff(starts))
        names = pa.array([g.model for g in groups], pa.string())
        models = [load_model(g.model) for g in groups]
        indexes = [g.shipped.load() for g in groups]
        sources, positions, events, all_rows, all_keys = [], [], [], [], []
        base = 0
        for whole in batches:
            for i, g in enumerate(groups):
                if len(groups) == 1:
                    batch = whole
                else:
                    batch = whole.filter(pc.equal(whole.column("model"), g.model))
                if batch.num_rows == 0:
                    continue
                wires = batch.column("event")
                rows, keys = matched(indexes[i], models[i], wires)
                if not len(rows):
                    continue
                hit = np.unique(rows)
                taken = pa.array(hit, pa.int64())
                sources.append(batch.column("source").take(taken))
                positions.append(batch.column("position").take(taken))
                events.append(wires.take(taken))
                all_rows.append(np.searchsorted(hit, rows) + base)
                all_keys.append(np.asarray(keys, np.int64) + starts[i])
                base += len(hit)
        if not all_rows:
            return
        source = pa.chunked_array(sources, pa.string()).combine_chunks()
        position = pa.chunked_array(positions, pa.int64()).combine_chunks()
        wire: Any = pa.chunked_array(events, pa.string())
        if sum(c.nbytes for c in events) < 1 << 30:  # one array: taken from without copying it
            wire = wire.combine_chunks()
        rows = np.concatenate(all_rows)
        keys = np.concatenate(all_keys)
        del sources, positions, events, all_rows, all_keys
        codes = pc.dictionary_encode(source)
        labels = codes.dictionary.to_pylist()
        source_rank = np.empty(len(labels), np.int64)
        source_rank[sorted(range(len(labels)), key=labels.__getitem__)] = np.arange(len(labels))
        by_source = source_rank[codes.indices.to_numpy(zero_copy_only=False)]
        at = position.to_numpy(zero_copy_only=False)
        order = np.lexsort((at[rows], by_source[rows], rank[keys]))
        rows, keys = rows[order], keys[order]
        del order
        converting = any(g.converts for g in groups)
        if converting:
            sizes = np.full(len(rows), 1024)
        else:
            sizes = pc.binary_length(wire).to_numpy(zero_copy_only=False)[rows]
        for lo, hi in _chunks(sizes, OUTPUT_BYTES):
            r = pa.array(rows[lo:hi], pa.int64())
            k = pa.array(keys[lo:hi], pa.int64())
            if converting:
                delivered = pa.array(
                    _delivered_of(groups, models, starts, wire, rows[lo:hi], keys[lo:hi]),
                    pa.string(),
                )
            else:
                delivered = wire.take(r)
                if isinstance(delivered, pa.ChunkedArray):
                    delivered = delivered.combine_chunks()
            yield pa.RecordBatch.from_arrays(
                [
                    id_array.take(k),
                    source.take(r),
                    position.take(r),
                    names.take(pa.array(group_of[keys[lo:hi]], pa.int64())),
                    delivered,
                    pa.nulls(hi - lo, pa.int64()),
                ],
                names=["subscriber", "source", "position", "model", "event", "counted"],
            )
        n = np.bincount(keys, minlength=len(ids))
        present = np.flatnonzero(n)
        yield pa.RecordBatch.from_arrays(
            [
                id_array.take(pa.array(present, pa.int64())),
                pa.nulls(len(present), pa.string()),
                pa.nulls(len(present), pa.int64()),
                names.take(pa.array(group_of[present], pa.int64())),
                pa.nulls(len(present), pa.string()),
                pa.array(n[present], pa.int64()),
            ],
            names=["subscriber", "source", "position", "model", "event", "counted"],
        )

    return route


def _delivered_of(
    groups: Sequence[Routed],
    models: Sequence[FilterModel],
    starts: Sequence[int],
    wires: Any,
    rows: Any,
    keys: Any,
) -> list[str]:
    """The delivered events of the pairs (rows, keys) (global subscriber numbers): made
    per subscriber for a model that converts (each event loaded once), the stored wire
    form otherwise."""
    import bisect

    loaded: dict[int, Any] = {}
    out = []
    for row, key in zip(rows.tolist(), keys.tolist()):
        i = bisect.bisect_right(starts, key) - 1
        g, model = groups[i], models[i]
        if not g.converts:
            out.append(wires[row].as_py())
            continue
        event = loaded.get(row)
        if event is None:
            event = loaded[row] = _load(model, wires[row].as_py())
        sub = g.subscribers[key - starts[i]]
        f = next(f for f in sub.filters if model.matches(f, event))
        out.append(
            json.dumps(sub.delivered(model, f, event), ensure_ascii=False, separators=(",", ":"))
        )
    return out


def _chunks(sizes: Any, limit: int) -> Iterator[tuple[int, int]]:
    """(lo, hi) slices of the deliveries whose events add up to at most ``limit`` bytes
    (at least one delivery each): an Arrow batch stays bounded however many subscribers a
    large document matches."""
    import numpy as np

    ends = np.cumsum(sizes)
    lo, n, base = 0, len(sizes), 0
    while lo < n:
        hi = int(np.searchsorted(ends, base + limit, side="right"))
        hi = max(hi, lo + 1)
        yield lo, hi
        base = int(ends[hi - 1])
        lo = hi


def _delivered(
    model: FilterModel, subscribers: Sequence[JobSubscriber], wires: Any, rows: Any, keys: Any
) -> list[str]:
    """The delivered events of the pairs (rows, keys), made per subscriber."""
    loaded: dict[int, Any] = {}
    out = []
    for row, key in zip(rows.tolist(), keys.tolist()):
        event = loaded.get(row)
        if event is None:
            event = loaded[row] = _load(model, wires[row].as_py())
        sub = subscribers[key]
        f = next(f for f in sub.filters if model.matches(f, event))
        out.append(
            json.dumps(sub.delivered(model, f, event), ensure_ascii=False, separators=(",", ":"))
        )
    return out


def deliveries(
    events: DataFrame,
    model_name: str,
    subscribers: Sequence[JobSubscriber],
    index: Any,
    keep: Callable[[DataFrame], DataFrame] | None = None,
) -> DataFrame:
    """The deliveries (:data:`DELIVERY_SCHEMA`) of ``events`` (``source``, ``position``,
    ``event`` of one model) to ``subscribers``, matched through ``index``
    (:func:`build_index`); lazy, a Spark plan. ``keep`` is applied to the frame the
    Python tasks return (one row per matched event, or per delivery for converted
    deliveries): the job persists it there, where it is smallest, so that the summary's
    counts and the write share one routing."""
    shipped = Shipped(index)
    keep = keep or (lambda df: df)
    if any(s.view is not None for s in subscribers):
        return keep(
            events.mapInArrow(router(model_name, subscribers, shipped, True), DELIVERY_SCHEMA)
        )
    from pyspark.sql import functions as F

    return keep(
        events.mapInArrow(matcher(model_name, subscribers, shipped), MATCHED_SCHEMA)
    ).select(
        F.explode("subscribers").alias("subscriber"),
        "source",
        "position",
        F.lit(model_name).alias("model"),
        "event",
    )


def route(
    events: DataFrame,
    model_name: str,
    subscribers: Sequence[JobSubscriber],
    partitions: int,
    keep: Callable[[DataFrame], DataFrame] | None = None,
) -> DataFrame:
    """Deliveries of one model's events in the store ``events`` (lazy: a Spark plan;
    ``keep``: :func:`deliveries`)."""
    from pubsift.core.registry import load_model

    model = load_model(model_name)
    index = build_index(model, subscribers)
    mine = events.where(events.model == model_name).select("source", "position", "event")
    return deliveries(mine.repartition(partitions), model_name, subscribers, index, keep)


#: at most this many bytes of the event store's Parquet files per routing task: a task
#: of :func:`sorted_router` holds its partition's matched events while it sorts them
TASK_BYTES = 32 << 20


def partitions_for(store_bytes: int, parallelism: int) -> int:
    """Routing tasks for ``store_bytes`` of stored events: one per MiB up to two per core
    (a small store is one file of deliveries, a larger one keeps every core busy), and
    more beyond :data:`TASK_BYTES` each."""
    per_mib = math.ceil(store_bytes / (1 << 20))
    return max(1, min(2 * max(1, parallelism), per_mib), math.ceil(store_bytes / TASK_BYTES))


def prepared(groups: Mapping[str, Sequence[JobSubscriber]]) -> list[Routed]:
    """Each model's subscribers with their index built and pickled for the tasks (on the
    driver: for ten thousand filters, a second or two)."""
    from pubsift.core.registry import load_model

    return [
        Routed(
            m,
            list(subs),
            Shipped(build_index(load_model(m), subs)),
            any(s.view is not None for s in subs),
        )
        for m, subs in groups.items()
    ]


def sorted_route(
    events: DataFrame,
    groups: Mapping[str, Sequence[JobSubscriber]],
    partitions: int,
    prepare: Callable[[Mapping[str, Sequence[JobSubscriber]]], list[Routed]] | None = None,
) -> tuple[DataFrame, Callable[[], dict[str, int]]]:
    """Deliveries of the events in the store ``events`` to the subscribers of each model
    in ``groups``, each of the ``partitions`` tasks' sorted by (subscriber, source,
    position) (:func:`sorted_router`), and a function giving the deliveries per
    subscriber once an action ran the frame: summed from the tasks' count rows by an
    ``Observation`` of that same plan (nothing persisted, nothing read back). Lazy: a
    Spark plan. ``prepare``: gives the groups' :class:`Routed` (default :func:`prepared`;
    the job builds them while the files are converted)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    routed = (prepare or prepared)(groups)
    mine = events.where(F.col("model").isin(list(groups))).select(
        "model", "source", "position", "event"
    )
    out = mine.repartition(partitions).mapInArrow(sorted_router(routed), COUNTED_SCHEMA)
    seen = Observation(f"pubsift-deliveries-{uuid.uuid4().hex}")
    counted = F.col("counted")
    out = out.observe(
        seen,
        F.collect_list(F.when(counted.isNotNull(), F.struct("subscriber", counted))).alias(
            "counts"
        ),
    )

    def counts() -> dict[str, int]:
        per: dict[str, int] = {}
        for subscriber, n in seen.get["counts"]:
            per[subscriber] = per.get(subscriber, 0) + n
        return per

    return out.where(counted.isNull()).drop("counted"), counts
