"""Liveness (docs/protocol.md §1.1): a peer that goes silent without closing — a vanished
host, a stopped process — is pinged and then closed with ``timeout`` within
``interval · (max_missed + 1)`` plus a tick; one that answers pings stays connected."""

from __future__ import annotations

import asyncio
import logging
import time

from pubsift.adapters.broker.client import AsyncClient
from pubsift.adapters.broker.config import Address, BrokerConfig
from pubsift.adapters.broker.daemon import BrokerDaemon
from pubsift.adapters.broker.frames import encode, hello, read_frame

BEAT = {"heartbeat_interval": 0.2, "heartbeat_max_missed": 2, "models": ("records",)}


async def _daemon(**extra) -> BrokerDaemon:
    d = BrokerDaemon(BrokerConfig(id="hb", listen=Address("127.0.0.1", 0), **{**BEAT, **extra}))
    await d.start()
    return d


async def _frames(r: asyncio.StreamReader, timeout: float) -> tuple[list[dict], float]:
    """Every frame until the broker closes (and when it did), reading without answering."""
    t0, out = time.monotonic(), []
    while True:
        obj = await asyncio.wait_for(read_frame(r, 1 << 20), timeout)
        if obj is None:
            return out, time.monotonic() - t0
        out.append(obj)


def test_a_silent_client_is_pinged_then_closed_with_timeout(caplog):
    async def go() -> None:
        d = await _daemon()
        try:
            r, w = await asyncio.open_connection("127.0.0.1", d.address.port)
            w.write(encode(hello("client", "silent")))
            frames, took = await _frames(r, 5.0)
            kinds = [f["kind"] for f in frames]
            assert kinds == ["hello", "ping", "ping", "error"], kinds
            assert frames[0]["heartbeat"] == {"interval": 0.2, "max_missed": 2}
            assert frames[-1]["reason"] == "timeout"
            assert 0.5 <= took < 1.5, took
            await asyncio.sleep(0.05)
            assert "silent" not in d.port.clients
            assert any(
                r.getMessage().startswith("client silent (127.0.0.1:")
                and r.getMessage().endswith("2 pings unanswered (closing)")
                for r in caplog.records
            ), caplog.text
            w.close()
        finally:
            await d.stop()

    asyncio.run(go())


def test_a_peer_answering_pings_stays_and_the_broker_answers_pings():
    async def go() -> None:
        d = await _daemon()
        try:
            r, w = await asyncio.open_connection("127.0.0.1", d.address.port)
            w.write(encode(hello("client", "alive")))
            assert (await read_frame(r, 1 << 20))["kind"] == "hello"
            w.write(encode({"kind": "ping"}))
            assert (await read_frame(r, 1 << 20)) == {"kind": "pong"}
            t_end = time.monotonic() + 1.5
            pings = 0
            while time.monotonic() < t_end:
                obj = await asyncio.wait_for(read_frame(r, 1 << 20), 1.0)
                assert obj is not None and obj["kind"] == "ping", obj
                pings += 1
                w.write(encode({"kind": "pong"}))
            assert pings >= 3 and "alive" in d.port.clients
            w.close()
        finally:
            await d.stop()

    asyncio.run(go())


def test_a_client_notices_a_silent_broker_and_reconnects(caplog):
    """A 'broker' that answers the hello and then says nothing, never a pong: the client
    closes with timeout and dials again."""
    hellos: list[float] = []

    async def mute(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await read_frame(r, 1 << 20)
        hellos.append(time.monotonic())
        w.write(encode(hello("broker", "mute", heartbeat={"interval": 0.2, "max_missed": 1})))
        await asyncio.sleep(10)

    async def go() -> None:
        server = await asyncio.start_server(mute, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        c = AsyncClient(f"pubsift://127.0.0.1:{port}", backoff=(0.05, 0.1))
        await c.connect()
        t0 = time.monotonic()
        while len(hellos) < 2 and time.monotonic() - t0 < 3:
            await asyncio.sleep(0.02)
        assert len(hellos) >= 2, "the client did not notice the silent broker"
        assert hellos[1] - hellos[0] < 1.5
        await c.close()
        server.close()

    with caplog.at_level(logging.WARNING, "pubsift.client"):
        asyncio.run(go())
    said = [r.getMessage() for r in caplog.records if r.name == "pubsift.client"]
    assert any(m.endswith("lost (timeout); reconnecting") for m in said), said
    assert any(" reconnected to mute " in m for m in said), said


def test_heartbeat_zero_is_off():
    async def go() -> None:
        d = await _daemon(heartbeat_interval=0.0)
        try:
            r, w = await asyncio.open_connection("127.0.0.1", d.address.port)
            w.write(encode(hello("client", "quiet")))
            assert (await read_frame(r, 1 << 20))["kind"] == "hello"
            try:
                obj = await asyncio.wait_for(read_frame(r, 1 << 20), 0.8)
            except TimeoutError:
                obj = None
            assert obj is None and "quiet" in d.port.clients
            w.close()
        finally:
            await d.stop()

    asyncio.run(go())
