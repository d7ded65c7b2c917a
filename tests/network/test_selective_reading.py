"""Brokers read only what their filters use (DESIGN §2.6; ``FilterModel.wire_reader``):
the events a broker matches are read with only the attributes its routing tables' filters
name, the selection follows the subscriptions as they come, and every subscriber still gets
exactly the matching publications, each once, with the event's whole bytes. In-process
daemons on 127.0.0.1, every wait bounded."""

from __future__ import annotations

import json
import random

import pytest
from pubsift.adapters.broker import frames, wire
from pubsift.adapters.broker.client import AsyncClient, Notification
from pubsift.adapters.broker.daemon import BrokerDaemon
from pubsift.core import load_model
from pubsift.models.records import selection

from tests.network.test_inprocess import run, until, url

FIRST = {"geometry": {"coordinates": {"x": [{"numeric": ["<", 0.3]}]}}}
LATER = {"properties": {"STREET": [{"prefix": "A"}]}, "geometry": {"type": ["Polygon"]}}


def _events(n: int, seed: int, first: int) -> list[dict]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        coords = [{"x": rnd.random(), "y": rnd.random(), "z": 0} for _ in range(rnd.randrange(4))]
        out.append(
            {
                "properties": {"STREET": rnd.choice(["AB", "AC", "BA", None]), "i": first + i},
                "geometry": {
                    "type": rnd.choice(["Polygon", "MultiPolygon"]),
                    "coordinates": coords,
                },
                "note": rnd.choice(["x", {"deep": [1, [2, {"k": None}]]}, []]),
            }
        )
    return out


def test_brokers_read_what_their_filters_name_and_deliver_whole_events():
    model = load_model("records")
    first, later = model.parse_filter(FIRST), model.parse_filter(LATER)

    async def body(ds: list[BrokerDaemon]) -> None:
        got: dict[str, list[Notification]] = {"first": [], "later": []}
        a = AsyncClient(url(ds[2]), id="a")
        b = AsyncClient(url(ds[1]), id="b")
        pub = AsyncClient(url(ds[0]), id="pub")
        for c in (a, b, pub):
            await c.connect()
        await a.subscribe("records", FIRST, got["first"].append, confirm=True)
        await until(lambda: ds[0].broker.sizes()[1] == 1)
        one = _events(150, 1, 0)
        await pub.publish_many("records", one)
        n_one = sum(model.matches(first, model.load_event(e)) for e in one)
        await until(lambda: len(got["first"]) == n_one)  # none of them in flight any more
        if selection._scan is not None:  # the compiled scan: the selective reader is used
            for d in ds:
                assert type(d._reader("records")).__name__ == "WireReader"
        await b.subscribe("records", LATER, got["later"].append, confirm=True)
        await until(lambda: ds[0].broker.sizes()[1] == 2)
        two = _events(150, 2, 150)
        await pub.publish_many("records", two)
        three = _events(20, 3, 300)
        for e in three:  # single pub frames, read by the same reader
            await pub.publish("records", e)
        published = one + two + three

        def wanted(f, events):
            return [e["properties"]["i"] for e in events if model.matches(f, model.load_event(e))]

        want_first = wanted(first, published)
        want_later = wanted(later, two + three)
        await until(
            lambda: len(got["first"]) == len(want_first) and len(got["later"]) == len(want_later)
        )
        for name, want in (("first", want_first), ("later", want_later)):
            ns = got[name]
            assert [n.wire["properties"]["i"] for n in ns] == want, name
            for n in ns:  # the whole event, not the attributes the brokers read
                i = n.wire["properties"]["i"]
                assert json.dumps(n.wire, sort_keys=True) == json.dumps(
                    published[i], sort_keys=True
                )
        assert a.duplicates == b.duplicates == 0 and pub.errors == []
        for c in (a, b, pub):
            await c.close()

    run(body)


@pytest.mark.parametrize("kind", ["pub", "forward", "pubs", "forwards"])
def test_single_frames_and_frames_read_whole_use_the_brokers_reader(kind):
    """A ``pub``/``forward`` frame of one event and a batch frame read whole (not cut)
    have their events read by the broker's reader, as a cut batch frame has: the same
    answers of the index as the full read; a bad event refused as without the reader."""
    model = load_model("records")
    models = {"records": model}
    index = model.new_index()
    for k, f in enumerate((FIRST, LATER)):
        index.add(model.parse_filter(f), k)
    reader = model.wire_reader([index])
    calls: list[bytes] = []

    def read(name: str):
        assert name == "records"

        def counted(data: bytes):
            calls.append(data)
            return reader(data)

        return counted

    events = _events(40, 4, 0)

    def frame_events(obj: dict, with_reader: bool) -> list:
        r = read if with_reader else None
        if kind == "pub":
            return [wire.from_client(obj, "c", models, (), r).event]
        if kind == "forward":
            return [wire.from_broker(obj, models, None, r).event]
        if kind == "pubs":
            batch, refused = wire.publications(obj, "c", models, (), r)
        else:
            batch, refused = wire.forwards(obj, models, r)
        assert refused == []
        return batch.events

    for i, e in enumerate(events):
        if kind in ("pub", "forward"):
            obj = {"kind": kind, "model": "records", "event": e, "pub_id": ["c", i + 1]}
        else:  # a frame read whole: decoded without cutting
            body = json.dumps({"kind": kind, "model": "records", "pubs": [[["c", i + 1], e]]})
            obj = frames.decode(body.encode())
            assert type(obj["pubs"]) is list
        calls.clear()
        got = frame_events(obj, True)
        assert len(calls) == 1
        full = frame_events(obj, False)
        assert sorted(index.match(got[0])) == sorted(index.match(full[0])), e
    bad = {"a": {"": 2}}
    if kind in ("pub", "forward"):
        obj = {"kind": kind, "model": "records", "event": bad, "pub_id": ["c", 1]}
        for with_reader in (True, False):
            with pytest.raises(frames.FrameError):
                frame_events(obj, with_reader)
