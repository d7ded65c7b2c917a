"""Routing the event store against subscriptions (issue 12 §2 "Spark does the work").

The subscriptions of each model are parsed on the driver (:mod:`.subscriptions`) and put
into one index of the model (``model.new_index()``, keys: the subscriber's number), which is
shipped to the tasks inside the ``mapInArrow`` function's closure: no broadcast variable or
other SparkContext-only feature, so the job also runs on Spark Connect. Each task matches
whole Arrow batches of events: through the index's ``match_wire_batch`` when it has one
(records: columnar over the batch), else its ``match_batch``, else ``match`` per event
(the default of :class:`pubsift.core.model.FilterIndex`). A delivery is one row per
(subscriber, event), each pair once however many of the subscriber's filters match.

This is the same matching the brokers do online (Mühl, ch. 2-3: a subscriber is notified of
exactly the publications matching one of its filters), so batch and online routing deliver
the same (tests/spark/test_batch_online.py).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pubsift.adapters.spark.store import DELIVERY_SCHEMA

#: bytes of events in one Arrow batch of deliveries a task returns
OUTPUT_BYTES = 32 << 20

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from pubsift.adapters.spark.subscriptions import Subscriber
    from pubsift.core.model import FilterIndex, FilterModel


def build_index(model: "FilterModel", subscribers: Sequence["Subscriber"]) -> "FilterIndex[int]":
    """One index of ``model`` holding every filter of ``subscribers``, keyed by the
    subscriber's number in ``subscribers``."""
    index = model.new_index()
    index.bulk_add((f, i) for i, s in enumerate(subscribers) for f in s.filters)
    return index


def _load(model: "FilterModel", wire: str) -> Any:
    return model.load_event(json.loads(wire))


def matched(index: Any, model: "FilterModel", wires: Any) -> tuple[Any, Any]:
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


def router(model_name: str, subscribers: Sequence["Subscriber"], index: Any,
           converts: bool) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function routing batches of one model's events (``source``,
    ``position``, ``event``) to deliveries (:data:`DELIVERY_SCHEMA`). ``converts``: the
    delivered event is made per subscriber (:meth:`Subscriber.delivered`: concepts
    converts into the subscriber's vocabulary and context); otherwise it is the stored wire
    form as it is. ``index`` is built on the driver (:func:`build_index`) and travels in
    this function's closure."""
    ids = [s.id for s in subscribers]
    kept = list(subscribers) if converts else None

    def route(batches: Iterator[Any]) -> Iterator[Any]:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        from pubsift.core.registry import load_model

        model = load_model(model_name)
        id_array = pa.array(ids, pa.string())
        model_value = pa.scalar(model_name, pa.string())
        for batch in batches:
            if batch.num_rows == 0:
                continue
            wires = batch.column("event")
            rows, keys = matched(index, model, wires)
            if len(rows) == 0:
                continue
            if kept is None:
                sizes = pc.binary_length(wires).to_numpy(zero_copy_only=False)[rows]
            else:
                sizes = np.full(len(rows), 1024)
            for lo, hi in _chunks(sizes, OUTPUT_BYTES):
                r = pa.array(rows[lo:hi], pa.int64())
                if kept is None:
                    events = wires.take(r)
                else:
                    events = pa.array(_delivered(model, kept, wires, rows[lo:hi],
                                                 keys[lo:hi]), pa.string())
                yield pa.RecordBatch.from_arrays(
                    [id_array.take(pa.array(keys[lo:hi], pa.int64())),
                     batch.column("source").take(r), batch.column("position").take(r),
                     pa.repeat(model_value, hi - lo), events],
                    names=["subscriber", "source", "position", "model", "event"])
    return route


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


def _delivered(model: "FilterModel", subscribers: Sequence["Subscriber"], wires: Any,
               rows: Any, keys: Any) -> list[str]:
    """The delivered events of the pairs (rows, keys), made per subscriber."""
    loaded: dict[int, Any] = {}
    out = []
    for row, key in zip(rows.tolist(), keys.tolist()):
        event = loaded.get(row)
        if event is None:
            event = loaded[row] = _load(model, wires[row].as_py())
        sub = subscribers[key]
        f = next(f for f in sub.filters if model.matches(f, event))
        out.append(json.dumps(sub.delivered(model, f, event), ensure_ascii=False,
                              separators=(",", ":")))
    return out


def route(events: "DataFrame", model_name: str, subscribers: Sequence["Subscriber"],
          partitions: int) -> "DataFrame":
    """Deliveries of one model's events (lazy: a Spark plan)."""
    from pubsift.core.registry import load_model

    model = load_model(model_name)
    index = build_index(model, subscribers)
    converts = any(s.agreement is not None for s in subscribers)
    mine = events.where(events.model == model_name).select("source", "position", "event")
    return mine.repartition(partitions).mapInArrow(
        router(model_name, subscribers, index, converts), DELIVERY_SCHEMA)
