"""Batch = online (DESIGN.md §2.4): a sample of every model — records from CSV and
JSON lines, xml from RSS/Atom feeds and NITF, concepts from UBL documents and from a CSV
with a publisher side, plus a few real files when ../shared/data exists — routed by the
Spark job and by the routing core's simulated broker network (covering, advertisements on)
with the same subscribers give the same deliveries per subscriber, each (subscriber, event)
once. The records subscribers are seeded random conjunctions, EventBridge patterns and
``$or`` disjunctions over the quotes' columns, so agreement cannot come from a fixed case."""

from __future__ import annotations

import json

import pytest
from pubsift.adapters import Event
from pubsift.core.registry import load_model

from . import kit

pytestmark = pytest.mark.spark


def test_the_job_delivers_what_the_online_brokers_deliver(routed, sample):
    batch = kit.delivered_pairs(routed.out)
    online = kit.online(sample.subscribers, sample.outcomes, seed=3)
    assert batch == online
    # and both are the linear scan of the models' own ``matches``
    assert batch == kit.brute_force(sample.subscribers, sample.outcomes)


def test_the_comparison_is_not_trivial(routed, sample):
    batch = kit.delivered_pairs(routed.out)
    events = [o for o in sample.outcomes if isinstance(o, Event)]
    per_model = {
        m: {(e.source, e.position) for e in events if e.model == m}
        for m in ("records", "xml", "concepts")
    }
    delivered_models = {s.model for s in sample.subscribers if s.id in batch}
    assert delivered_models == {"records", "xml", "concepts"}
    sizes = [len(batch.get(s.id, ())) for s in sample.subscribers if s.model == "records"]
    # random subscribers deliver some but not all records events, and differ from each other
    partial = [n for n in sizes if 0 < n < len(per_model["records"])]
    assert len(partial) >= len(sizes) // 2 and len(set(partial)) >= 5
    assert "xml-none" not in batch  # a subscriber with no delivery
    # a subscriber whose two filters ($or) both match every records event: each event once
    assert batch["rec-all-or"] == per_model["records"]
    assert (
        len(sample.subscribers[[s.id for s in sample.subscribers].index("rec-all-or")].filters) == 2
    )
    if kit.DATA.is_dir():
        real = {src for pairs in batch.values() for src, _ in pairs if "/real/" in src}
        assert len(real) >= 4, real


def test_each_delivery_carries_the_event_as_the_subscriber_receives_it(routed, sample):
    """``event`` is ``dump_event`` of the event (records, xml) or, for concepts, the event
    converted into the subscriber's vocabulary and context (Subscriber.delivered)."""
    events = {(o.source, o.position): o for o in sample.outcomes if isinstance(o, Event)}
    subs = {s.id: s for s in sample.subscribers}
    rows = kit.read_rows(routed.out / "deliveries", "parquet", "subscriber")
    assert rows
    for r in rows:
        sub = subs[r["subscriber"]]
        model = load_model(sub.model)
        e = events[(r["source"], r["position"])]
        assert r["model"] == e.model == sub.model
        f = next(f for f in sub.filters if model.matches(f, e.event))
        assert json.loads(r["event"]) == json.loads(json.dumps(sub.delivered(model, f, e.event)))
    eu = [json.loads(r["event"]) for r in rows if r["subscriber"] == "eu-invoices"]
    assert eu and all(d["concept"] == "Rechnung" for d in eu), eu
