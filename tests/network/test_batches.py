"""The broker's data path at wire speed (DESIGN.md §2.6; docs/protocol.md §3.1, §7): batches of
publications (``pubs`` frames, ``publish_many``), the event's bytes carried untouched from
the broker where it entered to every subscriber, frames coalesced into one write, and the
frame codec's strictness. In-process daemons on 127.0.0.1, every wait bounded."""

from __future__ import annotations

import asyncio
import json

import orjson
import pytest
from pubsift.adapters.broker import wire
from pubsift.adapters.broker.client import AsyncClient, BrokerRefused, Notification
from pubsift.adapters.broker.config import Address, BrokerConfig
from pubsift.adapters.broker.daemon import FEATURES, BrokerDaemon
from pubsift.adapters.broker.frames import HEADER, FrameError, decode, encode, hello
from pubsift.core import load_model
from pubsift.core.errors import EventError
from pubsift.core.messages import Forward, Notify

from tests.network.test_inprocess import FAST, raw, run, run_daemon, until, url


def test_publish_many_sends_pubs_frames_delivered_in_order_once_each():
    async def body(ds: list[BrokerDaemon]) -> None:
        got: list[Notification] = []
        sub = AsyncClient(url(ds[2]), id="sub")
        pub = AsyncClient(url(ds[0]), id="pub")
        await sub.connect()
        await pub.connect()
        assert "pubs" in pub.broker_features and FEATURES == ("pubs", "replay")
        await sub.subscribe("records", "price >= 10", got.append, confirm=True)
        await until(lambda: ds[0].broker.sizes()[1] == 1)
        frames: list[bytes] = []
        send = pub._conn.send  # type: ignore[union-attr]
        pub._conn.send = lambda data: frames.append(data) or send(data)  # type: ignore[union-attr,method-assign]
        seqs = await pub.publish_many(
            "records", [{"price": p, "n": i} for i, p in enumerate(range(30))]
        )
        assert seqs == list(range(1, 31))
        assert len(frames) == 1 and decode(frames[0][4:])["kind"] == "pubs"
        await until(lambda: len(got) == 20)
        assert [n.seq for n in got] == list(range(11, 31))
        assert [n.wire["price"] for n in got] == list(range(10, 30))
        seqs = await pub.publish_many("records", [{"price": 99}])
        assert seqs == [31] and await pub.publish("records", {"price": 98}) == 32
        await until(lambda: len(got) == 22)
        assert sub.duplicates == 0 and pub.errors == []
        for c in (sub, pub):
            await c.close()

    run(body)


def test_a_batch_too_long_for_one_frame_is_split_and_a_bad_event_refused_first():
    cfg = BrokerConfig(id="b0", listen=Address("127.0.0.1", 0), **FAST)  # frames <= 4096

    async def body(d: BrokerDaemon) -> None:
        got: list[Notification] = []
        sub = AsyncClient(url(d), id="sub")
        pub = AsyncClient(url(d), id="pub")
        await sub.connect()
        await pub.connect()
        await sub.subscribe("records", "n >= 0", got.append, confirm=True)
        frames: list[bytes] = []
        send = pub._conn.send  # type: ignore[union-attr]
        pub._conn.send = lambda data: frames.append(data) or send(data)  # type: ignore[union-attr,method-assign]
        pad = "x" * 200
        await pub.publish_many("records", [{"n": i, "pad": pad} for i in range(100)])
        assert len(frames) > 5 and all(len(f) - 4 <= 4096 for f in frames)
        await until(lambda: len(got) == 100)
        assert [n.wire["n"] for n in got] == list(range(100))
        with pytest.raises(EventError):
            await pub.publish_many("records", [{"n": 1}, {"n": float("nan")}])
        with pytest.raises(BrokerRefused, match="above the broker's limit"):
            await pub.publish_many("records", [{"n": 1}, {"n": 2, "pad": "y" * 5000}])
        assert pub._seq == 100  # nothing of a refused batch was sent
        # a broker that does not say it reads pubs gets one pub frame per event
        frames.clear()
        pub.broker_features = ()
        await pub.publish_many("records", [{"n": 100}, {"n": 101}])
        assert [decode(f[4:])["kind"] for f in frames] == ["pub", "pub"]
        await until(lambda: len(got) == 102)
        for c in (sub, pub):
            await c.close()

    run_daemon(cfg, body)


def test_each_publication_of_a_pubs_frame_is_checked_on_its_own():
    async def body(ds: list[BrokerDaemon]) -> None:
        d = ds[0]
        got: list[Notification] = []
        sub = AsyncClient(url(d), id="sub")
        await sub.connect()
        await sub.subscribe("records", "x >= 0", got.append, confirm=True)
        r, w = await raw(d, id="raw")
        items = [
            [["raw", 1], {"x": 1}],
            [["raw", 2], []],  # not an object
            [["sub", 3], {"x": 3}],  # another publisher's id
            ["raw", 4],  # not [pub_id, event]
            [["raw", 5], {"x": 5}],
        ]
        w.write(
            encode({"kind": "pubs", "model": "records", "pubs": items, "ref": 9})
            + encode({"kind": "pubs", "model": "records", "pubs": []})
            + encode({"kind": "pubs", "model": "nope", "pubs": items})
            + encode({"kind": "stats"})
        )
        out = []
        while (obj := await asyncio.wait_for(_frame(r), 5))["kind"] != "stats":
            if obj["kind"] != "hello":
                out.append(obj)
        w.close()
        assert [(e["reason"], e.get("index"), e.get("ref")) for e in out] == [
            ("invalid-message", 1, 9),
            ("forbidden", 2, 9),
            ("invalid-message", 3, 9),
            ("invalid-message", None, None),
            ("invalid-message", None, None),
        ], out
        assert out[0]["message"].startswith("pubs[1]: ")
        assert "publishes as 'raw' only" in out[1]["message"]
        assert "1-10000 [pub_id, event] pairs" in out[3]["message"]
        await until(lambda: len(got) == 2)
        assert [(n.publisher, n.seq) for n in got] == [("raw", 1), ("raw", 5)]
        await sub.close()

    run(body, 1)


async def _frame(r: asyncio.StreamReader) -> dict:
    from pubsift.adapters.broker.frames import read_frame

    obj = await read_frame(r, 1 << 20)
    assert obj is not None
    return obj


def test_the_events_bytes_reach_every_subscriber_untouched_through_the_brokers():
    """What the subscriber reads is the publisher's event as the first broker wrote it
    once (compact JSON), spliced into each forward and notify frame, never dumped again:
    the notify frames' event bytes equal it, through a chain of three brokers."""

    async def body(ds: list[BrokerDaemon]) -> None:
        dumped: list[str] = []
        for d in ds:  # the models' dump_event must not run on the data path
            for m in d.models.values():
                m.dump_event = lambda e, m=m: dumped.append(m.name) or type(m).dump_event(m, e)  # type: ignore[method-assign]
        r, w = await raw(ds[2], id="watcher")
        w.write(
            encode({"kind": "sub", "model": "records", "filter": "t exists"})
            + encode({"kind": "sub", "model": "xml", "filter": "//q"})
        )
        assert (await _frame(r))["kind"] == "hello"
        await until(
            lambda: all(ds[0].broker.table(m).sizes() == (0, 1) for m in ("records", "xml"))
        )
        _, pw = await raw(ds[0], id="pub")
        events = [
            (
                {
                    "t": "é ✓ \u2028",
                    "n": 12345678901234567890123,
                    "f": 0.1,
                    "nested": {"a": [1, "x"]},
                },
                "records",
            ),
            ({"xml": "<q a='1'>text &amp; more</q>"}, "xml"),
        ]
        for i, (ev, model) in enumerate(events):
            pw.write(encode({"kind": "pub", "model": model, "event": ev, "pub_id": ["pub", i + 1]}))
        bodies = []
        from pubsift.adapters.broker.frames import HEADER

        for _ in events:
            head = await asyncio.wait_for(r.readexactly(4), 5)
            bodies.append(await asyncio.wait_for(r.readexactly(HEADER.unpack(head)[0]), 5))
        for (ev, _), b in zip(events, bodies, strict=True):
            obj = decode(b)
            assert obj["kind"] == "notify" and obj["event"] == ev
            assert b.endswith(b',"event":' + wire.dumps(ev) + b"}")
        assert dumped == []
        w.close()
        pw.close()

    run(body)


def test_a_forward_in_another_form_is_read_and_written_anew():
    model = load_model("records")
    models = {"records": model}
    ev = {"a": 1, "event": {"event": 2}}
    canonical = wire.forward_frame(
        Forward("records", model.load_event(ev), ("p", 1), orjson.dumps(ev))
    )
    body = canonical[4:]
    msg = wire.from_broker(decode(body), models, body)
    assert isinstance(msg, Forward) and msg.wire == orjson.dumps(ev) and msg.pub_id == ("p", 1)
    for other in (
        b'{"kind":"forward","model":"records","pub_id":["p",1], "event":{"a":1,"event":{"event":2}}}',
        b'{"model":"records","kind":"forward","pub_id":["p",1],"event":{"a":1,"event":{"event":2}}}',
        b'{"kind":"forward","model":"records","pub_id":["p",1],"event":{"a":1,"event":{"event":2}},"x":1}',
        b'{"kind":"forward","model":"records","pub_id":["p",1],"event":{"a":1,"event":{"event":2}}}\n',
    ):
        msg = wire.from_broker(decode(other), models, other)
        assert isinstance(msg, Forward) and msg.wire == orjson.dumps(ev), other
    frames = wire.NotifyFrames()
    n1 = Notify("c1", "records", None, ("p", 1), b'{"a":1}')
    n2 = Notify("c2", "records", None, ("p", 1), n1.wire)
    for n in (n1, n2):
        obj = decode(frames.frame(n)[4:])
        assert obj == {
            "kind": "notify",
            "client": n.client,
            "model": "records",
            "pub_id": ["p", 1],
            "event": {"a": 1},
        }


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b'{"kind":"pub","n":123456789012345678901234567890}', None),
        (b'{"kind":"pub","n":1e400}', "number is infinity"),
        (b'{"kind":"pub","n":NaN}', "NaN is not JSON"),
        (b'{"kind":"pub","n":' + b"[" * 255 + b"]" * 255 + b"}", "nested too deeply"),
        (b'{"kind":"pub","n":' + b"[" * 254 + b"]" * 254 + b"}", None),
        (b'{"kind":"pub","s":"\xff"}', "not UTF-8"),
        (b'{"kind":"pub","n":[' + b",".join([b"[1]"] * 1000) + b"]}", None),
        (b'{"kind":["pubs"],"pubs":[]}', "no string member 'kind'"),
        (b'{"kind":{"a":1},"n":1}', "no string member 'kind'"),
        (b'{"kind":"pubs","pubs":[],"ref":' + b"[" * 255 + b"]" * 255 + b"}", "nested too deeply"),
        (b'{"kind":"pubs","pubs":"x","ref":' + b"[" * 255 + b"]" * 255 + b"}", "nested too deeply"),
    ],
)
def test_the_frame_codec_is_strict_and_exact(body, words):
    if words is None:
        obj = decode(body)
        assert obj == json.loads(body)  # big integers exact, as the standard library reads them
        assert decode(encode(obj)[4:]) == obj
    else:
        with pytest.raises(FrameError, match=words) as exc:
            decode(body)
        assert exc.value.reason == "bad-frame"


def tap_writes(conn) -> list[bytes]:  # type: ignore[no-untyped-def]
    """What ``conn`` writes to its stream from now on, write by write."""
    writes: list[bytes] = []
    write = conn.writer.write
    conn.writer.write = lambda data: writes.append(bytes(data)) or write(data)
    return writes


def written_frames(writes: list[bytes]) -> list[dict]:
    """The frames in what was written (whole frames: a write holds whole frames)."""
    data, out, pos = b"".join(writes), [], 0
    while pos < len(data):
        (n,) = HEADER.unpack_from(data, pos)
        out.append(decode(data[pos + 4 : pos + 4 + n]))
        pos += 4 + n
    return out


def nest(depth: int) -> object:
    x: object = 1
    for _ in range(depth):
        x = [x]
    return x


def test_each_event_of_a_batch_is_as_deep_as_in_a_frame_of_its_own():
    """docs/protocol.md §1: in a batch frame the depth limit holds per event, as in the
    event's own pub frame (one level more): 254 levels pass, 255 are refused on their own
    (the others go on), in pubs and in forwards frames."""
    models = {"toy": _DeepModel()}
    for kind in ("pubs", "forwards"):
        items = [[["p", 1], {"a": nest(253)}], [["p", 2], {"a": nest(254)}], [["p", 3], 1]]
        body = json.dumps({"kind": kind, "model": "toy", "pubs": items}).encode()
        obj = decode(body)  # the frame itself is deeper than 255: its events are judged
        batch, refused = (
            wire.publications(obj, "p", models) if kind == "pubs" else wire.forwards(obj, models)  # type: ignore[arg-type]
        )
        assert batch.pub_ids == [("p", 1), ("p", 3)] and len(batch.events) == 2
        ((i, why),) = refused
        assert i == 1 and "nested too deeply" in why.message
        assert why.message.startswith(f"{kind}[1]: ")
        assert decode(encode({"kind": "notify", "event": {"a": nest(253)}})[4:])
    with pytest.raises(FrameError, match="nested too deeply"):
        decode(json.dumps({"kind": "pub", "event": {"a": nest(254)}}).encode())


class _DeepModel:
    """A model whose events are any JSON (so that depth alone decides)."""

    name = "toy"

    def load_event(self, obj: object) -> object:
        return str(obj)[:10]


def test_frames_queued_in_one_turn_go_out_in_one_write():
    async def body(ds: list[BrokerDaemon]) -> None:
        d = ds[0]
        sub = AsyncClient(url(d), id="sub")
        got: list[Notification] = []
        await sub.connect()
        await sub.subscribe("records", "x >= 0", got.append, confirm=True)
        conn = d.port.clients["sub"]
        writes: list[int] = []
        write = conn.writer.write
        conn.writer.write = lambda data: writes.append(len(data)) or write(data)  # type: ignore[method-assign]
        pub = AsyncClient(url(d), id="pub")
        await pub.connect()
        await pub.publish_many("records", [{"x": i} for i in range(200)])
        await until(lambda: len(got) == 200)
        assert len(writes) < 20, writes  # 200 notifications, a handful of writes
        for c in (sub, pub):
            await c.close()

    run(body, 1)


def test_a_client_that_reads_notifies_gets_a_turn_s_notifications_in_one_frame():
    """docs/protocol.md §3.2: the client's hello names ``notifies``; the broker then writes
    the notifications of one turn to it as ``notifies`` frames (another frame to the
    client, here an error, flushes the batch first, so it never overtakes them), and to a
    client whose hello named no features, ``notify`` frames one by one."""

    async def body(ds: list[BrokerDaemon]) -> None:
        d = ds[0]
        sub = AsyncClient(url(d), id="sub")
        got: list[Notification] = []
        await sub.connect()
        await sub.subscribe("records", "x >= 0", got.append, confirm=True)
        conn = d.port.clients["sub"]
        assert "notifies" in conn.features and conn.peer_max_frame_bytes == sub.max_frame_bytes
        sent = tap_writes(conn)
        pub = AsyncClient(url(d), id="pub")
        await pub.connect()
        await pub.publish_many("records", [{"x": i} for i in range(500)])
        await until(lambda: len(got) == 500)
        frames = written_frames(sent)
        assert {f["kind"] for f in frames} == {"notifies"} and len(frames) <= 10, len(frames)
        assert [p[1]["x"] for f in frames for p in f["pubs"]] == list(range(500))
        assert {f["client"] for f in frames} == {"sub"}
        assert [n.seq for n in got] == list(range(1, 501)) and sub.duplicates == 0
        # an error queued after notifications of the same turn goes after them
        sent.clear()
        d.port.deliver("b0", Notify("sub", "records", None, ("other", 1), b'{"x":501}'))
        conn.send({"kind": "error", "reason": "refused", "message": "test"})
        await until(lambda: len(got) == 501)
        await asyncio.sleep(0.3)
        assert len(sub.errors) == 1, sub.errors
        assert [f["kind"] for f in written_frames(sent)] == ["notifies", "error"]
        # an older client (no features in its hello) gets one notify frame each
        conn.features = frozenset()
        sent.clear()
        await pub.publish_many("records", [{"x": i} for i in range(502, 512)])
        await until(lambda: len(got) == 511)
        assert [f["kind"] for f in written_frames(sent)] == ["notify"] * 10
        assert [n.seq for n in got if n.publisher == "pub"] == list(range(1, 511))
        assert sub.duplicates == 0
        for c in (sub, pub):
            await c.close()

    run(body, 1)


def test_a_notifies_batch_stays_within_half_the_client_s_frame_limit():
    async def body(ds: list[BrokerDaemon]) -> None:
        d = ds[0]
        sub = AsyncClient(url(d), id="sub", max_frame_bytes=4096)
        got: list[Notification] = []
        await sub.connect()
        await sub.subscribe("records", "x >= 0", got.append, confirm=True)
        sent = tap_writes(d.port.clients["sub"])
        pub = AsyncClient(url(d), id="pub")
        await pub.connect()
        events = [{"x": i, "pad": "p" * 100} for i in range(300)]
        await pub.publish_many("records", events)
        await until(lambda: len(got) == 300)
        frames = [f for w in sent for f in written_frames([w])]
        sizes = [len(encode(f)) for f in frames]
        assert max(sizes) <= 2048 + 200 and len(frames) >= 300 * 120 // 2048, sizes
        assert [n.wire["x"] for n in got] == list(range(300))
        for c in (sub, pub):
            await c.close()

    run(body, 1)


def test_the_hello_says_the_features():
    cfg = BrokerConfig(id="b0", listen=Address("127.0.0.1", 0), **FAST)

    async def body(d: BrokerDaemon) -> None:
        c = AsyncClient(url(d), id="y")
        await c.connect()
        assert c.broker_features == ("pubs", "replay") and hello("client", "z")["protocol"] == 1
        await c.close()

    run_daemon(cfg, body)


def test_forwards_go_to_neighbours_in_batches_and_singly_to_an_older_one():
    async def body(ds: list[BrokerDaemon]) -> None:
        got: list[Notification] = []
        sub = AsyncClient(url(ds[2]), id="sub")
        pub = AsyncClient(url(ds[0]), id="pub")
        await sub.connect()
        await pub.connect()
        await sub.subscribe("records", "x >= 0", got.append, confirm=True)
        await until(lambda: ds[0].broker.table("records").sizes() == (0, 1))
        link = ds[0].port.neighbours["b1"]
        assert "forwards" in link.features
        sent = tap_writes(link)
        await pub.publish_many("records", [{"x": i} for i in range(300)])
        await until(lambda: len(got) == 300)
        assert [n.wire["x"] for n in got] == list(range(300))
        kinds = [f["kind"] for f in written_frames(sent)]
        assert set(kinds) == {"forwards"} and len(kinds) <= 10, kinds  # 300 forwards
        # a neighbour whose hello named no features (an older broker) gets forward frames
        link.features = frozenset()
        sent.clear()
        await pub.publish_many("records", [{"x": i} for i in range(300, 310)])
        await until(lambda: len(got) == 310)
        assert [f["kind"] for f in written_frames(sent)] == ["forward"] * 10
        assert [n.seq for n in got] == list(range(1, 311)) and sub.duplicates == 0
        for c in (sub, pub):
            await c.close()

    run(body)


def test_each_forward_of_a_forwards_frame_is_checked_on_its_own():
    models = {"records": load_model("records")}
    got = wire.forwards(
        {
            "kind": "forwards",
            "model": "records",
            "pubs": [[["p", 1], {"a": 1}], [["p", 2], []], "x", [["p", 4], {"a": 4}]],
        },
        models,
    )
    batch, refused = got
    assert batch.pub_ids == [("p", 1), ("p", 4)] and batch.wires == [b'{"a":1}', b'{"a":4}']
    assert batch.pairs == [b'[["p",1],{"a":1}]', b'[["p",4],{"a":4}]']
    assert [i for i, _ in refused] == [1, 2]
    assert refused[0][1].message.startswith("forwards[1]: ")
    for bad in (
        {"kind": "forwards", "model": "records", "pubs": []},
        {"kind": "forwards", "model": "x", "pubs": [1]},
    ):
        with pytest.raises(FrameError):
            wire.forwards(bad, models)


def test_a_forwards_batch_stays_within_the_neighbours_frame_limit():
    """b0 reads frames up to 64 KiB, b1 only up to 4 KiB: what b0 batches toward b1 fits
    b1's limit (the link hello says it), so the link is never closed as too-large."""

    async def body() -> None:
        local = Address("127.0.0.1", 0)
        b1 = BrokerDaemon(BrokerConfig(id="b1", listen=local, **FAST))
        await b1.start()
        big = {**FAST, "max_frame_bytes": 1 << 16}
        b0 = BrokerDaemon(BrokerConfig(id="b0", listen=local, neighbours=(b1.address,), **big))
        await b0.start()
        try:
            await until(lambda: "b1" in b0.port.neighbours)
            assert b0.port.neighbours["b1"].peer_max_frame_bytes == 4096
            got: list[Notification] = []
            sub = AsyncClient(url(b1), id="sub")
            pub = AsyncClient(url(b0), id="pub")
            await sub.connect()
            await pub.connect()
            await sub.subscribe("records", "x >= 0", got.append, confirm=True)
            await until(lambda: b0.broker.table("records").sizes() == (0, 1))
            link = b0.port.neighbours["b1"]
            sent = tap_writes(link)
            await pub.publish_many("records", [{"x": i, "pad": "p" * 100} for i in range(200)])
            await until(lambda: len(got) == 200)
            frames = written_frames(sent)
            assert all(len(encode(f)) - 4 <= 4096 for f in frames) and len(frames) > 5
            assert "b1" in b0.port.neighbours and link is b0.port.neighbours["b1"]
            for c in (sub, pub):
                await c.close()
        finally:
            await b0.stop()
            await b1.stop()

    asyncio.run(asyncio.wait_for(body(), 30))


def test_forwards_a_broker_cannot_route_anywhere_are_not_parsed():
    """docs/protocol.md §7: a broker whose routing table holds no entry for any
    destination but the sending neighbour drops a ``forwards`` frame unread (its events
    would go nowhere); with an entry of its own it parses and routes them."""

    async def body(ds: list[BrokerDaemon]) -> None:
        b0, b1 = ds
        link = b0.port.neighbours["b1"]
        # events the model refuses: parsing them would answer errors to b0
        bad = b'{"kind":"forwards","model":"records","pubs":[[["p",1],[]],[["p",2],{"x":2}]]}'
        link.send(HEADER.pack(len(bad)) + bad)
        await until(lambda: b1.broker.useless_forwards == 2)
        await asyncio.sleep(0.1)
        assert b1.stats()["notified"] == 0 and not b0.port.lost
        sub = AsyncClient(url(b1), id="sub")
        got: list[Notification] = []
        await sub.connect()
        await sub.subscribe("records", "x >= 0", got.append, confirm=True)
        link.send(HEADER.pack(len(bad)) + bad)
        await until(lambda: len(got) == 1)
        assert got[0].wire == {"x": 2} and b1.broker.useless_forwards == 2
        await sub.close()

    run(body, 2)
