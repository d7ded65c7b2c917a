"""Identities own their ids (docs/protocol.md §13; DESIGN.md §2.6): with ``[identities]`` a
broker knows every client as ``identity/id``, so no connection of one identity can take
over another's session, publish under its publisher id or poison its sequence numbers;
an identity's limits count all its connections together, the HTTP gateway's included.
Fiege, Zeidler & Buchmann, "Security Aspects in Publish/Subscribe Systems" (DEBS 2004),
§4: the authenticated principal is the unit of access control.

The two attacks of docs/protocol.md §13 run against a real ``pubsift broker`` process over real
sockets (they fail on the broker before the fix: bob's connection was handed alice's
session, and bob's ``pub_id [alice-pub-13, 10^9]`` silenced alice); the limits run
against in-process daemons on 127.0.0.1. Every wait is bounded."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import struct
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import aiohttp
import pytest
from pubsift.adapters.broker.auth import Authorizer
from pubsift.adapters.broker.client import (
    AsyncClient,
    BrokerUnavailable,
    Client,
    Notification,
    SubscriptionRefused,
    connect,
)
from pubsift.adapters.broker.config import (
    Address,
    BrokerConfig,
    ClientIdentity,
    ConfigError,
    from_mapping,
)
from pubsift.adapters.broker.daemon import BrokerDaemon, load_models
from pubsift.adapters.broker.frames import encode, hello, read_frame

from tests.network.test_gateway import sse_events
from tests.network.test_inprocess import FAST, run_daemon, until, url

ALICE = ClientIdentity(
    "alice",
    "alice-secret",
    subscribe={"records": ('symbol prefix "I"', "price > 100")},
    publish={"records": ('symbol = "IBM"',)},
)
BOB = ClientIdentity(
    "bob",
    "bob-secret",
    subscribe={"records": ("price > 100",)},
    publish={"records": ('symbol = "IBM"',)},
)

BROKER_TOML = """
[broker]
id = "b0"
models = ["records"]
[lease]
period = 1.5
refresh = 0.4
max_delay = 0.1

[identities.alice]
token = "alice-secret"
subscribe.records = ['symbol prefix "I"', 'price > 100']
publish.records = ['symbol = "IBM"']

[identities.bob]
token = "bob-secret"
subscribe.records = ['price > 100']
publish.records = ['symbol = "IBM"']
"""


def wait(cond, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def broker(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A ``pubsift broker`` process with identities alice and bob: (URL, its log file)."""
    (tmp_path / "broker.toml").write_text(BROKER_TOML)
    port_file, log_file = tmp_path / "b0.port", tmp_path / "b0.log"
    cmd = [sys.executable, "-m", "pubsift.cli", "broker", "--config"]
    cmd += [str(tmp_path / "broker.toml"), "--listen", "127.0.0.1:0"]
    cmd += ["--port-file", str(port_file)]
    with open(log_file, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=log)
    clients: list[Client] = []
    try:
        wait(lambda: port_file.exists() or proc.poll() is not None, 20, "the broker to listen")
        assert proc.poll() is None, log_file.read_text()
        yield f"pubsift://127.0.0.1:{int(port_file.read_text())}", log_file, clients
    finally:
        for c in clients:
            c.close()
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def raw_hello(u: str, hello_id: str, token: str) -> list[dict]:
    """What a broker answers a raw client hello (frames until it closes, bounded)."""
    host, _, port = u.removeprefix("pubsift://").rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(encode(hello("client", hello_id, token=token)))
        data = b""
        s.settimeout(5)
        while chunk := s.recv(1 << 16):
            data += chunk
    out = []
    while len(data) >= 4:
        (n,) = struct.unpack(">I", data[:4])
        out.append(json.loads(data[4 : 4 + n]))
        data = data[4 + n :]
    return out


class Raw:
    """A client over a raw socket: every frame it receives is seen."""

    def __init__(self, u: str, hello_id: str, token: str) -> None:
        host, _, port = u.removeprefix("pubsift://").rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=5)
        self.sock.sendall(encode(hello("client", hello_id, token=token)))
        self.buf = b""

    def frame(self) -> dict | None:
        while len(self.buf) < 4 or len(self.buf) < 4 + struct.unpack(">I", self.buf[:4])[0]:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                return None
            self.buf += chunk
        (n,) = struct.unpack(">I", self.buf[:4])
        obj = json.loads(self.buf[4 : 4 + n])
        self.buf = self.buf[4 + n :]
        return obj

    def send(self, *objs: dict) -> None:
        self.sock.sendall(b"".join(encode(o) for o in objs))

    def until_stats(self) -> list[dict]:
        """Ask for stats; every frame before the reply (the broker answers in order)."""
        self.send({"kind": "stats"})
        out = []
        while (obj := self.frame()) is not None and obj["kind"] != "stats":
            out.append(obj)
        assert obj is not None, f"closed after {out}"
        return out

    def close(self) -> None:
        self.sock.close()


def test_a_client_id_of_another_identity_never_hands_over_its_session(broker):
    """Attack 1 (docs/protocol.md §13): bob presents the client id alice's connection uses."""
    u, log_file, clients = broker
    got_alice: list[Notification] = []
    alice = connect(u, id="shared-id", token="alice-secret")
    clients.append(alice)
    alice.subscribe("records", 'symbol = "IBM"', got_alice.append, confirm=True)
    assert alice.aio.network_id == "alice/shared-id"
    bob = Raw(u, "shared-id", "bob-secret")
    try:
        welcome = bob.frame()
        assert welcome is not None and welcome["kind"] == "hello"
        assert welcome["client"] == "bob/shared-id"  # a session of its own
        pub = connect(u, id="feed", token="alice-secret")
        clients.append(pub)
        pub.publish("records", {"symbol": "IBM", "price": 5.0})
        wait(lambda: len(got_alice) == 1, 10, "alice's notification")
        assert bob.until_stats() == []  # not one notification reached bob
        assert got_alice[0].wire == {"symbol": "IBM", "price": 5.0}
        assert got_alice[0].publisher == "alice/feed"
        # alice kept her connection: nobody closed it, her session was never handed over
        assert alice.aio.connections == 1 and alice.aio.connected and alice.aio.errors == []
        assert "reconnected" not in log_file.read_text()
        # naming alice's id as the network knows it: refused, closed, logged naming both
        frames = raw_hello(u, "alice/shared-id", "bob-secret")
        assert [(f["kind"], f.get("reason")) for f in frames] == [("error", "forbidden")]
        assert "belongs to identity 'alice'" in frames[0]["message"]
        wait(lambda: "forbidden: its id belongs" in log_file.read_text(), 5, "the log line")
        (line,) = [x for x in log_file.read_text().splitlines() if "forbidden: its id" in x]
        assert "WARNING" in line and "'alice'" in line and "'bob'" in line
        pub.publish("records", {"symbol": "IBM", "price": 6.0})
        wait(lambda: len(got_alice) == 2, 10, "alice's second notification")
        assert bob.until_stats() == [] and alice.aio.connections == 1
    finally:
        bob.close()


def test_another_identitys_publisher_id_cannot_silence_it(broker):
    """Attack 2 (docs/protocol.md §13): bob connects under alice's publisher id and publishes
    with ``pub_id [alice-pub-13, 10^9]``; alice's next publications must still arrive."""
    u, _, clients = broker
    got: list[Notification] = []
    sub = connect(u, id="watcher", token="alice-secret")
    clients.append(sub)
    sub.subscribe("records", 'symbol = "IBM"', got.append, confirm=True)
    alice = connect(u, id="alice-pub-13", token="alice-secret")
    clients.append(alice)
    for price in (1, 2):
        alice.publish("records", {"symbol": "IBM", "price": price})
    wait(lambda: len(got) == 2, 10, "alice's first two publications")
    # bob, under alice's publisher id, with a huge sequence number, over a raw socket
    host, _, port = u.removeprefix("pubsift://").rpartition(":")
    bob = socket.create_connection((host, int(port)), timeout=5)
    pubs = [
        ["alice-pub-13", 1_000_000_000],  # his own session bob/alice-pub-13: accepted
        ["alice/alice-pub-13", 1_000_000_001],  # alice's id in the network: forbidden
        ["watcher", 7],  # anybody else's: forbidden
    ]
    bob.sendall(
        encode(hello("client", "alice-pub-13", token="bob-secret"))
        + b"".join(
            encode(
                {
                    "kind": "pub",
                    "model": "records",
                    "event": {"symbol": "IBM", "price": 9},
                    "pub_id": p,
                    "ref": i,
                }
            )
            for i, p in enumerate(pubs)
        )
        + encode({"kind": "stats"})
    )

    async def answers() -> list[dict]:
        r, w = await asyncio.open_connection(sock=bob)
        out = []
        while (obj := await asyncio.wait_for(read_frame(r, 1 << 20), 5))["kind"] != "stats":
            out.append(obj)
        w.close()
        return out

    frames = asyncio.run(answers())
    assert frames[0]["kind"] == "hello" and frames[0]["client"] == "bob/alice-pub-13"
    assert [(f["reason"], f["ref"]) for f in frames[1:]] == [("forbidden", 1), ("forbidden", 2)]
    wait(lambda: len(got) == 3, 10, "bob's own publication")
    for price in (3, 4):
        alice.publish("records", {"symbol": "IBM", "price": price})
    wait(lambda: len(got) == 5, 10, "alice's publications after bob's")
    assert [(n.publisher, n.seq, n.wire["price"]) for n in got] == [
        ("alice/alice-pub-13", 1, 1),
        ("alice/alice-pub-13", 2, 2),
        ("bob/alice-pub-13", 1_000_000_000, 9),
        ("alice/alice-pub-13", 3, 3),
        ("alice/alice-pub-13", 4, 4),
    ]
    assert sub.aio.duplicates == 0


def test_network_ids_are_the_identitys_and_names_are_checked():
    auth = Authorizer((ALICE, BOB), load_models(("records",), "t"))
    alice, bob = auth.named("alice"), auth.named("bob")
    assert alice is not None and bob is not None and auth.named("carol") is None
    assert auth.network_id(alice, "c1") == ("alice/c1", None)
    assert auth.network_id(alice, "alice/c1") == ("alice/c1", None)
    assert auth.network_id(bob, "alice/c1") == ("alice/c1", "alice")
    assert auth.network_id(bob, "nobody/c1") == ("bob/nobody/c1", None)
    token = auth.internal("<gateway of b0>")
    assert auth.authenticate(token) is not None and auth.named("<gateway of b0>") is None
    for name in ("a/b", "x" * 101):
        with pytest.raises(ConfigError, match=r"identities\.\S+: an identity's name is"):
            from_mapping({"identities": {name: {"token": "t"}}}, "broker.toml")
    with pytest.raises(ConfigError, match=r"identities\.a\.max_queue_bytes"):
        from_mapping(
            {
                "limits": {"max_frame_bytes": 4096},
                "identities": {"a": {"token": "t", "max_queue_bytes": 100}},
            },
            "broker.toml",
        )


def _cfg(**ident: object) -> BrokerConfig:
    alice = ClientIdentity(
        "alice",
        "alice-secret",
        subscribe={"records": ("price >= 0",)},
        publish={"records": ("price >= 0",)},
        **ident,  # type: ignore[arg-type]
    )
    bob = ClientIdentity("bob", "bob-secret", subscribe={"records": ("price >= 0",)})
    return BrokerConfig(id="b0", listen=Address("127.0.0.1", 0), identities=(alice, bob), **FAST)


def test_an_identitys_connections_are_counted_together(caplog):
    cfg = _cfg(max_connections=2)

    async def body(d: BrokerDaemon) -> None:
        a1 = AsyncClient(url(d), id="a1", token="alice-secret")
        a2 = AsyncClient(url(d), id="a2", token="alice-secret")
        b1 = AsyncClient(url(d), id="b1", token="bob-secret")
        for c in (a1, a2, b1):
            await c.connect()
        with pytest.raises(BrokerUnavailable, match="max_connections = 2") as exc:
            await AsyncClient(url(d), id="a3", token="alice-secret").connect()
        assert exc.value.reason == "limit"
        await a2.close()
        await until(lambda: "alice/a2" not in d.port.clients)
        a3 = AsyncClient(url(d), id="a3", token="alice-secret")
        await a3.connect()  # a freed slot
        assert d.identity_limits("alice").connections == 2
        for c in (a1, a3, b1):
            await c.close()
        await until(lambda: d.identity_limits("alice").connections == 0)

    with caplog.at_level(logging.WARNING, "pubsift.broker"):
        run_daemon(cfg, body)
    assert any("alice/a3" in r.getMessage() and "limit" in r.getMessage() for r in caplog.records)


def test_an_identitys_subscriptions_are_counted_over_all_its_connections():
    cfg = _cfg(max_subscriptions=3)

    async def body(d: BrokerDaemon) -> None:
        a1 = AsyncClient(url(d), id="a1", token="alice-secret")
        a2 = AsyncClient(url(d), id="a2", token="alice-secret")
        b1 = AsyncClient(url(d), id="b1", token="bob-secret")
        for c in (a1, a2, b1):
            await c.connect()
        first = await a1.subscribe("records", "price > 1", print, confirm=True)
        await a1.subscribe("records", "price > 2", print, confirm=True)
        await a2.subscribe("records", "price > 3", print, confirm=True)
        with pytest.raises(SubscriptionRefused) as refused:
            await a2.subscribe("records", "price > 4", print, confirm=True)
        assert refused.value.reason == "limit"
        assert "identities.alice.max_subscriptions = 3" in str(refused.value)
        await b1.subscribe("records", "price > 4", print, confirm=True)  # bob: no limit
        assert d.broker.sizes()[0] == 4
        # renewals take no new slot; an unsub frees one at once
        await asyncio.sleep(2 * cfg.lease_refresh)
        await a1.unsubscribe(first)
        await a2.subscribe("records", "price > 4", print, confirm=True)
        # a client that reconnects under its id renews what it held: not counted twice
        await a2.close(unsubscribe=False)
        again = AsyncClient(url(d), id="a2", token="alice-secret")
        await again.connect()
        await again.subscribe("records", "price > 3", print, confirm=True)
        await again.subscribe("records", "price > 4", print, confirm=True)
        with pytest.raises(SubscriptionRefused, match="max_subscriptions = 3"):
            await again.subscribe("records", "price > 5", print, confirm=True)
        for c in (a1, again, b1):
            await c.close()

    run_daemon(cfg, body)


def test_an_identitys_publication_rate_is_shared_by_its_connections():
    n = 30
    cfg = _cfg(max_publish_rate=40.0, publish_burst=5)

    async def body(d: BrokerDaemon) -> None:
        got: list[Notification] = []
        sub = AsyncClient(url(d), id="sub", token="bob-secret")
        await sub.connect()
        await sub.subscribe("records", "price >= 0", got.append, confirm=True)
        pubs = [AsyncClient(url(d), id=f"p{i}", token="alice-secret") for i in range(3)]
        for p in pubs:
            await p.connect()
            assert p._bucket is not None and p._bucket.rate == 40.0  # told in the hello

        async def publish(p: AsyncClient) -> None:
            for i in range(n):
                await p.publish("records", {"price": i})

        await asyncio.gather(*(publish(p) for p in pubs))
        await until(lambda: len(got) == 3 * n, 15)
        # each connection paces itself to 40/s; together they go 3x that, so the broker
        # held them back (nothing lost, each publisher in order)
        assert d.throttled > 0
        for p in pubs:
            mine = [x.wire["price"] for x in got if x.publisher == p.network_id]
            assert mine == list(range(n))
        for c in (sub, *pubs):
            await c.close()

    run_daemon(cfg, body, timeout=30)


def test_bytes_queued_to_an_identitys_connections_are_counted_together(caplog):
    """Two of alice's connections read nothing: each holds less than her budget, both
    together more; the one with the largest backlog is cut off, not her reading one, and
    bob loses nothing."""
    n = 110
    pad = "x" * 1000
    cfg = _cfg(max_queue_bytes=150_000)

    async def body(d: BrokerDaemon) -> None:
        got: list[Notification] = []
        mine: list[Notification] = []
        fast = AsyncClient(url(d), id="fast", token="bob-secret")
        reader = AsyncClient(url(d), id="reader", token="alice-secret")
        pub = AsyncClient(url(d), id="pub", token="alice-secret")
        for c in (fast, reader, pub):
            await c.connect()
        await fast.subscribe("records", "price >= 0", got.append, confirm=True)
        await reader.subscribe("records", "price >= 0", mine.append, confirm=True)
        socks = []
        for i in range(2):  # two of alice's connections that read nothing
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", d.address.port))
            sub = {"kind": "sub", "model": "records", "filter": "price >= 0"}
            s.sendall(encode(hello("client", f"slow{i}", token="alice-secret")) + encode(sub))
            socks.append(s)
        await until(lambda: d.broker.sizes() == (4, 0))
        for i in range(2):
            sock = d.port.clients[f"alice/slow{i}"].writer.transport.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        budget = d.identity_limits("alice").budget
        assert budget is not None and budget.limit == 150_000
        most = 0
        for i in range(n):
            await pub.publish("records", {"price": i, "pad": pad})
            if i % 10 == 0:
                await until(lambda i=i: len(got) >= i - 5 and len(mine) >= i - 5)
            most = max([most, *(c.backlog for c in d.port.clients.values())])
        await until(lambda: len(got) == n and len(mine) == n)
        assert [x.wire["price"] for x in got] == list(range(n))  # bob lost nothing
        assert [x.wire["price"] for x in mine] == list(range(n))  # nor alice's reader
        assert most < 150_000  # no connection ever held the budget alone
        assert d.slow_consumers == 1  # both together did: one of them was cut off
        slow = [d.port.clients.get(f"alice/slow{i}") for i in range(2)]
        assert sorted(c is None or c.closing for c in slow) == [False, True]
        assert reader.connections == 1 and not d.port.clients["alice/reader"].closing
        assert fast.errors == [] and fast.connections == 1
        for s in socks:
            s.close()
        await until(
            lambda: (
                budget.used == 0
                and not budget.members
                - {d.port.clients["alice/reader"], d.port.clients["alice/pub"]}
            )
        )
        for c in (fast, reader, pub):
            await c.close()

    with caplog.at_level(logging.WARNING, "pubsift.broker"):
        run_daemon(cfg, body, timeout=30)
    lines = [r.getMessage() for r in caplog.records if "slow consumer" in r.getMessage()]
    assert len(lines) == 1 and "(identities.alice.max_queue_bytes)" in lines[0]
    assert lines[0].startswith("client alice/slow") and "to the identity's connections" in lines[0]


def test_the_gateway_counts_streams_and_posts_against_the_identity():
    limited = {"records": ("price >= 0",)}
    cfg = BrokerConfig(
        id="b0",
        listen=Address("127.0.0.1", 0),
        gateway=Address("127.0.0.1", 0),
        identities=(
            ClientIdentity(
                "alice",
                "alice-secret",
                subscribe=limited,
                publish=limited,
                max_connections=3,
                max_subscriptions=2,
                max_publish_rate=2.0,
                publish_burst=3,
            ),
            ClientIdentity("bob", "bob-secret", subscribe=limited, publish=limited),
        ),
        **FAST,
    )

    async def body(d: BrokerDaemon) -> None:
        assert d.gateway is not None
        base = d.gateway.url
        auth = {"alice": {"Authorization": "Bearer alice-secret"}}
        auth["bob"] = {"Authorization": "Bearer bob-secret"}
        a1 = AsyncClient(url(d), id="a1", token="alice-secret")
        await a1.connect()
        await a1.subscribe("records", "price > 1000", print, confirm=True)
        q = {"filter": "price >= 0"}
        async with aiohttp.ClientSession() as http:

            async def stream() -> aiohttp.ClientResponse:
                return await http.get(f"{base}/subscribe/records", params=q, headers=auth["alice"])

            # an SSE stream is one of alice's connections, its filter one of her subscriptions
            s1 = await stream()
            assert s1.status == 200
            first = (await s1.content.readline()).decode()
            assert first.startswith(": subscribed as alice/http-b0-sub-")
            s2 = await stream()  # a third connection, but a third subscription
            body2 = await s2.json()
            assert s2.status == 429 and body2["error"] == "limit", body2
            assert "identities.alice.max_subscriptions = 2" in body2["message"]
            await until(lambda: d.identity_limits("alice").connections == 2)
            a2 = AsyncClient(url(d), id="a2", token="alice-secret")
            await a2.connect()
            s3 = await stream()  # a fourth connection
            body3 = await s3.json()
            assert s3.status == 429 and "identities.alice.max_connections = 3" in body3["message"]
            # POSTs take the tokens of alice's bucket (burst 3), then 429 with Retry-After
            answers = []
            for i in range(5):
                r = await http.post(
                    f"{base}/publish/records", data=json.dumps({"price": i}), headers=auth["alice"]
                )
                answers.append((r.status, await r.json(), r.headers.get("Retry-After")))
            assert [a[0] for a in answers[:3]] == [202, 202, 202], answers
            assert answers[3][0] == 429 and answers[3][1]["error"] == "rate-limited"
            assert "identities.alice.max_publish_rate = 2/s" in answers[3][1]["message"]
            assert answers[3][2] is not None and int(answers[3][2]) >= 1
            publisher = answers[0][1]["publisher"]
            assert publisher.startswith("alice/http-b0-pub-")
            assert [a[1]["seq"] for a in answers[:3]] == [1, 2, 3]
            # bob publishes through the gateway as a publisher of his own: his own sequence
            r = await http.post(
                f"{base}/publish/records", data=json.dumps({"price": 99}), headers=auth["bob"]
            )
            assert r.status == 202
            theirs = await r.json()
            assert theirs["publisher"].startswith("bob/http-b0-pub-") and theirs["seq"] == 1
            events = await sse_events(s1, 4)
            assert [e["id"] for e in events] == [f"{publisher}:{i}" for i in (1, 2, 3)] + [
                f"{theirs['publisher']}:1"
            ]
            s1.close()
            await until(lambda: d.identity_limits("alice").connections == 2)
        for c in (a1, a2):
            await c.close()

    run_daemon(cfg, body, timeout=30)


def test_on_behalf_is_refused_from_anyone_but_the_gateway(caplog):
    cfg = _cfg()

    async def body(d: BrokerDaemon) -> None:
        with pytest.raises(BrokerUnavailable) as exc:
            await AsyncClient(url(d), id="x", token="bob-secret", on_behalf="alice").connect()
        assert exc.value.reason == "forbidden"
        assert "only the broker's own HTTP gateway" in str(exc.value)
        assert not d.port.clients

    with caplog.at_level(logging.WARNING, "pubsift.broker"):
        run_daemon(cfg, body)


def test_limits_of_limits_are_each_identitys_for_all_its_connections():
    """With identities, [limits]'s subscription, rate and connection limits are each
    identity's (all its connections together), unless its table sets its own."""
    cfg = replace(_cfg(), max_subscriptions=2, max_connections=3)

    async def body(d: BrokerDaemon) -> None:
        bobs = [AsyncClient(url(d), id=f"b{i}", token="bob-secret") for i in range(3)]
        for c in bobs:
            await c.connect()
        with pytest.raises(BrokerUnavailable, match=r"limits\.max_connections = 3"):
            await AsyncClient(url(d), id="b9", token="bob-secret").connect()
        await bobs[0].subscribe("records", "price > 1", print, confirm=True)
        await bobs[1].subscribe("records", "price > 2", print, confirm=True)
        with pytest.raises(SubscriptionRefused, match=r"limits\.max_subscriptions = 2"):
            await bobs[2].subscribe("records", "price > 3", print, confirm=True)
        # a reconnect under a live id takes over its session even at the limit
        again = AsyncClient(url(d), id="b0", token="bob-secret")
        await again.connect()
        await until(lambda: bobs[0].connections == 1 and d.identity_limits("bob").connections == 3)
        # alice's own table has no limits set: [limits]'s are hers too, counted apart
        alice = AsyncClient(url(d), id="a", token="alice-secret")
        await alice.connect()
        await alice.subscribe("records", "price > 1", print, confirm=True)
        for c in (*bobs, again, alice):
            await c.close(unsubscribe=False)

    run_daemon(cfg, body)


def test_a_pubs_batch_is_checked_item_by_item_and_takes_a_token_each():
    cfg = replace(
        _cfg(max_publish_rate=5.0, publish_burst=4),
        identities=(
            replace(_cfg().identities[0], publish={"records": ("price < 100",)}),
            _cfg().identities[1],
        ),
    )
    cfg = replace(
        cfg,
        identities=(
            replace(cfg.identities[0], max_publish_rate=5.0, publish_burst=4),
            cfg.identities[1],
        ),
    )

    async def body(d: BrokerDaemon) -> None:
        got: list[Notification] = []
        sub = AsyncClient(url(d), id="s", token="bob-secret")
        await sub.connect()
        await sub.subscribe("records", "price >= 0", got.append, confirm=True)
        r, w = await asyncio.open_connection("127.0.0.1", d.address.port)
        w.write(encode(hello("client", "p", token="alice-secret")))
        items = [
            [["p", 1], {"price": 1}],
            [["p", 2], {"price": 500}],  # alice may not publish it
            [["bob/s", 3], {"price": 3}],  # bob's publisher id
            [["alice/p", 4], {"price": 4}],  # her own, qualified
        ]
        w.write(
            encode({"kind": "pubs", "model": "records", "pubs": items, "ref": "r"})
            + encode({"kind": "stats"})
        )
        frames = []
        while (obj := await asyncio.wait_for(read_frame(r, 1 << 20), 5))["kind"] != "stats":
            frames.append(obj)
        w.close()
        assert frames[0]["kind"] == "hello" and frames[0]["client"] == "alice/p"
        errs = frames[1:]
        assert [(e["reason"], e["index"], e["ref"]) for e in errs] == [
            ("forbidden", 1, "r"),
            ("forbidden", 2, "r"),
        ], errs
        await until(lambda: len(got) == 2)
        assert [(n.publisher, n.seq) for n in got] == [("alice/p", 1), ("alice/p", 4)]
        # the frame of four publications took four tokens of her bucket (burst 4)
        bucket = d.identity_limits("alice").held.bucket
        assert bucket is not None and bucket.tokens < 1
        await sub.close()

    run_daemon(cfg, body)


def test_stats_show_an_identity_its_own_clients_only():
    async def body(d: BrokerDaemon) -> None:
        a = AsyncClient(url(d), id="secret-project", token="alice-secret")
        b = AsyncClient(url(d), id="c1", token="bob-secret")
        await a.connect()
        await b.connect()
        assert (await b.stats())["clients"] == ["bob/c1"]
        assert (await a.stats())["clients"] == ["alice/secret-project"]
        for c in (a, b):
            await c.close()

    run_daemon(_cfg(), body)


def test_control_characters_in_an_id_are_refused():
    async def body(d: BrokerDaemon) -> None:
        with pytest.raises(BrokerUnavailable, match="control characters"):
            await AsyncClient(url(d), id="c1\nWARNING forged line", token="alice-secret").connect()

    run_daemon(_cfg(), body)


def test_an_open_brokers_gateway_publisher_is_known_by_its_token_not_its_id():
    cfg = BrokerConfig(
        id="b0",
        listen=Address("127.0.0.1", 0),
        gateway=Address("127.0.0.1", 0),
        max_publish_rate=5.0,
        publish_burst=2,
        **FAST,
    )

    async def body(d: BrokerDaemon) -> None:
        assert d.gateway is not None and d.gateway.publisher_id is not None
        fake = AsyncClient(url(d), id=d.gateway.publisher_id)
        await fake.connect()
        conn = d.port.clients[d.gateway.publisher_id]
        assert conn not in d._exempt and d._limits[conn].limits.max_publish_rate == 5.0
        await fake.close()

    run_daemon(cfg, body)
