"""Three broker daemons in one asyncio loop, with real sockets on 127.0.0.1: delivery,
bad frames, cycle refusal, leases (docs/protocol.md §1-§7)."""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Awaitable, Callable

from pubsift.adapters.broker.client import AsyncClient, Notification
from pubsift.adapters.broker.config import Address, BrokerConfig
from pubsift.adapters.broker.daemon import BrokerDaemon
from pubsift.adapters.broker.frames import encode, hello, read_frame

FAST = {
    "lease_period": 1.5,
    "lease_refresh": 0.4,
    "lease_max_delay": 0.1,
    "backoff_initial": 0.05,
    "backoff_max": 0.3,
    "models": ("records", "xml"),
    "max_frame_bytes": 4096,
}


def run_daemon(
    cfg: BrokerConfig, body: Callable[[BrokerDaemon], Awaitable[None]], timeout: float = 20
) -> None:
    """Start an in-process BrokerDaemon on ``cfg``, run ``body(daemon)`` (bounded), stop it."""

    async def go() -> None:
        d = BrokerDaemon(cfg)
        await d.start()
        try:
            await asyncio.wait_for(body(d), timeout)
        finally:
            await d.stop()

    asyncio.run(go())


async def until(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait (bounded) until ``cond()`` holds."""

    async def poll() -> None:
        while not cond():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), timeout)


async def chain(n: int = 3) -> list[BrokerDaemon]:
    """b0 - b1 - ... (each dials the previous one), links up."""
    daemons: list[BrokerDaemon] = []
    for i in range(n):
        nb = (daemons[-1].address,) if daemons else ()
        d = BrokerDaemon(
            BrokerConfig(id=f"b{i}", listen=Address("127.0.0.1", 0), neighbours=nb, **FAST)
        )
        await d.start()
        daemons.append(d)
    want = [min(i, 1) + (i < n - 1) for i in range(n)]
    await until(lambda: [len(d.port.neighbours) for d in daemons] == want)
    return daemons


def url(d: BrokerDaemon) -> str:
    return f"pubsift://127.0.0.1:{d.address.port}"


def run(body: Callable[[list[BrokerDaemon]], Awaitable[None]], n: int = 3) -> None:
    async def go() -> None:
        daemons = await chain(n)
        try:
            await asyncio.wait_for(body(daemons), 30)
        finally:
            for d in daemons:
                await d.stop()

    asyncio.run(go())


async def raw(
    d: BrokerDaemon, *frames: bytes, role: str = "client", id: str = "raw"
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    r, w = await asyncio.open_connection("127.0.0.1", d.address.port)
    w.write(encode(hello(role, id)))
    for f in frames:
        w.write(f)
    await w.drain()
    return r, w


async def frames_until_close(r: asyncio.StreamReader, limit: int = 20) -> list[dict]:
    out = []
    for _ in range(limit):
        obj = await asyncio.wait_for(read_frame(r, 1 << 20), 5)
        if obj is None:
            break
        out.append(obj)
    return out


def test_three_brokers_route_records_and_xml_in_order_once_each():
    async def body(ds: list[BrokerDaemon]) -> None:
        got: list[Notification] = []
        sub = AsyncClient(url(ds[2]), id="sub")
        pub = AsyncClient(url(ds[0]), id="pub")
        await sub.connect()
        await pub.connect()
        await sub.subscribe("records", "price > 10", got.append)
        await sub.subscribe("xml", "//quote[@symbol='IBM']", got.append)
        await until(lambda: ds[0].broker.sizes() == (0, 2))  # both reached the far end
        for i in range(20):
            await pub.publish("records", {"price": i})
            await pub.publish("xml", f"<quote symbol='{'IBM' if i % 2 else 'SAP'}'/>")
        await until(lambda: len(got) == 9 + 10)
        await asyncio.sleep(0.2)  # and nothing more comes
        assert len(got) == 19
        seqs = [n.seq for n in got]
        assert (
            seqs == sorted(seqs) and len(set(seqs)) == 19 and {n.publisher for n in got} == {"pub"}
        )
        assert [n.wire["price"] for n in got if n.model == "records"] == list(range(11, 20))
        stats = await sub.stats()
        assert stats["broker"] == "b2" and stats["entries"]["records"] == [1, 0]
        await sub.close()
        await pub.close()
        await until(lambda: ds[0].broker.sizes() == (0, 0))  # unsubscribed everywhere

    run(body)


def test_duplicates_and_old_sequence_numbers_are_dropped_by_the_client():
    async def body(ds: list[BrokerDaemon]) -> None:
        got: list[int] = []
        c = AsyncClient(url(ds[0]), id="c")
        await c.connect()
        await c.subscribe("records", "x > 0", lambda n: got.append(n.seq))
        for seq in (1, 2, 2, 1, 3):
            await c._notify(
                {
                    "kind": "notify",
                    "client": "c",
                    "model": "records",
                    "event": {"x": 1},
                    "pub_id": ["p", seq],
                }
            )
        assert got == [1, 2, 3] and c.duplicates == 2
        await c.close()

    run(body, 1)


def test_bad_frames_get_an_error_and_the_broker_serves_everyone_else():
    async def body(ds: list[BrokerDaemon]) -> None:
        d = ds[0]
        got: list[Notification] = []
        good = AsyncClient(url(d), id="good")
        await good.connect()
        await good.subscribe("records", "x > 0", got.append)
        body_ = b'{"kind":'
        r, w = await raw(
            d,
            struct.pack(">I", len(body_)) + body_,  # not JSON: error, connection kept
            encode({"kind": "teleport", "ref": 1}),
            encode({"kind": "sub", "model": "records", "filter": "x >>> 1", "ref": 2}),
            encode({"kind": "sub", "model": "nope", "filter": "x > 1"}),
            encode(
                {
                    "kind": "pub",
                    "model": "xml",
                    "event": {"xml": "<a><b></a>"},
                    "pub_id": ["raw", 1],
                }
            ),
            encode({"kind": "pub", "model": "records", "event": {"x": 1}, "pub_id": ["good", 1]}),
            encode({"kind": "adv", "model": "records", "filter": "x > 1"}),
            encode({"kind": "sub", "client": "good", "model": "records", "filter": "x > 1"}),
            struct.pack(">I", 5000),  # oversize: error, then closed
        )
        replies = await frames_until_close(r)
        w.close()
        assert replies[0]["kind"] == "hello" and replies[0]["lease"]["refresh"] == 0.4
        errs = [(e["reason"], e["message"], e.get("ref")) for e in replies[1:]]
        assert [e[0] for e in errs] == [
            "bad-frame",
            "unknown-kind",
            "invalid-message",
            "invalid-message",
            "invalid-message",
            "forbidden",
            "refused",
            "invalid-message",
            "too-large",
        ], errs
        assert errs[1][2] == 1 and errs[2][2] == 2 and "line 1, column" in errs[2][1]
        assert "unknown model 'nope'" in errs[3][1]
        assert "pub_id names publisher 'good'; this connection publishes as 'raw'" in errs[5][1]
        assert "advertisements" in errs[6][1] and "not this connection's id 'raw'" in errs[7][1]
        assert "5000 bytes exceeds the limit of 4096" in errs[8][1]
        # a client that disconnects in the middle of a frame
        r2, w2 = await raw(d, struct.pack(">I", 100) + b'{"kind":"pub"', id="cut")
        await read_frame(r2, 1 << 20)  # its hello
        w2.close()
        # a connection that never says hello properly
        r3, w3 = await asyncio.open_connection("127.0.0.1", d.address.port)
        w3.write(encode({"kind": "sub"}))
        (e3,) = await frames_until_close(r3)
        w3.close()
        assert e3["reason"] == "bad-hello"
        # everyone else is still served
        p = AsyncClient(url(d), id="p")
        await p.connect()
        await p.publish("records", {"x": 5})
        await until(lambda: len(got) == 1)
        assert good.errors == [] and d.broker.sizes() == (1, 0)
        await p.close()
        await good.close()

    run(body, 1)


def test_a_link_closing_a_cycle_is_refused_with_a_clear_error(caplog):
    async def body(ds: list[BrokerDaemon]) -> None:
        closer = BrokerDaemon(
            BrokerConfig(
                id="x",
                listen=Address("127.0.0.1", 0),
                neighbours=(ds[0].address, ds[2].address),
                **FAST,
            )
        )
        await closer.start()
        try:
            await until(lambda: "would close a cycle" in caplog.text)
            await asyncio.sleep(0.3)
            assert len(closer.port.neighbours) == 1  # one of the two links, never both
            # a hand-made broker hello from an id the tree already has
            r, w = await raw(
                ds[2], encode({"kind": "reach", "brokers": ["b0", "zz"]}), role="broker", id="zz"
            )
            replies = await frames_until_close(r)
            w.close()
            assert replies[0]["kind"] == "hello" and "b2" in replies[0]["reach"]
            assert replies[-1]["reason"] == "cycle" and "already reach b0" in replies[-1]["message"]
        finally:
            await closer.stop()

    with caplog.at_level("INFO", logger="pubsift.broker"):
        run(body)


def test_a_vanished_clients_subscription_expires_after_the_lease_period():
    async def body(ds: list[BrokerDaemon]) -> None:
        c = AsyncClient(url(ds[2]), id="gone")
        await c.connect()
        await c.subscribe("records", "x > 0", print)
        await until(lambda: ds[0].broker.sizes() == (0, 1))
        await asyncio.sleep(2.0)  # > π: renewals keep it alive
        assert ds[0].broker.sizes() == (0, 1) and ds[2].broker.sizes() == (1, 0)
        await c.close(unsubscribe=False)  # gone without a word: the lease runs out
        await until(
            lambda: ds[2].broker.sizes() == (0, 0) and ds[0].broker.sizes() == (0, 0), 1.5 + 1.5
        )

    run(body)


def test_a_lost_link_is_redialled_and_resynchronised():
    async def body(ds: list[BrokerDaemon]) -> None:
        got: list[int] = []
        sub = AsyncClient(url(ds[2]), id="sub")
        pub = AsyncClient(url(ds[0]), id="pub")
        await sub.connect()
        await pub.connect()
        await sub.subscribe("records", "x > 0", lambda n: got.append(n.seq))
        await until(lambda: ds[0].broker.sizes() == (0, 1))
        ds[2].port.neighbours["b1"].abort()  # cut b2 - b1
        await until(lambda: "b2" not in ds[1].port.neighbours)
        await until(lambda: "b2" in ds[1].port.neighbours)  # b2 re-dialled
        await asyncio.sleep(0.2)
        await pub.publish("records", {"x": 1})
        await until(lambda: got == [1])
        await sub.close()
        await pub.close()

    run(body)


def test_a_restarted_broker_gets_its_table_back_at_once_from_renewals():
    """With ρ = 10 s, only the resync on link-up can rebuild the table within a second."""

    async def go() -> None:
        slow = {**FAST, "lease_period": 30.0, "lease_refresh": 10.0}
        a = BrokerDaemon(BrokerConfig(id="a", listen=Address("127.0.0.1", 0), **slow))
        await a.start()
        mid = BrokerConfig(id="m", listen=Address("127.0.0.1", 0), neighbours=(a.address,), **slow)
        m = BrokerDaemon(mid)
        await m.start()
        c = BrokerDaemon(
            BrokerConfig(id="c", listen=Address("127.0.0.1", 0), neighbours=(m.address,), **slow)
        )
        await c.start()
        sub = AsyncClient(url(c), id="sub")
        pub = AsyncClient(url(a), id="pub")
        got: list[int] = []
        try:
            await sub.connect()
            await pub.connect()
            await sub.subscribe("records", "x > 0", lambda n: got.append(n.seq))
            await until(lambda: a.broker.sizes() == (0, 1))
            await m.stop()
            m = BrokerDaemon(mid.with_overrides(listen=m.address))  # same port, empty tables
            await m.start()
            await until(lambda: m.broker.sizes() == (0, 1), 2.0)
            await pub.publish("records", {"x": 1})
            await until(lambda: got == [1], 2.0)
        finally:
            await sub.close()
            await pub.close()
            for d in (c, m, a):
                await d.stop()

    asyncio.run(asyncio.wait_for(go(), 30))


def test_two_brokers_dialling_each_other_keep_one_link_without_redialling_forever(caplog):
    """docs/protocol.md §7: the connection dialled by the smaller id is kept; the other
    side stops dialling while that link is up (it used to be refused every backoff_max,
    with a warning on both sides, for ever), and dials again when it goes down."""

    async def go() -> None:
        a = BrokerDaemon(BrokerConfig(id="a", listen=Address("127.0.0.1", 0), **FAST))
        await a.start()
        b = BrokerDaemon(
            BrokerConfig(id="b", listen=Address("127.0.0.1", 0), neighbours=(a.address,), **FAST)
        )
        await b.start()
        a2 = BrokerDaemon(
            BrokerConfig(
                id="a", listen=Address("127.0.0.1", a.address.port), neighbours=(b.address,), **FAST
            )
        )
        await a.stop()  # a again, now dialling b too: both sides dial
        await a2.start()
        try:
            await until(lambda: "b" in a2.port.neighbours and "a" in b.port.neighbours)
            await asyncio.sleep(2.0)
            assert "b" in a2.port.neighbours and "a" in b.port.neighbours
            refused = [r for r in caplog.records if "already linked" in r.getMessage()]
            assert len(refused) <= 4, [r.getMessage() for r in refused]
        finally:
            await b.stop()
            await a2.stop()

    with caplog.at_level(logging.INFO, "pubsift.broker"):
        asyncio.run(go())


def test_a_frame_nested_too_deeply_is_refused_and_the_connection_kept(caplog):
    async def body(daemons: list[BrokerDaemon]) -> None:
        deep = b'{"kind":"sub","model":"records","filter":' + b"[" * 1500 + b"]" * 1500 + b"}"
        r, w = await raw(daemons[0], struct.pack(">I", len(deep)) + deep, encode({"kind": "stats"}))
        got = [await read_frame(r, 1 << 20) for _ in range(3)]
        assert [g["kind"] for g in got] == ["hello", "error", "stats"], got
        assert got[1]["reason"] == "bad-frame" and "nested too deeply" in got[1]["message"]
        w.close()

    run(body, n=1)
    assert "Traceback" not in caplog.text and "Unhandled exception" not in caplog.text


def test_an_unreachable_neighbour_is_one_warning_not_silence(caplog):
    import socket

    s = socket.create_server(("127.0.0.1", 0))
    gone = Address("127.0.0.1", s.getsockname()[1])
    s.close()

    async def go() -> None:
        d = BrokerDaemon(
            BrokerConfig(id="lone", listen=Address("127.0.0.1", 0), neighbours=(gone,), **FAST)
        )
        await d.start()
        await asyncio.sleep(1.0)  # several re-dials with FAST's backoff
        await d.stop()

    with caplog.at_level(logging.DEBUG, "pubsift.broker"):
        asyncio.run(go())
    said = [r for r in caplog.records if f"cannot reach neighbour {gone}" in r.getMessage()]
    assert len(said) >= 3, caplog.text
    assert [r.levelno for r in said].count(logging.WARNING) == 1
    assert "connection refused" in said[0].getMessage()
