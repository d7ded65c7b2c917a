"""The HTTP gateway (docs/protocol.md §9) against real broker daemons in one event loop, with
aiohttp's client as the HTTP client: POST publishes, GET streams Server-Sent Events, every
refusal has its status and a JSON reason, and a subscriber that goes away is withdrawn."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
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


#: texts that are not strict JSON (pubsift.core.strict_json), with what the error says
NOT_STRICT = [
    ('{"price": 1, "price": 2}', "duplicate key"),
    ('{"price": NaN}', "NaN is not JSON"),
]
NOT_STRICT_PATTERNS = [
    ('{"price": [1], "price": [2]}', 'duplicate key "price"'),
    ('{"price": [{"numeric": [">", NaN]}]}', "NaN is not JSON"),
]


def test_the_gateway_refuses_a_duplicate_key_and_nan_in_an_event_and_a_filter():
    """A POSTed event and a ``/subscribe`` filter are read as strict JSON (README: duplicate
    keys refused everywhere): 400 with the reason; nothing is published or subscribed."""

    async def body(b0: BrokerDaemon, b1: BrokerDaemon, base: str) -> None:
        async with aiohttp.ClientSession() as http:
            for text, says in NOT_STRICT:
                r = await http.post(f"{base}/publish/records", data=text)
                assert r.status == 400, await r.text()
                j = await r.json()
                assert j["error"] == "invalid-event" and says in j["message"], j
            for text, says in NOT_STRICT_PATTERNS:
                r = await http.get(f"{base}/subscribe/records", params={"filter": text})
                assert r.status == 400, await r.text()
                j = await r.json()
                assert j["error"] == "invalid-filter" and says in j["message"], j
            assert subscribers(b0) == [] and b0.stats()["entries"]["records"] == [0, 0]

    run(body)


def test_sub_refuses_a_duplicate_key_and_nan_in_a_pattern_before_subscribing():
    """``pubsift sub URL -m records -f PATTERN`` against a running broker: a pattern that
    is not strict JSON is a one-line error and exit status 2, and no subscription."""

    async def body(b0: BrokerDaemon, b1: BrokerDaemon, base: str) -> None:
        url = f"pubsift://127.0.0.1:{b0.address.port}"
        for text, says in NOT_STRICT_PATTERNS:
            proc = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "pubsift", "sub", url, "-m", "records", "-f", text),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            try:
                out, err = await asyncio.wait_for(proc.communicate(), 20)
            finally:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
            assert proc.returncode == 2, err
            assert out == b""
            assert err.decode().splitlines() == [
                f"pubsift sub: invalid JSON: {says}"
                + (" in a JSON object" if "duplicate" in says else "")
            ]
        assert b0.stats()["entries"]["records"] == [0, 0]

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


async def sse_raw(resp: aiohttp.ClientResponse, n: int) -> list[bytes]:
    """The next ``n`` SSE events of a stream as the bytes that came (comments skipped)."""
    out: list[bytes] = []
    buf = b""
    while len(out) < n:
        buf += await asyncio.wait_for(resp.content.readany(), 5)
        *events, buf = buf.split(b"\n\n")
        out.extend(e for e in events if not e.startswith(b":"))
    return out[:n]


def test_sse_data_carries_the_events_bytes_as_published():
    """docs/protocol.md §9: ``data:`` is the JSON object ``pubsift sub`` prints with the
    event's bytes spliced in as they came: another client's spacing, escapes and number
    forms kept, a line break between tokens written as a space; the events of pubsift's
    own clients and of POST give the very bytes the gateway wrote from their values."""
    odd = [
        b'{ "symbol" : "IBM",  "name": "caf\\u00e9 \\ud83d\\ude00", "price":1.50E2 }',
        b'{"symbol":"IBM","price":-0.0,"tags":[ 1 , 2 ],\n"q":"a\\"b\\\\c\\/d"}',
        '{"symbol":"IBM","name":"caf\u00e9","price":1}'.encode(),
    ]

    async def body(b0: BrokerDaemon, b1: BrokerDaemon, base: str) -> None:
        from pubsift.adapters.broker.frames import HEADER
        from pubsift.adapters.broker.gateway import publication_id
        from pubsift.adapters.broker.wire import dumps

        plain: list[Notification] = []
        sock = AsyncClient(f"pubsift://127.0.0.1:{b0.address.port}", id="plain")
        await sock.connect()
        await sock.subscribe("records", 'symbol = "IBM"', plain.append)
        pub = AsyncClient(f"pubsift://127.0.0.1:{b1.address.port}", id="lean")
        await pub.connect()
        async with aiohttp.ClientSession() as http:
            sse = await http.get(f"{base}/subscribe/records", params={"filter": 'symbol = "IBM"'})
            assert sse.status == 200
            await until(
                lambda: [b.stats()["entries"]["records"] for b in (b0, b1)] == [[2, 0], [0, 1]]
            )
            # a client of another language: a pubs frame in the common form, odd events
            pairs = b",".join(b'[["lean",%d],%s]' % (i + 1, e) for i, e in enumerate(odd))
            frame = b'{"kind":"pubs","model":"records","pubs":[%s]}' % pairs
            assert pub.send_frame(HEADER.pack(len(frame)) + frame)
            got = await sse_raw(sse, len(odd))
            for i, (ev, e) in enumerate(zip(got, odd, strict=True)):
                head = b'id: lean:%d\ndata: {"model":"records","publisher":"lean","seq":%d,"event":'
                assert ev == head % (i + 1, i + 1) + e.replace(b"\n", b" ") + b"}"
            # pubsift's clients and POST: the bytes the values give (what was written before)
            values = [
                {"symbol": "IBM", "price": 0.1 + 0.2, "name": "na\u00efve \u2603", "n": 2**62},
                {"symbol": "IBM", "price": 1e300, "nested": {"a": [1, "x", None, True]}},
                {"symbol": "IBM", "price": -5, "empty": "", "quote": 'say "hi"\n'},
            ]
            pub2 = AsyncClient(f"pubsift://127.0.0.1:{b1.address.port}", id="official")
            await pub2.connect()
            await pub2.publish("records", values[0])
            await pub2.publish_many("records", values[1:])
            r = await http.post(f"{base}/publish/records", data=json.dumps(values[0]))
            assert r.status == 202
            got = await sse_raw(sse, 4)
            await until(lambda: len(plain) == len(odd) + 4)
            want = [
                b"id: %s\ndata: %s"
                % (publication_id(n.publisher, n.seq).encode(), dumps(n.to_json()))
                for n in plain[len(odd) :]
            ]
            assert got == want
            sse.close()
        await sock.close()
        await pub.close()
        await pub2.close()

    run(body)


def test_a_reader_that_lets_more_than_max_pending_events_wait_is_cut_off():
    """The stream of a reader that reads too slowly ends with ``event: error``
    ``slow-consumer`` once more than ``[gateway] max_pending`` events wait; its
    subscription is withdrawn; the broker and its other subscribers carry on."""
    import socket

    async def body(b0: BrokerDaemon, b1: BrokerDaemon, base: str) -> None:
        assert isinstance(b0.gateway, Gateway)
        b0.gateway.max_pending = 50
        host, port = b0.gateway.address.host, b0.gateway.address.port
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect((host, port))
        s.setblocking(False)
        s.sendall(b"GET /subscribe/records?filter=price%20%3E%200 HTTP/1.1\r\nHost: x\r\n\r\n")
        await until(lambda: len(subscribers(b0)) == 1)
        await until(lambda: sum(b1.stats()["entries"]["records"]) == 1)
        got: list[Notification] = []
        other = AsyncClient(f"pubsift://127.0.0.1:{b0.address.port}", id="other")
        await other.connect()
        await other.subscribe("records", "price > 0", got.append)
        pub = AsyncClient(f"pubsift://127.0.0.1:{b1.address.port}")
        await pub.connect()
        streams = b0.gateway._streams
        try:
            for i in range(5000):  # ~15 MB: the stream's writes wait for the reader
                await pub.publish("records", {"price": 1, "text": "x" * 3000, "i": i})
                if i % 50 == 0:
                    await asyncio.sleep(0.01)
                if not streams or next(iter(streams)).overflow:
                    break
            assert streams and next(iter(streams)).overflow
            data = b""
            loop = asyncio.get_running_loop()
            while b"\r\n0\r\n\r\n" not in data:  # now read it all: the end of the stream
                chunk = await asyncio.wait_for(loop.sock_recv(s, 1 << 16), 5)
                assert chunk, data[-300:]
                data += chunk
            assert b"event: error\r\n" not in data  # (SSE lines end in \n)
            end = data.rindex(b"event: error\n")
            assert data[end:].startswith(
                b'event: error\ndata: {"error": "slow-consumer", "message": '
                b'"more than 50 events waiting to be sent"}\n\n'
            )
            await until(lambda: subscribers(b0) == [] and b0.gateway.subscribers == 0, 10)
            await until(lambda: sum(b1.stats()["entries"]["records"]) == 1)  # `other` only
            n = len(got)
            await pub.publish("records", {"price": 2})
            await until(lambda: len(got) == n + 1 and got[-1].event["price"] == 2)
        finally:
            await pub.close()
            await other.close()
            s.close()

    run(body)


def test_max_pending_is_a_gateway_setting_with_a_clear_error():
    import pytest
    from pubsift.adapters.broker.config import ConfigError

    cfg = from_mapping({"gateway": {"listen": "127.0.0.1:8080", "max_pending": 500}}, "b.toml")
    assert cfg.gateway_max_pending == 500
    assert from_mapping({}, "b.toml").gateway_max_pending == 10_000
    for bad in (0, -3, 2.5, "many", True):
        with pytest.raises(
            ConfigError, match=r"b\.toml: gateway\.max_pending: expected an integer > 0"
        ):
            from_mapping({"gateway": {"max_pending": bad}}, "b.toml")
    with pytest.raises(ConfigError, match=r"gateway\.max_pending"):
        BrokerConfig(gateway_max_pending=0).check()

    async def go() -> None:
        d = BrokerDaemon(
            BrokerConfig(id="b0", listen=LOCAL, gateway=LOCAL, gateway_max_pending=7, **FAST)
        )
        await d.start()
        try:
            assert isinstance(d.gateway, Gateway) and d.gateway.max_pending == 7
        finally:
            await d.stop()

    asyncio.run(go())


def test_a_raw_subscription_gets_the_events_bytes_beside_a_plain_one():
    """``subscribe(raw=True)``: ``wire`` is the event's bytes as the frame carried them;
    a plain subscription of the same client gets the JSON value, an awaitable handler
    first or not."""

    async def body(b0: BrokerDaemon, b1: BrokerDaemon, base: str) -> None:
        from pubsift.adapters.broker.frames import HEADER

        raw: list[Notification] = []
        plain: list[Notification] = []

        async def slow(n: Notification) -> None:
            await asyncio.sleep(0)
            plain.append(n)

        c = AsyncClient(f"pubsift://127.0.0.1:{b0.address.port}", id="both")
        await c.connect()
        await c.subscribe("records", "price > 0", slow)
        await c.subscribe("records", "price > 0", raw.append, raw=True)
        await c.subscribe("records", "price > 5", raw.append, raw=True)
        pub = AsyncClient(f"pubsift://127.0.0.1:{b1.address.port}", id="lean")
        await pub.connect()
        await until(lambda: sum(b1.stats()["entries"]["records"]) == 1)
        events = [b'{"price": 1 }', b'{ "price":7.50,"s":"\\u00e9"}']
        pairs = b",".join(b'[["lean",%d],%s]' % (i + 1, e) for i, e in enumerate(events))
        frame = b'{"kind":"pubs","model":"records","pubs":[%s]}' % pairs
        assert pub.send_frame(HEADER.pack(len(frame)) + frame)
        await until(lambda: len(raw) == 3 and len(plain) == 2)
        assert [n.wire for n in raw] == [events[0], events[1], events[1]]
        assert [n.wire for n in plain] == [{"price": 1}, {"price": 7.5, "s": "\u00e9"}]
        assert [(n.publisher, n.seq) for n in raw] == [("lean", 1), ("lean", 2), ("lean", 2)]
        await c.close()
        await pub.close()

    run(body)
