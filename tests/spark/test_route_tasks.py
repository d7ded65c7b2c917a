"""The task functions of the routing stage (``pubsift.adapters.spark.route``) called as
Spark calls them, on Arrow batches, without Spark: one row per matched event with its
subscribers (:func:`matcher`), equal to the index's per-event answer; the output batches
bounded in bytes; the shipped index loaded once per worker."""

from __future__ import annotations

import json
import random

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from pubsift.adapters.spark import route  # noqa: E402
from pubsift.adapters.spark.subscriptions import JobSubscriber  # noqa: E402
from pubsift.core.registry import load_model  # noqa: E402

SYMBOLS = ["IBM", "AAPL", "MSFT", "GE", "T"]


def _subscribers(records, rng: random.Random, n: int) -> list[JobSubscriber]:
    subs = []
    for i in range(n):
        texts = [
            f'symbol = "{rng.choice(SYMBOLS)}" and price > {rng.randint(0, 90)}'
            for _ in range(rng.randint(1, 2))
        ]
        if rng.random() < 0.2:
            texts = ["price exists"]  # matches many events: long subscriber lists
        subs.append(
            JobSubscriber(
                id=f"sub-{i}",
                model="records",
                filters=tuple(records.parse_filter(t) for t in texts),
                where="test",
                spec={},
                view=None,
            )
        )
    return subs


def _batch(records, rng: random.Random, n: int):
    wires = []
    for _ in range(n):
        event = {"symbol": rng.choice(SYMBOLS), "price": rng.randint(0, 100)}
        if rng.random() < 0.1:
            event = {"symbol": rng.choice(SYMBOLS), "price": "n/a"}  # a string: no price match
        wires.append(json.dumps(records.dump_event(records.parse_event(event))))
    return pa.RecordBatch.from_arrays(
        [
            pa.array([f"src{i % 3}" for i in range(n)]),
            pa.array(range(n), pa.int64()),
            pa.array(wires),
        ],
        names=["source", "position", "event"],
    )


@pytest.mark.parametrize("seed", range(5))
def test_matcher_gives_each_matched_event_once_with_its_subscribers(seed, monkeypatch):
    records = load_model("records")
    rng = random.Random(seed)
    subs = _subscribers(records, rng, 40)
    batch = _batch(records, rng, 300)
    index = route.build_index(records, subs)
    if seed % 2:  # tiny output batches: many chunks, each holding whole events
        monkeypatch.setattr(route, "OUTPUT_BYTES", 200)
    out = list(route.matcher("records", subs, route.Shipped(index))(iter([batch])))
    assert out and all(
        b.schema.names == ["source", "position", "event", "subscribers"] for b in out
    )
    if seed % 2:
        assert len(out) > 1
    got = {}
    for b in out:
        for row in b.to_pylist():
            assert row["position"] not in got  # an event once
            got[row["position"]] = (row["source"], row["event"], sorted(row["subscribers"]))
    want = {}
    for row in batch.to_pylist():
        event = records.load_event(json.loads(row["event"]))
        ids = sorted({subs[k].id for k in index.match(event)})
        if ids:
            want[row["position"]] = (row["source"], row["event"], ids)
    assert got == want


def test_router_and_matcher_deliver_the_same_pairs():
    records = load_model("records")
    rng = random.Random(7)
    subs = _subscribers(records, rng, 25)
    batch = _batch(records, rng, 200)
    shipped = route.Shipped(route.build_index(records, subs))
    per_delivery = {
        (r["subscriber"], r["position"], r["event"], r["model"])
        for b in route.router("records", subs, shipped, False)(iter([batch]))
        for r in b.to_pylist()
    }
    exploded = {
        (s, r["position"], r["event"], "records")
        for b in route.matcher("records", subs, shipped)(iter([batch]))
        for r in b.to_pylist()
        for s in r["subscribers"]
    }
    assert per_delivery == exploded and per_delivery


def test_a_shipped_index_is_loaded_once_per_worker_and_the_cache_is_bounded():
    records = load_model("records")
    index = route.build_index(records, _subscribers(records, random.Random(1), 5))
    shipped = route.Shipped(index)
    import pickle

    again = pickle.loads(pickle.dumps(shipped))  # as a task receives it
    assert len(pickle.dumps(shipped)) < len(shipped.blob) + 1000  # the bytes, not an index
    first = again.load()
    assert again.load() is first and shipped.load() is first  # same token: one load
    assert first is not index  # a copy, as in a worker
    for _ in range(route.KEPT + 2):
        route.Shipped(index).load()
    assert len(route._loaded) == route.KEPT
    assert shipped.load() is not first  # evicted, loaded anew


@pytest.mark.parametrize("seed", range(4))
def test_sorted_router_gives_the_pairs_sorted_by_subscriber_then_its_counts(seed, monkeypatch):
    """A whole partition in several batches (a model column, sources out of order):
    the delivery rows are the matcher's pairs exploded, in (subscriber, source, position)
    order as Spark sorts them, then one count row per subscriber delivered to."""
    records = load_model("records")
    rng = random.Random(seed)
    subs = _subscribers(records, rng, 30)
    rng.shuffle(subs)  # ids out of their sorted order
    batches = []
    for i in range(3):
        b = _batch(records, rng, 120)
        sources = pa.array([f"src{rng.randint(0, 11)}" for _ in range(b.num_rows)])
        positions = pa.array([1000 * i + p for p in b.column("position").to_pylist()], pa.int64())
        batches.append(
            pa.RecordBatch.from_arrays(
                [
                    pa.repeat(pa.scalar("records"), b.num_rows),
                    sources,
                    positions,
                    b.column("event"),
                ],
                names=["model", "source", "position", "event"],
            )
        )
    if seed % 2:  # tiny output batches: many chunks
        monkeypatch.setattr(route, "OUTPUT_BYTES", 300)
    shipped = route.Shipped(route.build_index(records, subs))
    routed = [route.Routed("records", subs, shipped, False)]
    out = [r for b in route.sorted_router(routed)(iter(batches)) for r in b.to_pylist()]
    rows = [r for r in out if r["counted"] is None]
    counts = [r for r in out if r["counted"] is not None]
    assert out[: len(rows)] == rows  # the counts last
    keys = [(r["subscriber"], r["source"], r["position"]) for r in rows]
    assert keys == sorted(keys) and len(keys) == len(set(keys))
    want = {
        (s, r["source"], r["position"], r["event"])
        for b in batches
        for r in route.matcher("records", subs, shipped)(
            iter([b.select(["source", "position", "event"])])
        )
        for r in r.to_pylist()
        for s in r["subscribers"]
    }
    assert {(r["subscriber"], r["source"], r["position"], r["event"]) for r in rows} == want
    assert all(r["model"] == "records" for r in out)
    per = {}
    for r in rows:
        per[r["subscriber"]] = per.get(r["subscriber"], 0) + 1
    assert {r["subscriber"]: r["counted"] for r in counts} == per


def test_sorted_router_of_a_partition_with_no_match_gives_nothing():
    records = load_model("records")
    subs = _subscribers(records, random.Random(3), 5)
    b = _batch(records, random.Random(3), 0)
    batch = pa.RecordBatch.from_arrays(
        [pa.array([], pa.string()), *b.columns], names=["model", "source", "position", "event"]
    )
    shipped = route.Shipped(route.build_index(records, subs))
    routed = [route.Routed("records", subs, shipped, False)]
    assert list(route.sorted_router(routed)(iter([batch]))) == []
