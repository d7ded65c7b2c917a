"""The HTTP gateway (issue 14 §1) against real broker daemons in one event loop, with
aiohttp's client as the HTTP client: POST publishes, GET streams Server-Sent Events, every
refusal has its status and a JSON reason, and a subscriber that goes away is withdrawn."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable

import aiohttp
from pubsift.adapters.broker.client import AsyncClient, Notification
from pubsift.adapters.broker.config import Address, BrokerConfig, from_mapping
from pubsift.adapters.broker.daemon import BrokerDaemon
from pubsift.adapters.broker.gateway import Gateway

FAST = {
    "lease_period": 1.5,
    "lease_refresh": 0.4,
    "lease_max_delay": 0.1,
    "backoff_initial": 0.05,
    "backoff_max": 0.3,
    "models": ("records", "xml"),
    "max_frame_bytes": 4096,
}
LOCAL = Address("127.0.0.1", 0)


async def until(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    async def poll() -> None:
        while not cond():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), timeout)


def run(body: Callable[[BrokerDaemon, BrokerDaemon, str], Awaitable[None]]) -> None:
    """b0 (with the gateway) - b1; ``body(b0, b1, gateway URL)``."""

    async def go() -> None:
        b0 = BrokerDaemon(BrokerConfig(id="b0", listen=LOCAL, gateway=LOCAL, **FAST))
        await b0.start()
        b1 = BrokerDaemon(BrokerConfig(id="b1", listen=LOCAL, neighbours=(b0.address,), **FAST))
        await b1.start()
        try:
            await until(lambda: "b1" in b0.port.neighbours)
            assert isinstance(b0.gateway, Gateway)
            await asyncio.wait_for(body(b0, b1, b0.gateway.url), 30)
        finally:
            await b1.stop()
            await b0.stop()

    asyncio.run(go())


async def sse_events(resp: aiohttp.ClientResponse, n: int) -> list[dict[str, str]]:
    """The next ``n`` SSE events of a stream (fields by name; comments skipped)."""
    out: list[dict[str, str]] = []
    ev: dict[str, str] = {}
    while len(out) < n:
        line = (await asyncio.wait_for(resp.content.readline(), 5)).decode().rstrip("\n")
        if line == "":
            if ev:
                out.append(ev)
            ev = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            ev[name] = value.removeprefix(" ")
    return out


def subscribers(d: BrokerDaemon) -> list[str]:
    return [c for c in d.port.clients if "-sub-" in c]


def test_config_and_flag_name_the_gateway_address():
    cfg = from_mapping({"gateway": {"listen": "127.0.0.1:8080"}}, "broker.toml")
    assert cfg.gateway == Address("127.0.0.1", 8080)
    assert from_mapping({}, "broker.toml").gateway is None


def test_post_publishes_to_socket_subscribers_and_sse_streams_to_http_ones():
    async def body(b0: BrokerDaemon, b1: BrokerDaemon, base: str) -> None:
        got: list[Notification] = []
        sock = AsyncClient(f"pubsift://127.0.0.1:{b1.address.port}", id="sock")
        await sock.connect()
        await sock.subscribe("records", "price > 10", got.append)
        async with aiohttp.ClientSession() as http:
            sse = await http.get(f"{base}/subscribe/records", params={"filter": "price > 10"})
            assert sse.status == 200
            assert sse.headers["Content-Type"].startswith("text/event-stream")
            # both subscriptions known at both brokers (one local, one remote entry each)
            await until(lambda: [b.stats()["entries"]["records"] for b in (b0, b1)] == [[1, 1]] * 2)
            ids = []
            for price in (5, 11, 12):
                r = await http.post(f"{base}/publish/records", data=json.dumps({"price": price}))
                assert r.status == 202, await r.text()
                ids.append((await r.json())["id"])
            publisher, _, first = ids[0].rpartition(":")
            assert publisher.startswith("http-b0-pub-")
            assert [int(i.rpartition(":")[2]) for i in ids] == [int(first) + k for k in range(3)]
            events = await sse_events(sse, 2)
            assert [e["id"] for e in events] == ids[1:]  # per-publisher order, no mismatch
            data = [json.loads(e["data"]) for e in events]
            assert [d["event"]["price"] for d in data] == [11, 12]
            assert {d["model"] for d in data} == {"records"}
            await until(lambda: len(got) == 2)  # the socket subscriber two brokers away
            assert [n.event["price"] for n in got] == [11, 12]
            sse.close()
        await sock.close()

    run(body)


def test_xml_events_are_posted_as_xml_and_filtered_by_xpath():
    async def body(b0: BrokerDaemon, b1: BrokerDaemon, base: str) -> None:
        async with aiohttp.ClientSession() as http:
            sse = await http.get(f"{base}/subscribe/xml", params={"filter": "//quote[@sym='IBM']"})
            assert sse.status == 200
            await until(lambda: len(subscribers(b0)) == 1)
            for sym in ("KO", "IBM"):
                r = await http.post(
                    f"{base}/publish/xml",
                    data=f'<quote sym="{sym}"/>',
                    headers={"Content-Type": "application/xml"},
                )
                assert r.status == 202
            (ev,) = await sse_events(sse, 1)
            assert 'sym="IBM"' in json.loads(ev["data"])["event"]["xml"]
            sse.close()

    run(body)


def test_refusals_have_a_status_and_a_json_reason():
    async def body(b0: BrokerDaemon, b1: BrokerDaemon, base: str) -> None:
        async with aiohttp.ClientSession() as http:

            async def refused(method: str, path: str, status: int, reason: str, **kw) -> str:
                r = await http.request(method, base + path, **kw)
                assert r.status == status, await r.text()
                j = await r.json()
                assert j["error"] == reason
                return j["message"]

            msg = await refused("POST", "/publish/records", 400, "invalid-event", data="{oops")
            assert "JSON" in msg
            await refused("POST", "/publish/records", 400, "invalid-event", data="[1, 2]")
            await refused("POST", "/publish/xml", 400, "invalid-event", data="<a><b></a>")
            msg = await refused("POST", "/publish/nope", 404, "unknown-model", data="{}")
            assert "records" in msg and "xml" in msg
            big = json.dumps({"text": "x" * 5000})
            await refused("POST", "/publish/records", 413, "too-large", data=big)
            near = json.dumps({"t": "x" * 4040})  # within the body limit, not in a frame
            assert len(near) < 4096
            msg = await refused("POST", "/publish/records", 413, "too-large", data=near)
            assert "frame" in msg
            await refused("GET", "/subscribe/records", 400, "missing-filter")
            msg = await refused(
                "GET", "/subscribe/records?filter=price%20%3E", 400, "invalid-filter"
            )
            assert "price >" in msg or "column" in msg or "end" in msg
            await refused("GET", "/subscribe/xml?filter=%2F%2F%5B", 400, "invalid-filter")
            await refused("GET", "/subscribe/nope?filter=a", 404, "unknown-model")
            huge = json.dumps({"symbol": [f"S{i}" for i in range(620)]})  # > 4096 as a frame
            msg = await refused(
                "GET", "/subscribe/records", 413, "too-large", params={"filter": huge}
            )
            assert "limit of 4096" in msg
            await until(lambda: subscribers(b0) == [])
            # the broker carries on
            r = await http.post(f"{base}/publish/records", data='{"price": 1}')
            assert r.status == 202

    run(body)


def test_a_subscriber_that_goes_away_is_withdrawn_from_the_network():
    async def body(b0: BrokerDaemon, b1: BrokerDaemon, base: str) -> None:
        async with aiohttp.ClientSession() as http:
            sse = await http.get(f"{base}/subscribe/records", params={"filter": 'symbol = "ZZZ"'})
            assert sse.status == 200
            await until(lambda: len(subscribers(b0)) == 1)
            await until(lambda: sum(b1.stats()["entries"]["records"]) == 1)
            sse.close()  # the HTTP client goes away
            await until(lambda: subscribers(b0) == [], 5)
            await until(lambda: sum(b1.stats()["entries"]["records"]) == 0, 5)
            assert b0.gateway.subscribers == 0

    run(body)


def test_an_sse_client_that_stops_reading_is_cut_off(caplog):
    """Its writes would wait for ever (and the broker's shutdown for a minute): a write
    that waits longer than the gateway's write timeout ends the stream."""
    import socket

    async def body(b0: BrokerDaemon, b1: BrokerDaemon, base: str) -> None:
        assert isinstance(b0.gateway, Gateway)
        b0.gateway.write_timeout = 0.5
        host, port = b0.gateway.address.host, b0.gateway.address.port
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect((host, port))
        s.sendall(b"GET /subscribe/records?filter=price%20%3E%200 HTTP/1.1\r\nHost: x\r\n\r\n")
        await until(lambda: len(subscribers(b0)) == 1)
        await until(lambda: sum(b1.stats()["entries"]["records"]) == 1)
        pub = AsyncClient(f"pubsift://127.0.0.1:{b1.address.port}")
        await pub.connect()
        try:
            for i in range(3000):  # ~10 MB: far more than the socket buffers hold
                await pub.publish("records", {"price": 1, "text": "x" * 3000, "i": i})
                if i % 100 == 0:
                    await asyncio.sleep(0.01)
                if not subscribers(b0):
                    break
            await until(lambda: subscribers(b0) == [] and b0.gateway.subscribers == 0, 10)
        finally:
            await pub.close()
            s.close()
        assert "read nothing for 0.5s; closing its stream" in caplog.text

    with caplog.at_level(logging.INFO):
        run(body)
