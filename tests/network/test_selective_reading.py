"""Brokers read only what their filters use (DESIGN §2.6; ``FilterModel.wire_reader``):
the events a broker matches are read with only the attributes its routing tables' filters
name, the selection follows the subscriptions as they come, and every subscriber still gets
exactly the matching publications, each once, with the event's whole bytes. In-process
daemons on 127.0.0.1, every wait bounded."""

from __future__ import annotations

import json
import random

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
        published = one + two

        def wanted(f, events):
            return [e["properties"]["i"] for e in events if model.matches(f, model.load_event(e))]

        want_first = wanted(first, published)
        want_later = wanted(later, two)
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
